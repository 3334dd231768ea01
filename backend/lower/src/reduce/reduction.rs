//! Reductions: MEAN (an exact widening RESCALE, one or more REDUCE_SUMs, an optional RESHAPE
//! and the output RESCALE), REDUCE_MAX / REDUCE_MIN chains and REDUCE_ANY / REDUCE_ALL of
//! booleans (a max / min of bytes 0 and 1).
//!
//! Every reduction works on the (H, W, C) view of its tensor (the same view the other
//! operations use: batch 1, rank 1..=4):
//! * MEAN is one POOL in sum mode with an H x W kernel when the depth is kept (its OFM_SCALE
//!   the output RESCALE, decision L52), one CONV to depth 1 with unit weights when it is
//!   reduced (the RESCALE as the per-channel scale, bias 0). The accumulator is the exact sum
//!   of `x - zp`.
//! * REDUCE_MAX / REDUCE_MIN are one max / min pool over the reduced axes. A reduction over the
//!   depth reads the tensor as (H*W, C, 1), so the channels become the pooled width.

use crate::elementwise::operand::exact_widening;
use crate::LowerError;
use crate::{rescale_round, sole_consumer, unsupported, Ctx, Fm, Kernel, NpuOp, Requant, View};
use npuc_backend::isa::{PoolingMode, RoundModeOfm};
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, Graph, Op, OpId, OpNode, TensorId};

/// Which of H, W, C an IR axis of a rank-`rank` tensor is (`None`: the batch axis).
fn hwc_axis(rank: usize, axis: usize) -> Option<usize> {
    match rank {
        4 => axis.checked_sub(1),
        3 => Some(axis),
        2 => Some(axis + 1),
        1 => Some(2),
        _ => None,
    }
}

/// The axes of a reduction of `axes` of a tensor of `dims`: unit axes dropped, neighbours that
/// are both reduced or both kept merged; (extent, reduced), outermost first.
fn reduction_groups(dims: &[usize], axes: &[usize]) -> Vec<(usize, bool)> {
    let mut g: Vec<(usize, bool)> = vec![];
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let r = axes.contains(&i);
        match g.last_mut() {
            Some(last) if last.1 == r => last.0 *= d,
            _ => g.push((d, r)),
        }
    }
    g
}

/// An (H, W, C) view of a reduction and which of H, W, C it reduces.
type ReductionView = ((u32, u32, u32), [bool; 3]);

/// Largest window a single POOL max/min or convolution-like reduction takes.
fn pool_window_ok(kh: u32, kw: u32) -> bool {
    u64::from(kh) * u64::from(kw) <= 65536 && kh.min(kw) <= 256
}

fn conv_window_ok(kh: u32, kw: u32) -> bool {
    kh * kw <= 4096 && (kh <= 64 || kw <= 64)
}

/// Whether REDUCE_SUM `o` is a MEAN: an exact widening of an i8 or i16 tensor in, the sums
/// (after further REDUCE_SUMs and an optional RESHAPE) into one per-tensor RESCALE. The
/// convolution lowering then reduces the whole chain, over any axes.
pub(crate) fn mean_applies(g: &Graph, o: OpId) -> bool {
    let Some(node) = g.op(o) else {
        return false;
    };
    if exact_widening(g, node.inputs()[0])
        .filter(|w| w.3 == 0)
        .is_none()
    {
        return false;
    }
    let mut t = node.outputs()[0];
    while let Some(c) = sole_consumer(g, t).and_then(|c| g.op(c)) {
        match &c.op {
            Op::ReduceSum(_) | Op::Reshape(_) => t = c.outputs()[0],
            Op::Rescale(r) => return r.multiplier.len() == 1,
            _ => return false,
        }
    }
    false
}

impl<'g> Ctx<'g> {
    /// Follows a chain of reductions of the same kind starting at `o`; returns the reduced IR
    /// axes, the last tensor of the chain and the operator names.
    fn reduce_chain(&mut self, o: OpId, names: &mut Vec<String>) -> (Vec<usize>, TensorId) {
        let node = self.node(o);
        let same = |a: &Op, b: &Op| std::mem::discriminant(a) == std::mem::discriminant(b);
        let mut axes = vec![];
        let mut cur = o;
        loop {
            let n = self.node(cur);
            let axis = match &n.op {
                Op::ReduceSum(a)
                | Op::ReduceMax(a)
                | Op::ReduceMin(a)
                | Op::ReduceAny(a)
                | Op::ReduceAll(a) => a.axis,
                _ => unreachable!("reduce_chain on a non-reduction"),
            };
            if !axes.contains(&axis) {
                axes.push(axis);
            }
            let out = n.outputs()[0];
            match self.sole_consumer(out) {
                Some(c) if same(&self.node(c).op, &node.op) => {
                    self.fused.insert(c);
                    names.push(self.node(c).name.clone());
                    cur = c;
                }
                _ => return (axes, out),
            }
        }
    }

    /// The (H, W, C) view of a reduction of `axes` of `t` and the reduced flags: the natural
    /// view of a batch-1 tensor of rank 4 or less, else the [`reduction_groups`] in three
    /// axes. `None`: the groups do not fit three axes.
    fn reduction_view(
        &self,
        node: &OpNode,
        t: TensorId,
        axes: &[usize],
    ) -> Result<Option<ReductionView>, LowerError> {
        let d = self.dims(t);
        let rank = d.len();
        if rank <= 3 || (rank == 4 && d[0] == 1) {
            let mut reduced = [false; 3];
            for &a in axes {
                if let Some(i) = hwc_axis(rank, a) {
                    reduced[i] = true;
                }
            }
            return Ok(Some((self.hwc(node, t, false)?, reduced)));
        }
        let g = reduction_groups(d, axes);
        if g.len() > 3 {
            return Ok(None);
        }
        let mut e = [1usize; 3];
        let mut f = [false; 3];
        for (k, &(n, r)) in g.iter().enumerate() {
            e[3 - g.len() + k] = n;
            f[3 - g.len() + k] = r;
        }
        // Sides above 65536 are split after lowering (`split`).
        if e.iter().any(|&v| v > u32::MAX as usize) {
            return Err(unsupported(node, "a dimension above 65536"));
        }
        Ok(Some(((e[0] as u32, e[1] as u32, e[2] as u32), f)))
    }

    /// The feature map of `t` (zero point 0) viewed as `shape`; booleans are bytes 0 / 1
    /// read as signed 8-bit. `output`: `t` is the operation's output (gets its buffer).
    fn fm_or_bool(
        &mut self,
        node: &OpNode,
        t: TensorId,
        shape: (u32, u32, u32),
        output: bool,
    ) -> Result<Fm, LowerError> {
        if self.dtype(t) != DType::Bool {
            return if output {
                self.ofm_shaped(node, t, shape, 0)
            } else {
                self.fm_shaped(node, t, shape, 0)
            };
        }
        let buffer = if output {
            let idx = self.lowered.ops.len();
            self.new_buffer(t, Some(idx))
        } else {
            self.input_buffer(node, t)?
        };
        Ok(Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: DType::Bool,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    pub(crate) fn lower_reduce(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        match node.op {
            Op::ReduceSum(_) if self.mean_applies(o) => self.lower_mean(o),
            Op::ReduceSum(_) => self.lower_reduce_sum(o),
            _ => self.lower_reduce_minmax(o),
        }
    }

    /// REDUCE_MAX / REDUCE_MIN (chain) as one max / min pool.
    fn lower_reduce_minmax(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let x = node.inputs()[0];
        // REDUCE_ANY / REDUCE_ALL of booleans (bytes 0 / 1) are a max / min.
        let mode = match node.op {
            Op::ReduceMax(_) | Op::ReduceAny(_) => PoolingMode::Max,
            _ => PoolingMode::Min,
        };
        let mut names = vec![node.name.clone()];
        let (axes, out_t) = self.reduce_chain(o, &mut names);
        // i32 maxima pass unclamped (clip range none); narrower ones are in their range.
        let act = match self.dtype(x) {
            DType::Int32 => crate::elementwise::arith::NO_CLIP,
            DType::Int16 => (-32768, 32767),
            _ => (-128, 127),
        };
        let view = self.reduction_view(node, x, &axes)?;
        let Some((shape, reduced)) = view.filter(|(_, r)| !(r[2] && r[0] != r[1])) else {
            // Groups that no single pool reduces: one pool per reduced group.
            let g = reduction_groups(self.dims(x), &axes);
            return self.reduce_minmax_steps(node, names, x, out_t, &g, mode, act);
        };
        let mut ifm = self.fm_or_bool(node, x, shape, false)?;
        let mut ofm = self.fm_or_bool(node, out_t, shape, true)?;
        let (h, w, c) = ifm.shape;
        if u64::from(h) * u64::from(w) * u64::from(c) > 1 << 24 {
            return Err(unsupported(node, "reduction of more than 2^24 elements"));
        }
        if reduced[2] {
            if reduced[0] != reduced[1] {
                return Err(unsupported(
                    node,
                    "a depth reduction together with only one spatial axis",
                ));
            }
            // Channels become the pooled width; H and W fold into the height (or into the
            // width too when they are reduced as well).
            if reduced[0] {
                ifm.shape = (1, h * w * c, 1);
                ofm.shape = (1, 1, 1);
            } else {
                ifm.shape = (h * w, c, 1);
                ofm.shape = (h * w, 1, 1);
            }
        } else {
            ofm.shape = (
                if reduced[0] { 1 } else { h },
                if reduced[1] { 1 } else { w },
                c,
            );
        }
        let k = (
            ifm.shape.0 / ofm.shape.0.max(1),
            ifm.shape.1 / ofm.shape.1.max(1),
        );
        // A window side above 65536 spans a whole axis: `split` reduces it in parts.
        if !pool_window_ok(k.0.min(65536), k.1.min(65536)) {
            return Err(unsupported(node, "reduction window too large"));
        }
        self.push(
            NpuOp::pool(mode, self.node(o).name.clone(), names, ifm, ofm, act).with_kernel_size(k),
        );
        Ok(())
    }

    /// A max / min reduction whose groups no single pool reduces: one POOL per reduced
    /// group, innermost first, each over the view (outer, group, inner) with a 1 x group
    /// window, through scratch buffers.
    #[allow(clippy::too_many_arguments)]
    fn reduce_minmax_steps(
        &mut self,
        node: &OpNode,
        names: Vec<String>,
        x: TensorId,
        out_t: TensorId,
        groups: &[(usize, bool)],
        mode: PoolingMode,
        act: (i64, i64),
    ) -> Result<(), LowerError> {
        let mut ext: Vec<usize> = groups.iter().map(|g| g.0).collect();
        let steps: Vec<usize> = (0..groups.len()).rev().filter(|&i| groups[i].1).collect();
        let dtype = self.dtype(x);
        if steps.is_empty() {
            return Err(unsupported(node, "a reduction of unit axes only"));
        }
        let mut src = self.fm_or_bool(node, x, (1, 1, 1), false)?;
        for (k, &i) in steps.iter().enumerate() {
            let outer: usize = ext[..i].iter().product();
            let inner: usize = ext[i + 1..].iter().product();
            let n = ext[i];
            if [outer, n, inner].iter().any(|&v| v > u32::MAX as usize) {
                return Err(unsupported(node, "a dimension above 65536"));
            }
            let (outer, n, inner) = (outer as u32, n as u32, inner as u32);
            let ifm = Fm {
                shape: (outer, n, inner),
                ..src
            };
            let ofm = if k + 1 == steps.len() {
                self.fm_or_bool(node, out_t, (outer, 1, inner), true)?
            } else {
                let mut f = self.scratch_fm((outer, 1, inner), dtype);
                f.dtype = dtype;
                f
            };
            self.push(
                NpuOp::pool(mode, node.name.clone(), names.clone(), ifm, ofm, act)
                    .with_kernel_size((1, n)),
            );
            ext[i] = 1;
            src = ofm;
        }
        Ok(())
    }

    fn mean_applies(&self, o: OpId) -> bool {
        mean_applies(self.g, o)
    }

    /// REDUCE_SUM of an i8, i16 or i32 tensor over its last axis (or an axis followed only
    /// by axes of extent 1) as one POOL reduce_sum, which sums the IFM depth; a following
    /// RESCALE and CLAMP fuse as for elementwise operations.
    fn lower_reduce_sum(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::ReduceSum(a) = &node.op else {
            unreachable!("lower_reduce_sum on another op")
        };
        let x = node.inputs()[0];
        self.materialize(x)?;
        let d = self.dims(x);
        if d[a.axis + 1..].iter().any(|&e| e != 1) {
            return Err(unsupported(
                node,
                "REDUCE_SUM over an axis other than the innermost one",
            ));
        }
        let outer: usize = d[..a.axis].iter().product();
        let extent = d[a.axis];
        // An outer extent above 65536 is split after lowering (`split`).
        if outer > u32::MAX as usize || extent > 65536 {
            return Err(unsupported(node, "a dimension above 65536"));
        }
        let mut names = vec![node.name.clone()];
        let out = self.output_stage_global(node, node.outputs()[0], &mut names)?;
        let ifm = self.fm_shaped(node, x, (1, outer as u32, extent as u32), 0)?;
        let ofm = self.ofm_shaped(node, out.t, (1, outer as u32, 1), out.zp)?;
        let (scale, shift) = out.requant.unwrap_or((1, 0));
        self.push(
            NpuOp::pool(PoolingMode::ReduceSum, out.name, names, ifm, ofm, out.act)
                .with_requant(Requant::Global { scale, shift })
                .with_round(out.round.unwrap_or(RoundModeOfm::Natural)),
        );
        Ok(())
    }

    /// i8 -> exact RESCALE to i32 -> REDUCE_SUM (chain) -> [RESHAPE] -> RESCALE to i8 as one
    /// convolution with unit weights.
    fn lower_mean(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Some((wp, x, zp)) = self.widen(node.inputs()[0]) else {
            return Err(unsupported(
                node,
                "REDUCE_SUM is supported on an i8 tensor widened by an exact RESCALE",
            ));
        };
        let mut names = vec![self.node(wp).name.clone(), node.name.clone()];
        let (axes, sum_t) = self.reduce_chain(o, &mut names);
        let (shape, reduced) = self.reduction_view(node, x, &axes)?.ok_or_else(|| {
            unsupported(
                node,
                "a sum over axes that alternate with kept axes more than three times",
            )
        })?;
        // An optional RESHAPE of the sums, then the output RESCALE.
        let mut t = sum_t;
        let mut reshape = None;
        if let Some(c) = self.sole_consumer(t) {
            if matches!(self.node(c).op, Op::Reshape(_)) {
                reshape = Some(c);
                t = self.node(c).outputs()[0];
            }
        }
        let rescale_op = self
            .sole_consumer(t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "the sum must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale_op);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        if r.multiplier.len() != 1 {
            return Err(unsupported(rnode, "per-channel rescale after a reduction"));
        }
        let ifm = self.fm_shaped(node, x, shape, zp)?;
        let (h, w, c) = ifm.shape;
        let k = (
            if reduced[0] { h } else { 1 },
            if reduced[1] { w } else { 1 },
        );
        let window_ok = match reduced[2] {
            true => conv_window_ok(k.0, k.1),
            false => pool_window_ok(k.0, k.1),
        };
        if !window_ok {
            return Err(unsupported(node, "reduction window too large"));
        }
        self.fused.insert(wp);
        if let Some(rs) = reshape {
            self.fused.insert(rs);
            names.push(self.node(rs).name.clone());
        }
        self.fused.insert(rescale_op);
        names.push(rnode.name.clone());
        let (out_t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);
        let od = if reduced[2] { 1 } else { c };
        let ofm = self.ofm_shaped(node, out_t, (h / k.0, w / k.1, od), r.output_zp)?;
        let (m, shift) = (r.multiplier[0] as u32, r.shift[0] as u8);
        let op = if reduced[2] {
            let shape = WeightShape {
                ofm_depth: 1,
                kernel_height: k.0 as usize,
                kernel_width: k.1 as usize,
                ifm_depth: c as usize,
            };
            let ones = vec![1i16; shape.len()];
            let w = OhwiWeights::new(shape, ones).map_err(|e| unsupported(node, e.to_string()))?;
            let scale = ChannelScale {
                bias: 0,
                scale: m,
                shift,
            };
            NpuOp::new(Kernel::Conv, rnode.name.clone(), names, ifm, ofm, act)
                .with_weights(w)
                .with_requant(Requant::PerChannel(vec![scale; od as usize]))
        } else {
            // The depth kept: the window sums of a POOL in sum mode, the RESCALE as OFM_SCALE
            // (decision L52: no weights or scale stream).
            NpuOp::pool(PoolingMode::Sum, rnode.name.clone(), names, ifm, ofm, act)
                .with_requant(Requant::Global { scale: m, shift })
        };
        self.push(op.with_kernel_size(k).with_round(rescale_round(r)));
        Ok(())
    }
}

impl<'g> Ctx<'g> {
    /// ARGMAX of an i8 tensor (i32 indices) as one argmax_x / argmax_y pool.
    ///
    /// The pool keeps `v + 65536 * k` of the first strict maximum, but its accumulator starts
    /// at -2^31, whose low half is 0, so a value must exceed 0 to be taken (decision #6). The
    /// IFM zero point -128 makes every value `x + 128 >= 0`; only an all-(-128) window keeps
    /// -2^31, and the activation clamp at 0 turns it into index 0, the right answer there.
    /// The index is the accumulator shifted right by 16 (natural rounding; values < 2^15).
    pub(crate) fn lower_argmax(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::ArgMax(a) = &node.op else {
            unreachable!("lower_argmax on another op")
        };
        let x = node.inputs()[0];
        let out_t = node.outputs()[0];
        if self.dtype(x) != DType::Int8 || self.dtype(out_t) != DType::Int32 {
            return Err(unsupported(node, "ARGMAX of i8 into i32 only"));
        }
        let d = self.dims(x);
        let rank = d.len();
        let natural = rank <= 3 || (rank == 4 && d[0] == 1);
        let (ifm, mode, ofm_shape, k) = match hwc_axis(rank, a.axis).filter(|_| natural) {
            Some(axis) => {
                let mut ifm = self.fm(node, x, false, -128)?;
                let (h, w, c) = ifm.shape;
                if u64::from(h) * u64::from(w) > 65536 {
                    return Err(unsupported(node, "ARGMAX over more than 65536 rows"));
                }
                let (mode, ofm_shape, k) = match axis {
                    0 => (PoolingMode::ArgmaxY, (1, w, c), (h, 1)),
                    1 => (PoolingMode::ArgmaxX, (h, 1, c), (1, w)),
                    _ => {
                        ifm.shape = (h * w, c, 1);
                        (PoolingMode::ArgmaxX, (h * w, 1, 1), (1, c))
                    }
                };
                (ifm, mode, ofm_shape, k)
            }
            None => {
                // Any other shape: the axes before and after the reduced one fold into the
                // height and the depth.
                let outer: usize = d[..a.axis].iter().product();
                let inner: usize = d[a.axis + 1..].iter().product();
                let n = d[a.axis];
                if outer > 65536 || inner > 65536 {
                    return Err(unsupported(node, "a dimension above 65536"));
                }
                let (outer, n, inner) = (outer as u32, n as u32, inner as u32);
                let ifm = self.fm_shaped(node, x, (outer, n, inner), -128)?;
                (ifm, PoolingMode::ArgmaxX, (outer, 1, inner), (1, n))
            }
        };
        if k.0.max(k.1) > 256 {
            return Err(unsupported(node, "ARGMAX over more than 256 elements"));
        }
        let idx = self.lowered.ops.len();
        let buffer = self.new_buffer(out_t, Some(idx));
        let ofm = Fm {
            buffer,
            shape: ofm_shape,
            zero_point: 0,
            dtype: DType::Int32,
            broadcast: (false, false, false),
            view: View::default(),
        };
        self.push(
            NpuOp::pool(
                mode,
                node.name.clone(),
                vec![node.name.clone()],
                ifm,
                ofm,
                (0, 32767),
            )
            .with_kernel_size(k)
            .with_requant(Requant::Global {
                scale: 1,
                shift: 16,
            }),
        );
        Ok(())
    }
}
