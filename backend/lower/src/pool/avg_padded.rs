//! AVG_POOL2D with a kernel above the NPU's average pooling (8x8) and padding (decision L39).
//!
//! TOSA (and TFLite) divide each window's sum by its count of non-padding taps, which varies
//! near the edges; the NPU's average pooling counts them itself only up to 8x8 (TRM 3.10.10),
//! and a convolution has one scale per channel, not per position. Along one axis of input
//! length `L`, output `o` reads input rows `o * s - p .. o * s - p + K` (stride `s`, padding
//! before `p`, kernel `K`), of which `min(L, o*s - p + K) - max(0, o*s - p)` are inside the
//! input: the count of a window is the product of its row count and its column count, so the
//! outputs fall into rectangles (a run of rows with one row count times a run of columns with
//! one column count), each with one count. Two steps per image:
//! 1. the window sums: a POOL in `sum` mode with the padding (padding taps add the sum's
//!    identity 0, as the zero point would after its subtraction; TRM 3.10.10) writing its
//!    raw 32-bit accumulator (b32, OFM_SCALE 1, shift 0, no clamp) to a scratch buffer;
//!    large kernels split like any window (L23) (decision L52; a DEPTHWISE with unit
//!    weights before);
//! 2. per rectangle, a 1x1 DEPTHWISE with zero weights whose initial accumulator is that
//!    rectangle of the sums (IFM2 b32, ACC_FORMAT.acc_input = ifm2, as L27/L30) and whose
//!    per-channel record divides by the rectangle's count exactly as the unpadded form does
//!    (`divide_by`, L6), adds the output zero point and clamps.

use crate::common::window::Window;
use crate::elementwise::arith::NO_CLIP;
use crate::pool::avg_as_depthwise::{ceil_log2, divide_by, unit_stride_if_single};
use crate::LowerError;
use crate::{unsupported, Buffer, Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::PoolingMode;
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{AvgPoolRounding, DType, Op, OpId};

/// The outputs of one axis grouped into runs with the same count of non-padding taps, as
/// (first output, number of outputs, count).
pub(crate) fn count_runs(
    input: usize,
    output: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for o in 0..output {
        let lo = (o * stride) as i64 - pad as i64;
        let hi = (lo + kernel as i64).min(input as i64);
        let count = (hi - lo.max(0)).max(0) as usize;
        match runs.last_mut() {
            Some(r) if r.2 == count => r.1 += 1,
            _ => runs.push((o, 1, count)),
        }
    }
    runs
}

impl<'g> Ctx<'g> {
    pub(crate) fn lower_avgpool_padded(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::AvgPool2d(a) = &node.op else {
            unreachable!("lower_avgpool_padded on another op")
        };
        let x = node.inputs()[0];
        let dt = self.dtype(x);
        if !matches!(dt, DType::Int8 | DType::Int16) {
            return Err(unsupported(
                node,
                "average pool kernels above 8x8 on i8/i16 feature maps only",
            ));
        }
        let span = (dt.max_value() - a.input_zp).max(a.input_zp - dt.min_value()) as u64;
        let full = (a.kernel[0] * a.kernel[1]) as u64;
        if span * full >= 1 << 31 {
            return Err(unsupported(
                node,
                "average pool window too large for its input range",
            ));
        }
        let mut names = vec![node.name.clone()];
        let (out_t, act) = self.fuse_clamp(node.outputs()[0], &mut names);
        let (ifm, images) = self.image_fm(node, x, true, a.input_zp)?;
        let (ofm, _) = self.image_ofm(node, out_t, true, a.output_zp)?;
        let (ih, iw, c) = ifm.shape;
        let (oh, ow, _) = ofm.shape;
        let rows = count_runs(ih as usize, oh as usize, a.kernel[0], a.stride[0], a.pad[0]);
        let cols = count_runs(iw as usize, ow as usize, a.kernel[1], a.stride[1], a.pad[2]);
        // The division of every rectangle, checked as the unpadded form checks its one count.
        let mut divisions = Vec::new();
        for &(_, _, cy) in &rows {
            for &(_, _, cx) in &cols {
                let count = (cy * cx) as u64;
                let exact = a.rounding != AvgPoolRounding::Tflite
                    || 2 * span * count * count < 1 << (30 + ceil_log2(count));
                let division = u32::try_from(count)
                    .ok()
                    .filter(|_| count > 0 && exact)
                    .and_then(|n| divide_by(n, a.rounding))
                    .ok_or_else(|| {
                        unsupported(node, format!("an average pool window of {count} taps"))
                    })?;
                divisions.push(division);
            }
        }
        let k = (a.kernel[0] as u32, a.kernel[1] as u32);
        let c_us = c as usize;
        let zeros = OhwiWeights::from_depthwise_hwc(1, 1, c_us, &vec![0i16; c_us])
            .map_err(|e| unsupported(node, e.to_string()))?;
        let window = Window {
            kernel: (a.kernel[0], a.kernel[1]),
            stride: unit_stride_if_single(a.stride, &ofm),
            dilation: [1, 1],
            pad: a.pad,
        };
        let bytes = |f: &Fm| {
            let (h, w, c) = f.shape;
            u64::from(h) * u64::from(w) * u64::from(c) * u64::from(f.elem_bytes())
        };
        let (ib, ob) = (bytes(&ifm), bytes(&ofm));
        let (osy, osx) = ofm.strides();
        for b in 0..images as u64 {
            // Step 1: the window sums of image b, raw, in a scratch buffer.
            let idx = self.lowered.ops.len();
            let sums = Fm {
                buffer: self.lowered.buffers.len(),
                shape: ofm.shape,
                zero_point: 0,
                dtype: DType::Int32,
                broadcast: (false, false, false),
                view: View::default(),
            };
            self.lowered.buffers.push(Buffer {
                size: bytes(&sums),
                producer: Some(idx),
                last_use: None,
                is_input: false,
                is_output: false,
            });
            let mut one = ifm;
            one.view.offset += b * ib;
            // A partial result computes no IR tensor (`verify` skips it when localising).
            let op = NpuOp::pool(
                PoolingMode::Sum,
                format!("{} (window sums)", node.name),
                Vec::new(),
                one,
                sums,
                NO_CLIP,
            )
            .with_kernel_size(k);
            self.push_window(node, op, window, 1)?;
            // Step 2: each rectangle divided by its count.
            let (ssy, ssx) = sums.strides();
            let mut division = divisions.iter();
            for &(y0, ny, _) in &rows {
                for &(x0, nx, _) in &cols {
                    let &(scale, shift) = division.next().expect("one division per rectangle");
                    let shape = (ny as u32, nx as u32, c);
                    let acc = Fm {
                        shape,
                        view: View {
                            offset: y0 as u64 * ssy + x0 as u64 * ssx,
                            strides: Some((ssy, ssx)),
                            ..View::default()
                        },
                        ..sums
                    };
                    // The IFM is an 8-bit view of the same sums under zero weights.
                    let view = Fm {
                        dtype: DType::Int8,
                        ..acc
                    };
                    let mut out = ofm;
                    out.shape = shape;
                    out.view.offset += b * ob + y0 as u64 * osy + x0 as u64 * osx;
                    out.view.strides = Some((osy, osx));
                    let record = ChannelScale {
                        bias: 0,
                        scale,
                        shift,
                    };
                    self.push(
                        NpuOp::depthwise(node.name.clone(), names.clone(), view, out, act)
                            .with_ifm2(acc)
                            .with_weights(zeros.clone())
                            .with_requant(Requant::PerChannel(vec![record; c_us])),
                    );
                }
            }
        }
        Ok(())
    }
}
