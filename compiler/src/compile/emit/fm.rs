//! IFM, IFM2 and OFM feature-map registers.

use super::regs::Wrap;
use super::{activation_type, addr, precision, zp16, Writer};
use crate::compile::lower::{Fm, NpuOp, Requant};
use npuc_backend::isa::{
    ActivationFormat, ActivationStorage, BroadcastMode, Command, IfmUpscaleMode, OfmScaleMode,
    SetIfm2Base0, SetIfm2Base1, SetIfm2Base2, SetIfm2Base3, SetIfm2Height0M1, SetIfm2Height1M1,
    SetIfm2Precision, SetIfm2Region, SetIfm2StrideC, SetIfm2StrideX, SetIfm2StrideY,
    SetIfm2Width0M1, SetIfm2ZeroPoint, SetIfmBase0, SetIfmBase1, SetIfmBase2, SetIfmBase3,
    SetIfmDepthM1, SetIfmHeight0M1, SetIfmHeight1M1, SetIfmPrecision, SetIfmRegion, SetIfmStrideC,
    SetIfmStrideX, SetIfmStrideY, SetIfmUpscale, SetIfmWidth0M1, SetIfmZeroPoint, SetOfmBase0,
    SetOfmBase1, SetOfmBase2, SetOfmBase3, SetOfmDepthM1, SetOfmHeight0M1, SetOfmHeight1M1,
    SetOfmHeightM1, SetOfmPrecision, SetOfmRegion, SetOfmStrideC, SetOfmStrideX, SetOfmStrideY,
    SetOfmWidth0M1, SetOfmWidthM1, SetOfmZeroPoint, SetOpScalar,
};

/// Tile 0 height and the tile 2 base: the whole height and none, or the rows before a ring
/// buffer wraps and its start.
fn tiles(h: u32, wrap: Wrap) -> (u32, u64) {
    wrap.map_or((h, 0), |(rows, base2)| (rows, base2))
}

pub(super) fn ifm_commands(
    w: &mut Writer,
    fm: &Fm,
    (region, base): (u8, u64),
    upscale: IfmUpscaleMode,
    activation_storage: ActivationStorage,
    wrap: Wrap,
) {
    let (h, wd, c) = fm.shape;
    let (h0, base2) = tiles(h, wrap);
    let (hi, lo) = addr(base);
    let e = u64::from(fm.elem_bytes());
    let (sy, sx) = fm.strides();
    let (shi, slo) = addr(sy);
    let (xhi, xlo) = addr(sx);
    w.set(Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: activation_type(fm),
        activation_precision: precision(fm),
        activation_format: ActivationFormat::Nhwc,
        activation_storage,
    }));
    w.set(Command::SetIfmRegion(SetIfmRegion { region }));
    w.set(Command::SetIfmBase0(SetIfmBase0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetIfmBase1(SetIfmBase1::default()));
    let (hi2, lo2) = addr(base2);
    w.set(Command::SetIfmBase2(SetIfmBase2 {
        addr_hi: hi2,
        addr_lo: lo2,
    }));
    w.set(Command::SetIfmBase3(SetIfmBase3::default()));
    w.set(Command::SetIfmHeight0M1(SetIfmHeight0M1 {
        height_m1: (h0 - 1) as u16,
    }));
    w.set(Command::SetIfmHeight1M1(SetIfmHeight1M1 {
        height_m1: (h0 - 1) as u16,
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
        addr_lo: e as u32,
    }));
    w.set(Command::SetIfmZeroPoint(SetIfmZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
    w.set(Command::SetIfmUpscale(SetIfmUpscale { mode: upscale }));
}

/// IFM2_PRECISION for `fm`'s element type (a unary operation that reads it: `lrelu`).
pub(super) fn ifm2_precision(w: &mut Writer, fm: &Fm) {
    w.set(Command::SetIfm2Precision(SetIfm2Precision {
        activation_type: activation_type(fm),
        activation_precision: precision(fm),
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Tile2x2,
    }));
}

pub(super) fn ifm2_commands(
    w: &mut Writer,
    fm: &Fm,
    (region, base): (u8, u64),
    activation_storage: ActivationStorage,
    wrap: Wrap,
) {
    let (h, wd, _) = fm.shape;
    let (h0, base2) = tiles(h, wrap);
    let (hi, lo) = addr(base);
    let e = u64::from(fm.elem_bytes());
    let (sy, sx) = fm.strides();
    let (shi, slo) = addr(sy);
    let (xhi, xlo) = addr(sx);
    w.set(Command::SetIfm2Precision(SetIfm2Precision {
        activation_type: activation_type(fm),
        activation_precision: precision(fm),
        activation_format: ActivationFormat::Nhwc,
        activation_storage,
    }));
    w.set(Command::SetIfm2Region(SetIfm2Region { region }));
    w.set(Command::SetIfm2Base0(SetIfm2Base0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetIfm2Base1(SetIfm2Base1::default()));
    let (hi2, lo2) = addr(base2);
    w.set(Command::SetIfm2Base2(SetIfm2Base2 {
        addr_hi: hi2,
        addr_lo: lo2,
    }));
    w.set(Command::SetIfm2Base3(SetIfm2Base3::default()));
    w.set(Command::SetIfm2Height0M1(SetIfm2Height0M1 {
        height_m1: (h0 - 1) as u16,
    }));
    w.set(Command::SetIfm2Height1M1(SetIfm2Height1M1 {
        height_m1: (h0 - 1) as u16,
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
        addr_lo: e as u32,
    }));
    w.set(Command::SetIfm2ZeroPoint(SetIfm2ZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
}

/// The registers of a scalar IFM (OP_SCALAR; no memory is read, storage none).
pub(super) fn ifm_scalar_commands(w: &mut Writer, fm: &Fm, value: i32) {
    w.set(Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: activation_type(fm),
        activation_precision: precision(fm),
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::None,
    }));
    w.set(Command::SetIfmZeroPoint(SetIfmZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
    w.set(Command::SetOpScalar(SetOpScalar { scalar: value }));
}

/// The registers of a scalar IFM2.
pub(super) fn ifm2_scalar_commands(w: &mut Writer, fm: &Fm, value: i32) {
    w.set(Command::SetIfm2Precision(SetIfm2Precision {
        activation_type: activation_type(fm),
        activation_precision: precision(fm),
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::None,
    }));
    w.set(Command::SetIfm2ZeroPoint(SetIfm2ZeroPoint {
        zero_point: zp16(fm.zero_point),
    }));
    w.set(Command::SetOpScalar(SetOpScalar { scalar: value }));
}

pub(super) fn broadcast(b: (bool, bool, bool)) -> BroadcastMode {
    let bits = u32::from(b.0) | (u32::from(b.1) << 1) | (u32::from(b.2) << 2);
    BroadcastMode::from_raw(bits).unwrap_or(BroadcastMode::None)
}

pub(super) fn ofm_commands(
    w: &mut Writer,
    op: &NpuOp,
    (region, base): (u8, u64),
    activation_storage: ActivationStorage,
    wrap: Wrap,
) {
    let (h, wd, c) = op.ofm.shape;
    let (hi, lo) = addr(base);
    let e = u64::from(op.ofm.elem_bytes());
    let (sy, sx) = op.ofm.strides();
    let (shi, slo) = addr(sy);
    let (xhi, xlo) = addr(sx);
    let scale_mode = match op.requant {
        Requant::PerChannel(_) => OfmScaleMode::PerChannel,
        Requant::Global { .. } => OfmScaleMode::Global,
    };
    w.set(Command::SetOfmPrecision(SetOfmPrecision {
        activation_type: activation_type(&op.ofm),
        activation_precision: precision(&op.ofm),
        activation_format: ActivationFormat::Nhwc,
        scale_mode,
        activation_reverse: op.ofm.view.reverse,
        activation_transpose: op.ofm.view.transpose,
        activation_storage,
    }));
    w.set(Command::SetOfmRegion(SetOfmRegion { region }));
    w.set(Command::SetOfmBase0(SetOfmBase0 {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetOfmBase1(SetOfmBase1::default()));
    let (hi2, lo2) = addr(wrap.map_or(0, |t| t.1));
    w.set(Command::SetOfmBase2(SetOfmBase2 {
        addr_hi: hi2,
        addr_lo: lo2,
    }));
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
    // Tile sizes are in the stored (post-transpose) axes (TRM 3.10.46-55).
    let (th, tw, _) = op.ofm.stored_shape();
    let th = wrap.map_or(th, |t| t.0);
    w.set(Command::SetOfmHeight0M1(SetOfmHeight0M1 {
        height_m1: (th - 1) as u16,
    }));
    w.set(Command::SetOfmHeight1M1(SetOfmHeight1M1 {
        height_m1: (th - 1) as u16,
    }));
    w.set(Command::SetOfmWidth0M1(SetOfmWidth0M1 {
        width_m1: (tw - 1) as u16,
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
        addr_lo: e as u32,
    }));
    w.set(Command::SetOfmZeroPoint(SetOfmZeroPoint {
        zero_point: zp16(op.ofm.zero_point),
    }));
}
