//! AVG_POOL2D beyond the NPU's average pooling (kernels above 8x8) as a DEPTHWISE convolution
//! with unit weights and a per-channel division by the window size.
//!
//! Without padding every window has `count = kh * kw` taps, so the sum (exact in the 32-bit
//! accumulator) is divided by a constant:
//! * TOSA rounding: the reference's own `reciprocal_scale(count)` with single (natural)
//!   rounding, i.e. exactly the IR's `apply_scale_32`.
//! * TFLite rounding (`sum / count` rounded half away from zero): multiplier
//!   `M = floor(2^s / count) + 1` with `s = 30 + ceil(log2(count))` and natural rounding.
//!   `M / 2^s` exceeds `1 / count` by less than `2^-s`, so `|sum| * M / 2^s` exceeds
//!   `|sum| / count` by less than `|sum| / 2^s < 1 / (2 * count)` (while
//!   `2 * max|sum| * count < 2^s`, i.e. always for i8 inputs, windows below 2^14 for i16): an
//!   exact half moves strictly away from zero (rounded away from zero, as TFLite does) and any
//!   other quotient, at least `1 / (2 * count)` from a half, keeps its nearest integer.
//!   (Decision L6 in docs/decisions.md.)
//!
//! 16-bit inputs use the same 32-bit accumulator (the window sum of `|x| <= 32768` fits it for
//! windows below 65536 taps), as the int16 fully-connected does (decision L1).

use crate::common::window::Window;
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, Requant};
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::quant::reciprocal_scale;
use npuc_ir::{AvgPoolRounding, DType, Op, OpId};

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
    pub(crate) fn lower_avgpool_large(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::AvgPool2d(a) = &node.op else {
            unreachable!("lower_avgpool_large on another op")
        };
        if a.pad.iter().any(|&p| p != 0) {
            return self.lower_avgpool_padded(o);
        }
        let x = node.inputs()[0];
        if !matches!(self.dtype(x), DType::Int8 | DType::Int16) {
            return Err(unsupported(
                node,
                "average pool kernels above 8x8 on i8/i16 feature maps only",
            ));
        }
        // The largest |x - zp|: the window sum must stay inside the 32-bit accumulator, and
        // for TFLite rounding inside the bound of the division's analysis.
        let span = {
            let dt = self.dtype(x);
            (dt.max_value() - a.input_zp).max(a.input_zp - dt.min_value()) as u64
        };
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
        let mut names = vec![node.name.clone()];
        let (out_t, act) = self.fuse_clamp(node.outputs()[0], &mut names);
        let (ifm, images) = self.image_fm(node, x, true, a.input_zp)?;
        let (ofm, _) = self.image_ofm(node, out_t, true, a.output_zp)?;
        let k = (a.kernel[0] as u32, a.kernel[1] as u32);
        let stride = unit_stride_if_single(a.stride, &ofm);
        let c = ifm.shape.2 as usize;
        let (scale, shift) = divide_by(k.0 * k.1, a.rounding)
            .ok_or_else(|| unsupported(node, "average pool window too large"))?;
        let ones = vec![1i16; k.0 as usize * k.1 as usize * c];
        let weights = OhwiWeights::from_depthwise_hwc(k.0 as usize, k.1 as usize, c, &ones)
            .map_err(|e| unsupported(node, e.to_string()))?;
        let record = ChannelScale {
            bias: 0,
            scale,
            shift,
        };
        let op = NpuOp::depthwise(node.name.clone(), names, ifm, ofm, act)
            .with_kernel_size(k)
            .with_weights(weights)
            .with_requant(Requant::PerChannel(vec![record; c]));
        let window = Window {
            kernel: (a.kernel[0], a.kernel[1]),
            stride,
            dilation: [1, 1],
            pad: a.pad,
        };
        self.push_window(node, op, window, images)?;
        Ok(())
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
