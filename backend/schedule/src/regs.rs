//! The register state of one kernel operation: where its feature maps are, and the commands
//! that set every register it reads.

use super::{activation_type, precision, weights};
use crate::target::U85Block;
use npuc_backend::isa::{
    AccInput, ActivationFunction, ActivationStorage, BroadcastMode, Command, ElementwiseMode,
    IfmUpscaleMode, OfmScaleMode, OpConv, OpDepthwise, OpDmaStart, OpElementwise, OpPool, OpResize,
    SetIfm2Broadcast, SetIfm2Scale, SetIfmBroadcast, SetIfmScale, SetOfmScale,
};
use npuc_backend::writer::fm::{
    broadcast, write_feature_map, write_precision, write_scalar, FeatureMapRegs, FmGroup,
    FmPrecision,
};
use npuc_backend::writer::kernel::{write_kernel, KernelRegs};
use npuc_backend::writer::output::{write_activation, write_block};
use npuc_backend::writer::resize::{write_resize, ResizeAxisRegs};
use npuc_backend::writer::CommandWriter;
pub(super) use npuc_backend_lower::kernel_name;
use npuc_backend_lower::{Fm, Kernel, Lowered, NpuOp, Requant, ScalarOperand};
use npuc_target::alloc::Placement;
use npuc_target::arch_interface::BlockConfig;
use npuc_target::arch_interface::REGION_READ_ONLY;
use std::collections::BTreeMap;

/// A byte range of one region: (region, start, end).
pub(super) type Range = (u8, u64, u64);

/// Region and byte range of a feature map's buffer (`None`: a read-only constant or a
/// chained feature map, which is in no memory).
pub(super) fn range(fm: &Fm, p: &Placement, l: &Lowered) -> Option<Range> {
    if l.constants.contains_key(&fm.buffer) || p.regions[fm.buffer] == npuc_target::alloc::CHAINED {
        return None;
    }
    let off = p.offsets[fm.buffer];
    Some((p.regions[fm.buffer], off, off + l.buffers[fm.buffer].size))
}

/// Where each constant buffer read as a feature map is: (region, offset) — its read-only
/// copy in region 0, or a copy in the staging memory.
pub(super) type Consts = BTreeMap<usize, (u8, u64)>;

/// Region and address of a feature map's element (0, 0, 0); constant buffers are read where
/// `consts` says (region 0 offset 0 when not given, for estimates).
pub(super) fn locate(fm: &Fm, p: &Placement, l: &Lowered, consts: &Consts) -> (u8, u64) {
    if l.constants.contains_key(&fm.buffer) {
        let (region, off) = consts
            .get(&fm.buffer)
            .copied()
            .unwrap_or((REGION_READ_ONLY, 0));
        return (region, off + fm.view.offset);
    }
    (p.regions[fm.buffer], p.offsets[fm.buffer] + fm.view.offset)
}

/// Where an operation's feature maps are: IFM, IFM2, OFM as (region, address) and storage
/// (a chained feature map is in chaining FIFO 0, TRM 3.6.4), and its scalar operand (which
/// reads no memory).
#[derive(Clone, PartialEq)]
pub(super) struct Locs {
    pub(super) ifm: (u8, u64),
    pub(super) ifm2: Option<(u8, u64)>,
    pub(super) ofm: (u8, u64),
    pub(super) storage: [ActivationStorage; 3],
    pub(super) scalar: Option<ScalarOperand>,
    /// IFM, IFM2, OFM rows that wrap around a ring buffer ([`cascade`]): the rows in tile 0
    /// and the address of tile 2, which holds the rest (TRM 3.6.5 tile2x2).
    pub(super) wrap: [Wrap; 3],
}

/// Rows of a feature map that continue at another address: (rows at the base address, the
/// address of the following rows).
pub(super) type Wrap = Option<(u32, u64)>;

/// The locations of `op`, an element of `l.ops`.
pub(super) fn locs(op: &NpuOp, p: &Placement, l: &Lowered, consts: &Consts) -> Locs {
    let scalar = l
        .scalars
        .iter()
        .find(|(&i, _)| std::ptr::eq(&l.ops[i], op))
        .map(|(_, &s)| s);
    locs_with(op, scalar, p, l, consts)
}

/// The locations of `op` (an element of `l.ops` or a part of one) with its scalar operand.
pub(super) fn locs_with(
    op: &NpuOp,
    scalar: Option<ScalarOperand>,
    p: &Placement,
    l: &Lowered,
    consts: &Consts,
) -> Locs {
    let chained = |f: &Fm| p.regions.get(f.buffer) == Some(&npuc_target::alloc::CHAINED);
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
        wrap: [None; 3],
    }
}

pub(super) fn overlaps(a: Range, b: Range) -> bool {
    a.0 == b.0 && a.1 < b.2 && b.1 < a.2
}
pub(super) fn align16(ro: &mut Vec<u8>) {
    ro.resize(ro.len().next_multiple_of(16), 0);
}

/// Byte ranges an operation reads and the range it writes.
pub(super) type Access = (Vec<Range>, Range);

/// The weight and scale streams an operation reads: their layout, region, block base.
pub(super) type StreamsAt<'a> = (&'a weights::Layout, u8, u64);

/// Writes every register `op` reads (skipping unchanged ones) and returns its kernel command
/// and kernel name; the caller issues the command.
pub(super) fn op_commands(
    w: &mut CommandWriter,
    op: &NpuOp,
    block: &BlockConfig,
    streams: Option<StreamsAt>,
    at: &Locs,
    (activation_function, table): (ActivationFunction, u8),
) -> (Command, &'static str) {
    if let Some((layout, region, base)) = streams {
        weights::weight_registers(w, layout, region, base);
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
    let scalar = at.scalar;
    match scalar {
        Some(s) if !s.ifm2 => write_scalar(
            w,
            FmGroup::Ifm,
            &fm_precision(&op.ifm, at.storage[0]),
            op.ifm.zero_point,
            s.value,
        ),
        _ => write_feature_map(
            w,
            FmGroup::Ifm,
            &ifm_regs(&op.ifm, at.ifm, at.storage[0], at.wrap[0], op.upscale),
        ),
    }
    write_kernel(w, &kernel_regs(op, block));
    if let Kernel::Resize(rp) = &op.kernel {
        let axis = |a: &npuc_backend_lower::ResizeAxis| ResizeAxisRegs {
            n: a.n,
            d: a.d,
            offset: a.offset,
        };
        write_resize(
            w,
            &axis(&rp.y),
            &axis(&rp.x),
            (block.ofm_block.0, block.ofm_block.1),
        );
    }
    write_feature_map(
        w,
        FmGroup::Ofm,
        &ofm_regs(op, at.ofm, at.storage[2], at.wrap[2]),
    );
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
            Some(s) if s.ifm2 => write_scalar(
                w,
                FmGroup::Ifm2,
                &fm_precision(ifm2, at.storage[1]),
                ifm2.zero_point,
                s.value,
            ),
            _ => write_feature_map(
                w,
                FmGroup::Ifm2,
                &ifm_regs(ifm2, loc2, at.storage[1], at.wrap[1], IfmUpscaleMode::None),
            ),
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
            write_precision(
                w,
                FmGroup::Ifm2,
                &fm_precision(&op.ifm, ActivationStorage::Tile2x2),
            );
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
    // Bounds are checked by `decide` (`check_activation`) before any command is written.
    write_activation(
        w,
        activation_function,
        table,
        op.act,
        op.ofm.dtype.is_unsigned(),
    );
    write_op_block(w, op, block);
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

/// Writes the registers of `op` that [`op_commands`] sets from the block candidate and the
/// streams, with the same values: the weight and scale stream registers, the KERNEL_* and
/// IFM_PAD_* registers (the weight order), the OFM block and ACC_FORMAT (the microblock).
/// After [`op_commands`] of the same operation and locations with any other block and no
/// streams, the register file holds what [`op_commands`] with `block` and `streams` leaves,
/// except for a RESIZE, whose step registers also depend on the block.
pub(super) fn block_commands(
    w: &mut CommandWriter,
    op: &NpuOp,
    block: &BlockConfig,
    streams: Option<StreamsAt>,
) {
    if let Some((layout, region, base)) = streams {
        weights::weight_registers(w, layout, region, base);
    }
    write_kernel(w, &kernel_regs(op, block));
    write_op_block(w, op, block);
}

/// The kernel registers' values of `op` with `block`'s weight order.
fn kernel_regs(op: &NpuOp, block: &BlockConfig) -> KernelRegs {
    KernelRegs {
        size: op.kernel_size,
        stride: op.stride,
        dilation: op.dilation,
        pad: op.pad,
        weight_order: U85Block::of(block).weight_order,
    }
}

/// Writes the OFM block and ACC_FORMAT (accumulator format and input, microblock) of `op`
/// with `block`.
fn write_op_block(w: &mut CommandWriter, op: &NpuOp, block: &BlockConfig) {
    let acc_input = if op.acc_from_ifm2() {
        AccInput::Ifm2
    } else {
        AccInput::Reset
    };
    let microblock = U85Block::of(block).microblock;
    write_block(w, block.ofm_block, op.acc, acc_input, microblock);
}

/// The PRECISION values of a feature map stored as `storage`.
fn fm_precision(fm: &Fm, storage: ActivationStorage) -> FmPrecision {
    FmPrecision::nhwc(activation_type(fm), precision(fm), storage)
}

/// The IFM or IFM2 register values of `fm` at `(region, base)`; a wrapping ring buffer puts
/// the rows after the wrap in tile 2.
fn ifm_regs(
    fm: &Fm,
    (region, base): (u8, u64),
    storage: ActivationStorage,
    wrap: Wrap,
    upscale: IfmUpscaleMode,
) -> FeatureMapRegs {
    let (h, wd, _) = fm.shape;
    let (h0, base2) = wrap.unwrap_or((h, 0));
    let (sy, sx) = fm.strides();
    FeatureMapRegs {
        precision: fm_precision(fm, storage),
        region,
        base,
        tile2_base: base2,
        shape: fm.shape,
        tile: (h0, wd),
        stride: (sy, sx, u64::from(fm.elem_bytes())),
        zero_point: fm.zero_point,
        upscale,
    }
}

/// The OFM register values of `op` at `(region, base)`. Tile sizes are in the stored
/// (post-transpose) axes (TRM 3.10.46-55).
fn ofm_regs(
    op: &NpuOp,
    (region, base): (u8, u64),
    storage: ActivationStorage,
    wrap: Wrap,
) -> FeatureMapRegs {
    let fm = &op.ofm;
    let (th, tw, _) = fm.stored_shape();
    let (sy, sx) = fm.strides();
    FeatureMapRegs {
        precision: FmPrecision {
            scale_mode: match op.requant {
                Requant::PerChannel(_) => OfmScaleMode::PerChannel,
                Requant::Global { .. } => OfmScaleMode::Global,
            },
            activation_reverse: fm.view.reverse,
            activation_transpose: fm.view.transpose,
            ..fm_precision(fm, storage)
        },
        region,
        base,
        tile2_base: wrap.map_or(0, |t| t.1),
        shape: fm.shape,
        tile: (wrap.map_or(th, |t| t.0), tw),
        stride: (sy, sx, u64::from(fm.elem_bytes())),
        zero_point: fm.zero_point,
        upscale: IfmUpscaleMode::None,
    }
}
