//! Register command stream generation.
//!
//! Every operation lists the full register state it needs; a register command is emitted only
//! if its value differs from the last one emitted (or was never emitted). BLOCKDEP is 0 for the
//! whole stream (no overlap between consecutive operations is permitted), and a KERNEL_WAIT 0
//! precedes an operation that reads or writes bytes the previous operation read or wrote
//! (read-after-write, write-after-read, write-after-write). The stream ends with NPU_OP_STOP.

use super::alloc::Placement;
use super::lower::{Fm, Kernel, Lowered, NpuOp, Requant};
use super::{CompileError, OperatorInfo, REGION_READ_ONLY};
use crate::arch_interface::{BlockConfig, KernelKind, OpGeometry, Target};
use npuc_backend::isa::*;
use npuc_codecs::ordering::WeightOrder as CodecOrder;
use std::collections::BTreeMap;

mod dma;
mod fm;
mod kernel;
mod lut;
mod resize;
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

/// Region and byte range of a feature map's buffer (`None`: a read-only constant).
fn range(fm: &Fm, p: &Placement, l: &Lowered) -> Option<Range> {
    if l.constants.contains_key(&fm.buffer) {
        return None;
    }
    let off = p.offsets[fm.buffer];
    Some((p.regions[fm.buffer], off, off + l.buffers[fm.buffer].size))
}

/// Region and address of a feature map's element (0, 0, 0); constant buffers are appended
/// to the read-only data on first use.
fn locate(
    fm: &Fm,
    p: &Placement,
    l: &Lowered,
    ro: &mut Vec<u8>,
    consts: &mut BTreeMap<usize, u64>,
) -> (u8, u64) {
    match l.constants.get(&fm.buffer) {
        Some(bytes) => {
            let off = *consts.entry(fm.buffer).or_insert_with(|| {
                align16(ro);
                let off = ro.len() as u64;
                ro.extend_from_slice(bytes);
                off
            });
            (REGION_READ_ONLY, off + fm.view.offset)
        }
        None => (p.regions[fm.buffer], p.offsets[fm.buffer] + fm.view.offset),
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

/// Places the feature maps of a lowered graph and emits its command stream.
pub fn emit(target: &dyn Target, l: &Lowered) -> Result<Emitted, CompileError> {
    let placement = super::alloc::allocate(l, target.fast_storage(), &[]);
    let p = &placement;
    let mut w = Writer::default();
    let mut ro: Vec<u8> = Vec::new();
    let mut operators = Vec::new();
    let mut consts: BTreeMap<usize, u64> = BTreeMap::new();
    w.set(Command::SetBlockdep(SetBlockdep { blockdep: 0 }));
    // Byte ranges read and written by the previous operation.
    let mut prev: Option<Access> = None;
    let mut luts = lut::LutSlots::default();
    for (index, op) in l.ops.iter().enumerate() {
        if let Kernel::Dma(d) = &op.kernel {
            if prev.is_some() {
                w.op(Command::OpKernelWait(OpKernelWait { n: 0 }));
            }
            let src = locate(&op.ifm, p, l, &mut ro, &mut consts);
            let idx = op.ifm2.map(|f| locate(&f, p, l, &mut ro, &mut consts));
            let dst = locate(&op.ofm, p, l, &mut ro, &mut consts);
            dma::dma_commands(&mut w, d, src, dst, idx);
            prev = None;
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
        let geom = geometry(op);
        let block: BlockConfig = target.choose_block(&geom);
        let order = weights::weight_commands(&mut w, &mut ro, target, op, &geom, &block)?;
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
        if l.constants.contains_key(&op.ofm.buffer) {
            return Err(CompileError::Stream(format!(
                "{}: the output is a constant buffer",
                op.name
            )));
        }
        ifm_commands(
            &mut w,
            &op.ifm,
            locate(&op.ifm, p, l, &mut ro, &mut consts),
            op.upscale,
        );
        kernel_commands(&mut w, op, order);
        if let Kernel::Resize(rp) = &op.kernel {
            resize::resize_commands(&mut w, rp, (block.ofm_block.0, block.ofm_block.1));
        }
        ofm_commands(
            &mut w,
            op,
            (
                p.regions[op.ofm.buffer],
                p.offsets[op.ofm.buffer] + op.ofm.view.offset,
            ),
        );
        if let Some(ifm2) = &op.ifm2 {
            ifm2_commands(&mut w, ifm2, locate(ifm2, p, l, &mut ro, &mut consts));
            w.set(Command::SetIfmBroadcast(SetIfmBroadcast {
                broadcast_mode: broadcast(op.ifm.broadcast),
            }));
            w.set(Command::SetIfm2Broadcast(SetIfm2Broadcast {
                broadcast_mode: broadcast(ifm2.broadcast),
            }));
        } else if matches!(op.kernel, Kernel::Elementwise(_)) {
            // A unary elementwise operation still reads IFM_BROADCAST.
            w.set(Command::SetIfmBroadcast(SetIfmBroadcast {
                broadcast_mode: broadcast(op.ifm.broadcast),
            }));
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
        let (activation_function, table, dma) = match l.luts.get(&index) {
            Some(t) => {
                let (slot, dma) = luts.load(&mut w, &mut ro, t);
                (t.function, slot, dma)
            }
            None => (ActivationFunction::LutNone, 0, false),
        };
        w.set(Command::SetActivation(SetActivation {
            activation_function,
            table,
            activation_clip_range: ActivationClipRange::B16,
        }));
        w.set(Command::SetActivationMin(SetActivationMin {
            clip_boundary: zp16(op.act.0),
        }));
        w.set(Command::SetActivationMax(SetActivationMax {
            clip_boundary: zp16(op.act.1),
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
            acc_input: AccInput::Reset,
            acc_output: AccOutput::Enable,
            microblock: block.microblock.encoding,
        }));
        // Hazards against the previous operation (at most two kernels are outstanding).
        let reads: Vec<Range> = std::iter::once(&op.ifm)
            .chain(op.ifm2.as_ref())
            .filter_map(|fm| range(fm, p, l))
            .collect();
        let write = range(&op.ofm, p, l).expect("OFM in the arena");
        if let Some((preads, pwrite)) = &prev {
            let raw = reads.iter().any(|&r| overlaps(r, *pwrite));
            let war = preads.iter().any(|&r| overlaps(r, write));
            let waw = overlaps(write, *pwrite);
            if raw || war || waw {
                w.op(Command::OpKernelWait(OpKernelWait { n: 0 }));
            }
        }
        prev = Some((reads, write));
        let (cmd, kernel_name) = match op.kernel {
            // A CONV without weights takes them from IFM2 (matrix multiplication).
            Kernel::Conv => (
                Command::OpConv(OpConv {
                    weights_ifm2: u8::from(op.weights.is_none() && op.ifm2.is_some()),
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
        };
        if dma {
            w.op(Command::OpDmaWait(OpDmaWait { k: 0 }));
        }
        w.op(cmd);
        operators.push(OperatorInfo {
            name: op.name.clone(),
            kernel: kernel_name.to_string(),
            fused: op.fused.clone(),
            cycles: target.estimate_cycles(&geom),
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
    Ok(Emitted {
        words,
        read_only: ro,
        operators,
        placement,
    })
}
