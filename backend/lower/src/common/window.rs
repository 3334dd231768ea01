//! Window operations (CONV2D, DEPTHWISE_CONV2D, max and average pooling) beyond the hardware's
//! window limits, and over batches.
//!
//! * A batch of `n` images is `n` operations, each on one image's window of the IFM and OFM
//!   buffers.
//! * An operation whose stride exceeds 3, whose dilation exceeds 2 or whose kernel exceeds the
//!   kernel limits (CONV/DEPTHWISE: dilated `kh * kw <= 4096` with one side at most 64; max
//!   pooling: `kh * kw <= 65536` with one side at most 256) is split into parts whose partial
//!   results are summed (or, for max pooling, maximised) through the accumulator: each part
//!   after the first takes its initial accumulator from IFM2 (ACC_FORMAT.acc_input = ifm2,
//!   TRM 3.6.6), the previous part's raw accumulator written as a b32 (32-bit accumulator) or b64
//!   (48-bit) feature map with scale 1, shift 0 and no bias; the last part adds the bias and
//!   applies the real rescale and activation.
//!
//! Along one axis of input length `L`, tap `k` (dilation `d`) of output `o` reads input
//! `o * s - p + k * d`. With `s = m * h` (`h` the largest of 3, 2, 1 dividing `s`), write
//! `k * d - p = m * a + v` (`0 <= v < m`): the tap reads element `o * h + a` of the phase view
//! `V_v[j] = x[m * j + v]` (an IFM window with an element step of `m`). So the taps of phase `v`
//! form a stride-`h` window over `V_v` at offsets `a`; a phase's offsets are cut into runs of at
//! most the kernel limit, each run one part (reading `V_v` from element `max(a0, 0)` with
//! `max(-a0, 0)` padding before). Elements outside `V_v` are outside `x`, so padding stays
//! padding. Every tap is in exactly one part, so the parts together compute the operation
//! exactly (decision L23 in docs/decisions.md).

use crate::LowerError;
use crate::{unsupported, Buffer, Ctx, Fm, Kernel, NpuOp, Requant, View};
use npuc_backend::isa::{AccFormat, PoolingMode, RoundModeOfm};
use npuc_codecs::ordering::{OhwiWeights, OrderingError, WeightShape};
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, OpNode, TensorId};

/// The window of an operation as the IR gives it (undilated kernel, before hardware limits).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub kernel: (usize, usize),
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Padding top, bottom, left, right (bottom/right as the IR gives them; the hardware's are
    /// derived).
    pub pad: [usize; 4],
}

/// One part of an axis: the IFM elements it reads (first, step, count), its kernel, stride,
/// dilation and padding before, and which original taps it holds (original, part tap).
#[derive(Debug, Clone)]
struct AxisPart {
    start: usize,
    step: usize,
    len: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    taps: Vec<(usize, usize)>,
}

/// One axis of a window.
struct Axis {
    input: usize,
    output: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
}

/// The kernel limits of a kernel kind: largest product of the dilated sides, largest side of
/// the smaller one.
fn limits(kernel: Kernel) -> (usize, usize) {
    match kernel {
        Kernel::Pool(_) => (65536, 256),
        _ => (4096, 64),
    }
}

fn fits(kernel: Kernel, kd: (usize, usize)) -> bool {
    let (product, side) = limits(kernel);
    kd.0 * kd.1 <= product && (kd.0 <= side || kd.1 <= side)
}

/// The parts of one axis. `split`: cut the taps into runs of at most `max_ext`.
fn axis_parts(a: &Axis, max_ext: usize, split: bool) -> Vec<AxisPart> {
    let stride = if a.output == 1 { 1 } else { a.stride };
    if stride <= 3 && a.dilation <= 2 && a.pad <= 127 && !split {
        return vec![AxisPart {
            start: 0,
            step: 1,
            len: a.input,
            kernel: a.kernel,
            stride,
            dilation: a.dilation,
            pad: a.pad,
            taps: (0..a.kernel).map(|k| (k, k)).collect(),
        }];
    }
    let (h, m) = stride_split(stride);
    let m = m as i64;
    let mut parts = Vec::new();
    for v in 0..m {
        let taps: Vec<(usize, i64)> = (0..a.kernel)
            .filter_map(|k| {
                let q = (k * a.dilation) as i64 - a.pad as i64;
                (q.rem_euclid(m) == v).then_some((k, q.div_euclid(m)))
            })
            .collect();
        let view_len = ((a.input as i64 - v).max(0) as usize).div_ceil(m as usize);
        // A tap that reads padding for every output adds nothing (zero after the zero point,
        // the identity of max pooling): it is left out.
        let reads_data = |off: i64| {
            let (h, len, out) = (h as i64, view_len as i64, a.output as i64);
            let first = ((-off).max(0) + h - 1) / h;
            let last = (len - 1 - off).div_euclid(h).min(out - 1);
            len > 0 && first <= last
        };
        let taps: Vec<(usize, i64)> = taps.into_iter().filter(|t| reads_data(t.1)).collect();
        let (Some(lo), Some(hi)) = (
            taps.iter().map(|t| t.1).min(),
            taps.iter().map(|t| t.1).max(),
        ) else {
            continue;
        };
        let mut c0 = lo;
        while c0 <= hi {
            let c1 = (c0 + max_ext as i64 - 1).min(hi);
            let ptaps: Vec<(usize, usize)> = taps
                .iter()
                .filter(|t| (c0..=c1).contains(&t.1))
                .map(|&(k, off)| (k, (off - c0) as usize))
                .collect();
            let first = c0.max(0) as usize;
            if !ptaps.is_empty() && first < view_len {
                parts.push(AxisPart {
                    start: v as usize + m as usize * first,
                    step: m as usize,
                    len: view_len - first,
                    kernel: (c1 - c0 + 1) as usize,
                    stride: h,
                    dilation: 1,
                    pad: (-c0).max(0) as usize,
                    taps: ptaps,
                });
            }
            c0 = c1 + 1;
        }
    }
    parts
}

/// The hardware padding of a window over `ifm` writing `ofm`: top/left as given, bottom/right
/// such that the derived IFM extent covers the IFM (TRM 3.10: the extent is derived from the
/// OFM size, kernel, stride and padding).
fn hw_pad(
    node: &OpNode,
    ifm: (u32, u32),
    ofm: (u32, u32),
    kd: (usize, usize),
    stride: (usize, usize),
    before: (usize, usize),
) -> Result<[u32; 4], LowerError> {
    if before.0 > 127 || before.1 > 127 {
        return Err(unsupported(node, "padding above 127"));
    }
    let eff = |o: u32, s: usize, k: usize, b: usize, i: u32| -> i64 {
        i64::from(o - 1) * s as i64 + k as i64 - b as i64 - i64::from(i)
    };
    let bottom = eff(ofm.0, stride.0, kd.0, before.0, ifm.0).max(0);
    let right = eff(ofm.1, stride.1, kd.1, before.1, ifm.1).max(0);
    if bottom > 255 || right > 255 {
        return Err(unsupported(node, "padding above 255"));
    }
    Ok([
        before.0 as u32,
        bottom as u32,
        before.1 as u32,
        right as u32,
    ])
}

impl NpuOp {
    /// Whether the operation takes its initial accumulator from IFM2 (ACC_FORMAT.acc_input =
    /// ifm2): a CONV, DEPTHWISE or POOL whose IFM2 is a raw accumulator (b32 or b64; a window
    /// part after the first). A CONV's i8/i16 IFM2 is the B matrix of a MATMUL instead
    /// (`weights_ifm2`). (The weights cannot tell them apart: OFM-depth slices move theirs
    /// into their encoded streams.)
    pub fn acc_from_ifm2(&self) -> bool {
        self.ifm2
            .is_some_and(|f| matches!(f.dtype, DType::Int32 | DType::Int64))
            && matches!(
                self.kernel,
                Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_)
            )
    }
}

impl<'g> Ctx<'g> {
    /// The feature map of one image of `t` (an NHWC tensor of any batch size; other tensors as
    /// [`Ctx::fm`] takes them) and the number of images.
    pub(crate) fn image_fm(
        &self,
        node: &OpNode,
        t: TensorId,
        spatial: bool,
        zp: i64,
    ) -> Result<(Fm, usize), LowerError> {
        let d = self.dims(t);
        if d.len() != 4 || d[0] <= 1 {
            return Ok((self.fm(node, t, spatial, zp)?, 1));
        }
        let mut one = self.fm_checked_dtype(node, t, zp)?;
        // Sides above 65536 are split after lowering (`split`).
        if d[1..].iter().any(|&v| v > u32::MAX as usize) {
            return Err(unsupported(node, "a dimension above 65536"));
        }
        one.shape = (d[1] as u32, d[2] as u32, d[3] as u32);
        Ok((one, d[0]))
    }

    /// [`Ctx::image_fm`] of an operation's output `t`, with a new buffer for it.
    pub(crate) fn image_ofm(
        &mut self,
        node: &OpNode,
        t: TensorId,
        spatial: bool,
        zp: i64,
    ) -> Result<(Fm, usize), LowerError> {
        let idx = self.lowered.ops.len();
        self.new_buffer(t, Some(idx));
        let r = self.image_fm(node, t, spatial, zp);
        if r.is_err() {
            self.lowered.buffers.pop();
            self.lowered.tensor_buffer.remove(&t);
        }
        r
    }

    /// A feature map of `t` after [`Ctx::fm`]'s element type and zero point checks (shape
    /// left to the caller).
    fn fm_checked_dtype(&self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        let dtype = self.dtype(t);
        if !matches!(dtype, DType::Int8 | DType::Int16 | DType::Int32) {
            return Err(unsupported(node, format!("{dtype} batched feature maps")));
        }
        if !(-128..=127).contains(&zp) {
            return Err(unsupported(node, format!("zero point {zp}")));
        }
        Ok(Fm {
            buffer: self.input_buffer(node, t)?,
            shape: (1, 1, 1),
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    /// Pushes the window operation `op` (IFM and OFM of image 0, the whole kernel and its
    /// weights; geometry fields are set here) once per image, split into parts where the
    /// window exceeds the hardware's limits.
    pub(crate) fn push_window(
        &mut self,
        node: &OpNode,
        op: NpuOp,
        w: Window,
        images: usize,
    ) -> Result<(), LowerError> {
        let image_bytes = |f: &Fm| {
            let (h, wd, c) = f.shape;
            u64::from(h) * u64::from(wd) * u64::from(c) * u64::from(f.elem_bytes())
        };
        let (ib, ob) = (image_bytes(&op.ifm), image_bytes(&op.ofm));
        for b in 0..images as u64 {
            let mut one = op.clone();
            one.ifm.view.offset += b * ib;
            one.ofm.view.offset += b * ob;
            self.push_image(node, one, w)?;
        }
        Ok(())
    }

    fn push_image(&mut self, node: &OpNode, op: NpuOp, w: Window) -> Result<(), LowerError> {
        let kd = (
            (w.kernel.0 - 1) * w.dilation[0] + 1,
            (w.kernel.1 - 1) * w.dilation[1] + 1,
        );
        let split = !fits(op.kernel, kd);
        let (_, max_ext) = limits(op.kernel);
        let axis = |i: usize| Axis {
            input: [op.ifm.shape.0, op.ifm.shape.1][i] as usize,
            output: [op.ofm.shape.0, op.ofm.shape.1][i] as usize,
            kernel: [w.kernel.0, w.kernel.1][i],
            stride: w.stride[i],
            dilation: w.dilation[i],
            pad: w.pad[2 * i],
        };
        let ys = axis_parts(&axis(0), max_ext, split && kd.0 > max_ext);
        let xs = axis_parts(&axis(1), max_ext, split && kd.1 > max_ext);
        if (ys.is_empty() || xs.is_empty()) && op.weights.is_none() {
            return Err(unsupported(node, "a window that reads only padding"));
        }
        // Every tap of an axis reads only padding (zero after the zero point): the result is
        // the bias alone, which one part with no taps adds (decision L44).
        let bias_only = |a: Axis| AxisPart {
            start: 0,
            step: 1,
            len: a.input,
            kernel: 1,
            stride: 1,
            dilation: 1,
            pad: 0,
            taps: Vec::new(),
        };
        let ys = if ys.is_empty() {
            vec![bias_only(axis(0))]
        } else {
            ys
        };
        let xs = if xs.is_empty() {
            vec![bias_only(axis(1))]
        } else {
            xs
        };
        let mut parts: Vec<NpuOp> = Vec::new();
        for py in &ys {
            for px in &xs {
                if let Some(p) = self.part(node, &op, py, px)? {
                    parts.push(p);
                }
            }
        }
        if parts.len() > 1 && op.kernel == Kernel::Pool(PoolingMode::Average) {
            // (Its count of non-padding taps is per operation: average pooling never splits.)
            return Err(unsupported(
                node,
                "an average pooling window beyond the hardware's",
            ));
        }
        if parts.is_empty() {
            // Every part's weights are zero: one part still adds the bias.
            parts.push(self.part_unchecked(node, &op, &ys[0], &xs[0])?);
        }
        self.push_parts(&op, parts);
        Ok(())
    }

    /// The part of `op` on the axis parts `py`, `px` (`None` when its weights are all zero:
    /// it adds nothing).
    fn part(
        &self,
        node: &OpNode,
        op: &NpuOp,
        py: &AxisPart,
        px: &AxisPart,
    ) -> Result<Option<NpuOp>, LowerError> {
        let p = self.part_unchecked(node, op, py, px)?;
        let zero = p
            .weights
            .as_ref()
            .is_some_and(|w| w.values().iter().all(|&v| v == 0));
        Ok((!zero).then_some(p))
    }

    fn part_unchecked(
        &self,
        node: &OpNode,
        op: &NpuOp,
        py: &AxisPart,
        px: &AxisPart,
    ) -> Result<NpuOp, LowerError> {
        let mut p = op.clone();
        let (sy, sx) = op.ifm.strides();
        p.ifm.shape = (py.len as u32, px.len as u32, op.ifm.shape.2);
        p.ifm.view.offset += py.start as u64 * sy + px.start as u64 * sx;
        p.ifm.view.strides = Some((py.step as u64 * sy, px.step as u64 * sx));
        if py.start == 0 && px.start == 0 && py.step == 1 && px.step == 1 {
            p.ifm.view.strides = op.ifm.view.strides;
            p.ifm.shape = op.ifm.shape;
        }
        p.kernel_size = (py.kernel as u32, px.kernel as u32);
        p.stride = (py.stride as u32, px.stride as u32);
        p.dilation = (py.dilation as u32, px.dilation as u32);
        let kd = (
            (py.kernel - 1) * py.dilation + 1,
            (px.kernel - 1) * px.dilation + 1,
        );
        p.pad = hw_pad(
            node,
            (p.ifm.shape.0, p.ifm.shape.1),
            (op.ofm.shape.0, op.ofm.shape.1),
            kd,
            (py.stride, px.stride),
            (py.pad, px.pad),
        )?;
        if let Some(wt) = &op.weights {
            let part = part_kernel(wt, (py.kernel, &py.taps), (px.kernel, &px.taps));
            p.weights = Some(part.map_err(|e| unsupported(node, e.to_string()))?);
        }
        Ok(p)
    }

    /// Pushes the parts of one window operation, summing (maximising) through the accumulator:
    /// every part but the last writes its raw accumulator to a new b32/b64 buffer that the
    /// next part reads as its initial accumulator (IFM2).
    fn push_parts(&mut self, op: &NpuOp, parts: Vec<NpuOp>) {
        let n = parts.len();
        let (h, w, c) = op.ofm.shape;
        let raw = match op.acc {
            AccFormat::I32 => DType::Int32,
            AccFormat::I48 => DType::Int64,
        };
        let mut prev: Option<Fm> = None;
        for (k, mut p) in parts.into_iter().enumerate() {
            p.ifm2 = prev;
            if k + 1 < n {
                // A partial result computes no IR tensor (`verify` skips it when localising).
                p.name = format!("{} (part {} of {n})", op.name, k + 1);
                p.fused = Vec::new();
                let idx = self.lowered.ops.len();
                let size = u64::from(h) * u64::from(w) * u64::from(c) * raw.byte_size() as u64;
                self.lowered.buffers.push(Buffer {
                    size,
                    producer: Some(idx),
                    last_use: None,
                    is_input: false,
                    is_output: false,
                });
                let fm = Fm {
                    buffer: self.lowered.buffers.len() - 1,
                    shape: op.ofm.shape,
                    zero_point: 0,
                    dtype: raw,
                    broadcast: (false, false, false),
                    view: View::default(),
                };
                p.ofm = fm;
                p.requant = match &op.requant {
                    Requant::PerChannel(ch) => Requant::PerChannel(vec![
                        ChannelScale {
                            bias: 0,
                            scale: 1,
                            shift: 0,
                        };
                        ch.len()
                    ]),
                    Requant::Global { .. } => Requant::Global { scale: 1, shift: 0 },
                };
                p.round = RoundModeOfm::Natural;
                p.act = (i64::from(i32::MIN), i64::from(i32::MAX));
                prev = Some(fm);
            }
            self.push(p);
        }
    }
}

/// `(h, m)`: a stride `s` as the hardware stride `h` (the largest of 3, 2, 1 dividing `s`)
/// times a subsampling `m`.
fn stride_split(s: usize) -> (usize, usize) {
    let h = [3, 2, 1].into_iter().find(|h| s % h == 0).unwrap_or(1);
    (h, s / h)
}

impl<'g> Ctx<'g> {
    /// An average pooling with a stride above 3 (kernel at most 8x8): the NPU's average
    /// pooling with stride `h` (`s = m * h`) computes every `m`-th output row and column in
    /// between too (output `o * m` of that pooling has the window of output `o`, and so the
    /// same count of non-padding taps), and a 1x1 max pooling copies every `m`-th of them.
    pub(crate) fn push_avgpool_strided(
        &mut self,
        node: &OpNode,
        op: NpuOp,
        w: Window,
        images: usize,
    ) -> Result<(), LowerError> {
        let (oh, ow, c) = op.ofm.shape;
        let (hy, my) = stride_split(w.stride[0]);
        let (hx, mx) = stride_split(w.stride[1]);
        let dense = ((oh - 1) * my as u32 + 1, (ow - 1) * mx as u32 + 1, c);
        let e = u64::from(op.ofm.elem_bytes());
        let image_bytes = |f: &Fm| {
            let (h, wd, c) = f.shape;
            u64::from(h) * u64::from(wd) * u64::from(c) * u64::from(f.elem_bytes())
        };
        let (ib, ob) = (image_bytes(&op.ifm), image_bytes(&op.ofm));
        let pad = hw_pad(
            node,
            (op.ifm.shape.0, op.ifm.shape.1),
            (dense.0, dense.1),
            w.kernel,
            (hy, hx),
            (w.pad[0], w.pad[2]),
        )?;
        for b in 0..images as u64 {
            let idx = self.lowered.ops.len();
            self.lowered.buffers.push(Buffer {
                size: u64::from(dense.0) * u64::from(dense.1) * u64::from(c) * e,
                producer: Some(idx),
                last_use: None,
                is_input: false,
                is_output: false,
            });
            let temp = Fm {
                buffer: self.lowered.buffers.len() - 1,
                shape: dense,
                zero_point: op.ofm.zero_point,
                dtype: op.ofm.dtype,
                broadcast: (false, false, false),
                view: View::default(),
            };
            let mut pool = op.clone();
            pool.name = format!("{} (every output)", op.name);
            pool.fused = Vec::new();
            pool.ifm.view.offset += b * ib;
            pool.ofm = temp;
            pool.stride = (hy as u32, hx as u32);
            pool.pad = pad;
            self.push(pool);
            let (sy, sx) = temp.strides();
            let mut every = temp;
            every.shape = op.ofm.shape;
            every.view.strides = Some((sy * my as u64, sx * mx as u64));
            let mut ofm = op.ofm;
            ofm.view.offset += b * ob;
            let range = (ofm.dtype.min_value(), ofm.dtype.max_value());
            self.push(NpuOp::copy(
                op.name.clone(),
                op.fused.clone(),
                every,
                ofm,
                range,
            ));
        }
        Ok(())
    }
}

/// The part of the OHWI kernel `w` a part operation runs: a kernel of `kernel_height` x
/// `kernel_width` taps whose tap `(qy, qx)` is `w`'s tap `(ky, kx)` for every `(ky, qy)` of
/// `rows` and `(kx, qx)` of `cols`, zero elsewhere. The part that is the whole kernel (every
/// tap in its place) is `w` itself, shared, not copied.
pub(crate) fn part_kernel(
    w: &OhwiWeights,
    (kernel_height, rows): (usize, &[(usize, usize)]),
    (kernel_width, cols): (usize, &[(usize, usize)]),
) -> Result<OhwiWeights, OrderingError> {
    let whole = |taps: &[(usize, usize)], n: usize, of: usize| {
        n == of && taps.len() == n && taps.iter().enumerate().all(|(k, &t)| t == (k, k))
    };
    if whole(rows, kernel_height, w.shape().kernel_height)
        && whole(cols, kernel_width, w.shape().kernel_width)
    {
        return Ok(w.clone());
    }
    let shape = WeightShape {
        kernel_height,
        kernel_width,
        ..w.shape()
    };
    let mut vals = vec![0i16; shape.len()];
    for o in 0..shape.ofm_depth {
        for &(ky, qy) in rows {
            for &(kx, qx) in cols {
                for i in 0..shape.ifm_depth {
                    vals[shape.index(o, qy, qx, i)] = w.get(o, ky, kx, i);
                }
            }
        }
    }
    OhwiWeights::new(shape, vals)
}

#[cfg(test)]
mod tests {
    use super::part_kernel;
    use npuc_codecs::ordering::{OhwiWeights, WeightShape};

    #[test]
    fn the_whole_kernel_is_the_kernel_and_a_part_holds_its_taps() {
        let shape = WeightShape {
            ofm_depth: 3,
            kernel_height: 3,
            kernel_width: 2,
            ifm_depth: 5,
        };
        let values = (0..shape.len()).map(|v| v as i16 - 40).collect();
        let w = OhwiWeights::new(shape, values).unwrap();
        let all = |n: usize| (0..n).map(|k| (k, k)).collect::<Vec<_>>();
        let whole = part_kernel(&w, (3, &all(3)), (2, &all(2))).unwrap();
        assert_eq!(whole, w);
        assert_eq!(whole.identity(), w.identity(), "shared, not copied");
        // Rows 1 and 2 as a kernel 2 tall, column 1 alone.
        let p = part_kernel(&w, (2, &[(1, 0), (2, 1)]), (1, &[(1, 0)])).unwrap();
        // Every row in its place but the kernel one taller: zero in the last row.
        let q = part_kernel(&w, (4, &all(3)), (2, &all(2))).unwrap();
        for o in 0..3 {
            for i in 0..5 {
                for y in 0..2 {
                    assert_eq!(p.get(o, y, 0, i), w.get(o, y + 1, 1, i));
                }
                for x in 0..2 {
                    for y in 0..3 {
                        assert_eq!(q.get(o, y, x, i), w.get(o, y, x, i));
                    }
                    assert_eq!(q.get(o, 3, x, i), 0);
                }
            }
        }
    }
}
