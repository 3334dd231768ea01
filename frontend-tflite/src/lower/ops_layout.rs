//! CONCATENATION, RESHAPE/SQUEEZE/EXPAND_DIMS, PAD/PADV2, TRANSPOSE, SLICE/STRIDED_SLICE,
//! SPLIT/SPLIT_V, SPACE_TO_DEPTH/DEPTH_TO_SPACE, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR.
//!
//! Pure data movement that has no direct IR operator (strided slices, nearest-neighbour
//! resize with TFLite's float index rule, space/depth rearrangements) is lowered to a GATHER
//! with a constant index table computed here, which is exact by construction.

use super::ctx::{IrT, OpCx, R};
use crate::schema::{ActivationFunctionType, BuiltinOptionsT};
use npuc_ir::{
    ArithmeticRightShiftAttrs, AxisAttrs, DType, Op, PadAttrs, RescaleRounding, ResizeAttrs,
    ResizeMode, SliceAttrs, TensorData, TileAttrs, TransposeAttrs,
};

pub(crate) fn axis(a: i64, rank: usize) -> R<usize> {
    let r = rank as i64;
    let v = if a < 0 { a + r } else { a };
    if v < 0 || v >= r {
        return Err(format!("axis {a} out of range for rank {rank}"));
    }
    Ok(v as usize)
}

fn same_quant(cx: &OpCx<'_, '_>, i: usize) -> R<()> {
    let (a, b) = (cx.tin(i)?, cx.tout(0)?);
    if a.quantization.is_some() && OpCx::qparams(a)? != OpCx::qparams(b)? {
        return Err(format!(
            "input {i} and the output have different quantization (requantization is not supported here)"
        ));
    }
    Ok(())
}

/// Copies input 0 to output 0 through `f(x)`, checking equal quantization.
fn bind_copy(cx: &mut OpCx<'_, '_>, y: IrT) -> R<()> {
    cx.bind_output(0, y)
}

pub(crate) fn concat(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::ConcatenationOptions(o) = cx.opts() else {
        return Err("missing ConcatenationOptions".into());
    };
    let ot = cx.tout(0)?;
    let rank = OpCx::shape(ot)?.len();
    let ax = axis(i64::from(o.axis), rank)?;
    let mut ins = vec![];
    for i in 0..cx.op.inputs.len() {
        // TFLite's int8/int16 kernels require equal quantization and copy bytes.
        same_quant(cx, i)?;
        ins.push(cx.input(i)?);
    }
    let y = cx.emit("concat", Op::Concat(AxisAttrs { axis: ax }), &ins)?;
    let y = if o.fused_activation_function != ActivationFunctionType::NONE {
        let (so, zo) = OpCx::qparams(ot)?;
        cx.activation(y, o.fused_activation_function, so, zo)?
    } else {
        y
    };
    cx.bind_output(0, y)
}

pub(crate) fn reshape(cx: &mut OpCx<'_, '_>) -> R<()> {
    same_quant(cx, 0)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let x = cx.input(0)?;
    let y = cx.emit(
        "reshape",
        Op::Reshape(npuc_ir::ReshapeAttrs {
            shape: npuc_ir::Shape(os),
        }),
        &[x],
    )?;
    bind_copy(cx, y)
}

pub(crate) fn pad(cx: &mut OpCx<'_, '_>) -> R<()> {
    same_quant(cx, 0)?;
    let xt = cx.tin(0)?;
    let xs = OpCx::shape(xt)?;
    let p = cx.const_input(1)?;
    if p.len() != 2 * xs.len() {
        return Err(format!(
            "paddings have {} values for rank {}",
            p.len(),
            xs.len()
        ));
    }
    let padding = p
        .chunks(2)
        .map(|c| {
            let a = usize::try_from(c[0]).map_err(|_| "negative padding".to_string())?;
            let b = usize::try_from(c[1]).map_err(|_| "negative padding".to_string())?;
            Ok([a, b])
        })
        .collect::<R<Vec<_>>>()?;
    let pad_const = if cx.has_input(2) {
        let v = cx.const_input(2)?;
        *v.first().ok_or("empty constant_values")?
    } else if xt.quantization.is_some() {
        OpCx::qparams(xt)?.1
    } else {
        0
    };
    let x = cx.input(0)?;
    let y = cx.emit("pad", Op::Pad(PadAttrs { padding, pad_const }), &[x])?;
    bind_copy(cx, y)
}

pub(crate) fn transpose(cx: &mut OpCx<'_, '_>) -> R<()> {
    same_quant(cx, 0)?;
    let rank = OpCx::shape(cx.tin(0)?)?.len();
    let perms = cx
        .const_input(1)?
        .into_iter()
        .map(|p| axis(p, rank))
        .collect::<R<Vec<_>>>()?;
    let x = cx.input(0)?;
    let y = cx.emit("transpose", Op::Transpose(TransposeAttrs { perms }), &[x])?;
    bind_copy(cx, y)
}

/// Gathers elements of `x` (any shape) by flat index into a tensor of shape `out`.
pub(crate) fn gather_flat(cx: &mut OpCx<'_, '_>, x: IrT, idx: Vec<i32>, out: Vec<usize>) -> R<IrT> {
    let n: usize = cx.ty(x).shape.iter().product();
    let m = idx.len();
    let v = cx.reshape(x, vec![1, n, 1])?;
    let i = cx.constant("indices", vec![1, m], TensorData::I32(idx))?;
    let g = cx.emit("gather", Op::Gather, &[v, i])?;
    cx.emit(
        "reshape",
        Op::Reshape(npuc_ir::ReshapeAttrs {
            shape: npuc_ir::Shape(out),
        }),
        &[g],
    )
}

/// Flat row-major indices of an output of shape `out` whose element at `idx` is the input
/// element at `src(idx)` (input shape `ins`).
pub(crate) fn index_table(
    out: &[usize],
    ins: &[usize],
    src: impl Fn(&[usize]) -> Vec<usize>,
) -> Vec<i32> {
    let total: usize = out.iter().product();
    let strides = npuc_ir::Shape(ins.to_vec()).strides();
    let mut idx = vec![0usize; out.len()];
    let mut res = Vec::with_capacity(total);
    for _ in 0..total {
        let s = src(&idx);
        res.push(s.iter().zip(&strides).map(|(a, b)| a * b).sum::<usize>() as i32);
        for d in (0..out.len()).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    res
}

/// One axis of a STRIDED_SLICE after TFLite's `BuildStridedSliceParams` expanded the
/// ellipsis, inserted the new axes and filled the axes the parameters leave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SliceAxis {
    dim: i64,
    begin: i64,
    end: i64,
    stride: i64,
    begin_mask: bool,
    end_mask: bool,
    shrink: bool,
}

/// TFLite's effective strided-slice axes (strided_slice.cc `BuildStridedSliceParams`):
/// `new_axis_mask` inserts an axis of 1 (not at an ellipsis position), `ellipsis_mask`
/// spans the input axes the other parameters do not name, axes beyond the parameters are
/// taken whole.
fn strided_axes(
    xs: &[usize],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    o: &crate::schema::StridedSliceOptionsT,
) -> R<Vec<SliceAxis>> {
    let n = begin.len();
    if end.len() != n || strides.len() != n || n > 32 {
        return Err("begin, end and strides must have the same length".into());
    }
    let bit = |m: i32, i: usize| i < 32 && m & (1 << i) != 0;
    let num_add = (0..n)
        .filter(|&i| !bit(o.ellipsis_mask, i) && bit(o.new_axis_mask, i))
        .count();
    let eff = xs.len() + num_add;
    let (mut ell_mask, mut new_mask) = (0u64, 0u64);
    let (mut ell_start, mut expanded) = (eff, 0usize);
    let mut i = 0;
    while i < eff {
        if bit(o.ellipsis_mask, i) {
            ell_start = i;
            let ell_end = (i + 1).max((i + 1 + num_add + xs.len()).saturating_sub(n).min(eff));
            expanded = ell_end - ell_start - 1;
            while i < ell_end {
                ell_mask |= 1 << i;
                i += 1;
            }
            continue;
        }
        if i >= expanded && bit(o.new_axis_mask, i - expanded) {
            new_mask |= 1 << i;
        }
        i += 1;
    }
    let mut axes = Vec::with_capacity(eff);
    let (mut added_ell, mut added_axes) = (0usize, 0usize);
    for i in 0..eff {
        let whole = |dim: i64| SliceAxis {
            dim,
            begin: 0,
            end: 0,
            stride: 1,
            begin_mask: true,
            end_mask: true,
            shrink: false,
        };
        let dim_at = |k: usize| -> R<i64> {
            xs.get(k)
                .map(|&d| d as i64)
                .ok_or_else(|| "strided slice parameters name too many axes".to_string())
        };
        if ell_mask & (1 << i) != 0 {
            added_ell = i - ell_start;
            axes.push(whole(dim_at(i - added_axes)?));
        } else if new_mask & (1 << i) != 0 {
            axes.push(SliceAxis {
                dim: 1,
                begin: 0,
                end: 1,
                stride: 1,
                begin_mask: false,
                end_mask: false,
                shrink: false,
            });
            added_axes += 1;
        } else if i >= n + expanded {
            axes.push(whole(dim_at(i - added_axes)?));
        } else {
            let k = i - added_ell;
            let b = begin[k];
            axes.push(SliceAxis {
                dim: dim_at(i - added_axes)?,
                begin: b,
                end: end[k],
                stride: strides[k],
                begin_mask: bit(o.begin_mask, k),
                end_mask: bit(o.end_mask, k),
                shrink: bit(o.shrink_axis_mask, k),
            });
        }
    }
    Ok(axes)
}

/// TFLite's `StridedSliceStartForAxis` / `StridedSliceEndForAxis` (strided_slice_logic.h):
/// the first index and the number of elements of one axis. With `offset`, `end` counts from
/// the first index (after its clamping).
fn strided_range(a: &SliceAxis, offset: bool) -> R<(i64, i64)> {
    let (dim, s) = (a.dim, a.stride);
    if s == 0 {
        return Err("stride 0".into());
    }
    let clamp = |v: i64| {
        if s > 0 {
            v.clamp(0, dim)
        } else {
            v.clamp(-1, dim - 1)
        }
    };
    let mut b = if a.begin_mask {
        if s > 0 {
            i64::from(i32::MIN)
        } else {
            i64::from(i32::MAX)
        }
    } else {
        a.begin
    };
    if b < 0 {
        b += dim;
    }
    let b = clamp(b);
    let e = if a.shrink {
        b + 1
    } else {
        let mut e = if a.end_mask {
            if s > 0 {
                i64::from(i32::MAX)
            } else {
                i64::from(i32::MIN)
            }
        } else if offset {
            b + a.end
        } else {
            a.end
        };
        if e < 0 {
            e += dim;
        }
        clamp(e)
    };
    let n = if s > 0 {
        ((e - b).max(0) + s - 1) / s
    } else {
        ((b - e).max(0) + (-s) - 1) / (-s)
    };
    if a.shrink && (b < 0 || b >= dim) {
        return Err("shrunk axis index out of range".into());
    }
    Ok((b, n))
}

/// `ceil(a / b)` for any signs.
fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && (a < 0) == (b < 0) {
        q + 1
    } else {
        q
    }
}

pub(crate) fn slice(cx: &mut OpCx<'_, '_>, strided: bool) -> R<()> {
    same_quant(cx, 0)?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let begin = cx.const_input(1)?;
    // The (effective) input shape, and per axis the first index, step and count.
    let (shape, start, step, size) = if !strided {
        let rank = xs.len();
        if begin.len() != rank {
            return Err("begin must have one value per dimension".into());
        }
        let sz = cx.const_input(2)?;
        let size: Vec<i64> = (0..rank)
            .map(|d| {
                if sz[d] < 0 {
                    xs[d] as i64 - begin[d]
                } else {
                    sz[d]
                }
            })
            .collect();
        (xs.clone(), begin.clone(), vec![1i64; rank], size)
    } else {
        let BuiltinOptionsT::StridedSliceOptions(o) = cx.opts() else {
            return Err("missing StridedSliceOptions".into());
        };
        let (end, strides) = (cx.const_input(2)?, cx.const_input(3)?);
        let axes = strided_axes(&xs, &begin, &end, &strides, o)?;
        let mut r = (vec![], vec![], vec![], vec![]);
        for (i, a) in axes.iter().enumerate() {
            let (b, n) = strided_range(a, o.offset)?;
            if o.offset && !a.shrink {
                // TFLite sizes the output from the raw `end` values (at the effective axis
                // index) and the stride, not from the range its kernel walks: accept only
                // slices where the two agree.
                let declared = end.get(i).map(|&e| ceil_div(e, a.stride).max(0));
                if declared != Some(n) {
                    return Err(format!(
                        "offset slice of axis {i} walks {n} elements but TFLite sizes it {}",
                        declared.map_or("from a missing end".into(), |d| d.to_string())
                    ));
                }
            }
            r.0.push(a.dim as usize);
            r.1.push(b);
            r.2.push(a.stride);
            r.3.push(n);
        }
        r
    };
    let rank = shape.len();
    if size.iter().any(|&s| s <= 0) {
        return Err("empty slices are not supported".into());
    }
    if (0..rank).any(|d| {
        let last = start[d] + (size[d] - 1) * step[d];
        start[d] < 0 || last < 0 || start[d] >= shape[d] as i64 || last >= shape[d] as i64
    }) {
        return Err("slice outside the input".into());
    }
    let x = cx.input(0)?;
    let x = cx.reshape(x, shape.clone())?;
    let y = if step.iter().all(|&s| s == 1) {
        let sl = cx.emit(
            "slice",
            Op::Slice(SliceAttrs {
                start: start.iter().map(|&v| v as usize).collect(),
                size: size.iter().map(|&v| v as usize).collect(),
            }),
            &[x],
        )?;
        cx.reshape(sl, os)?
    } else {
        let full: Vec<usize> = size.iter().map(|&v| v as usize).collect();
        let idx = index_table(&full, &shape, |i| {
            (0..rank)
                .map(|d| (start[d] + i[d] as i64 * step[d]) as usize)
                .collect()
        });
        gather_flat(cx, x, idx, os)?
    };
    bind_copy(cx, y)
}

pub(crate) fn split(cx: &mut OpCx<'_, '_>, v: bool) -> R<()> {
    let (data_slot, axis_slot) = if v { (0, 2) } else { (1, 0) };
    let xt = cx.tin(data_slot)?;
    let xs = OpCx::shape(xt)?;
    let ax = axis(
        *cx.const_input(axis_slot)?.first().ok_or("empty axis")?,
        xs.len(),
    )?;
    let x = cx.input(data_slot)?;
    let mut off = 0usize;
    for j in 0..cx.op.outputs.len() {
        let ot = cx.tout(j)?;
        if xt.quantization.is_some() && OpCx::qparams(xt)? != OpCx::qparams(ot)? {
            return Err("outputs must share the input's quantization".into());
        }
        let os = OpCx::shape(ot)?;
        let mut start = vec![0; xs.len()];
        start[ax] = off;
        off += os[ax];
        let y = cx.emit("slice", Op::Slice(SliceAttrs { start, size: os }), &[x])?;
        cx.bind_output(j, y)?;
    }
    Ok(())
}

pub(crate) fn space_depth(cx: &mut OpCx<'_, '_>, to_depth: bool) -> R<()> {
    same_quant(cx, 0)?;
    let b = match cx.opts() {
        BuiltinOptionsT::SpaceToDepthOptions(o) => o.block_size,
        BuiltinOptionsT::DepthToSpaceOptions(o) => o.block_size,
        _ => return Err("missing block size options".into()),
    };
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b > 0)
        .ok_or("bad block size")?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    if xs.len() != 4 || os.len() != 4 {
        return Err("needs 4-D tensors".into());
    }
    let idx = if to_depth {
        let c = xs[3];
        index_table(&os, &xs, |i| {
            let (by, bx, ch) = (i[3] / (b * c), (i[3] / c) % b, i[3] % c);
            vec![i[0], i[1] * b + by, i[2] * b + bx, ch]
        })
    } else {
        let c = os[3];
        index_table(&os, &xs, |i| {
            let (by, bx) = (i[1] % b, i[2] % b);
            vec![i[0], i[1] / b, i[2] / b, (by * b + bx) * c + i[3]]
        })
    };
    let x = cx.input(0)?;
    let y = gather_flat(cx, x, idx, os)?;
    bind_copy(cx, y)
}

fn resize_flags(cx: &OpCx<'_, '_>) -> R<(bool, bool)> {
    match cx.opts() {
        BuiltinOptionsT::ResizeBilinearOptions(o) => Ok((o.align_corners, o.half_pixel_centers)),
        BuiltinOptionsT::ResizeNearestNeighborOptions(o) => {
            Ok((o.align_corners, o.half_pixel_centers))
        }
        BuiltinOptionsT::NONE => Ok((false, false)),
        _ => Err("unexpected options".into()),
    }
}

/// TFLite's nearest-neighbour source index (float arithmetic as in the reference kernel).
fn nearest_src(o: usize, in_size: usize, out_size: usize, align: bool, half: bool) -> usize {
    let scale = if align && out_size > 1 {
        (in_size as f32 - 1.0) / (out_size as f32 - 1.0)
    } else {
        in_size as f32 / out_size as f32
    };
    let offset = if half { 0.5f32 } else { 0.0 };
    let v = (o as f32 + offset) * scale;
    let mut r = if align {
        v.round() as i64
    } else {
        v.floor() as i64
    };
    r = r.min(in_size as i64 - 1);
    if half {
        r = r.max(0);
    }
    r as usize
}

pub(crate) fn resize_nearest(cx: &mut OpCx<'_, '_>) -> R<()> {
    same_quant(cx, 0)?;
    let (align, half) = resize_flags(cx)?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    if xs.len() != 4 || os.len() != 4 {
        return Err("needs 4-D tensors".into());
    }
    let idx = index_table(&os, &xs, |i| {
        vec![
            i[0],
            nearest_src(i[1], xs[1], os[1], align, half),
            nearest_src(i[2], xs[2], os[2], align, half),
            i[3],
        ]
    });
    let x = cx.input(0)?;
    let y = gather_flat(cx, x, idx, os)?;
    bind_copy(cx, y)
}

/// TFLite's integer bilinear sampling for one output coordinate: `(input position in
/// 1/1024 units, lower index, upper index)`.
fn tfl_bilinear(o: i64, scale10: i64, half: bool, in_size: i64) -> (i64, i64, i64) {
    let v = if half {
        o * scale10 + scale10 / 2 - 512
    } else {
        o * scale10
    };
    let lo = (v / 1024).max(0);
    let hi = ((v + 1023) / 1024).min(in_size - 1);
    (v, lo, hi)
}

/// Weights of (lower, upper) for TFLite and for the IR RESIZE on one axis; the two must
/// describe the same linear combination.
fn same_sampling(out: i64, in_size: i64, scale10: i64, off: i64, half: bool) -> bool {
    for o in 0..out {
        let (v, lo, hi) = tfl_bilinear(o, scale10, half, in_size);
        let w_hi = v - 1024 * lo;
        let w_lo = 1024 - w_hi;
        let mut t = std::collections::BTreeMap::new();
        *t.entry(lo).or_insert(0) += w_lo;
        *t.entry(hi).or_insert(0) += w_hi;
        let y = o * scale10 + off;
        let iy = y.div_euclid(1024);
        let dy = y - iy * 1024;
        let mut r = std::collections::BTreeMap::new();
        *r.entry(iy.clamp(0, in_size - 1)).or_insert(0) += 1024 - dy;
        *r.entry((iy + 1).clamp(0, in_size - 1)).or_insert(0) += dy;
        t.retain(|_, w| *w != 0);
        r.retain(|_, w| *w != 0);
        if t != r {
            return false;
        }
    }
    true
}

pub(crate) fn resize_bilinear(cx: &mut OpCx<'_, '_>) -> R<()> {
    same_quant(cx, 0)?;
    let (align, half) = resize_flags(cx)?;
    let xt = cx.tin(0)?;
    let dt = OpCx::dtype(xt)?;
    if dt != DType::Int8 && dt != DType::Int16 {
        return Err(format!("{dt} bilinear resize is not supported"));
    }
    let xs = OpCx::shape(xt)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    if xs.len() != 4 || os.len() != 4 || xs[0] != os[0] || xs[3] != os[3] {
        return Err("needs 4-D tensors of the same batch and depth".into());
    }
    // An axis with one input row (column) copies it to every output row (all of TFLite's
    // weights fall on it): the other axis is resized, then the result tiled.
    let unit = |i: usize| if xs[i] == 1 { 1 } else { os[i] };
    let mid = vec![os[0], unit(1), unit(2), os[3]];
    // uint8: TFLite's float kernel, the int8 one rounding half up where it is exact.
    let half_up = super::uint8::is_u8(xt);
    if half_up && !super::uint8_resize::float_kernel_is_exact(&xs, &os, align, half) {
        return Err("uint8 bilinear resize whose float arithmetic rounds (F6)".into());
    }
    let x = cx.input(0)?;
    let y = if mid == xs {
        x
    } else {
        bilinear(cx, x, &xs, &mid, align, half, dt, half_up)?
    };
    let y = if mid != os {
        let multiples = vec![1, os[1] / mid[1], os[2] / mid[2], 1];
        cx.emit("tile", Op::Tile(TileAttrs { multiples }), &[y])?
    } else if y == x {
        cx.emit("copy", Op::Identity, &[y])?
    } else {
        y
    };
    bind_copy(cx, y)
}

/// TFLite's bilinear resize of `x` (shape `xs`) to `os` (same batch and depth); `half_up`
/// rounds the exact half up (uint8, `super::uint8_resize`) instead of away from zero.
#[allow(clippy::too_many_arguments)]
fn bilinear(
    cx: &mut OpCx<'_, '_>,
    x: IrT,
    xs: &[usize],
    os: &[usize],
    align: bool,
    half: bool,
    dt: DType,
    half_up: bool,
) -> R<IrT> {
    let scale10 = |i: usize, o: usize| -> i64 {
        let (i, o) = (i as i64, o as i64);
        if align && o > 1 {
            (1024 * (i - 1) + (o - 1) / 2) / (o - 1)
        } else {
            (1024 * i + o / 2) / o
        }
    };
    let (sy, sx) = (scale10(xs[1], os[1]), scale10(xs[2], os[2]));
    let off = |s: i64| if half { s / 2 - 512 } else { 0 };
    let (oy, ox) = (off(sy), off(sx));
    if !same_sampling(os[1] as i64, xs[1] as i64, sy, oy, half)
        || !same_sampling(os[2] as i64, xs[2] as i64, sx, ox, half)
    {
        return Err("TFLite's sampling positions cannot be expressed by RESIZE".into());
    }
    let border =
        |o: usize, i: usize, s: i64, off: i64| (o as i64 - 1) * s + off - (i as i64 - 1) * 1024;
    let (by, bx) = (border(os[1], xs[1], sy, oy), border(os[2], xs[2], sx, ox));
    // The interpolation weights are in 1/1024 units. For int16 (i48 sums) every position
    // parameter is divided by the largest power of two `g` that divides all of them: the
    // weights shrink by exactly `g`, so the sum shrinks by exactly `gy * gx` and fits i32.
    let (gy, gx) = if dt == DType::Int16 {
        let pow2 = |vals: [i64; 3]| {
            let mut g = 1024i64;
            while vals.iter().any(|v| v % g != 0) {
                g /= 2;
            }
            g
        };
        (pow2([sy, oy, by]), pow2([sx, ox, bx]))
    } else {
        (1, 1)
    };
    let (uy, ux) = (1024 / gy, 1024 / gx);
    if dt == DType::Int16 && uy * ux > 1 << 16 {
        return Err("int16 bilinear resize: the weighted sums do not fit 32 bits".into());
    }
    let attrs = ResizeAttrs {
        mode: ResizeMode::Bilinear,
        scale: [uy, sy / gy, ux, sx / gx],
        offset: [oy / gy, ox / gx],
        border: [by / gy, bx / gx],
    };
    let sum = cx.emit("resize", Op::Resize(attrs), &[x])?;
    let sum = if dt == DType::Int16 {
        // i48 -> i32 exactly: (4 v + 2) >> 2 == v.
        cx.rescale(
            sum,
            DType::Int32,
            vec![4],
            vec![2],
            false,
            RescaleRounding::SingleRound,
            0,
            0,
        )?
    } else {
        sum
    };
    // TFLite rounds sum / 2^20 (here sum / (uy * ux)) half away from zero: subtract 1 from
    // negative sums, then round half up (no rounding at all when the weights are 1: both
    // axes sample whole rows and columns).
    let bits = (uy * ux).trailing_zeros() as i32;
    let adj = if bits >= 1 && !half_up {
        let c31 = cx.constant("c31", vec![1, 1, 1, 1], TensorData::I32(vec![31]))?;
        let sign = cx.emit(
            "sign",
            Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: false }),
            &[sum, c31],
        )?;
        cx.emit("adjust", Op::Add, &[sum, sign])?
    } else {
        sum
    };
    let (m, sh) = if bits >= 1 {
        (1 << (31 - bits), 31)
    } else {
        (1 << 30, 30)
    };
    let y = cx.rescale(
        adj,
        dt,
        vec![m],
        vec![sh],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::StridedSliceOptionsT;

    /// (first index, count, stride) per effective axis, as TFLite's kernel walks them.
    fn walk(xs: &[usize], p: [&[i64]; 3], o: &StridedSliceOptionsT) -> R<Vec<(i64, i64, i64)>> {
        strided_axes(xs, p[0], p[1], p[2], o)?
            .iter()
            .map(|a| strided_range(a, o.offset).map(|(b, n)| (b, n, a.stride)))
            .collect()
    }

    #[test]
    fn an_ellipsis_spans_the_unnamed_axes_and_new_axes_are_inserted() {
        // x[1:, ..., tf.newaxis, ::-2] on 4x5x6x7: new axis before the last input axis.
        let o = StridedSliceOptionsT {
            begin_mask: 0b1000,
            end_mask: 0b1001,
            ellipsis_mask: 0b0010,
            new_axis_mask: 0b0100,
            ..Default::default()
        };
        let got = walk(
            &[4, 5, 6, 7],
            [&[1, 0, 0, 0], &[0, 0, 0, 0], &[1, 1, 1, -2]],
            &o,
        );
        assert_eq!(
            got.unwrap(),
            [(1, 3, 1), (0, 5, 1), (0, 6, 1), (0, 1, 1), (6, 4, -2)]
        );
    }

    #[test]
    fn parameters_for_fewer_axes_take_the_rest_whole() {
        let o = StridedSliceOptionsT {
            shrink_axis_mask: 0b1,
            ..Default::default()
        };
        let got = walk(&[3, 4, 5], [&[-1], &[0], &[1]], &o).unwrap();
        assert_eq!(got, [(2, 1, 1), (0, 4, 1), (0, 5, 1)]);
    }

    #[test]
    fn offset_ends_count_from_the_clamped_first_index() {
        // begin -9 clamps to 0 on an axis of 8; end 5 counts from there.
        let o = StridedSliceOptionsT {
            offset: true,
            ..Default::default()
        };
        assert_eq!(walk(&[8], [&[-9], &[5], &[2]], &o).unwrap(), [(0, 3, 2)]);
        // Reversed: from 6 down by 3 to 6 - 5 = 1 (exclusive).
        assert_eq!(walk(&[8], [&[6], &[-5], &[-3]], &o).unwrap(), [(6, 2, -3)]);
    }
}
