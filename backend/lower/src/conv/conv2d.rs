//! CONV2D, DEPTHWISE_CONV2D and FULLY_CONNECTED with their RESCALE and CLAMP, for 8-bit and
//! 16-bit (16x8) inputs.
//!
//! * Accumulator format: a 16-bit-multiplier RESCALE (`scale32 == false`, TFLite's int16x8
//!   kernels) runs on the 48-bit accumulator (`I48`: 48-bit bias, 15-bit scale, single
//!   rounding = `Natural`). A 32-bit-multiplier RESCALE needs the 32-bit accumulator; for
//!   16-bit inputs that is exact only if no accumulator can leave the i32 range, which is
//!   checked per output channel from the weights and bias (otherwise the accumulator is
//!   saturated on its own, `conv_sat`).
//! * A depth multiplier above 1 becomes an NPU CONV whose weights are zero outside each
//!   output channel's own input channel, or on many channels a DEPTHWISE of the input's
//!   channels repeated (`conv_repeat`).
//! * A dilation above 2 becomes a dilation-1 kernel with zeros between the taps.

use crate::common::window::Window;
use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, Kernel, NpuOp, Requant, View};
use npuc_backend::isa::AccFormat;
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, Op, OpId, OpNode, RescaleAttrs, TensorData, TensorId};

/// The requantization of a convolution accumulator: the fused RESCALE(s), the one that sets
/// the output, and the accumulator format.
pub(crate) struct ConvRescale<'g> {
    pub(crate) ops: Vec<OpId>,
    pub(crate) out: &'g RescaleAttrs,
    pub(crate) out_node: &'g OpNode,
    pub(crate) acc: AccFormat,
}

impl<'g> Ctx<'g> {
    /// An exact RESCALE of the accumulator to i32 (`multiplier == 2^shift`, no zero points),
    /// as the TFLite frontend puts before a 32-bit-multiplier RESCALE of a 16x8 accumulator.
    fn is_exact_widening(r: &RescaleAttrs) -> bool {
        r.output_dtype == DType::Int32
            && r.multiplier.len() == 1
            && (0..=30).contains(&r.shift[0])
            && i64::from(r.multiplier[0]) == 1i64 << r.shift[0]
            && r.input_zp == 0
            && r.output_zp == 0
            && !r.input_unsigned
            && !r.output_unsigned
    }

    pub(crate) fn conv_rescale(
        &self,
        node: &'g OpNode,
        acc_t: TensorId,
    ) -> Result<ConvRescale<'g>, LowerError> {
        let first = self
            .sole_consumer(acc_t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)));
        let Some(first) = first else {
            // An i32 accumulator that is a tensor of its own (a graph output, or read by
            // several operators): written raw as b32, scale 1, shift 0 (decision L36).
            if self.dtype(acc_t) == DType::Int32 {
                return Ok(ConvRescale {
                    ops: Vec::new(),
                    out: super::raw_accumulator::identity_rescale(),
                    out_node: node,
                    acc: AccFormat::I32,
                });
            }
            // A 16x8 convolution's i48 accumulator as a tensor of its own: written raw as
            // b64 words, scale 1, shift 0 (decision L36 on the 48-bit accumulator).
            if self.dtype(acc_t) == DType::Int48 {
                return Ok(ConvRescale {
                    ops: Vec::new(),
                    out: super::raw_accumulator::identity_rescale_48(),
                    out_node: node,
                    acc: AccFormat::I48,
                });
            }
            return Err(unsupported(
                node,
                "the accumulator must feed exactly one RESCALE",
            ));
        };
        let mut ops = vec![first];
        let mut rnode = self.node(first);
        let Op::Rescale(r0) = &rnode.op else {
            unreachable!()
        };
        let mut r = r0;
        let mut widened = false;
        if Self::is_exact_widening(r) {
            let next = self
                .sole_consumer(rnode.outputs()[0])
                .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)));
            if let Some(next) = next {
                ops.push(next);
                rnode = self.node(next);
                let Op::Rescale(r2) = &rnode.op else {
                    unreachable!()
                };
                r = r2;
                widened = true;
            }
        }
        // An i32 result (zero point 0) is written as b32 with clip range none.
        if r.output_dtype == DType::Int32 {
            let shifts_ok = r.shift.iter().all(|s| (0..=63).contains(s));
            if r.output_zp != 0 || r.input_unsigned || r.input_zp != 0 || !shifts_ok {
                return Err(unsupported(
                    rnode,
                    "an i32 output RESCALE with a zero point",
                ));
            }
            if r.multiplier.iter().any(|&m| m < 0) {
                return Err(unsupported(rnode, "multiplier/shift out of range"));
            }
        } else {
            self.check_rescale_out(rnode, r)?;
        }
        let acc = if r.scale32 {
            AccFormat::I32
        } else if widened {
            return Err(unsupported(
                rnode,
                "a 16-bit-multiplier RESCALE after a widening RESCALE",
            ));
        } else {
            if r.multiplier.iter().any(|&m| m > 0x7fff) {
                return Err(unsupported(rnode, "16-bit multiplier above 32767"));
            }
            AccFormat::I48
        };
        Ok(ConvRescale {
            ops,
            out: r,
            out_node: rnode,
            acc,
        })
    }

    /// `(N*H, W, C)` of an NHWC tensor of at most 65536 rows, or `None`.
    fn batch_folded(&self, t: TensorId) -> Option<(u32, u32, u32)> {
        let d = self.dims(t);
        let (n, h, w, c) = match d {
            [n, h, w, c] => (*n, *h, *w, *c),
            _ => return None,
        };
        let rows = n.checked_mul(h)?;
        (rows <= 65536 && w <= 65536 && c <= 65536).then_some((rows as u32, w as u32, c as u32))
    }

    pub(crate) fn lower_conv(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let ins = node.inputs();
        let acc_t = node.outputs()[0];
        let (x, w, b) = (ins[0], ins[1], ins[2]);
        let (input_zp, weight_zp, stride, dilation, pad) = match &node.op {
            Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
                (a.input_zp, a.weight_zp, a.stride, a.dilation, a.pad)
            }
            Op::FullyConnected(a) => (a.input_zp, a.weight_zp, [1, 1], [1, 1], [0; 4]),
            _ => unreachable!("lower_conv on a non-conv op"),
        };
        let in_dtype = self.dtype(x);
        if !matches!(in_dtype, DType::Int8 | DType::Int16) {
            return Err(unsupported(node, format!("{in_dtype} inputs")));
        }
        let (Some(wd), Some(bd)) = (self.folded_const(w), self.folded_const(b)) else {
            if self.folded_const(w).is_none() && matches!(node.op, Op::Conv2d(_)) {
                return self.lower_conv_dynamic(o);
            }
            return Err(unsupported(node, "weights and bias must be constants"));
        };
        let rq = self.conv_rescale(node, acc_t)?;
        let r = rq.out;
        for &f in &rq.ops {
            self.fused.insert(f);
        }
        let mut names = vec![node.name.clone()];
        names.extend(rq.ops.iter().map(|&f| self.node(f).name.clone()));
        // The raw i48 accumulator (no RESCALE): a b64 OFM, unclamped.
        let raw48 = rq.ops.is_empty() && r.output_dtype == DType::Int48;
        let (out_t, act) = if raw48 {
            (acc_t, NO_CLIP)
        } else {
            self.fuse_clamp(rq.out_node.outputs()[0], &mut names)
        };

        let wdims = self.dims(w).to_vec();
        let vals = weight_values(node, wd, weight_zp)?;
        let bad_shape = |e: npuc_codecs::ordering::OrderingError| unsupported(node, e.to_string());
        // A depth multiplier on many channels: a DEPTHWISE of the input's channels repeated
        // (`conv_repeat`), when the input is dense.
        let repeat = match &node.op {
            Op::DepthwiseConv2d(_)
                if wdims[3] > 1
                    && wdims[2] >= crate::conv::depth_multiplier::REPEAT_FROM_CHANNELS
                    && self
                        .image_fm(node, x, true, input_zp)
                        .is_ok_and(|(f, _)| f.view.strides.is_none()) =>
            {
                wdims[3]
            }
            _ => 1,
        };
        let (kernel, weights, spatial) = match &node.op {
            Op::Conv2d(_) => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: wdims[1],
                    kernel_width: wdims[2],
                    ifm_depth: wdims[3],
                };
                let ohwi = OhwiWeights::new(shape, vals).map_err(bad_shape)?;
                (Kernel::Conv, ohwi, true)
            }
            Op::DepthwiseConv2d(_) if wdims[3] == 1 => {
                let ohwi = OhwiWeights::from_depthwise_hwc(wdims[0], wdims[1], wdims[2], &vals)
                    .map_err(bad_shape)?;
                (Kernel::Depthwise, ohwi, true)
            }
            Op::DepthwiseConv2d(_) if repeat > 1 => {
                let ohwi =
                    OhwiWeights::from_depthwise_hwc(wdims[0], wdims[1], wdims[2] * repeat, &vals)
                        .map_err(bad_shape)?;
                (Kernel::Depthwise, ohwi, true)
            }
            Op::DepthwiseConv2d(_) => {
                let ohwi = depth_multiplier_as_conv(&wdims, &vals).map_err(bad_shape)?;
                (Kernel::Conv, ohwi, true)
            }
            _ => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: 1,
                    kernel_width: 1,
                    ifm_depth: wdims[1],
                };
                let ohwi = OhwiWeights::new(shape, vals).map_err(bad_shape)?;
                (Kernel::Conv, ohwi, false)
            }
        };
        let (weights, dilation) = match check_dilated_kernel(&weights, dilation) {
            Ok(()) => expand_dilation(weights, dilation).map_err(bad_shape)?,
            // Beyond the NPU's kernel once expanded: the window keeps its dilation and
            // splits into parts of at most 64 taps per side, each tap in one part (L23,
            // decision L44).
            Err(_) if dilated_sides_fit(&weights, dilation) => (weights, dilation),
            Err(e) => return Err(unsupported(node, e)),
        };
        // A 1x1 kernel with stride 1 and no padding maps pixels to pixels: a batch folds
        // into the height (TOSA's fully connected layers are such CONV2Ds of N x 1 x 1 x C).
        let ws = weights.shape();
        let pointwise = spatial
            && (ws.kernel_height, ws.kernel_width) == (1, 1)
            && stride == [1, 1]
            && pad == [0; 4];
        let (ifm, ofm, images) = match (self.batch_folded(x), self.batch_folded(out_t)) {
            _ if raw48 => {
                let (ifm, n) = self.image_fm(node, x, spatial, input_zp)?;
                let ifm = if repeat > 1 {
                    self.repeat_channels(node, ifm, n, repeat)?
                } else {
                    ifm
                };
                (ifm, self.raw48_ofm(node, out_t, spatial, n)?, n)
            }
            (Some(ishape), Some(oshape)) if pointwise && self.dims(x)[0] > 1 => {
                if !(-128..=127).contains(&input_zp) || !(-128..=127).contains(&r.output_zp) {
                    return Err(unsupported(node, "zero point out of range"));
                }
                let ifm = Fm {
                    buffer: self.input_buffer(node, x)?,
                    shape: ishape,
                    zero_point: input_zp,
                    dtype: in_dtype,
                    broadcast: (false, false, false),
                    view: View::default(),
                };
                let ifm = if repeat > 1 {
                    self.repeat_channels(node, ifm, 1, repeat)?
                } else {
                    ifm
                };
                let idx = self.lowered.ops.len();
                let buffer = self.new_buffer(out_t, Some(idx));
                let ofm = Fm {
                    buffer,
                    shape: oshape,
                    zero_point: r.output_zp,
                    dtype: self.dtype(out_t),
                    broadcast: (false, false, false),
                    view: View::default(),
                };
                (ifm, ofm, 1)
            }
            _ => {
                let (ifm, n) = self.image_fm(node, x, spatial, input_zp)?;
                let ifm = if repeat > 1 {
                    self.repeat_channels(node, ifm, n, repeat)?
                } else {
                    ifm
                };
                let (ofm, _) = self.image_ofm(node, out_t, spatial, r.output_zp)?;
                (ifm, ofm, n)
            }
        };
        let oc = ofm.shape.2 as usize;
        if weights.shape().ofm_depth != oc {
            return Err(unsupported(node, "weight and output depths differ"));
        }
        // A 16x8 accumulator saturated to i32 before a 32-bit multiplier, which may leave the
        // i32 range: saturated on its own (`conv_sat`).
        let saturate = rq.acc == AccFormat::I32
            && in_dtype != DType::Int8
            && rq.ops.len() == 2
            && images == 1
            && self
                .acc_leaves_i32(&weights, bd, in_dtype, input_zp, oc)
                .is_some();
        let channels = if saturate {
            self.channel_records(&rq, bd, oc)
        } else {
            self.channel_scales(&rq, &weights, bd, in_dtype, input_zp, oc)?
        };
        let (kh, kw) = (ws.kernel_height, ws.kernel_width);
        let op = NpuOp::new(kernel, self.node(o).name.clone(), names, ifm, ofm, act)
            .with_kernel_size((kh as u32, kw as u32))
            .with_weights(weights)
            .with_requant(Requant::PerChannel(channels))
            .with_round(rescale_round(r))
            .with_acc(rq.acc);
        let window = Window {
            kernel: (kh, kw),
            stride,
            dilation,
            pad,
        };
        if saturate {
            return self.push_conv_saturated(node, op, window);
        }
        self.push_window(node, op, window, images)?;
        Ok(())
    }
}

impl<'g> Ctx<'g> {
    /// The OFM of a convolution's raw i48 accumulator `out_t` (no RESCALE, decision L36):
    /// one 8-byte word per element (b64), `images` images one after another, the feature map
    /// one image's.
    pub(crate) fn raw48_ofm(
        &mut self,
        node: &OpNode,
        out_t: TensorId,
        spatial: bool,
        images: usize,
    ) -> Result<Fm, LowerError> {
        let shape = match self.dims(out_t) {
            [_, h, w, c] if images > 1 => {
                let side = |v: usize| u32::try_from(v).ok();
                match (side(*h), side(*w), side(*c)) {
                    (Some(h), Some(w), Some(c)) => (h, w, c),
                    _ => return Err(unsupported(node, "a dimension above 65536")),
                }
            }
            _ => self.hwc(node, out_t, spatial)?,
        };
        Ok(self.i48_ofm(out_t, shape))
    }

    /// The per-channel bias/scale records of a convolution, after checking that the chosen
    /// accumulator reproduces the IR's exactly: with 16-bit inputs on the 32-bit accumulator,
    /// no output channel's accumulator may leave the i32 range (`weights` are OHWI with the
    /// zero point subtracted).
    pub(crate) fn channel_scales(
        &self,
        rq: &ConvRescale<'g>,
        weights: &OhwiWeights,
        bias: &TensorData,
        in_dtype: DType,
        input_zp: i64,
        oc: usize,
    ) -> Result<Vec<ChannelScale>, LowerError> {
        if rq.acc == AccFormat::I32 && in_dtype != DType::Int8 {
            // The IR accumulates in 48 bits (and a widening RESCALE saturates to i32); the
            // 32-bit accumulator wraps. Equal only if no accumulator leaves the i32 range.
            if let Some(c) = self.acc_leaves_i32(weights, bias, in_dtype, input_zp, oc) {
                return Err(unsupported(
                    rq.out_node,
                    format!(
                        "output channel {c}: the accumulator can exceed 32 bits, and the \
                         48-bit accumulator only takes 15-bit scales, so this 32-bit \
                         multiplier cannot be reproduced exactly"
                    ),
                ));
            }
        }
        Ok(self.channel_records(rq, bias, oc))
    }

    /// The first output channel whose accumulator (`weights` OHWI with the zero point
    /// subtracted, plus the bias) can leave the i32 range for inputs of `in_dtype`.
    pub(crate) fn acc_leaves_i32(
        &self,
        weights: &OhwiWeights,
        bias: &TensorData,
        in_dtype: DType,
        input_zp: i64,
        oc: usize,
    ) -> Option<usize> {
        let biases = bias.to_i64_vec();
        let x_max = (in_dtype.max_value() - input_zp).max(input_zp - in_dtype.min_value());
        let per_o = weights.values().len() / oc.max(1);
        weights
            .values()
            .chunks(per_o.max(1))
            .enumerate()
            .position(|(c, ws)| {
                let b = if biases.len() == 1 {
                    biases[0]
                } else {
                    biases[c]
                };
                let sum: i64 = ws.iter().map(|&v| i64::from(v).abs()).sum();
                sum * x_max + b.abs() > i64::from(i32::MAX)
            })
    }

    /// The per-channel bias/scale records of the output RESCALE.
    pub(crate) fn channel_records(
        &self,
        rq: &ConvRescale<'g>,
        bias: &TensorData,
        oc: usize,
    ) -> Vec<ChannelScale> {
        let r = rq.out;
        let biases = bias.to_i64_vec();
        let bias_of = |c: usize| {
            if biases.len() == 1 {
                biases[0]
            } else {
                biases[c]
            }
        };
        (0..oc)
            .map(|c| {
                let k = if r.multiplier.len() == 1 { 0 } else { c };
                ChannelScale {
                    bias: bias_of(c),
                    scale: r.multiplier[k] as u32,
                    shift: r.shift[k] as u8,
                }
            })
            .collect()
    }
}

/// Constant weights minus their zero point, as the weight decoder takes them (-255..=255).
pub(crate) fn weight_values(
    node: &OpNode,
    wd: &TensorData,
    weight_zp: i64,
) -> Result<Vec<i16>, LowerError> {
    let narrowed = match wd {
        TensorData::I8(v) => narrow(v, weight_zp),
        TensorData::U8(v) => narrow(v, weight_zp),
        TensorData::I16(v) => narrow(v, weight_zp),
        _ => wd
            .to_i64_vec()
            .into_iter()
            .map(|v| {
                v.checked_sub(weight_zp)
                    .and_then(|d| i16::try_from(d).ok())
                    .filter(|d| (-255..=255).contains(d))
            })
            .collect(),
    };
    narrowed.ok_or_else(|| unsupported(node, "weight minus zero point outside -255..=255"))
}

/// `values` minus `zp` as `i16`, or `None` if one of them falls outside -255..=255: the range
/// from the smallest and the largest value, then one conversion pass (both vectorise), without
/// widening the values to `i64` first.
fn narrow<T: Copy + Into<i32>>(values: &[T], zp: i64) -> Option<Vec<i16>> {
    let Some(&first) = values.first() else {
        return Some(Vec::new());
    };
    let (lo, hi) = values
        .iter()
        .fold((first.into(), first.into()), |(lo, hi), &v| {
            let v: i32 = v.into();
            (lo.min(v), hi.max(v))
        });
    let in_range = |v: i32| (-255..=255).contains(&(i64::from(v) - zp));
    if !(in_range(lo) && in_range(hi)) {
        return None;
    }
    // Every value minus `zp` is within -255..=255, so `zp` fits an `i32` and so does each
    // difference.
    let zp = zp as i32;
    Some(values.iter().map(|&v| (v.into() - zp) as i16).collect())
}

/// Depthwise weights `[KH, KW, C, M]` (output channel `c * M + m` reads input channel `c`) as
/// OHWI convolution weights `[C * M, KH, KW, C]`, zero outside the own input channel.
fn depth_multiplier_as_conv(
    wdims: &[usize],
    vals: &[i16],
) -> Result<OhwiWeights, npuc_codecs::ordering::OrderingError> {
    let (kh, kw, c, m) = (wdims[0], wdims[1], wdims[2], wdims[3]);
    let shape = WeightShape {
        ofm_depth: c * m,
        kernel_height: kh,
        kernel_width: kw,
        ifm_depth: c,
    };
    let mut out = vec![0i16; shape.len()];
    for ky in 0..kh {
        for kx in 0..kw {
            for ci in 0..c {
                for mi in 0..m {
                    let v = vals[((ky * kw + kx) * c + ci) * m + mi];
                    out[shape.index(ci * m + mi, ky, kx, ci)] = v;
                }
            }
        }
    }
    OhwiWeights::new(shape, out)
}

/// Refuses, before [`expand_dilation`] allocates it, a dilated kernel larger than the NPU's
/// largest (TRM 3.10.2: `dilated_height*dilated_width <= 64*64` and one side at most 64).
fn check_dilated_kernel(w: &OhwiWeights, dilation: [usize; 2]) -> Result<(), String> {
    if dilation[0] <= 2 && dilation[1] <= 2 {
        return Ok(()); // kept as it is, not expanded
    }
    let s = w.shape();
    let side = |k: usize, d: usize| (k - 1).checked_mul(d).and_then(|v| v.checked_add(1));
    let (Some(h), Some(wd)) = (
        side(s.kernel_height, dilation[0]),
        side(s.kernel_width, dilation[1]),
    ) else {
        return Err(format!(
            "dilation {}x{} overflows",
            dilation[0], dilation[1]
        ));
    };
    if h.saturating_mul(wd) > 64 * 64 || (h > 64 && wd > 64) {
        return Err(format!(
            "dilation {}x{} makes the {}x{} kernel span {h}x{wd} taps, above the NPU's 64x64 (TRM 3.10.2)",
            dilation[0], dilation[1], s.kernel_height, s.kernel_width
        ));
    }
    Ok(())
}

/// Whether the dilated sides of the kernel are below 2^31 (no overflow in the window's
/// geometry): such a kernel splits into parts instead of being expanded.
fn dilated_sides_fit(w: &OhwiWeights, dilation: [usize; 2]) -> bool {
    let s = w.shape();
    let side = |k: usize, d: usize| (k - 1).checked_mul(d).and_then(|v| v.checked_add(1));
    [
        side(s.kernel_height, dilation[0]),
        side(s.kernel_width, dilation[1]),
    ]
    .iter()
    .all(|v| v.is_some_and(|v| v < 1 << 31))
}

/// A dilation above 2 (the hardware's largest) as a dilation-1 kernel with `d - 1` zero taps
/// between the original ones; dilations 1 and 2 are kept.
fn expand_dilation(
    w: OhwiWeights,
    dilation: [usize; 2],
) -> Result<(OhwiWeights, [usize; 2]), npuc_codecs::ordering::OrderingError> {
    let (dy, dx) = (dilation[0], dilation[1]);
    if dy <= 2 && dx <= 2 {
        return Ok((w, dilation));
    }
    let s = w.shape();
    let ey = if dy > 2 { dy } else { 1 };
    let ex = if dx > 2 { dx } else { 1 };
    let shape = WeightShape {
        ofm_depth: s.ofm_depth,
        kernel_height: (s.kernel_height - 1) * ey + 1,
        kernel_width: (s.kernel_width - 1) * ex + 1,
        ifm_depth: s.ifm_depth,
    };
    let mut out = vec![0i16; shape.len()];
    for o in 0..s.ofm_depth {
        for y in 0..s.kernel_height {
            for x in 0..s.kernel_width {
                for i in 0..s.ifm_depth {
                    out[shape.index(o, y * ey, x * ex, i)] = w.get(o, y, x, i);
                }
            }
        }
    }
    let kept = [if dy > 2 { 1 } else { dy }, if dx > 2 { 1 } else { dx }];
    Ok((OhwiWeights::new(shape, out)?, kept))
}
