//! The writer: the register command stream and the read-only region of a scheduled graph.
//!
//! Every operation lists the full register state it needs; a register command is emitted
//! only if its value differs from the last one emitted (or was never emitted). BLOCKDEP is 0
//! for the whole stream (no overlap between consecutive operations is permitted), a
//! KERNEL_WAIT 0 precedes an operation that reads or writes bytes the previous operation read
//! or wrote (read-after-write, write-after-read, write-after-write), the DMA staging an
//! operation's streams is issued right after the previous kernel command, and a DMA_WAIT 0
//! precedes a kernel whose streams (or LUT) a DMA brings. The stream ends with NPU_OP_STOP.
//! Region 0 holds each operation's stream block, then the constant feature maps and the
//! lookup tables in the order of first use.

use super::decide;
use super::regs::{
    align16, kernel_name, locs, op_commands, overlaps, range, Access, Consts, Range,
};
use super::{cascade, chain, const_operands, lut, staging, weights};
use npuc_backend::isa::{encode_stream, ActivationFunction, CmdKind, Command, SetBlockdep};
use npuc_backend::writer::dma::{self as dma, DmaIndex, DmaTransfer};
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::DmaCopy;
use npuc_backend_lower::{Kernel, NpuOp};
use npuc_target::arch_interface::Transfer;
use npuc_target::arch_interface::REGION_READ_ONLY;
use npuc_target::arch_interface::{
    Decisions, LoweredView, OpLocations, OperatorInfo, TargetError, WeightFigures, Written,
};
use std::collections::BTreeMap;

/// Writes the command stream and region 0 of `d`, decided for `lowered` (the U85's
/// [`npuc_target::arch_interface::Target::write`]).
pub(crate) fn write(lowered: &dyn LoweredView, d: &Decisions) -> Result<Written, TargetError> {
    let d = decide::u85(lowered, d)?;
    let l = d.lowered;
    let p = d.placement;
    let (ops, cascades) = (&d.ops, d.cascades);
    let mut w = CommandWriter::default();
    // Region 0: each operation's stream block, then constants and LUTs as first used.
    let mut ro: Vec<u8> = Vec::new();
    let mut weight_figures = WeightFigures::default();
    // Read-only offset of each operation's stream block (one per slice for a sliced one).
    let mut add_block = |e: &weights::Encoded| {
        align16(&mut ro);
        let at = ro.len() as u64;
        ro.extend_from_slice(&e.block());
        weight_figures.weights += e.weight_count;
        weight_figures.weight_stream_bytes += e.streams.iter().map(|s| s.len() as u64).sum::<u64>();
        weight_figures.scale_stream_bytes += e.scales.len() as u64;
        at
    };
    let blocks: Vec<Vec<u64>> = ops
        .iter()
        .map(|o| match &o.staged {
            staging::Staged::Sliced { slices, .. } => {
                slices.iter().map(|s| add_block(&s.enc)).collect()
            }
            _ => o.plan.enc.iter().map(&mut add_block).collect(),
        })
        .collect();
    // Constant feature maps, in the order of first use, then the lookup tables, after the
    // stream blocks; each part copied whole into the staging memory when staging decided so.
    align16(&mut ro);
    let const_base = ro.len() as u64;
    let mut const_at = Vec::new();
    for b in const_operands(l) {
        align16(&mut ro);
        const_at.push((b, ro.len() as u64));
        ro.extend_from_slice(&l.constants[&b]);
    }
    align16(&mut ro);
    let tables_base = ro.len() as u64;
    let mut table_at = Vec::new();
    for t in lut::tables(l) {
        align16(&mut ro);
        table_at.push((t.to_vec(), ro.len() as u64));
        ro.extend_from_slice(t);
    }
    align16(&mut ro);
    let tables_end = ro.len() as u64;
    // The copy: (source offset in region 0, length), and where a part's byte `at` is read.
    let copy = d.consts.map(|c| {
        let from = if c.consts { const_base } else { tables_base };
        let to = if c.tables { tables_end } else { tables_base };
        (c, from, to - from)
    });
    let place = |at: u64, copied: bool| match copy {
        Some((c, from, _)) if copied => (c.region, c.at + at - from),
        _ => (REGION_READ_ONLY, at),
    };
    let consts: Consts = const_at
        .into_iter()
        .map(|(b, at)| (b, place(at, copy.is_some_and(|c| c.0.consts))))
        .collect();
    let tables: BTreeMap<Vec<u8>, (u8, u64)> = table_at
        .into_iter()
        .map(|(t, at)| (t, place(at, copy.is_some_and(|c| c.0.tables))))
        .collect();
    let stage_streams = |w: &mut CommandWriter, k: usize| match &ops[k].staged {
        staging::Staged::Whole { region, at, wait } => {
            if let Some(enc) = ops[k].plan.enc.as_ref() {
                if *wait {
                    w.kernel_wait(1);
                }
                weights::dma_commands(w, blocks[k][0], *region, *at, enc.size());
            }
        }
        staging::Staged::Sliced {
            region,
            bufs,
            slices,
            wait,
            ..
        } => {
            if *wait {
                w.kernel_wait(1);
            }
            weights::dma_commands(w, blocks[k][0], *region, bufs[0], slices[0].enc.size())
        }
        staging::Staged::Cascade {
            region,
            blocks: at,
            wait,
            input,
        } => {
            if *wait {
                w.kernel_wait(1);
            }
            // The input ring's first fill, then the streams.
            if let (Some(r), Some(c)) = (input, ops[k].cascade.map(|i| &cascades[i])) {
                if let Some(&rows) = cascade::input_fills(l, c).first() {
                    fill_ring(w, l, p, c, *r, rows);
                }
            }
            for &(j, dst) in at {
                if let Some(enc) = ops[j].plan.enc.as_ref() {
                    weights::dma_commands(w, blocks[j][0], *region, dst, enc.size());
                }
            }
        }
        staging::Staged::Direct => {}
    };
    // The DMAs bringing operation k's IFM copy and (first) stream block into the staging
    // memory.
    let stage_dma = |w: &mut CommandWriter, k: usize| {
        w.owner = Some(k);
        if let Some(c) = &ops[k].copy {
            if c.wait {
                w.kernel_wait(1);
            }
            weights::copy_commands(w, c.src, c.dst, c.size);
        }
        stage_streams(w, k)
    };
    w.set(Command::SetBlockdep(SetBlockdep { blockdep: 0 }));
    if !l.ops.is_empty() {
        stage_dma(&mut w, 0);
    }
    // The constants' copy, before the first operation that reads one.
    let mut consts_pending = false;
    w.owner = None;
    if let Some((c, from, len)) = copy {
        weights::copy_commands(&mut w, (REGION_READ_ONLY, from), (c.region, c.at), len);
        consts_pending = c.consts;
    }
    // Byte ranges read and written by the previous operation.
    let mut prev: Option<Access> = None;
    let mut luts = lut::LutSlots::with_tables(tables);
    let mut operators = Vec::new();
    // The operation of each kernel command, in stream order, and the index (in `w.commands`)
    // of the command after which each operation's OFM is complete in memory.
    let mut owners: Vec<usize> = Vec::new();
    let mut done_at: Vec<Option<usize>> = vec![None; l.ops.len()];
    for (index, op) in l.ops.iter().enumerate() {
        w.owner = Some(index);
        if let Some(ci) = ops[index].cascade {
            let c = &cascades[ci];
            if index != c.first {
                continue;
            }
            // Streams staged for the whole cascade: each operation's first piece waits for
            // its own DMA (they complete in order).
            let (region, cascade_copies, input) = match &ops[index].staged {
                staging::Staged::Cascade {
                    region,
                    blocks,
                    input,
                    ..
                } => (*region, blocks.clone(), *input),
                _ => (REGION_READ_ONLY, Vec::new(), None),
            };
            // The input ring's fills (S23): the first went with the streams; fill `i` is
            // issued once the first operation's piece `i - 1` has finished, and its piece
            // `i` waits for it.
            let fills = if input.is_some() {
                cascade::input_fills(l, c)
            } else {
                Vec::new()
            };
            let mut first_pieces = 0usize;
            let mut started = vec![false; l.ops.len()];
            for &piece in &c.pieces {
                let j = piece.0;
                let (s, at) = cascade::piece(l, p, &consts, c, piece, input.as_ref());
                let block = cascade::piece_block(&ops[j].plan.block, piece.2 - piece.1);
                let layout = ops[j].plan.enc.as_ref().map(weights::Encoded::layout);
                let copy = cascade_copies.iter().position(|&(o, _)| o == j);
                let streams = layout.as_ref().map(|x| match copy {
                    Some(i) => (x, region, cascade_copies[i].1),
                    None => (x, REGION_READ_ONLY, blocks[j].first().copied().unwrap_or(0)),
                });
                luts.next_op(&mut w, &mut ro, None);
                let (cmd, _) = op_commands(
                    &mut w,
                    &s,
                    &block,
                    streams,
                    &at,
                    (ActivationFunction::LutNone, 0),
                );
                // Hazards on whole buffers (a ring counts as a whole).
                let o = &l.ops[j];
                let ring = input.filter(|_| j == c.first).map(|r| {
                    let bytes = cascade::input_ring_bytes(l, c, r.rows);
                    (r.region, r.at, r.at + bytes)
                });
                let reads: Vec<Range> = match ring {
                    Some(r) => vec![r],
                    None => std::iter::once(&o.ifm)
                        .chain(o.ifm2.as_ref())
                        .filter_map(|fm| range(fm, p, l))
                        .collect(),
                };
                let write = range(&o.ofm, p, l).expect("OFM in memory");
                if let Some((preads, pwrite)) = &prev {
                    let raw = reads.iter().any(|&r| overlaps(r, *pwrite));
                    let war = preads.iter().any(|&r| overlaps(r, write));
                    if raw || war || overlaps(write, *pwrite) {
                        w.kernel_wait(0);
                    }
                }
                prev = Some((reads, write));
                if let (Some(i), false) = (copy, started[j]) {
                    let after = (cascade_copies.len() - 1 - i) as u8;
                    w.dma_wait(after.min(3));
                } else if ring.is_some() {
                    w.dma_wait(0);
                }
                started[j] = true;
                w.op(cmd);
                owners.push(j);
                if let (Some(r), true) = (input, ring.is_some()) {
                    first_pieces += 1;
                    if let Some(&rows) = fills.get(first_pieces) {
                        // The ring rows the next fill overwrites were read by this piece.
                        w.kernel_wait(0);
                        fill_ring(&mut w, l, p, c, r, rows);
                        prev = None;
                    }
                }
            }
            done_at[c.last] = Some(w.commands.len() - 1);
            for j in c.first..=c.last {
                let o = &l.ops[j];
                operators.push(OperatorInfo {
                    name: o.name.clone(),
                    kernel: kernel_name(o.kernel).to_string(),
                    fused: o.fused.clone(),
                    cycles: 0,
                    ofm: (
                        p.regions[o.ofm.buffer],
                        p.offsets[o.ofm.buffer],
                        l.buffers[o.ofm.buffer].size,
                    ),
                    done_at: None,
                });
            }
            if c.last + 1 < l.ops.len() {
                stage_dma(&mut w, c.last + 1);
            }
            continue;
        }
        if let Kernel::Dma(d) = &op.kernel {
            if prev.is_some() {
                w.kernel_wait(0);
            }
            let at = locs(op, p, l, &consts);
            dma::write_dma(&mut w, &dma_transfer(d), at.ifm, at.ofm, at.ifm2);
            prev = None;
            if index + 1 < l.ops.len() {
                stage_dma(&mut w, index + 1);
            }
            done_at[index] = Some(w.commands.len() - 1);
            operators.push(OperatorInfo {
                name: op.name.clone(),
                kernel: "DMA".to_string(),
                fused: op.fused.clone(),
                cycles: dma::estimate_cycles(d.bytes()),
                ofm: (
                    p.regions[op.ofm.buffer],
                    p.offsets[op.ofm.buffer],
                    l.buffers[op.ofm.buffer].size,
                ),
                done_at: None,
            });
            continue;
        }
        let plan = &ops[index].plan;
        let lut = l.luts.get(&index);
        let (table, lut_dma) = luts.next_op(&mut w, &mut ro, lut);
        let act = (
            lut.map_or(ActivationFunction::LutNone, |t| t.function),
            table,
        );
        // The kernel operations of this operation: itself, or its slices.
        let block = match &ops[index].staged {
            staging::Staged::Sliced { block, .. } => *block,
            _ => plan.block,
        };
        let pieces: Vec<(&NpuOp, Option<weights::Layout>, u8, u64)> = match &ops[index].staged {
            staging::Staged::Sliced {
                region,
                bufs,
                slices,
                ..
            } => slices
                .iter()
                .enumerate()
                .map(|(j, s)| (&s.op, Some(s.enc.layout()), *region, bufs[j % 2]))
                .collect(),
            staging::Staged::Whole { region, at, .. } => {
                vec![(op, plan.enc.as_ref().map(|e| e.layout()), *region, *at)]
            }
            staging::Staged::Direct | staging::Staged::Cascade { .. } => vec![(
                op,
                plan.enc.as_ref().map(|e| e.layout()),
                REGION_READ_ONLY,
                blocks[index].first().copied().unwrap_or(0),
            )],
        };
        let (piece, layout, region, base) = &pieces[0];
        let streams = layout.as_ref().map(|l| (l, *region, *base));
        let mut at = locs(piece, p, l, &consts);
        if let Some(c) = &ops[index].copy {
            at.ifm = (c.dst.0, c.dst.1 + piece.ifm.view.offset);
        }
        let (cmd, kernel_name) = op_commands(&mut w, piece, &block, streams, &at, act);
        // Hazards against the previous operation (at most two kernels are outstanding); a
        // chain counts as one operation: the producer checks the pair's accesses (nothing may
        // come between the two), the consumer none.
        let consumer = index > 0 && ops[index - 1].chain.is_some();
        if !consumer {
            let pair: &[&NpuOp] = if ops[index].chain.is_some() {
                &[op, &l.ops[index + 1]]
            } else {
                &[op]
            };
            let reads: Vec<Range> = pair
                .iter()
                .flat_map(|o| std::iter::once(&o.ifm).chain(o.ifm2.as_ref()))
                .filter_map(|fm| range(fm, p, l))
                .collect();
            let last = pair[pair.len() - 1];
            let write = range(&last.ofm, p, l).expect("OFM in memory");
            if let Some((preads, pwrite)) = &prev {
                let raw = reads.iter().any(|&r| overlaps(r, *pwrite));
                let war = preads.iter().any(|&r| overlaps(r, write));
                let waw = overlaps(write, *pwrite);
                if raw || war || waw {
                    w.kernel_wait(0);
                }
            }
            prev = Some((reads, write));
        }
        let reads_const = std::iter::once(&op.ifm)
            .chain(op.ifm2.as_ref())
            .any(|f| l.constants.contains_key(&f.buffer));
        let const_wait = consts_pending && reads_const;
        consts_pending &= !reads_const;
        let staged_here =
            !matches!(ops[index].staged, staging::Staged::Direct) || ops[index].copy.is_some();
        if lut_dma || staged_here || const_wait {
            w.dma_wait(0);
        }
        w.op(cmd);
        owners.push(index);
        // Further slices: slice j's DMA (into the buffer slice j - 2 read: KERNEL_WAIT 1 lets
        // it finish) runs alongside slice j - 1.
        for j in 1..pieces.len() {
            let (piece, layout, region, base) = &pieces[j];
            let size = match &ops[index].staged {
                staging::Staged::Sliced { slices, .. } => slices[j].enc.size(),
                _ => 0,
            };
            w.kernel_wait(1);
            weights::dma_commands(&mut w, blocks[index][j], *region, *base, size);
            let streams = layout.as_ref().map(|l| (l, *region, *base));
            let mut at = locs(piece, p, l, &consts);
            if let Some(c) = &ops[index].copy {
                at.ifm = (c.dst.0, c.dst.1 + piece.ifm.view.offset);
            }
            let (cmd, _) = op_commands(&mut w, piece, &block, streams, &at, act);
            w.dma_wait(0);
            w.op(cmd);
            owners.push(index);
        }
        if ops[index].chain.is_none() {
            done_at[index] = Some(w.commands.len() - 1);
        }
        if ops[index].chain.is_some() || consumer {
            // TRM 3.6.4: the next operation writes its IFM/IFM2 state again.
            w.forget(&chain::IFM_STATE);
        }
        if index + 1 < l.ops.len() && ops[index].chain.is_none() {
            stage_dma(&mut w, index + 1);
        }
        operators.push(OperatorInfo {
            name: op.name.clone(),
            kernel: kernel_name.to_string(),
            fused: op.fused.clone(),
            cycles: 0,
            ofm: (
                p.regions[op.ofm.buffer],
                p.offsets[op.ofm.buffer],
                l.buffers[op.ofm.buffer].size,
            ),
            done_at: None,
        });
    }
    w.stop();
    align16(&mut ro);
    let words = encode_stream(&w.commands).map_err(|e| TargetError::Stream(e.to_string()))?;
    // Word offsets of the commands.
    let mut word_at = Vec::with_capacity(w.commands.len());
    let mut at = 0usize;
    for c in &w.commands {
        word_at.push(at);
        at += if c.opcode().spec().kind == CmdKind::Cmd1 {
            2
        } else {
            1
        };
    }
    for (k, o) in operators.iter_mut().enumerate() {
        o.done_at = done_at[k].map(|i| word_at[i]);
    }
    let locations = l
        .ops
        .iter()
        .zip(ops)
        .map(|(op, o)| {
            let at = locs(op, p, l, &consts);
            OpLocations {
                ifm: match &o.copy {
                    Some(c) => (c.dst.0, c.dst.1 + op.ifm.view.offset),
                    None => at.ifm,
                },
                ifm2: at.ifm2,
                ofm: at.ofm,
                ifm_scalar: at.scalar.filter(|s| !s.ifm2).map(|s| s.value),
                ifm2_scalar: at.scalar.filter(|s| s.ifm2).map(|s| s.value),
            }
        })
        .collect();
    Ok(Written {
        payload: npuc_target::payload::TargetPayload::u85_command_stream(&words),
        read_only: ro,
        operators,
        owners,
        dma_owners: w.dma_owners,
        weights: weight_figures,
        locations,
        stream_offsets: blocks.iter().map(|b| b.first().copied()).collect(),
        const_copy: copy.map(|(c, from, len)| Transfer {
            from: (REGION_READ_ONLY, from),
            to: (c.region, c.at),
            bytes: len,
        }),
    })
}

/// The DMAs bringing IFM rows `rows` of cascade `c`'s first operation into its input ring
/// `r` (S23).
fn fill_ring(
    w: &mut CommandWriter,
    l: &npuc_backend_lower::Lowered,
    p: &npuc_target::alloc::Placement,
    c: &cascade::Cascade,
    r: cascade::InputRing,
    rows: (u32, u32),
) {
    let buf = l.ops[c.first].ifm.buffer;
    let (src_region, src) = (p.regions[buf], p.offsets[buf]);
    for (from, to, len) in cascade::fill_copies(l, c, r.rows, rows) {
        weights::copy_commands(w, (src_region, src + from), (r.region, r.at + to), len);
    }
}

/// The DMA registers' values of a lowered DMA operation.
fn dma_transfer(d: &DmaCopy) -> DmaTransfer {
    DmaTransfer {
        len: d.len,
        size0: d.size0,
        size1: d.size1,
        src_stride: d.src_stride,
        dst_stride: d.dst_stride,
        index: d.index.map(|i| match i {
            npuc_backend_lower::DmaIndex::Scatter(max) => DmaIndex::Scatter(max),
            npuc_backend_lower::DmaIndex::Gather(max) => DmaIndex::Gather(max),
        }),
    }
}
