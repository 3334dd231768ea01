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

pub(crate) fn slice(cx: &mut OpCx<'_, '_>, strided: bool) -> R<()> {
    same_quant(cx, 0)?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let rank = xs.len();
    let begin = cx.const_input(1)?;
    let (mut start, mut step, mut size) = (vec![0i64; rank], vec![1i64; rank], vec![0i64; rank]);
    if begin.len() != rank {
        return Err("begin must have one value per dimension".into());
    }
    if !strided {
        let sz = cx.const_input(2)?;
        for d in 0..rank {
            let b = begin[d];
            start[d] = b;
            size[d] = if sz[d] < 0 { xs[d] as i64 - b } else { sz[d] };
        }
    } else {
        let BuiltinOptionsT::StridedSliceOptions(o) = cx.opts() else {
            return Err("missing StridedSliceOptions".into());
        };
        if o.ellipsis_mask != 0 || o.new_axis_mask != 0 {
            return Err("ellipsis_mask / new_axis_mask are not supported".into());
        }
        let end = cx.const_input(2)?;
        let strides = cx.const_input(3)?;
        for d in 0..rank {
            let dim = xs[d] as i64;
            let s = strides[d];
            if s == 0 {
                return Err("stride 0".into());
            }
            let norm = |v: i64| if v < 0 { v + dim } else { v };
            let (lo, hi) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
            let mut b = if o.begin_mask & (1 << d) != 0 {
                if s > 0 {
                    0
                } else {
                    dim - 1
                }
            } else {
                norm(begin[d]).clamp(lo, hi)
            };
            let mut e = if o.end_mask & (1 << d) != 0 {
                if s > 0 {
                    dim
                } else {
                    -1
                }
            } else {
                norm(end[d]).clamp(lo, hi)
            };
            if o.shrink_axis_mask & (1 << d) != 0 {
                b = norm(begin[d]);
                e = b + 1;
                if o.offset {
                    return Err("offset is not supported".into());
                }
            } else if o.offset {
                return Err("offset is not supported".into());
            }
            let n = if s > 0 {
                ((e - b).max(0) + s - 1) / s
            } else {
                ((b - e).max(0) + (-s) - 1) / (-s)
            };
            start[d] = b;
            step[d] = s;
            size[d] = n;
        }
    }
    if size.iter().any(|&s| s <= 0) {
        return Err("empty slices are not supported".into());
    }
    let x = cx.input(0)?;
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
        let idx = index_table(&full, &xs, |i| {
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
    let x = cx.input(0)?;
    let y = if mid == xs {
        x
    } else {
        bilinear(cx, x, &xs, &mid, align, half, dt)?
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

/// TFLite's bilinear resize of `x` (shape `xs`) to `os` (same batch and depth).
fn bilinear(
    cx: &mut OpCx<'_, '_>,
    x: IrT,
    xs: &[usize],
    os: &[usize],
    align: bool,
    half: bool,
    dt: DType,
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
    let adj = if bits >= 1 {
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
