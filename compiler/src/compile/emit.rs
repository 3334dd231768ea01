//! Register command stream generation.
//!
//! Every operation lists the full register state it needs; a register command is emitted only
//! if its value differs from the last one emitted (or was never emitted). BLOCKDEP is 0 for the
//! whole stream (no overlap between consecutive operations is permitted), and a KERNEL_WAIT 0
//! precedes an operation that reads or writes bytes the previous operation read or wrote
//! (read-after-write, write-after-read, write-after-write). The stream ends with NPU_OP_STOP.

use super::alloc::Placement;
use super::lower::{Fm, Kernel, Lowered, NpuOp, Requant};
use super::{CompileError, OperatorInfo, REGION_ARENA, REGION_READ_ONLY};
use crate::arch_interface::{BlockConfig, KernelKind, OpGeometry, Target};
use npuc_backend::isa::*;
use npuc_codecs::ordering::WeightOrder as CodecOrder;
use std::collections::BTreeMap;

/// The emitted stream and read-only data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    pub words: Vec<u32>,
    pub read_only: Vec<u8>,
    pub operators: Vec<OperatorInfo>,
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
        ifm_elem_bytes: 1,
        ofm_elem_bytes: 1,
    }
}

/// Byte range of a feature map in the arena.
fn range(fm: &Fm, p: &Placement, l: &Lowered) -> (u64, u64) {
    let off = p.offsets[fm.buffer];
    (off, off + l.buffers[fm.buffer].size)
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

fn ifm_commands(w: &mut Writer, fm: &Fm, base: u64) {
    let (h, wd, c) = fm.shape;
    let (hi, lo) = addr(base);
    let (shi, slo) = addr(u64::from(wd) * u64::from(c));
    let (xhi, xlo) = addr(u64::from(c));
    w.set(Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Tile2x2,
    }));
    w.set(Command::SetIfmRegion(SetIfmRegion {
        region: REGION_ARENA,
    }));
    w.set(Command::SetIfmBase0(SetIfmBase0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetIfmBase1(SetIfmBase1::default()));
    w.set(Command::SetIfmBase2(SetIfmBase2::default()));
    w.set(Command::SetIfmBase3(SetIfmBase3::default()));
    w.set(Command::SetIfmHeight0M1(SetIfmHeight0M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetIfmHeight1M1(SetIfmHeight1M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetIfmWidth0M1(SetIfmWidth0M1 {
        width_m1: (wd - 1) as u16,
    }));
    w.set(Command::SetIfmDepthM1(SetIfmDepthM1 {
        depth_m1: (c - 1) as u16,
    }));
    w.set(Command::SetIfmStrideY(SetIfmStrideY {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetIfmStrideX(SetIfmStrideX {
        addr_hi: xhi,
        addr_lo: xlo,
    }));
    w.set(Command::SetIfmStrideC(SetIfmStrideC {
        addr_hi: 0,
        addr_lo: 1,
    }));
    w.set(Command::SetIfmZeroPoint(SetIfmZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
    w.set(Command::SetIfmUpscale(SetIfmUpscale {
        mode: IfmUpscaleMode::None,
    }));
}

fn ifm2_commands(w: &mut Writer, fm: &Fm, base: u64) {
    let (h, wd, c) = fm.shape;
    let (hi, lo) = addr(base);
    let (shi, slo) = addr(u64::from(wd) * u64::from(c));
    let (xhi, xlo) = addr(u64::from(c));
    w.set(Command::SetIfm2Precision(SetIfm2Precision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Tile2x2,
    }));
    w.set(Command::SetIfm2Region(SetIfm2Region {
        region: REGION_ARENA,
    }));
    w.set(Command::SetIfm2Base0(SetIfm2Base0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetIfm2Base1(SetIfm2Base1::default()));
    w.set(Command::SetIfm2Base2(SetIfm2Base2::default()));
    w.set(Command::SetIfm2Base3(SetIfm2Base3::default()));
    w.set(Command::SetIfm2Height0M1(SetIfm2Height0M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetIfm2Height1M1(SetIfm2Height1M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetIfm2Width0M1(SetIfm2Width0M1 {
        width_m1: (wd - 1) as u16,
    }));
    w.set(Command::SetIfm2StrideY(SetIfm2StrideY {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetIfm2StrideX(SetIfm2StrideX {
        addr_hi: xhi,
        addr_lo: xlo,
    }));
    w.set(Command::SetIfm2StrideC(SetIfm2StrideC {
        addr_hi: 0,
        addr_lo: 1,
    }));
    w.set(Command::SetIfm2ZeroPoint(SetIfm2ZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
}

fn broadcast(b: (bool, bool, bool)) -> BroadcastMode {
    let bits = u32::from(b.0) | (u32::from(b.1) << 1) | (u32::from(b.2) << 2);
    BroadcastMode::from_raw(bits).unwrap_or(BroadcastMode::None)
}

fn ofm_commands(w: &mut Writer, op: &NpuOp, base: u64) {
    let (h, wd, c) = op.ofm.shape;
    let (hi, lo) = addr(base);
    let (shi, slo) = addr(u64::from(wd) * u64::from(c));
    let (xhi, xlo) = addr(u64::from(c));
    let scale_mode = match op.requant {
        Requant::PerChannel(_) => OfmScaleMode::PerChannel,
        Requant::Global { .. } => OfmScaleMode::Global,
    };
    w.set(Command::SetOfmPrecision(SetOfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        scale_mode,
        activation_reverse: ActivationReverse::None,
        activation_transpose: ActivationTranspose::Hwc,
        activation_storage: ActivationStorage::Tile2x2,
    }));
    w.set(Command::SetOfmRegion(SetOfmRegion {
        region: REGION_ARENA,
    }));
    w.set(Command::SetOfmBase0(SetOfmBase0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetOfmBase1(SetOfmBase1::default()));
    w.set(Command::SetOfmBase2(SetOfmBase2::default()));
    w.set(Command::SetOfmBase3(SetOfmBase3::default()));
    w.set(Command::SetOfmHeightM1(SetOfmHeightM1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetOfmWidthM1(SetOfmWidthM1 {
        width_m1: (wd - 1) as u16,
    }));
    w.set(Command::SetOfmDepthM1(SetOfmDepthM1 {
        depth_m1: (c - 1) as u16,
    }));
    w.set(Command::SetOfmHeight0M1(SetOfmHeight0M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetOfmHeight1M1(SetOfmHeight1M1 {
        height_m1: (h - 1) as u16,
    }));
    w.set(Command::SetOfmWidth0M1(SetOfmWidth0M1 {
        width_m1: (wd - 1) as u16,
    }));
    w.set(Command::SetOfmStrideY(SetOfmStrideY {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetOfmStrideX(SetOfmStrideX {
        addr_hi: xhi,
        addr_lo: xlo,
    }));
    w.set(Command::SetOfmStrideC(SetOfmStrideC {
        addr_hi: 0,
        addr_lo: 1,
    }));
    w.set(Command::SetOfmZeroPoint(SetOfmZeroPoint {
        zero_point: zp16(op.ofm.zero_point),
    }));
}

fn kernel_commands(w: &mut Writer, op: &NpuOp, order: WeightOrder) {
    let kd = (
        (op.kernel_size.0 - 1) * op.dilation.0 + 1,
        (op.kernel_size.1 - 1) * op.dilation.1 + 1,
    );
    let dil = |d: u32| {
        if d == 2 {
            KernelDilation::X2
        } else {
            KernelDilation::None
        }
    };
    let (sy, sx) = (op.stride.0 - 1, op.stride.1 - 1);
    w.set(Command::SetKernelHeightM1(SetKernelHeightM1 {
        height_m1: (kd.0 - 1) as u16,
    }));
    w.set(Command::SetKernelWidthM1(SetKernelWidthM1 {
        width_m1: (kd.1 - 1) as u16,
    }));
    w.set(Command::SetKernelStride(SetKernelStride {
        stride_x_lsb: (sx & 1) as u8,
        stride_y_lsb: (sy & 1) as u8,
        weight_order: order,
        dilation_x: dil(op.dilation.1),
        dilation_y: dil(op.dilation.0),
        decomposition: KernelDecomposition::D8x8,
        stride_x_msb: (sx >> 1) as u8,
        stride_y_msb: (sy >> 1) as u8,
    }));
    w.set(Command::SetIfmPadTop(SetIfmPadTop {
        pad: op.pad[0] as u8,
    }));
    w.set(Command::SetIfmPadBottom(SetIfmPadBottom {
        pad: op.pad[1] as u8,
    }));
    w.set(Command::SetIfmPadLeft(SetIfmPadLeft {
        pad: op.pad[2] as u8,
    }));
    w.set(Command::SetIfmPadRight(SetIfmPadRight {
        pad: op.pad[3] as u8,
    }));
}

fn align16(ro: &mut Vec<u8>) {
    ro.resize(ro.len().next_multiple_of(16), 0);
}

/// Byte ranges an operation reads and the range it writes.
type Access = (Vec<(u64, u64)>, (u64, u64));

/// Emits the command stream of a lowered, placed graph.
pub fn emit(target: &dyn Target, l: &Lowered, p: &Placement) -> Result<Emitted, CompileError> {
    let mut w = Writer::default();
    let mut ro: Vec<u8> = Vec::new();
    let mut operators = Vec::new();
    w.set(Command::SetBlockdep(SetBlockdep { blockdep: 0 }));
    // Byte ranges read and written by the previous operation.
    let mut prev: Option<Access> = None;
    for op in &l.ops {
        let geom = geometry(op);
        let block: BlockConfig = target.choose_block(&geom);
        let enc_err = |source| CompileError::Encode {
            name: op.name.clone(),
            source,
        };
        let mut order = WeightOrder::DepthFirst;
        // Read-only data: scale stream, then the weight streams.
        if let Some(weights) = &op.weights {
            let Requant::PerChannel(channels) = &op.requant else {
                return Err(CompileError::Stream(format!(
                    "{}: weights without per-channel scales",
                    op.name
                )));
            };
            let scales = target.encode_scales(channels, &block).map_err(enc_err)?;
            let enc = target
                .encode_weights(geom.kind, weights, op.stride, op.dilation, &block)
                .map_err(enc_err)?;
            order = match enc.order {
                CodecOrder::DepthFirst => WeightOrder::DepthFirst,
                CodecOrder::PartKernelFirst => WeightOrder::PartKernelFirst,
            };
            align16(&mut ro);
            let (shi, slo) = addr(ro.len() as u64);
            ro.extend_from_slice(&scales);
            w.set(Command::SetScaleRegion(SetScaleRegion {
                region: REGION_READ_ONLY,
            }));
            w.set(Command::SetScaleBase(SetScaleBase {
                addr_hi: shi,
                addr_lo: slo,
            }));
            w.set(Command::SetScaleLength(SetScaleLength {
                length: scales.len() as u32,
            }));
            w.set(Command::SetWeightFormat(SetWeightFormat {
                weight_format: WeightFormat::Swd,
                weight_sparsity: WeightSparsity::None,
            }));
            w.set(Command::SetWeightRegion(SetWeightRegion {
                region: REGION_READ_ONLY,
            }));
            for (k, s) in enc.streams.iter().enumerate() {
                align16(&mut ro);
                let (hi, lo) = addr(ro.len() as u64);
                let len = s.len() as u32;
                ro.extend_from_slice(s);
                let (b, l) = match k {
                    0 => (
                        Command::SetWeightBase(SetWeightBase {
                            addr_hi: hi,
                            addr_lo: lo,
                        }),
                        Command::SetWeightLength(SetWeightLength { length: len }),
                    ),
                    1 => (
                        Command::SetWeight1Base(SetWeight1Base {
                            addr_hi: hi,
                            addr_lo: lo,
                        }),
                        Command::SetWeight1Length(SetWeight1Length { length: len }),
                    ),
                    2 => (
                        Command::SetWeight2Base(SetWeight2Base {
                            addr_hi: hi,
                            addr_lo: lo,
                        }),
                        Command::SetWeight2Length(SetWeight2Length { length: len }),
                    ),
                    _ => (
                        Command::SetWeight3Base(SetWeight3Base {
                            addr_hi: hi,
                            addr_lo: lo,
                        }),
                        Command::SetWeight3Length(SetWeight3Length { length: len }),
                    ),
                };
                w.set(b);
                w.set(l);
            }
        }
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
        ifm_commands(&mut w, &op.ifm, p.offsets[op.ifm.buffer]);
        kernel_commands(&mut w, op, order);
        ofm_commands(&mut w, op, p.offsets[op.ofm.buffer]);
        if let Some(ifm2) = &op.ifm2 {
            ifm2_commands(&mut w, ifm2, p.offsets[ifm2.buffer]);
            w.set(Command::SetIfmBroadcast(SetIfmBroadcast {
                broadcast_mode: broadcast(op.ifm.broadcast),
            }));
            w.set(Command::SetIfm2Broadcast(SetIfm2Broadcast {
                broadcast_mode: broadcast(ifm2.broadcast),
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
        w.set(Command::SetActivation(SetActivation {
            activation_function: ActivationFunction::LutNone,
            table: 0,
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
            acc_format: AccFormat::I32,
            acc_input: AccInput::Reset,
            acc_output: AccOutput::Enable,
            microblock: block.microblock.encoding,
        }));
        // Hazards against the previous operation (at most two kernels are outstanding).
        let reads: Vec<(u64, u64)> = std::iter::once(&op.ifm)
            .chain(op.ifm2.as_ref())
            .map(|fm| range(fm, p, l))
            .collect();
        let write = range(&op.ofm, p, l);
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
            Kernel::Conv => (Command::OpConv(OpConv { weights_ifm2: 0 }), "CONV"),
            Kernel::Depthwise => (Command::OpDepthwise(OpDepthwise {}), "DEPTHWISE"),
            Kernel::Pool(mode) => (Command::OpPool(OpPool { pooling_mode: mode }), "POOL"),
            Kernel::Elementwise(mode) => (
                Command::OpElementwise(OpElementwise {
                    elementwise_mode: mode,
                }),
                "ELEMENTWISE",
            ),
        };
        w.op(cmd);
        operators.push(OperatorInfo {
            name: op.name.clone(),
            kernel: kernel_name.to_string(),
            fused: op.fused.clone(),
            cycles: target.estimate_cycles(&geom),
        });
    }
    w.op(Command::OpStop(OpStop { mask: 0xffff }));
    align16(&mut ro);
    let words = encode_stream(&w.commands).map_err(|e| CompileError::Stream(e.to_string()))?;
    Ok(Emitted {
        words,
        read_only: ro,
        operators,
    })
}
