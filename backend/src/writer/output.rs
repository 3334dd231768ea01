//! The output stage of a kernel operation: activation clamp and lookup table, OFM block and
//! accumulator format.

use super::{zp16, CommandWriter};
use crate::isa::{
    AccFormat, AccInput, AccOutput, ActivationClipRange, ActivationFunction, Command, Microblock,
    SetAccFormat, SetActivation, SetActivationMax, SetActivationMin, SetOfmBlkDepthM1,
    SetOfmBlkHeightM1, SetOfmBlkWidthM1,
};

/// CLIP range and ACTIVATION_MIN/MAX of activation bounds: 16-bit bounds clamp (`b16`);
/// bounds at or beyond the i32 range mean no clamp (`none`); other bounds cannot be encoded.
/// `unsigned`: the OFM is unsigned, whose bounds are read as u16 (TRM 3.6.7).
pub fn clip(act: (i64, i64), unsigned: bool) -> Option<(ActivationClipRange, i64, i64)> {
    let b16 = |v: i64| (-32768..=32767).contains(&v);
    let u16 = |v: i64| unsigned && (0..=65535).contains(&v);
    if (b16(act.0) || u16(act.0)) && (b16(act.1) || u16(act.1)) {
        Some((ActivationClipRange::B16, act.0, act.1))
    } else if act.0 <= i64::from(i32::MIN) && act.1 >= i64::from(i32::MAX) {
        Some((ActivationClipRange::None, -32768, 32767))
    } else {
        None
    }
}

/// Writes ACTIVATION (function, LUT table, clip range) and ACTIVATION_MIN/MAX for the bounds
/// `act` (bounds [`clip`] cannot encode are the caller's error, checked before writing).
pub fn write_activation(
    w: &mut CommandWriter,
    activation_function: ActivationFunction,
    table: u8,
    act: (i64, i64),
    unsigned: bool,
) {
    let (clip_range, lo, hi) = clip(act, unsigned).unwrap_or((ActivationClipRange::B16, 0, 0));
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
}

/// Writes OFM_BLK_*_M1 for the OFM block (height, width, depth) and ACC_FORMAT.
pub fn write_block(
    w: &mut CommandWriter,
    (bh, bw, bd): (u32, u32, u32),
    acc_format: AccFormat,
    acc_input: AccInput,
    microblock: Microblock,
) {
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
        acc_format,
        acc_input,
        acc_output: AccOutput::Enable,
        microblock,
    }));
}
