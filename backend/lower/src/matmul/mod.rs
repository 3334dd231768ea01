//! MATMUL: with both operands computed, B read as weights from IFM2 (`ifm2_weights`), and with
//! a constant B as a convolution (`const_weights`).

pub(super) mod const_weights;
pub(super) mod ifm2_weights;
