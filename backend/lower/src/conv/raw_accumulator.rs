//! The raw accumulator of a convolution-family operator (CONV2D, DEPTHWISE_CONV2D,
//! TRANSPOSE_CONV2D, CONV3D, MATMUL) as a tensor of its own, when no RESCALE reads it: a TOSA
//! graph whose output is the i32 accumulator itself (decision L36). The operator is lowered
//! as if a RESCALE with multiplier 1, shift 0 and no zero points followed it: the NPU adds
//! the bias to the 32-bit accumulator, scales by 1 with shift 0 (TRM 3.6.6: `(acc * 1 +
//! round) >> 0 = acc`) and writes it to a b32 OFM unclamped (TRM 3.6.7, clip range of i32).

use npuc_ir::{DType, RescaleAttrs, RescaleRounding};
use std::sync::LazyLock;

/// RESCALE by 1 with shift 0 to i32: the identity on an i32 accumulator.
static IDENTITY: LazyLock<RescaleAttrs> =
    LazyLock::new(|| RescaleAttrs::per_tensor(DType::Int32, 1, 0, RescaleRounding::SingleRound));

/// RESCALE by 1 with shift 0 to i48: the identity on a 48-bit accumulator (16x8).
static IDENTITY_48: LazyLock<RescaleAttrs> = LazyLock::new(|| RescaleAttrs {
    scale32: false,
    ..RescaleAttrs::per_tensor(DType::Int48, 1, 0, RescaleRounding::SingleRound)
});

/// The identity rescale the raw i32 accumulator is written with.
pub(super) fn identity_rescale() -> &'static RescaleAttrs {
    &IDENTITY
}

/// The identity rescale the raw i48 accumulator of a 16x8 convolution is written with: scale
/// 1, shift 0 on the 48-bit accumulator into a b64 OFM of 8-byte words, unclamped (TRM 3.6.6,
/// 3.6.7; the words are the form decision L33 holds i48 tensors in).
pub(super) fn identity_rescale_48() -> &'static RescaleAttrs {
    &IDENTITY_48
}
