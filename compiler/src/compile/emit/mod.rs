//! Register command stream generation.
//!
//! 1. [`chain`]: an OFM read only by the next operation, an ELEMENTWISE, goes through a
//!    chaining FIFO; the other feature maps are placed ([`super::alloc`]).
//! 2. [`plan`]: each operation's microblock, OFM block and weight order are chosen by the
//!    target's cost model among the candidates it offers, and its weight and scale streams are
//!    encoded for that choice; the streams of each operation form one block in region 0.
//! 3. [`staging`]: where the cost model says it pays and a buffer fits, an operation's block
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
use super::{CompileError, OperatorInfo, REGION_READ_ONLY};
use crate::arch_interface::{BlockConfig, KernelKind, OpGeometry, Target};
use npuc_backend::isa::*;
use npuc_codecs::ordering::WeightOrder as CodecOrder;
use std::collections::BTreeMap;

mod chain;
mod dma;
mod fm;
mod kernel;
mod lut;
mod plan;
mod resize;
mod slice;
mod staging;
mod weights;

use fm::{broadcast, ifm2_commands, ifm_commands, ofm_commands};
use kernel::kernel_commands;

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

/// A byte range of one region: (region, start, end).
type Range = (u8, u64, u64);

/// Region and byte range of a feature map's buffer (`None`: a read-only constant or a
/// chained feature map, which is in no memory).
fn range(fm: &Fm, p: &Placement, l: &Lowered) -> Option<Range> {
    if l.constants.contains_key(&fm.buffer) || p.regions[fm.buffer] == super::alloc::CHAINED {
        return None;
    }
    let off = p.offsets[fm.buffer];
    Some((p.regions[fm.buffer], off, off + l.buffers[fm.buffer].size))
}

/// Region and address of a feature map's element (0, 0, 0); constant buffers are read from
/// their read-only offsets (`consts`; offset 0 when not given, for estimates).
fn locate(fm: &Fm, p: &Placement, l: &Lowered, consts: &BTreeMap<usize, u64>) -> (u8, u64) {
    if l.constants.contains_key(&fm.buffer) {
        let off = consts.get(&fm.buffer).copied().unwrap_or(0);
        return (REGION_READ_ONLY, off + fm.view.offset);
    }
    (p.regions[fm.buffer], p.offsets[fm.buffer] + fm.view.offset)
}

/// Where an operation's feature maps are: IFM, IFM2, OFM as (region, address) and storage
/// (a chained feature map is in chaining FIFO 0, TRM 3.6.4), and its scalar operand (which
/// reads no memory).
struct Locs {
    ifm: (u8, u64),
    ifm2: Option<(u8, u64)>,
    ofm: (u8, u64),
    storage: [ActivationStorage; 3],
    scalar: Option<ScalarOperand>,
}

/// CLIP range and ACTIVATION_MIN/MAX of activation bounds: 16-bit bounds clamp (`b16`);
/// bounds at or beyond the i32 range mean no clamp (`none`).
fn clip(act: (i64, i64)) -> Option<(ActivationClipRange, i64, i64)> {
    let b16 = |v: i64| (-32768..=32767).contains(&v);
    if b16(act.0) && b16(act.1) {
        Some((ActivationClipRange::B16, act.0, act.1))
    } else if act.0 <= i64::from(i32::MIN) && act.1 >= i64::from(i32::MAX) {
        Some((ActivationClipRange::None, -32768, 32767))
    } else {
        None
    }
}

/// The locations of `op`, an element of `l.ops`.
fn locs(op: &NpuOp, p: &Placement, l: &Lowered, consts: &BTreeMap<usize, u64>) -> Locs {
    let scalar = l
        .scalars
        .iter()
        .find(|(&i, _)| std::ptr::eq(&l.ops[i], op))
        .map(|(_, &s)| s);
    let chained = |f: &Fm| p.regions.get(f.buffer) == Some(&super::alloc::CHAINED);
    let at = |f: &Fm| {
        if chained(f) {
            (0, 0)
        } else {
            locate(f, p, l, consts)
        }
    };
    let storage = |f: Option<&Fm>| {
        if f.is_some_and(chained) {
            ActivationStorage::Chained
        } else {
            ActivationStorage::Tile2x2
        }
    };
    Locs {
        ifm: at(&op.ifm),
        ifm2: op.ifm2.as_ref().map(at),
        ofm: at(&op.ofm),
        storage: [
            storage(Some(&op.ifm)),
            storage(op.ifm2.as_ref()),
            storage(Some(&op.ofm)),
        ],
        scalar,
    }
}

fn overlaps(a: Range, b: Range) -> bool {
    a.0 == b.0 && a.1 < b.2 && b.1 < a.2
}
fn align16(ro: &mut Vec<u8>) {
    ro.resize(ro.len().next_multiple_of(16), 0);
}

/// Byte ranges an operation reads and the range it writes.
type Access = (Vec<Range>, Range);

/// The weight and scale streams an operation reads: their layout, region, block base.
type StreamsAt<'a> = (&'a weights::Layout, u8, u64);

/// Writes every register `op` reads (skipping unchanged ones) and returns its kernel command
/// and kernel name; the caller issues the command.
fn op_commands(
    w: &mut Writer,
    op: &NpuOp,
    block: &BlockConfig,
    streams: Option<StreamsAt>,
    at: &Locs,
    (activation_function, table): (ActivationFunction, u8),
) -> (Command, &'static str) {
    if let Some((layout, region, base)) = streams {
        weights::weight_registers(w, layout, region, base);
    }
    let order = match block.weight_order {
        CodecOrder::DepthFirst => WeightOrder::DepthFirst,
        CodecOrder::PartKernelFirst => WeightOrder::PartKernelFirst,
    };
    // OFM_SCALE carries the round mode (always) and the global scale.
    let (scale, shift) = match &op.requant {
        Requant::Global { scale, shift } => (*scale, *shift),
        Requant::PerChannel(ch) => ch.first().map_or((0, 0), |c| (c.scale, c.shift)),
    };
    w.set(Command::SetOfmScale(SetOfmScale {
        shift,
        dbl_rnd: 0,
        round_mode: op.round,
        scale,
    }));
    let scalar = at.scalar;
    match scalar {
        Some(s) if !s.ifm2 => fm::ifm_scalar_commands(w, &op.ifm, s.value),
        _ => ifm_commands(w, &op.ifm, at.ifm, op.upscale, at.storage[0]),
    }
    kernel_commands(w, op, order);
    if let Kernel::Resize(rp) = &op.kernel {
        resize::resize_commands(w, rp, (block.ofm_block.0, block.ofm_block.1));
    }
    ofm_commands(w, op, at.ofm, at.storage[2]);
    // A scalar operand: OP_SCALAR with broadcast mode scalar.
    let mode = |fm: &Fm, is_scalar: bool| {
        if is_scalar {
            BroadcastMode::Scalar
        } else {
            broadcast(fm.broadcast)
        }
    };
    if let (Some(ifm2), Some(loc2)) = (&op.ifm2, at.ifm2) {
        match scalar {
            Some(s) if s.ifm2 => fm::ifm2_scalar_commands(w, ifm2, s.value),
            _ => ifm2_commands(w, ifm2, loc2, at.storage[1]),
        }
        w.set(Command::SetIfmBroadcast(SetIfmBroadcast {
            broadcast_mode: mode(&op.ifm, scalar.is_some_and(|s| !s.ifm2)),
        }));
        w.set(Command::SetIfm2Broadcast(SetIfm2Broadcast {
            broadcast_mode: mode(ifm2, scalar.is_some_and(|s| s.ifm2)),
        }));
    } else if matches!(op.kernel, Kernel::Elementwise(_)) {
        // A unary elementwise operation still reads IFM_BROADCAST.
        w.set(Command::SetIfmBroadcast(SetIfmBroadcast {
            broadcast_mode: broadcast(op.ifm.broadcast),
        }));
        if op.kernel == Kernel::Elementwise(ElementwiseMode::Lrelu) {
            // scale_b (lrelu's negative half) acts per IFM2_PRECISION (TRM 3.6.6).
            fm::ifm2_precision(w, &op.ifm);
        }
    }
    if let Some(s) = op.ifm_scale {
        w.set(Command::SetIfmScale(SetIfmScale {
            shift: s.shift,
            dbl_rnd: s.dbl_rnd,
            round_mode: s.round,
            scale: s.scale,
        }));
    }
    if let Some(s) = op.ifm2_scale {
        w.set(Command::SetIfm2Scale(SetIfm2Scale {
            shift: s.shift,
            dbl_rnd: s.dbl_rnd,
            round_mode: s.round,
            scale: s.scale,
        }));
    }
    // Bounds are checked by `emit` before any command is written.
    let (clip_range, lo, hi) = clip(op.act).unwrap_or((ActivationClipRange::B16, 0, 0));
    w.set(Command::SetActivation(SetActivation {
        activation_function,
        table,
        activation_clip_range: clip_range,
    }));
    w.set(Command::SetActivationMin(SetActivationMin {
        clip_boundary: zp16(lo),
    }));
    w.set(Command::SetActivationMax(SetActivationMax {
        clip_boundary: zp16(hi),
    }));
    let (bh, bw, bd) = block.ofm_block;
    w.set(Command::SetOfmBlkHeightM1(SetOfmBlkHeightM1 {
        height_m1: (bh - 1) as u8,
    }));
    w.set(Command::SetOfmBlkWidthM1(SetOfmBlkWidthM1 {
        width_m1: (bw - 1) as u8,
    }));
    w.set(Command::SetOfmBlkDepthM1(SetOfmBlkDepthM1 {
        depth_m1: (bd - 1) as u16,
    }));
    w.set(Command::SetAccFormat(SetAccFormat {
        acc_format: op.acc,
        acc_input: if op.acc_from_ifm2() {
            AccInput::Ifm2
        } else {
            AccInput::Reset
        },
        acc_output: AccOutput::Enable,
        microblock: block.microblock.encoding,
    }));
    match op.kernel {
        // A CONV without weights takes them from IFM2 (matrix multiplication).
        Kernel::Conv => (
            Command::OpConv(OpConv {
                weights_ifm2: u8::from(op.ifm2.is_some() && !op.acc_from_ifm2()),
            }),
            "CONV",
        ),
        Kernel::Depthwise => (Command::OpDepthwise(OpDepthwise {}), "DEPTHWISE"),
        Kernel::Pool(mode) => (Command::OpPool(OpPool { pooling_mode: mode }), "POOL"),
        Kernel::Elementwise(mode) => (
            Command::OpElementwise(OpElementwise {
                elementwise_mode: mode,
            }),
            "ELEMENTWISE",
        ),
        Kernel::Resize(rp) => (
            Command::OpResize(OpResize {
                resize_mode: rp.mode,
            }),
            "RESIZE",
        ),
        Kernel::Dma(_) => (Command::OpDmaStart(OpDmaStart {}), "DMA"),
    }
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
        if clip(op.act).is_none() {
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
    let mut plans = plan::plan(target, l, &placement)?;
    // A consumer runs with its producer's block and microblock.
    for k in 0..l.ops.len() {
        if chains[k].is_some() {
            plans[k + 1].block = plans[k].block;
        }
    }
    let (staged, staged_end) = staging::stage(target, l, &plans, &placement, &chains);
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
    // Read-only offset of each operation's stream block (one per slice for a sliced one).
    let mut add_block = |e: &weights::Encoded| {
        align16(&mut ro);
        let at = ro.len() as u64;
        ro.extend_from_slice(&e.block());
        at
    };
    let blocks: Vec<Vec<u64>> = plans
        .iter()
        .zip(&staged)
        .map(|(plan, how)| match how {
            staging::Staged::Sliced { slices, .. } => {
                slices.iter().map(|s| add_block(&s.enc)).collect()
            }
            _ => plan.enc.iter().map(&mut add_block).collect(),
        })
        .collect();
    let mut consts: BTreeMap<usize, u64> = BTreeMap::new();
    for op in &l.ops {
        for fm in std::iter::once(&op.ifm).chain(op.ifm2.as_ref()) {
            if let Some(bytes) = l.constants.get(&fm.buffer) {
                consts.entry(fm.buffer).or_insert_with(|| {
                    align16(&mut ro);
                    let at = ro.len() as u64;
                    ro.extend_from_slice(bytes);
                    at
                });
            }
        }
    }
    // The DMA bringing operation k's (first) stream block into the staging memory.
    let stage_dma = |w: &mut Writer, k: usize| match &staged[k] {
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
        staging::Staged::Direct => {}
    };
    w.set(Command::SetBlockdep(SetBlockdep { blockdep: 0 }));
    if !l.ops.is_empty() {
        stage_dma(&mut w, 0);
    }
    // Byte ranges read and written by the previous operation.
    let mut prev: Option<Access> = None;
    let mut luts = lut::LutSlots::default();
    let mut operators = Vec::new();
    // Kernel operations per (non-DMA) operation.
    let mut kernels: Vec<usize> = Vec::new();
    for (index, op) in l.ops.iter().enumerate() {
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
            staging::Staged::Direct => vec![(
                op,
                plan.enc.as_ref().map(|e| e.layout()),
                REGION_READ_ONLY,
                blocks[index].first().copied().unwrap_or(0),
            )],
        };
        let (piece, layout, region, base) = &pieces[0];
        let streams = layout.as_ref().map(|l| (l, *region, *base));
        let at = locs(piece, p, l, &consts);
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
        let staged_here = !matches!(staged[index], staging::Staged::Direct);
        if lut_dma || staged_here {
            w.op(Command::OpDmaWait(OpDmaWait { k: 0 }));
        }
        w.op(cmd);
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
            let at = locs(piece, p, l, &consts);
            let (cmd, _) = op_commands(&mut w, piece, &block, streams, &at, act);
            w.op(Command::OpDmaWait(OpDmaWait { k: 0 }));
            w.op(cmd);
        }
        if chains[index].is_some() || consumer {
            // TRM 3.6.4: the next operation writes its IFM/IFM2 state again.
            w.forget(&chain::IFM_STATE);
        }
        if index + 1 < l.ops.len() && chains[index].is_none() {
            stage_dma(&mut w, index + 1);
        }
        kernels.push(pieces.len());
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
        });
    }
    w.op(Command::OpStop(OpStop { mask: 0xffff }));
    align16(&mut ro);
    let words = encode_stream(&w.commands).map_err(|e| CompileError::Stream(e.to_string()))?;
    let est = target.estimate_stream(&words).unwrap_or_default();
    // Kernel operations take their cycles from the stream's estimate, in order (a sliced
    // operation the sum of its slices'; DMA operations keep their own estimate).
    let mut next = est.kernel_cycles.iter();
    for (o, &n) in operators
        .iter_mut()
        .filter(|o| o.kernel != "DMA")
        .zip(&kernels)
    {
        o.cycles = next.by_ref().take(n).sum();
    }
    Ok(Emitted {
        words,
        read_only: ro,
        operators,
        placement,
        total_cycles: est.total,
    })
}
