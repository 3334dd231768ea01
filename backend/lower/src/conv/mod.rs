//! Convolutions: CONV2D, DEPTHWISE_CONV2D and FULLY_CONNECTED (`conv2d`), with weights that
//! are not constants (`dynamic_weights`; `padded_im2col` for paddings too large to
//! materialise), depth multipliers (`depth_multiplier`), a 16x8
//! accumulator saturated to i32 (`acc_saturation`), and TRANSPOSE_CONV2D (`transpose`).

pub(super) mod acc_saturation;
pub(super) mod bias48;
pub(super) mod conv2d;
pub(super) mod depth_multiplier;
pub(super) mod dynamic_weights;
pub(super) mod padded_im2col;
pub(super) mod raw_accumulator;
pub(super) mod runtime_weights16;
pub(super) mod transpose;
