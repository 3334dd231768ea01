//! Elementwise operators: arithmetic, shifts and i32 bitwise operators (`arith`), comparisons
//! (`compare`), logical and 8/16-bit bitwise operators and CAST (`logical`), SELECT
//! (`select`), ABS and leaky ReLU (`unary`), gemmlowp's rounding division by a power of two
//! as an OFM rounding (`rounding_divide`); how operands reach the NPU (`operand`) and the
//! (H, W, C) views of broadcast operands (`broadcast`).

pub(super) mod arith;
pub(super) mod broadcast;
pub(super) mod compare;
pub(super) mod logical;
pub(super) mod operand;
pub(super) mod rounding_divide;
pub(super) mod select;
pub(super) mod unary;
