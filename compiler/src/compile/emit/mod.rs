//! Register command stream generation.
//!
//! 1. `chain`: an OFM read only by the next operation, an ELEMENTWISE, goes through a
//!    chaining FIFO; the other feature maps are placed ([`super::alloc`]).
//! 2. `plan`: each operation's microblock, OFM block and weight order are chosen by the
//!    target's cost model among the candidates it offers, and its weight and scale streams are
//!    encoded for that choice; the streams of each operation form one block in region 0.
//! 3. `staging`: where the cost model says it pays and a buffer fits, an operation's block
//!    is copied by DMA into the staging memory while the previous operation runs.
//! 4. Emission: every operation lists the full register state it needs; a register command is
//!    emitted only if its value differs from the last one emitted (or was never emitted).
//!    BLOCKDEP is 0 for the whole stream (no overlap between consecutive operations is
//!    permitted), a KERNEL_WAIT 0 precedes an operation that reads or writes bytes the previous
//!    operation read or wrote (read-after-write, write-after-read, write-after-write), the DMA
//!    staging an operation's streams is issued right after the previous kernel command, and a
//!    DMA_WAIT 0 precedes a kernel whose streams (or LUT) a DMA brings. The stream ends with
//!    NPU_OP_STOP.

use super::alloc::Placement;
use super::lower::{Fm, Kernel, Lowered, NpuOp, Requant, ScalarOperand};
use super::{CompileError, OperatorInfo, WeightFigures, REGION_READ_ONLY};
use crate::arch_interface::{BlockConfig, KernelKind, OpGeometry, Target};
use npuc_backend::isa::*;
use npuc_codecs::ordering::WeightOrder as CodecOrder;
use std::collections::BTreeMap;

mod cascade;
mod chain;
mod dma;
mod fm;
mod kernel;
mod lut;
mod plan;
mod regs;
mod resize;
mod slice;
mod staging;
mod weights;

use fm::{broadcast, ifm2_commands, ifm_commands, ofm_commands};
use kernel::kernel_commands;
use regs::*;

/// The emitted stream and read-only data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    pub words: Vec<u32>,
    pub read_only: Vec<u8>,
    pub operators: Vec<OperatorInfo>,
    /// Where the feature maps live.
    pub placement: Placement,
    /// Estimated cycles of the whole stream (the target's cost model).
    pub total_cycles: u64,
    /// The weights and scales in the read-only region.
    pub weights: WeightFigures,
}

/// Emits commands, skipping register writes that do not change the value.
#[derive(Default)]
struct Writer {
    commands: Vec<Command>,
    state: BTreeMap<Opcode, Command>,
}

impl Writer {
    fn set(&mut self, c: Command) {
        let op = c.opcode();
        if self.state.get(&op) != Some(&c) {
            self.state.insert(op, c);
            self.commands.push(c);
        }
    }

    fn op(&mut self, c: Command) {
        self.commands.push(c);
    }

    /// Forgets the last value of these registers, so the next `set` writes them again.
    fn forget(&mut self, opcodes: &[Opcode]) {
        for o in opcodes {
            self.state.remove(o);
        }
    }
}

fn addr(v: u64) -> (u8, u32) {
    ((v >> 32) as u8, v as u32)
}

fn zp16(v: i64) -> u16 {
    v as i16 as u16
}

fn kind_of(k: Kernel) -> KernelKind {
    match k {
        Kernel::Conv => KernelKind::Conv,
        Kernel::Depthwise => KernelKind::Depthwise,
        Kernel::Pool(_) => KernelKind::Pool,
        Kernel::Elementwise(_) => KernelKind::Elementwise,
        // Block choice as for a 1x1 pool (the IFM block is never larger than the OFM block's).
        // (A DMA has no block.)
        Kernel::Resize(_) | Kernel::Dma(_) => KernelKind::Pool,
    }
}

fn geometry(op: &NpuOp) -> OpGeometry {
    let kd = (
        (op.kernel_size.0 - 1) * op.dilation.0 + 1,
        (op.kernel_size.1 - 1) * op.dilation.1 + 1,
    );
    OpGeometry {
        kind: kind_of(op.kernel),
        ofm: op.ofm.shape,
        ifm_depth: op.ifm.shape.2,
        kernel: kd,
        stride: op.stride,
        ifm_elem_bytes: op.ifm.elem_bytes(),
        ofm_elem_bytes: op.ofm.elem_bytes(),
        acc_bytes: match op.acc {
            AccFormat::I32 => 4,
            AccFormat::I48 => 8,
        },
        weights: op.weights.is_some(),
        sparse_2_4: op
            .weights
            .as_ref()
            .is_some_and(crate::arch_interface::is_sparse_2_4),
    }
}

/// ACTIVATION_PRECISION of a feature map's element type.
fn precision(fm: &Fm) -> ActivationPrecision {
    match fm.elem_bytes() {
        1 => ActivationPrecision::B8,
        2 => ActivationPrecision::B16,
        4 => ActivationPrecision::B32,
        _ => ActivationPrecision::B64,
    }
}

/// ACTIVATION_TYPE of a feature map's element type.
fn activation_type(fm: &Fm) -> ActivationType {
    if fm.dtype.is_unsigned() {
        ActivationType::Unsigned
    } else {
        ActivationType::Signed
    }
}

/// The constant buffers read as feature maps, in the order of first use.
pub(super) fn const_operands(l: &Lowered) -> Vec<usize> {
    let mut out = Vec::new();
    for op in &l.ops {
        for fm in std::iter::once(&op.ifm).chain(op.ifm2.as_ref()) {
            if l.constants.contains_key(&fm.buffer) && !out.contains(&fm.buffer) {
                out.push(fm.buffer);
            }
        }
    }
    out
}

/// Places the feature maps of a lowered graph, plans its operations and emits its command
/// stream.
pub fn emit(target: &dyn Target, l: &Lowered) -> Result<Emitted, CompileError> {
    for op in &l.ops {
        if l.constants.contains_key(&op.ofm.buffer) {
            return Err(CompileError::Stream(format!(
                "{}: the output is a constant buffer",
                op.name
            )));
        }
        if clip(op.act, op.ofm.dtype.is_unsigned()).is_none() {
            return Err(CompileError::Stream(format!(
                "{}: activation bounds {:?} are neither 16-bit nor absent",
                op.name, op.act
            )));
        }
    }
    let chains = chain::find(l);
    let chained_lowered;
    let l = if chains.iter().any(Option::is_some) {
        let mut c = l.clone();
        chain::extend_lifetimes(&mut c, &chains);
        chained_lowered = c;
        &chained_lowered
    } else {
        l
    };
    let skip: Vec<usize> = (0..l.ops.len())
        .filter(|&k| chains[k].is_some())
        .map(|k| l.ops[k].ofm.buffer)
        .collect();
    let mut placement = super::alloc::allocate(l, target.fast_storage(), &skip);
    // Where an intermediate feature map does not fit the fast memory, runs of operations may
    // be cascaded (computed band by band through ring buffers) when the cost model says so.
    let spills = (0..l.buffers.len()).any(|i| {
        let b = &l.buffers[i];
        placement.regions[i] == super::REGION_ARENA && !b.is_input && !b.is_output
    });
    let (cascades, uncascaded_plans) = if spills && target.fast_storage().is_some() {
        let plans = plan::plan(target, l, &placement)?;
        (
            cascade::choose(target, l, &placement, &plans, &chains),
            Some(plans),
        )
    } else {
        (Vec::new(), None)
    };
    let cascaded_lowered;
    let l = if cascades.is_empty() {
        l
    } else {
        let mut c = l.clone();
        cascade::apply(&mut c, &cascades);
        cascaded_lowered = c;
        placement = super::alloc::allocate(&cascaded_lowered, target.fast_storage(), &skip);
        &cascaded_lowered
    };
    // The cascade each operation belongs to.
    let mut in_cascade: Vec<Option<usize>> = vec![None; l.ops.len()];
    for (i, c) in cascades.iter().enumerate() {
        for slot in &mut in_cascade[c.first..=c.last] {
            *slot = Some(i);
        }
    }
    // Without cascades the operations and their placement are the ones just planned.
    let mut plans = match uncascaded_plans {
        Some(plans) if cascades.is_empty() => plans,
        _ => plan::plan(target, l, &placement)?,
    };
    // A consumer runs with its producer's block and microblock.
    for k in 0..l.ops.len() {
        if chains[k].is_some() {
            plans[k + 1].block = plans[k].block;
        }
    }
    let stage = staging::stage(target, l, &plans, &placement, &chains, &cascades);
    let (staged, copies, staged_end) = (&stage.how, &stage.copies, stage.end);
    if let Some((region, _)) = target.staging() {
        if region == super::REGION_FAST {
            placement.fast_size = placement.fast_size.max(staged_end);
        } else {
            placement.arena_size = placement.arena_size.max(staged_end);
        }
    }
    let p = &placement;
    let mut w = Writer::default();
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
    let blocks: Vec<Vec<u64>> = plans
        .iter()
        .zip(staged)
        .map(|(plan, how)| match how {
            staging::Staged::Sliced { slices, .. } => {
                slices.iter().map(|s| add_block(&s.enc)).collect()
            }
            _ => plan.enc.iter().map(&mut add_block).collect(),
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
    let copy = stage.consts.map(|c| {
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
    let stage_streams = |w: &mut Writer, k: usize| match &staged[k] {
        staging::Staged::Whole { region, at, wait } => {
            if let Some(enc) = plans[k].enc.as_ref() {
                if *wait {
                    w.op(Command::OpKernelWait(OpKernelWait { n: 1 }));
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
                w.op(Command::OpKernelWait(OpKernelWait { n: 1 }));
            }
            weights::dma_commands(w, blocks[k][0], *region, bufs[0], slices[0].enc.size())
        }
        staging::Staged::Cascade {
            region,
            blocks: at,
            wait,
        } => {
            if *wait {
                w.op(Command::OpKernelWait(OpKernelWait { n: 1 }));
            }
            for &(j, dst) in at {
                if let Some(enc) = plans[j].enc.as_ref() {
                    weights::dma_commands(w, blocks[j][0], *region, dst, enc.size());
                }
            }
        }
        staging::Staged::Direct => {}
    };
    // The DMAs bringing operation k's IFM copy and (first) stream block into the staging
    // memory.
    let stage_dma = |w: &mut Writer, k: usize| {
        if let Some(c) = &copies[k] {
            if c.wait {
                w.op(Command::OpKernelWait(OpKernelWait { n: 1 }));
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
        if let Some(ci) = in_cascade[index] {
            let c = &cascades[ci];
            if index != c.first {
                continue;
            }
            // Streams staged for the whole cascade: each operation's first piece waits for
            // its own DMA (they complete in order).
            let (region, copies) = match &staged[index] {
                staging::Staged::Cascade { region, blocks, .. } => (*region, blocks.clone()),
                _ => (REGION_READ_ONLY, Vec::new()),
            };
            let mut started = vec![false; l.ops.len()];
            for &piece in &c.pieces {
                let j = piece.0;
                let (s, at) = cascade::piece(l, p, &consts, c, piece);
                let block = cascade::piece_block(&plans[j].block, piece.2 - piece.1);
                let layout = plans[j].enc.as_ref().map(weights::Encoded::layout);
                let copy = copies.iter().position(|&(o, _)| o == j);
                let streams = layout.as_ref().map(|x| match copy {
                    Some(i) => (x, region, copies[i].1),
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
                let reads: Vec<Range> = std::iter::once(&o.ifm)
                    .chain(o.ifm2.as_ref())
                    .filter_map(|fm| range(fm, p, l))
                    .collect();
                let write = range(&o.ofm, p, l).expect("OFM in memory");
                if let Some((preads, pwrite)) = &prev {
                    let raw = reads.iter().any(|&r| overlaps(r, *pwrite));
                    let war = preads.iter().any(|&r| overlaps(r, write));
                    if raw || war || overlaps(write, *pwrite) {
                        w.op(Command::OpKernelWait(OpKernelWait { n: 0 }));
                    }
                }
                prev = Some((reads, write));
                if let (Some(i), false) = (copy, started[j]) {
                    let after = (copies.len() - 1 - i) as u8;
                    w.op(Command::OpDmaWait(OpDmaWait { k: after.min(3) }));
                }
                started[j] = true;
                w.op(cmd);
                owners.push(j);
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
                w.op(Command::OpKernelWait(OpKernelWait { n: 0 }));
            }
            let at = locs(op, p, l, &consts);
            dma::dma_commands(&mut w, d, at.ifm, at.ofm, at.ifm2);
            prev = None;
            if index + 1 < l.ops.len() {
                stage_dma(&mut w, index + 1);
            }
            done_at[index] = Some(w.commands.len() - 1);
            operators.push(OperatorInfo {
                name: op.name.clone(),
                kernel: "DMA".to_string(),
                fused: op.fused.clone(),
                cycles: dma::estimate_cycles(d),
                ofm: (
                    p.regions[op.ofm.buffer],
                    p.offsets[op.ofm.buffer],
                    l.buffers[op.ofm.buffer].size,
                ),
                done_at: None,
            });
            continue;
        }
        let plan = &plans[index];
        let lut = l.luts.get(&index);
        let (table, lut_dma) = luts.next_op(&mut w, &mut ro, lut);
        let act = (
            lut.map_or(ActivationFunction::LutNone, |t| t.function),
            table,
        );
        // The kernel operations of this operation: itself, or its slices.
        let block = match &staged[index] {
            staging::Staged::Sliced { block, .. } => *block,
            _ => plan.block,
        };
        let pieces: Vec<(&NpuOp, Option<weights::Layout>, u8, u64)> = match &staged[index] {
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
        if let Some(c) = &copies[index] {
            at.ifm = (c.dst.0, c.dst.1 + piece.ifm.view.offset);
        }
        let (cmd, kernel_name) = op_commands(&mut w, piece, &block, streams, &at, act);
        // Hazards against the previous operation (at most two kernels are outstanding); a
        // chain counts as one operation: the producer checks the pair's accesses (nothing may
        // come between the two), the consumer none.
        let consumer = index > 0 && chains[index - 1].is_some();
        if !consumer {
            let pair: &[&NpuOp] = if chains[index].is_some() {
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
                    w.op(Command::OpKernelWait(OpKernelWait { n: 0 }));
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
            !matches!(staged[index], staging::Staged::Direct) || copies[index].is_some();
        if lut_dma || staged_here || const_wait {
            w.op(Command::OpDmaWait(OpDmaWait { k: 0 }));
        }
        w.op(cmd);
        owners.push(index);
        // Further slices: slice j's DMA (into the buffer slice j - 2 read: KERNEL_WAIT 1 lets
        // it finish) runs alongside slice j - 1.
        for j in 1..pieces.len() {
            let (piece, layout, region, base) = &pieces[j];
            let size = match &staged[index] {
                staging::Staged::Sliced { slices, .. } => slices[j].enc.size(),
                _ => 0,
            };
            w.op(Command::OpKernelWait(OpKernelWait { n: 1 }));
            weights::dma_commands(&mut w, blocks[index][j], *region, *base, size);
            let streams = layout.as_ref().map(|l| (l, *region, *base));
            let mut at = locs(piece, p, l, &consts);
            if let Some(c) = &copies[index] {
                at.ifm = (c.dst.0, c.dst.1 + piece.ifm.view.offset);
            }
            let (cmd, _) = op_commands(&mut w, piece, &block, streams, &at, act);
            w.op(Command::OpDmaWait(OpDmaWait { k: 0 }));
            w.op(cmd);
            owners.push(index);
        }
        if chains[index].is_none() {
            done_at[index] = Some(w.commands.len() - 1);
        }
        if chains[index].is_some() || consumer {
            // TRM 3.6.4: the next operation writes its IFM/IFM2 state again.
            w.forget(&chain::IFM_STATE);
        }
        if index + 1 < l.ops.len() && chains[index].is_none() {
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
    w.op(Command::OpStop(OpStop { mask: 0xffff }));
    align16(&mut ro);
    let words = encode_stream(&w.commands).map_err(|e| CompileError::Stream(e.to_string()))?;
    let est = target.estimate_stream(&words).unwrap_or_default();
    // Kernel operations take their cycles from the stream's estimate (a sliced or cascaded
    // operation the sum of its parts'; DMA operations keep their own estimate).
    let mut cycles = vec![0u64; l.ops.len()];
    for (&o, &c) in owners.iter().zip(&est.kernel_cycles) {
        cycles[o] += c;
    }
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
        if o.kernel != "DMA" {
            o.cycles = cycles[k];
        }
        o.done_at = done_at[k].map(|i| word_at[i]);
    }
    Ok(Emitted {
        words,
        read_only: ro,
        operators,
        placement,
        total_cycles: est.total,
        weights: weight_figures,
    })
}
