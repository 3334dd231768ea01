//! The division of an average pool's window sums by the window size, for AVG_POOL2D beyond
//! the NPU's average pooling (kernels above 8x8, TRM 3.10.10). (The file's name is from
//! decision L6's first form, a DEPTHWISE with unit weights; decision L52 sums with a POOL.)
//!
//! Without padding every window has `count = kh * kw` taps, so the sum (one NPU_OP_POOL in
//! `sum` mode, which TRM 3.10.10 allows up to 65536 x 65536 taps, exact in the 32-bit
//! accumulator) is divided by a constant through OFM_SCALE (decision L52):
//! * TOSA rounding: the reference's own `reciprocal_scale(count)` with single (natural)
//!   rounding, i.e. exactly the IR's `apply_scale_32`.
//! * TFLite rounding (`sum / count` rounded half away from zero): multiplier
//!   `M = floor(2^s / count) + 1` with `s = 30 + ceil(log2(count))` and natural rounding.
//!   `M / 2^s` exceeds `1 / count` by less than `2^-s`, so `|sum| * M / 2^s` exceeds
//!   `|sum| / count` by less than `|sum| / 2^s < 1 / (2 * count)` (while
//!   `2 * max|sum| * count < 2^s`, i.e. always for i8 inputs, windows below 2^14 for i16): an
//!   exact half moves strictly away from zero (rounded away from zero, as TFLite does) and any
//!   other quotient, at least `1 / (2 * count)` from a half, keeps its nearest integer.
//!   (Decision L6 in docs/decisions.md.) Vela 5.2 programs the same POOL and OFM_SCALE for
//!   DS-CNN's 25x5 average pool (scale 1,099,511,628, shift 37).
//!
//! 16-bit inputs use the same 32-bit accumulator (the window sum of `|x| <= 32768` fits it for
//! windows below 65536 taps), as the int16 fully-connected does (decision L1).

use crate::LowerError;
use crate::{unsupported, Ctx, Fm};
use npuc_ir::quant::reciprocal_scale;
use npuc_ir::{AvgPool2dAttrs, AvgPoolRounding, DType, OpNode};

/// The per-channel division of a window sum by `count` for the IR rounding mode.
pub(crate) fn divide_by(count: u32, rounding: AvgPoolRounding) -> Option<(u32, u8)> {
    match rounding {
        AvgPoolRounding::Tosa => {
            let (m, s) = reciprocal_scale(count)?;
            Some((u32::try_from(m).ok()?, u8::try_from(s).ok()?))
        }
        AvgPoolRounding::Tflite => {
            if count == 0 || count > 1 << 20 {
                return None;
            }
            let k = 32 - (count - 1).leading_zeros();
            let s = 30 + k;
            let m = (1u64 << s) / u64::from(count) + 1;
            Some((u32::try_from(m).ok()?, s as u8))
        }
    }
}

impl<'g> Ctx<'g> {
    /// The OFM scale `(M, S)` that divides the window sums of AVG_POOL2D `node` (attributes
    /// `a`, no padding: every window has `kh * kw` taps) by the window size, after checking
    /// that the sum stays inside the 32-bit accumulator and, for TFLite rounding, inside the
    /// bound of the division's analysis (see the module documentation).
    pub(crate) fn avgpool_division(
        &self,
        node: &OpNode,
        a: &AvgPool2dAttrs,
    ) -> Result<(u32, u8), LowerError> {
        let dt = self.dtype(node.inputs()[0]);
        if !matches!(dt, DType::Int8 | DType::Int16) {
            return Err(unsupported(
                node,
                "average pool kernels above 8x8 on i8/i16 feature maps only",
            ));
        }
        // The largest |x - zp|.
        let span = (dt.max_value() - a.input_zp).max(a.input_zp - dt.min_value()) as u64;
        let count = (a.kernel[0] * a.kernel[1]) as u64;
        let sum_fits = span * count < 1 << 31;
        let exact = a.rounding != AvgPoolRounding::Tflite
            || 2 * span * count * count < 1 << (30 + ceil_log2(count));
        if !sum_fits || !exact {
            return Err(unsupported(
                node,
                "average pool window too large for its input range",
            ));
        }
        u32::try_from(count)
            .ok()
            .and_then(|n| divide_by(n, a.rounding))
            .ok_or_else(|| unsupported(node, "average pool window too large"))
    }
}

/// `ceil(log2(v))` for `v >= 1`.
pub(crate) fn ceil_log2(v: u64) -> u32 {
    64 - (v.max(1) - 1).leading_zeros()
}

/// The stride of a window operation, 1 along an axis with a single output (where the stride
/// never applies), so strides above 3 with one output row or column need no decomposition.
pub(crate) fn unit_stride_if_single(stride: [usize; 2], ofm: &Fm) -> [usize; 2] {
    [
        if ofm.shape.0 == 1 { 1 } else { stride[0] },
        if ofm.shape.1 == 1 { 1 } else { stride[1] },
    ]
}
