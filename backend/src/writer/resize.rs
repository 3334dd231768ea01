//! NPU_OP_RESIZE registers: scale numerators, offsets and per-pixel / per-block steps.

use super::CommandWriter;
use crate::isa::{
    Command, SetIfm2ZeroPoint, SetResizeXOffset, SetResizeXScaleNM1, SetResizeXStep,
    SetResizeYOffset, SetResizeYScaleNM1, SetResizeYStep,
};

/// One axis of a resize: output pixel `o` samples input position `(o * d + offset) / n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResizeAxisRegs {
    pub n: u32,
    pub d: u32,
    pub offset: i32,
}

/// `(one_step_int, one_step_mod, blk_step_int, blk_step_mod)` of an axis: the step `d / n`
/// per output pixel and `(block - 1) * d / n` per OFM block.
fn steps(a: &ResizeAxisRegs, block: u32) -> (u8, u16, u16, u16) {
    let blk = (block.max(1) - 1) * a.d;
    (
        (a.d / a.n) as u8,
        (a.d % a.n) as u16,
        (blk / a.n) as u16,
        (blk % a.n) as u16,
    )
}

/// Writes the resize registers of one operation (axes `y`, `x`; OFM block height/width
/// `block`).
pub fn write_resize(
    w: &mut CommandWriter,
    y: &ResizeAxisRegs,
    x: &ResizeAxisRegs,
    block: (u32, u32),
) {
    w.set(Command::SetIfm2ZeroPoint(SetIfm2ZeroPoint {
        zero_point: 0,
    }));
    w.set(Command::SetResizeXScaleNM1(SetResizeXScaleNM1 {
        resize_x_scale_n_m1: (x.n - 1) as u16,
    }));
    w.set(Command::SetResizeYScaleNM1(SetResizeYScaleNM1 {
        resize_y_scale_n_m1: (y.n - 1) as u16,
    }));
    let (xi, xm, xbi, xbm) = steps(x, block.1);
    w.set(Command::SetResizeXStep(SetResizeXStep {
        one_step_int: xi,
        blk_step_int: xbi,
        one_step_mod: xm,
        blk_step_mod: xbm,
    }));
    let (yi, ym, ybi, ybm) = steps(y, block.0);
    w.set(Command::SetResizeYStep(SetResizeYStep {
        one_step_int: yi,
        blk_step_int: ybi,
        one_step_mod: ym,
        blk_step_mod: ybm,
    }));
    w.set(Command::SetResizeXOffset(SetResizeXOffset {
        resize_x_offset: x.offset as i16,
    }));
    w.set(Command::SetResizeYOffset(SetResizeYOffset {
        resize_y_offset: y.offset as i16,
    }));
}
