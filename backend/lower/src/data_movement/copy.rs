//! Data movement as NPU copies: CONCAT, SLICE, PAD, TILE, TRANSPOSE, REVERSE and GATHER with
//! constant indices.
//!
//! Every one of these operators is a set of strided box copies between buffers
//! ([`Ctx::strided_copy`]): a box is up to four nested axes, each with an extent and a source
//! and a destination step. Copies move bytes, whatever the element type: each element is an
//! innermost axis of `esize` contiguous bytes, so an int16 or int32 tensor moves like int8.
//! One copy is a 1x1 max pool with zero points 0, OFM scale 1 and the full int8 clamp, which
//! writes every byte it reads unchanged; the IFM and OFM are windows of their buffers
//! ([`View`]: offset and row/column strides). A source step below zero becomes the OFM
//! reverse of that axis (TRM 3.6.5 write_ofm); a zero step re-reads the same bytes (TILE,
//! fills). PAD fills the output from a read-only constant, then copies the input inside.

use crate::LowerError;
use crate::{stored_bytes, unsupported, Buffer, Ctx, Fm, Kernel, Lowered, NpuOp, View};
use npuc_backend::arch::ArchConfig;
use npuc_backend::isa::{ActivationReverse, ActivationTranspose, IfmUpscaleMode};
use npuc_ir::{DType, Op, OpId, OpNode, TensorData, TensorId};

/// Most NPU operations one IR operator may become.
const MAX_COPIES: usize = 4096;
/// Most elements a PAD may write: its fill is one copy, reading and writing about three
/// times as many feature-map elements, which must stay within the 2^28 per operation that
/// the validator and the simulator allow (decision H2).
pub(crate) const MAX_PAD_ELEMENTS: u64 = (1 << 28) / 3;
/// Largest extent of one feature-map axis (16-bit `*_M1` registers).
const MAX_DIM: usize = 65536;

/// One axis of a box copy: extent and the steps, in bytes, in the source and destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CopyAxis {
    pub n: usize,
    pub src: i64,
    pub dst: i64,
}

/// Row-major element strides of a shape.
fn strides(dims: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1] as i64;
    }
    s
}

/// Drops unit axes and merges neighbours that step like one axis.
fn normalise(axes: &[CopyAxis]) -> Vec<CopyAxis> {
    let mut out: Vec<CopyAxis> = Vec::new();
    for &a in axes.iter().filter(|a| a.n != 1) {
        if let Some(last) = out.last_mut() {
            if last.src == a.src * a.n as i64 && last.dst == a.dst * a.n as i64 {
                *last = CopyAxis {
                    n: last.n * a.n,
                    src: a.src,
                    dst: a.dst,
                };
                continue;
            }
        }
        out.push(a);
    }
    out
}

/// Most box copies a GATHER with constant indices becomes before it runs as one DMA gather
/// from the constant indices instead.
const MAX_GATHER_COPIES: usize = 64;

/// The box copies of a GATHER whose output row `r` (of `row` bytes) is read from the source
/// byte offset `rows[r]`, as (source offset, destination offset, axes). The rows repeat
/// with the smallest period `p` (a divisor of their number) after which every source offset
/// moves by the same amount: each copy covers its rows in every period. Within a period a
/// run of rows with a constant source step is one copy, and (with one period only) repeats
/// of a run with a constant step between their starts.
fn gather_copies(rows: &[i64], row: i64) -> Vec<(i64, i64, Vec<CopyAxis>)> {
    let total = rows.len();
    let period = (1..total)
        .filter(|p| total % p == 0)
        .find(|&p| {
            let d = rows[p] - rows[0];
            (p..total).all(|r| rows[r] - rows[r - p] == d)
        })
        .unwrap_or(total);
    let periods = CopyAxis {
        n: total / period,
        src: rows.get(period).map_or(0, |&r| r - rows[0]),
        dst: period as i64 * row,
    };
    let rows = &rows[..period];
    let mut out = vec![];
    let mut i = 0;
    while i < rows.len() {
        // A run of rows with a constant source step.
        let step = rows.get(i + 1).map_or(0, |&r| r - rows[i]);
        let mut len = 1;
        while i + len < rows.len() && rows[i + len] - rows[i + len - 1] == step {
            len += 1;
        }
        // Repeats of the same run with a constant step between run starts (a run has two
        // rows or more unless it is the last row).
        let same_run = |start: usize| {
            start + len <= rows.len()
                && (1..len).all(|j| rows[start + j] - rows[start + j - 1] == step)
        };
        let (mut reps, mut jump) = (1, 0);
        if len > 1 && periods.n == 1 && same_run(i + len) {
            jump = rows[i + len] - rows[i];
            reps = 2;
            while same_run(i + reps * len)
                && rows[i + reps * len] - rows[i + (reps - 1) * len] == jump
            {
                reps += 1;
            }
        }
        let axes = vec![
            periods,
            CopyAxis {
                n: reps,
                src: jump,
                dst: len as i64 * row,
            },
            CopyAxis {
                n: len,
                src: step,
                dst: row,
            },
            CopyAxis {
                n: row as usize,
                src: 1,
                dst: 1,
            },
        ];
        out.push((rows[i], i as i64 * row, axes));
        i += reps * len;
    }
    out
}

/// The axes reordered so that the two whose product is largest (at most one of them read
/// backwards) come last, in their original order: the height and width of each copy, so the
/// remaining axes, each combination of which is one copy, multiply to the fewest copies. The
/// order of the axes does not matter to a box copy: every element's source and destination
/// offsets are sums over the axes.
fn longest_two_last(axes: Vec<CopyAxis>) -> Vec<CopyAxis> {
    let mut best: Option<(usize, usize, usize)> = None;
    for i in 0..axes.len() {
        for j in i + 1..axes.len() {
            if axes[i].src < 0 && axes[j].src < 0 {
                continue;
            }
            let n = axes[i].n * axes[j].n;
            if best.is_none_or(|b| n > b.0) {
                best = Some((n, i, j));
            }
        }
    }
    let Some((_, i, j)) = best else {
        return axes;
    };
    let mut out: Vec<CopyAxis> = (0..axes.len())
        .filter(|&k| k != i && k != j)
        .map(|k| axes[k])
        .collect();
    out.extend([axes[i], axes[j]]);
    out
}

/// Splits the axes longer than a feature-map axis: an axis of `p * q` elements becomes `p`
/// steps of `q` (the largest such `q` that fits), and an axis with no such factors a part of
/// a multiple of [`MAX_DIM`] elements and a remainder. Returns the parts as (source offset,
/// destination offset, axes), every axis at most [`MAX_DIM`] long.
fn split_long(axes: Vec<CopyAxis>) -> Vec<(i64, i64, Vec<CopyAxis>)> {
    let Some(k) = axes.iter().position(|a| a.n > MAX_DIM) else {
        return vec![(0, 0, axes)];
    };
    let a = axes[k];
    let with = |parts: &[CopyAxis]| {
        let mut v = axes[..k].to_vec();
        v.extend_from_slice(parts);
        v.extend_from_slice(&axes[k + 1..]);
        v
    };
    let step = |n: usize, q: usize| CopyAxis {
        n,
        src: a.src * q as i64,
        dst: a.dst * q as i64,
    };
    let inner = |q: usize| CopyAxis { n: q, ..a };
    let lo = a.n.div_ceil(MAX_DIM);
    if let Some(q) = (lo..=MAX_DIM).rev().find(|q| a.n % q == 0) {
        return split_long(with(&[step(a.n / q, q), inner(q)]));
    }
    let head = a.n / MAX_DIM * MAX_DIM;
    let mut out = split_long(with(&[step(a.n / MAX_DIM, MAX_DIM), inner(MAX_DIM)]));
    let tail = head as i64;
    out.extend(
        split_long(with(&[inner(a.n - head)]))
            .into_iter()
            .map(|(s, d, v)| (s + tail * a.src, d + tail * a.dst, v)),
    );
    out
}

/// Folds every copy that runs as one row of a shallow feature map into rows of it, for a
/// configuration whose one-row microblocks are deeper than one of its taller microblocks
/// (decision L53). A data-movement box whose rows and columns merge (a CONCAT operand along
/// the depth, a contiguous SLICE) becomes a 1xWxC feature map, which only the 1xN
/// microblocks cover: 64 channels deep on the 2048, 32 on the 1024, so a copy of fewer
/// channels fills them in part, where the 4x4 (2048) or 2x4 (1024) microblock of 16 would
/// fill more. Such a copy (any 1x1 POOL at stride 1 without padding, reverse, transpose or
/// broadcast: an operation per position) with depth below the one-row microblocks' and a
/// width `W` a multiple of 16 is read and written as `h` rows of `W / h`, both multiples of
/// 4 (`h` the largest at most the square root): the same elements at the same addresses,
/// row stride `W / h` times the column stride. Where the taller microblocks are no
/// shallower (128, 256, 512) a fold only adds partial blocks, and nothing changes.
pub fn fold_shallow_rows(lowered: &mut Lowered, arch: &ArchConfig) {
    let shapes = arch.microblocks();
    let depth = |tall: bool| {
        shapes
            .iter()
            .filter(|m| (m.height > 1) == tall)
            .map(|m| m.depth)
            .min()
    };
    let (Some(row), Some(tall)) = (depth(false), depth(true)) else {
        return;
    };
    if tall >= row {
        return;
    }
    let plain = |fm: &Fm| {
        fm.view.reverse == ActivationReverse::None
            && fm.view.transpose == ActivationTranspose::Hwc
            && fm.broadcast == (false, false, false)
    };
    for op in &mut lowered.ops {
        let (_, n, c) = op.ofm.shape;
        let per_position = matches!(op.kernel, Kernel::Pool(_))
            && op.kernel_size == (1, 1)
            && op.stride == (1, 1)
            && op.pad == [0; 4]
            && op.ifm2.is_none()
            && op.upscale == IfmUpscaleMode::None;
        if !per_position
            || op.ofm.shape.0 != 1
            || op.ifm.shape != op.ofm.shape
            || c >= row
            || n % 16 != 0
            || !plain(&op.ifm)
            || !plain(&op.ofm)
        {
            continue;
        }
        let Some(h) = (4..)
            .step_by(4)
            .take_while(|h| h * h <= n)
            .filter(|h| n % (h * 4) == 0)
            .last()
        else {
            continue;
        };
        for fm in [&mut op.ifm, &mut op.ofm] {
            let (_, x) = fm.strides();
            fm.shape = (h, n / h, c);
            fm.view.strides = Some((x * u64::from(n / h), x));
        }
    }
}

impl<'g> Ctx<'g> {
    /// A read-only buffer with no IR tensor.
    pub(crate) fn anonymous_constant(&mut self, bytes: Vec<u8>) -> usize {
        let idx = self.lowered.buffers.len();
        self.lowered.buffers.push(Buffer {
            size: bytes.len() as u64,
            producer: None,
            last_use: None,
            is_input: false,
            is_output: false,
        });
        self.lowered.constants.insert(idx, bytes);
        idx
    }

    /// A new arena buffer for the output tensor `t` of the copies about to be pushed.
    fn move_output(&mut self, t: TensorId) -> usize {
        let idx = self.lowered.ops.len();
        self.new_buffer(t, Some(idx))
    }

    /// Copies the box `axes` (outermost first, byte steps) from `src` (buffer, byte offset)
    /// to `dst`. Emits one NPU copy per combination of the axes that do not fit the three
    /// feature-map axes.
    pub(crate) fn strided_copy(
        &mut self,
        node: &OpNode,
        src: (usize, i64),
        dst: (usize, i64),
        axes: &[CopyAxis],
    ) -> Result<(), LowerError> {
        let axes = normalise(axes);
        if axes.iter().any(|a| a.n == 0) {
            return Ok(());
        }
        for (so, d, part) in split_long(axes) {
            self.box_copies(node, (src.0, src.1 + so), (dst.0, dst.1 + d), part)?;
        }
        Ok(())
    }

    /// The NPU copies of one normalised box whose axes all fit a feature-map axis.
    fn box_copies(
        &mut self,
        node: &OpNode,
        src: (usize, i64),
        dst: (usize, i64),
        mut axes: Vec<CopyAxis>,
    ) -> Result<(), LowerError> {
        if axes.iter().any(|a| a.dst < 0) {
            return Err(unsupported(node, "a copy with a negative destination step"));
        }
        // The innermost axis is the channel axis when it is contiguous on both sides.
        let c = match axes.last() {
            Some(a) if a.src == 1 && a.dst == 1 => axes.pop().expect("last axis").n,
            _ => 1,
        };
        // Two more axes are the feature map's height and width; at most one of them may be
        // read backwards (one OFM reverse per operation).
        let mut split = axes.len().saturating_sub(2);
        if axes.len() >= 2 && axes[split].src < 0 && axes[split + 1].src < 0 {
            split += 1;
        }
        let mut count: usize = axes[..split].iter().map(|a| a.n).product();
        if count > MAX_COPIES {
            // Too many copies with the innermost two as height and width: the two longest
            // axes instead (decision L42).
            axes = longest_two_last(axes);
            split = axes.len().saturating_sub(2);
            count = axes[..split].iter().map(|a| a.n).product();
        }
        let (outer, inner) = axes.split_at(split);
        if count > MAX_COPIES {
            return Err(unsupported(
                node,
                format!("the data movement needs {count} NPU operations"),
            ));
        }
        let mut hw = [CopyAxis {
            n: 1,
            src: 0,
            dst: 0,
        }; 2];
        hw[2 - inner.len()..].copy_from_slice(inner);
        if c > MAX_DIM || hw.iter().any(|a| a.n > MAX_DIM) {
            return Err(unsupported(node, "a copy axis above 65536"));
        }
        for k in 0..count {
            // Offsets of this combination of the outer axes.
            let (mut so, mut d) = (src.1, dst.1);
            let mut rest = k;
            for a in outer.iter().rev() {
                let i = (rest % a.n) as i64;
                rest /= a.n;
                so += i * a.src;
                d += i * a.dst;
            }
            let mut reverse = ActivationReverse::None;
            let mut steps = [0u64; 2];
            for (j, a) in hw.iter().enumerate() {
                if a.src < 0 {
                    so += (a.n as i64 - 1) * a.src;
                    reverse = if j == 0 {
                        ActivationReverse::H
                    } else {
                        ActivationReverse::W
                    };
                }
                steps[j] = a.src.unsigned_abs();
            }
            if so < 0 || d < 0 {
                return Err(LowerError::Graph(format!(
                    "{}: copy window before the buffer start",
                    node.name
                )));
            }
            let shape = (hw[0].n as u32, hw[1].n as u32, c as u32);
            let fm = |buffer: usize, offset: i64, strides: (u64, u64)| Fm {
                buffer,
                shape,
                zero_point: 0,
                dtype: DType::Int8,
                broadcast: (false, false, false),
                view: View {
                    offset: offset as u64,
                    strides: Some(strides),
                    reverse: ActivationReverse::None,
                    transpose: ActivationTranspose::Hwc,
                },
            };
            let ifm = fm(src.0, so, (steps[0], steps[1]));
            let mut ofm = fm(dst.0, d, (hw[0].dst as u64, hw[1].dst as u64));
            ofm.view.reverse = reverse;
            self.push(NpuOp::copy(
                node.name.clone(),
                vec![node.name.clone()],
                ifm,
                ofm,
                (-128, 127),
            ));
        }
        Ok(())
    }

    /// The buffer of a moved tensor (graph input, NPU output or constant; a constant of
    /// booleans, or one computed from constants alone, as its evaluated bytes: decision L40).
    fn move_source(&mut self, node: &OpNode, t: TensorId) -> Result<usize, LowerError> {
        if let Some(b) = self.constant_buffer(t) {
            return Ok(b);
        }
        if !self.lowered.tensor_buffer.contains_key(&t) && self.is_constant(t) {
            return self.constant_bytes(node, t);
        }
        self.input_buffer(node, t)
    }

    /// Byte axes of a tensor of `dims` read with element steps `src` and written with `dst`.
    fn byte_axes(&self, t: TensorId, dims: &[usize], src: &[i64], dst: &[i64]) -> Vec<CopyAxis> {
        let e = stored_bytes(self.dtype(t));
        let mut axes: Vec<CopyAxis> = (0..dims.len())
            .map(|j| CopyAxis {
                n: dims[j],
                src: src[j] * e as i64,
                dst: dst[j] * e as i64,
            })
            .collect();
        axes.push(CopyAxis {
            n: e,
            src: 1,
            dst: 1,
        });
        axes
    }

    pub(crate) fn lower_movement(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let out = node.outputs()[0];
        let odims = self.dims(out).to_vec();
        let ostr = strides(&odims);
        let e = stored_bytes(self.dtype(out)) as i64;
        match &node.op {
            Op::Concat(a) => {
                let srcs: Vec<usize> = node
                    .inputs()
                    .iter()
                    .map(|&t| self.move_source(node, t))
                    .collect::<Result<_, _>>()?;
                let dst = self.move_output(out);
                let mut first = self.lowered.ops.len();
                let mut at = 0i64;
                for (&t, &s) in node.inputs().iter().zip(&srcs) {
                    let d = self.dims(t).to_vec();
                    let off = at * ostr[a.axis] * e;
                    at += d[a.axis] as i64;
                    if let Some(i) = self.write_in_place(o, t, s, dst, a.axis, off) {
                        first = first.min(i);
                        continue;
                    }
                    let axes = self.byte_axes(t, &d, &strides(&d), &ostr);
                    self.strided_copy(node, (s, 0), (dst, off), &axes)?;
                }
                self.lowered.buffers[dst].producer = Some(first);
            }
            Op::Slice(a) => {
                let x = node.inputs()[0];
                let s = self.move_source(node, x)?;
                let istr = strides(self.dims(x));
                let off: i64 = a.start.iter().zip(&istr).map(|(&b, &s)| b as i64 * s).sum();
                let dst = self.move_output(out);
                let axes = self.byte_axes(x, &a.size, &istr, &ostr);
                self.strided_copy(node, (s, off * e), (dst, 0), &axes)?;
            }
            Op::Reverse(a) => {
                let x = node.inputs()[0];
                let s = self.move_source(node, x)?;
                let mut istr = strides(&odims);
                let off = (odims[a.axis] as i64 - 1) * istr[a.axis];
                istr[a.axis] = -istr[a.axis];
                let dst = self.move_output(out);
                let axes = self.byte_axes(x, &odims, &istr, &ostr);
                self.strided_copy(node, (s, off * e), (dst, 0), &axes)?;
            }
            Op::Transpose(a) => {
                let x = node.inputs()[0];
                let s = self.move_source(node, x)?;
                if self.transpose_on_write(node, x, s, &a.perms) {
                    return Ok(());
                }
                let istr = strides(self.dims(x));
                let src: Vec<i64> = a.perms.iter().map(|&p| istr[p]).collect();
                let dst = self.move_output(out);
                let axes = self.byte_axes(x, &odims, &src, &ostr);
                self.strided_copy(node, (s, 0), (dst, 0), &axes)?;
            }
            Op::Tile(a) => {
                let x = node.inputs()[0];
                let s = self.move_source(node, x)?;
                let idims = self.dims(x).to_vec();
                let istr = strides(&idims);
                // Output axis j = (multiple, input extent): the copies re-read the input.
                let (mut dims, mut src, mut dstr) = (Vec::new(), Vec::new(), Vec::new());
                for j in 0..idims.len() {
                    dims.extend([a.multiples[j], idims[j]]);
                    src.extend([0, istr[j]]);
                    dstr.extend([ostr[j] * idims[j] as i64, ostr[j]]);
                }
                let dst = self.move_output(out);
                let axes = self.byte_axes(x, &dims, &src, &dstr);
                self.strided_copy(node, (s, 0), (dst, 0), &axes)?;
            }
            Op::Pad(a) => {
                let x = node.inputs()[0];
                let s = self.move_source(node, x)?;
                let idims = self.dims(x).to_vec();
                let dst = self.move_output(out);
                let total: usize = odims.iter().product();
                if total as u64 > MAX_PAD_ELEMENTS {
                    return Err(unsupported(
                        node,
                        format!(
                            "a padded tensor of {total} elements (its fill alone would move \
                             more than 2^28 feature-map elements in one operation, decision L43)"
                        ),
                    ));
                }
                if a.padding.iter().any(|p| p[0] + p[1] > 0) && total > 0 {
                    // Fill: rows of up to 256 elements of the pad value, read again and again.
                    let value = TensorData::from_i64(self.dtype(out), &[a.pad_const])
                        .map_err(|_| unsupported(node, "pad value out of range"))?
                        .to_le_bytes();
                    let row = (1..=256usize.min(total))
                        .rev()
                        .find(|r| total % r == 0)
                        .unwrap_or(1);
                    let fill = self.anonymous_constant(value.repeat(row));
                    let axes = [
                        CopyAxis {
                            n: total / row,
                            src: 0,
                            dst: row as i64 * e,
                        },
                        CopyAxis {
                            n: row * e as usize,
                            src: 1,
                            dst: 1,
                        },
                    ];
                    self.strided_copy(node, (fill, 0), (dst, 0), &axes)?;
                }
                let off: i64 = a
                    .padding
                    .iter()
                    .zip(&ostr)
                    .map(|(p, &s)| p[0] as i64 * s)
                    .sum();
                let axes = self.byte_axes(x, &idims, &strides(&idims), &ostr);
                self.strided_copy(node, (s, 0), (dst, off * e), &axes)?;
            }
            Op::Gather => self.lower_gather(o)?,
            _ => unreachable!("lower_movement on another op"),
        }
        Ok(())
    }

    /// TRANSPOSE as one copy with the OFM transpose when the permutation moves at most
    /// three axes of extent above 1, each at most 128 (within every transpose's OFM block
    /// limit whatever block is chosen), of int8 or int16 elements. Returns false otherwise.
    fn transpose_on_write(
        &mut self,
        node: &OpNode,
        x: TensorId,
        src: usize,
        perms: &[usize],
    ) -> bool {
        let d = self.dims(x);
        let dtype = self.dtype(x);
        if !matches!(dtype, DType::Int8 | DType::Int16) {
            return false;
        }
        // Axes of extent 1 do not change the layout: drop them.
        let kept: Vec<usize> = (0..d.len()).filter(|&j| d[j] != 1).collect();
        if kept.len() > 3 || kept.iter().any(|&j| d[j] > 128) {
            return false;
        }
        let k = 3 - kept.len();
        let mut in3 = [1u32; 3];
        for (i, &j) in kept.iter().enumerate() {
            in3[k + i] = d[j] as u32;
        }
        let mut perm3 = [0usize, 1, 2];
        let order = perms.iter().filter(|&&p| d[p] != 1);
        for (i, p) in order.enumerate() {
            perm3[k + i] = k + kept.iter().position(|j| j == p).unwrap_or(0);
        }
        let transpose = match perm3 {
            [0, 1, 2] => ActivationTranspose::Hwc,
            [1, 0, 2] => ActivationTranspose::Whc,
            [0, 2, 1] => ActivationTranspose::Hcw,
            [2, 1, 0] => ActivationTranspose::Cwh,
            [2, 0, 1] => ActivationTranspose::Chw,
            [1, 2, 0] => ActivationTranspose::Wch,
            _ => return false,
        };
        let dst = self.move_output(node.outputs()[0]);
        let ifm = Fm {
            buffer: src,
            shape: (in3[0], in3[1], in3[2]),
            zero_point: 0,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        };
        self.transposed_copy(&node.name, ifm, dst, transpose);
        true
    }

    /// Copies the int8 or int16 feature map `ifm` into buffer `dst` (offset 0, densely) with
    /// the OFM transpose `transpose`: a 1x1 max pool over the full range, exact. Every axis
    /// of `ifm` must be at most 128 (the OFM block limit of every transpose).
    pub(crate) fn transposed_copy(
        &mut self,
        name: &str,
        ifm: Fm,
        dst: usize,
        transpose: ActivationTranspose,
    ) {
        let range = match ifm.dtype {
            DType::Int16 => (-32768, 32767),
            _ => (-128, 127),
        };
        let mut ofm = Fm {
            buffer: dst,
            view: View::default(),
            ..ifm
        };
        ofm.view.transpose = transpose;
        let (_, w, c) = ofm.stored_shape();
        let e = ifm.dtype.byte_size() as u64;
        ofm.view.strides = Some((u64::from(w * c) * e, u64::from(c) * e));
        self.push(NpuOp::copy(
            name.to_string(),
            vec![name.to_string()],
            ifm,
            ofm,
            range,
        ));
    }

    /// Retargets the NPU operation that wrote CONCAT operand `t` (buffer `src`) so that it
    /// writes straight into its slot of the concatenation (buffer `dst`, byte offset `off`
    /// along `axis`). Only when that operation alone wrote the buffer, `t` alone names it, the
    /// CONCAT is its only reader, and both tensors are NHWC with batch 1 and the operation's
    /// OFM is `t` densely. Returns the operation's index.
    fn write_in_place(
        &mut self,
        concat: OpId,
        t: TensorId,
        src: usize,
        dst: usize,
        axis: usize,
        off: i64,
    ) -> Option<usize> {
        if self.sole_consumer(t) != Some(concat)
            || self.lowered.constants.contains_key(&src)
            || self.lowered.buffers[src].last_use.is_some()
            || self
                .lowered
                .tensor_buffer
                .values()
                .filter(|&&b| b == src)
                .count()
                != 1
        {
            return None;
        }
        let i = self.lowered.buffers[src].producer?;
        let writers = self.lowered.ops.iter().filter(|op| op.ofm.buffer == src);
        if writers.count() != 1 || self.lowered.ops[i].ofm.buffer != src {
            return None;
        }
        let pad4 = |d: &[usize]| -> Option<[usize; 4]> {
            let k = 4usize.checked_sub(d.len())?;
            let mut p = [1; 4];
            p[k..].copy_from_slice(d);
            (p[0] == 1).then_some(p)
        };
        let out = self.node(concat).outputs()[0];
        let (td, od) = (pad4(self.dims(t))?, pad4(self.dims(out))?);
        let axis = axis + 4 - self.dims(t).len();
        let ofm = &self.lowered.ops[i].ofm;
        let dense = ofm.view == View::default() && ofm.dtype == self.dtype(out);
        let as_u32 = |v: usize| u32::try_from(v).ok();
        let shape = (as_u32(td[1])?, as_u32(td[2])?, as_u32(td[3])?);
        if axis == 0 || !dense || ofm.shape != shape {
            return None;
        }
        let e = ofm.dtype.byte_size() as u64;
        let ofm = &mut self.lowered.ops[i].ofm;
        ofm.buffer = dst;
        ofm.view.offset = off as u64;
        ofm.view.strides = Some(((od[2] * od[3]) as u64 * e, od[3] as u64 * e));
        self.lowered.buffers[src].size = 0;
        Some(i)
    }

    /// GATHER `[values [N,K,C], indices [N,W]] -> [N,W,C]` with constant indices: rows of `C`
    /// elements, grouped greedily into boxes of evenly spaced runs of evenly spaced rows.
    fn lower_gather(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let (v, ix) = (node.inputs()[0], node.inputs()[1]);
        let out = node.outputs()[0];
        let Some(idx) = self.const_data(ix).map(|d| d.to_i64_vec()) else {
            return Err(unsupported(node, "indices that are not constant"));
        };
        let vd = self.dims(v).to_vec();
        let (n, k, c) = (vd[0], vd[1], vd[2]);
        let w = self.dims(out)[1];
        if idx.iter().any(|&i| i < 0 || i as usize >= k) || idx.len() != n * w {
            return Err(unsupported(node, "an index out of range"));
        }
        let e = stored_bytes(self.dtype(out)) as i64;
        let row = c as i64 * e;
        // Source byte offset of every output row.
        let rows: Vec<i64> = (0..n * w)
            .map(|r| ((r / w * k) as i64 + idx[r]) * row)
            .collect();
        let copies = gather_copies(&rows, row);
        if copies.len() > MAX_GATHER_COPIES
            && self.dtype(ix) == DType::Int32
            && crate::data_movement::gather_dma::fits(n, w, k)
            && self.constant_buffer(ix).is_some()
        {
            return self.lower_gather_dma(o, vec![node.name.clone()]);
        }
        let s = self.move_source(node, v)?;
        let dst = self.move_output(out);
        for (so, d, axes) in copies {
            self.strided_copy(node, (s, so), (dst, d), &axes)?;
        }
        Ok(())
    }
}
