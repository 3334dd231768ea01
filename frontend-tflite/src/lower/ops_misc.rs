//! Comparisons, logical operators, SELECT, CAST, reductions (ANY/ALL/MAX/MIN), ARG_MAX,
//! REVERSE_V2, TILE, PACK, UNPACK, MIRROR_PAD, GATHER, SPACE_TO_BATCH_ND, BATCH_MATMUL and
//! SQUARED_DIFFERENCE.
//!
//! int8 comparisons (and int16 EQUAL / NOT_EQUAL) follow TFLite's quantized scheme: each input becomes
//! `MultiplyByQuantizedMultiplier((x - zp) << 8, s_input)` before the integer comparison.
//! SQUARED_DIFFERENCE shifts by 7, rescales each input by `s_i / (2 max(s1, s2))`, squares the
//! difference and rescales by `(2 max)^2 / (2^14 s_out)`.

use super::ctx::{IrT, OpCx, R};
use super::ops_elementwise::to_rank;
use super::ops_layout::{axis, gather_flat, index_table};
use crate::schema::{BuiltinOptionsT, MirrorPadMode};
use crate::BuiltinOperator;
use npuc_ir::{
    AxisAttrs, CastAttrs, DType, MatMulAttrs, MulAttrs, Op, PadAttrs, TensorData, TileAttrs,
    TransposeAttrs,
};

fn shifted_scaled(cx: &mut OpCx<'_, '_>, slot: usize, rank: usize, ls: i32, real: f64) -> R<IrT> {
    let t = cx.tin(slot)?;
    let (_, zp) = OpCx::qparams(t)?;
    let x = cx.input(slot)?;
    let x = to_rank(cx, x, rank)?;
    let v = cx.widen_i32(x, zp)?;
    let c = cx.constant("shift", vec![1; rank], TensorData::I32(vec![ls]))?;
    let v = cx.emit("shl", Op::LogicalLeftShift, &[v, c])?;
    cx.requant_double(v, DType::Int32, &[real], 0)
}

pub(crate) fn compare(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    use BuiltinOperator as B;
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let rank = OpCx::shape(to)?.len();
    let dt = OpCx::dtype(t1)?;
    // TFLite (2.21) rescales int16 operands for EQUAL / NOT_EQUAL only; the ordering
    // comparisons of int16 compare raw values (checked against its reference kernels).
    let quantized = t1.quantization.is_some() && t2.quantization.is_some();
    let eq = matches!(code, B::EQUAL | B::NOT_EQUAL);
    let (a, b) = if dt == DType::Int8 || dt == DType::Int16 && quantized && eq {
        let (s1, _) = OpCx::qparams(t1)?;
        let (s2, _) = OpCx::qparams(t2)?;
        (
            shifted_scaled(cx, 0, rank, 8, f64::from(s1))?,
            shifted_scaled(cx, 1, rank, 8, f64::from(s2))?,
        )
    } else if matches!(dt, DType::Int32 | DType::Bool | DType::Int16) {
        let a = cx.input(0)?;
        let a = to_rank(cx, a, rank)?;
        let b = cx.input(1)?;
        (a, to_rank(cx, b, rank)?)
    } else {
        return Err(format!("{dt} comparison is not lowered"));
    };
    let y = match code {
        B::GREATER => cx.emit("gt", Op::Greater, &[a, b])?,
        B::GREATER_EQUAL => cx.emit("ge", Op::GreaterEqual, &[a, b])?,
        B::LESS => cx.emit("lt", Op::Greater, &[b, a])?,
        B::LESS_EQUAL => cx.emit("le", Op::GreaterEqual, &[b, a])?,
        B::EQUAL => cx.emit("eq", Op::Equal, &[a, b])?,
        _ => {
            let e = cx.emit("eq", Op::Equal, &[a, b])?;
            cx.emit("ne", Op::LogicalNot, &[e])?
        }
    };
    cx.bind_output(0, y)
}

pub(crate) fn logical(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    use BuiltinOperator as B;
    let rank = OpCx::shape(cx.tout(0)?)?.len();
    let a = cx.input(0)?;
    let a = to_rank(cx, a, rank)?;
    let y = if code == B::LOGICAL_NOT {
        cx.emit("not", Op::LogicalNot, &[a])?
    } else {
        let b = cx.input(1)?;
        let b = to_rank(cx, b, rank)?;
        let op = if code == B::LOGICAL_AND {
            Op::LogicalAnd
        } else {
            Op::LogicalOr
        };
        cx.emit("logic", op, &[a, b])?
    };
    cx.bind_output(0, y)
}

pub(crate) fn select(cx: &mut OpCx<'_, '_>) -> R<()> {
    let ot = cx.tout(0)?;
    let rank = OpCx::shape(ot)?.len();
    for i in 1..3 {
        let t = cx.tin(i)?;
        if t.quantization.is_some() && OpCx::qparams(t)? != OpCx::qparams(ot)? {
            return Err(format!(
                "input {i} and the output have different quantization"
            ));
        }
    }
    // SELECT (v1) with a rank-1 condition over a higher-rank x picks whole rows along the
    // first axis (TFLite's RankOneSelect).
    let cs = OpCx::shape(cx.tin(0)?)?;
    let xs = OpCx::shape(cx.tin(1)?)?;
    let rows = cx.op.opcode.builtin == BuiltinOperator::SELECT && cs.len() == 1 && xs.len() > 1;
    let mut ins = vec![];
    for i in 0..3 {
        let x = cx.input(i)?;
        ins.push(if i == 0 && rows {
            let mut s = vec![1; rank];
            s[0] = cs[0];
            cx.reshape(x, s)?
        } else {
            to_rank(cx, x, rank)?
        });
    }
    let y = cx.emit("select", Op::Select, &ins)?;
    cx.bind_output(0, y)
}

pub(crate) fn cast(cx: &mut OpCx<'_, '_>) -> R<()> {
    if super::uint8::is_u8(cx.tin(0)?) {
        return super::uint8::cast(cx);
    }
    let to = OpCx::dtype(cx.tout(0)?)?;
    let x = cx.input(0)?;
    let y = cx.emit("cast", Op::Cast(CastAttrs { to }), &[x])?;
    cx.bind_output(0, y)
}

fn axes_of(cx: &OpCx<'_, '_>, slot: usize, rank: usize) -> R<Vec<usize>> {
    let mut v = vec![];
    for a in cx.const_input(slot)? {
        let a = axis(a, rank)?;
        if !v.contains(&a) {
            v.push(a);
        }
    }
    v.sort_unstable();
    Ok(v)
}

pub(crate) fn reduce(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    use BuiltinOperator as B;
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if xt.quantization.is_some() && OpCx::qparams(xt)? != OpCx::qparams(ot)? {
        return Err("input and output quantization differ".into());
    }
    let xs = OpCx::shape(xt)?;
    let axes = axes_of(cx, 1, xs.len())?;
    let mut v = cx.input(0)?;
    for &a in &axes {
        let attrs = AxisAttrs { axis: a };
        let op = match code {
            B::REDUCE_MAX => Op::ReduceMax(attrs),
            B::REDUCE_MIN => Op::ReduceMin(attrs),
            B::REDUCE_ANY => Op::ReduceAny(attrs),
            _ => Op::ReduceAll(attrs),
        };
        v = cx.emit("reduce", op, &[v])?;
    }
    let y = cx.reshape(v, OpCx::shape(ot)?)?;
    let y = if y == cx.input(0)? {
        cx.emit("copy", Op::Identity, &[y])?
    } else {
        y
    };
    cx.bind_output(0, y)
}

pub(crate) fn arg_max(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let xs = OpCx::shape(xt)?;
    let a = axis(*cx.const_input(1)?.first().ok_or("empty axis")?, xs.len())?;
    let x = cx.input(0)?;
    let y = cx.emit("argmax", Op::ArgMax(AxisAttrs { axis: a }), &[x])?;
    let to = OpCx::dtype(ot)?;
    let y = if to != DType::Int32 {
        cx.emit("cast", Op::Cast(CastAttrs { to }), &[y])?
    } else {
        y
    };
    cx.bind_output(0, y)
}

pub(crate) fn reverse(cx: &mut OpCx<'_, '_>) -> R<()> {
    let xs = OpCx::shape(cx.tin(0)?)?;
    let axes = axes_of(cx, 1, xs.len())?;
    let mut v = cx.input(0)?;
    for a in axes {
        v = cx.emit("reverse", Op::Reverse(AxisAttrs { axis: a }), &[v])?;
    }
    cx.bind_output(0, v)
}

pub(crate) fn tile(cx: &mut OpCx<'_, '_>) -> R<()> {
    let multiples = cx
        .const_input(1)?
        .into_iter()
        .map(|m| {
            usize::try_from(m)
                .ok()
                .filter(|&m| m > 0)
                .ok_or("bad multiple")
        })
        .collect::<Result<Vec<_>, _>>()?;
    let x = cx.input(0)?;
    let y = cx.emit("tile", Op::Tile(TileAttrs { multiples }), &[x])?;
    cx.bind_output(0, y)
}

pub(crate) fn pack(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::PackOptions(o) = cx.opts() else {
        return Err("missing PackOptions".into());
    };
    let os = OpCx::shape(cx.tout(0)?)?;
    let a = axis(i64::from(o.axis), os.len())?;
    let mut ins = vec![];
    for i in 0..cx.op.inputs.len() {
        let t = cx.tin(i)?;
        if t.quantization.is_some() && OpCx::qparams(t)? != OpCx::qparams(cx.tout(0)?)? {
            return Err("inputs must share the output's quantization".into());
        }
        let mut s = OpCx::shape(t)?;
        s.insert(a, 1);
        let x = cx.input(i)?;
        ins.push(cx.reshape(x, s)?);
    }
    let y = cx.emit("concat", Op::Concat(AxisAttrs { axis: a }), &ins)?;
    cx.bind_output(0, y)
}

pub(crate) fn unpack(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::UnpackOptions(o) = cx.opts() else {
        return Err("missing UnpackOptions".into());
    };
    let xs = OpCx::shape(cx.tin(0)?)?;
    let a = axis(i64::from(o.axis), xs.len())?;
    let x = cx.input(0)?;
    for j in 0..cx.op.outputs.len() {
        let mut start = vec![0; xs.len()];
        start[a] = j;
        let mut size = xs.clone();
        size[a] = 1;
        let s = cx.emit(
            "slice",
            Op::Slice(npuc_ir::SliceAttrs { start, size }),
            &[x],
        )?;
        let os = OpCx::shape(cx.tout(j)?)?;
        let y = cx.emit(
            "reshape",
            Op::Reshape(npuc_ir::ReshapeAttrs {
                shape: npuc_ir::Shape(os),
            }),
            &[s],
        )?;
        cx.bind_output(j, y)?;
    }
    Ok(())
}

pub(crate) fn mirror_pad(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::MirrorPadOptions(o) = cx.opts() else {
        return Err("missing MirrorPadOptions".into());
    };
    let reflect = o.mode == MirrorPadMode::REFLECT;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let p = cx.const_input(1)?;
    if p.len() != 2 * xs.len() {
        return Err("paddings do not match the rank".into());
    }
    let idx = index_table(&os, &xs, |i| {
        (0..xs.len())
            .map(|d| {
                let n = xs[d] as i64;
                let s = i[d] as i64 - p[2 * d];
                let s = if s < 0 {
                    if reflect {
                        -s
                    } else {
                        -s - 1
                    }
                } else if s >= n {
                    if reflect {
                        2 * n - 2 - s
                    } else {
                        2 * n - 1 - s
                    }
                } else {
                    s
                };
                s.clamp(0, n - 1) as usize
            })
            .collect()
    });
    let x = cx.input(0)?;
    let y = gather_flat(cx, x, idx, os)?;
    cx.bind_output(0, y)
}

pub(crate) fn gather(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::GatherOptions(o) = cx.opts() else {
        return Err("missing GatherOptions".into());
    };
    let ps = OpCx::shape(cx.tin(0)?)?;
    let is = OpCx::shape(cx.tin(1)?)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let a = axis(i64::from(o.axis), ps.len())?;
    let b = usize::try_from(o.batch_dims).map_err(|_| "negative batch_dims")?;
    if b > a || b > is.len() || ps[..b] != is[..b] {
        return Err("batch_dims must not exceed the axis and must match the indices".into());
    }
    if cx.const_values(cx.tin(1)?)?.is_none() {
        return gather_dynamic(cx, &ps, &is, &os, a, b);
    }
    let ind = cx.const_input(1)?;
    if ind.iter().any(|&v| v < 0 || v >= ps[a] as i64) {
        return Err("gather index out of range".into());
    }
    let ir = is.len();
    let istr = npuc_ir::Shape(is.clone()).strides();
    let idx = index_table(&os, &ps, |o_| {
        let outer = &o_[..a];
        let iv = &o_[a..a + (ir - b)];
        let inner = &o_[a + ir - b..];
        let mut pos = 0;
        for (k, &v) in outer[..b].iter().chain(iv).enumerate() {
            pos += v * istr[k];
        }
        let mut s = outer.to_vec();
        s.push(ind[pos] as usize);
        s.extend_from_slice(inner);
        s
    });
    let x = cx.input(0)?;
    let y = gather_flat(cx, x, idx, os)?;
    cx.bind_output(0, y)
}

/// GATHER with computed indices: the IR's `values [N, K, C]` by `indices [N, W]`, with
/// `N` the axes before `axis` (the indices repeated over those after the batch axes), `K`
/// the gathered axis and `C` the axes after it. The indices (int64 ones cast to int32) are
/// clamped to `0..K-1`: TFLite refuses an index outside, so the clamp changes no valid
/// inference and makes the lookup provably inside the table.
fn gather_dynamic(
    cx: &mut OpCx<'_, '_>,
    ps: &[usize],
    is: &[usize],
    os: &[usize],
    a: usize,
    b: usize,
) -> R<()> {
    let batch: usize = ps[..b].iter().product();
    let mid: usize = ps[b..a].iter().product();
    let k = ps[a];
    let c: usize = ps[a + 1..].iter().product();
    let w: usize = is[b..].iter().product();
    let mut idx = cx.input(1)?;
    match OpCx::dtype(cx.tin(1)?)? {
        DType::Int32 => {}
        DType::Int64 => {
            idx = cx.emit(
                "index_i32",
                Op::Cast(CastAttrs { to: DType::Int32 }),
                &[idx],
            )?;
        }
        other => return Err(format!("{other} indices")),
    }
    let idx = cx.clamp(idx, 0, k as i64 - 1)?;
    let idx = if mid > 1 {
        let i3 = cx.reshape(idx, vec![batch, 1, w])?;
        let t = cx.emit(
            "repeat",
            Op::Tile(TileAttrs {
                multiples: vec![1, mid, 1],
            }),
            &[i3],
        )?;
        cx.reshape(t, vec![batch * mid, w])?
    } else {
        cx.reshape(idx, vec![batch, w])?
    };
    let x = cx.input(0)?;
    let v = cx.reshape(x, vec![batch * mid, k, c])?;
    let g = cx.emit("gather", Op::Gather, &[v, idx])?;
    let y = cx.reshape(g, os.to_vec())?;
    cx.bind_output(0, y)
}

pub(crate) fn space_to_batch(cx: &mut OpCx<'_, '_>) -> R<()> {
    let xt = cx.tin(0)?;
    let xs = OpCx::shape(xt)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    if xs.len() != 4 {
        return Err("needs a 4-D input".into());
    }
    let block = cx.const_input(1)?;
    let pads = cx.const_input(2)?;
    let (bh, bw) = (block[0] as usize, block[1] as usize);
    let padding = vec![
        [0, 0],
        [pads[0] as usize, pads[1] as usize],
        [pads[2] as usize, pads[3] as usize],
        [0, 0],
    ];
    let zp = if xt.quantization.is_some() {
        OpCx::qparams(cx.tout(0)?)?.1
    } else {
        0
    };
    let x = cx.input(0)?;
    let padded = cx.emit(
        "pad",
        Op::Pad(PadAttrs {
            padding,
            pad_const: zp,
        }),
        &[x],
    )?;
    let ps = cx.ty(padded).shape.0;
    let n = xs[0];
    let idx = index_table(&os, &ps, |i| {
        let (blk, b) = (i[0] / n, i[0] % n);
        let (by, bx) = (blk / bw, blk % bw);
        vec![b, i[1] * bh + by, i[2] * bw + bx, i[3]]
    });
    let y = gather_flat(cx, padded, idx, os)?;
    cx.bind_output(0, y)
}

pub(crate) fn batch_matmul(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::BatchMatMulOptions(o) = cx.opts() else {
        return Err("missing BatchMatMulOptions".into());
    };
    let (ta, tb, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let dt = OpCx::dtype(ta)?;
    if OpCx::dtype(tb)? != dt {
        return Err("both operands must have the same type".into());
    }
    let (sa, za) = OpCx::qparams(ta)?;
    let (sb, zb) = OpCx::qparams(tb)?;
    if dt == DType::Int16 && (za != 0 || zb != 0) {
        return Err("int16 operands need zero point 0".into());
    }
    let rank = OpCx::shape(to)?.len().max(2);
    let mut ops = vec![];
    for (slot, adj) in [(0, o.adj_x), (1, o.adj_y)] {
        let x = cx.input(slot)?;
        let x = to_rank(cx, x, rank)?;
        let x = if adj {
            let mut perms: Vec<usize> = (0..rank).collect();
            perms.swap(rank - 1, rank - 2);
            cx.emit("transpose", Op::Transpose(TransposeAttrs { perms }), &[x])?
        } else {
            x
        };
        ops.push(x);
    }
    let acc = cx.emit(
        "matmul",
        Op::MatMul(MatMulAttrs { a_zp: za, b_zp: zb }),
        &ops,
    )?;
    let y = super::ops_conv::requant(
        cx,
        acc,
        sa,
        &[sb],
        to,
        crate::schema::ActivationFunctionType::NONE,
        false,
    )?;
    let y = cx.reshape(y, OpCx::shape(to)?)?;
    cx.bind_output(0, y)
}

pub(crate) fn squared_difference(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    if OpCx::dtype(t1)? != DType::Int8 {
        return Err("only int8 SQUARED_DIFFERENCE is lowered".into());
    }
    let (s1, _) = OpCx::qparams(t1)?;
    let (s2, _) = OpCx::qparams(t2)?;
    let (so, zo) = OpCx::qparams(to)?;
    let rank = OpCx::shape(to)?.len();
    let twice_max = 2.0 * f64::from(s1).max(f64::from(s2));
    let a = shifted_scaled(cx, 0, rank, 7, f64::from(s1) / twice_max)?;
    let b = shifted_scaled(cx, 1, rank, 7, f64::from(s2) / twice_max)?;
    let d = cx.emit("diff", Op::Sub, &[a, b])?;
    let sq = cx.emit("square", Op::Mul(MulAttrs { shift: 0 }), &[d, d])?;
    let real = twice_max * twice_max / (f64::from(1u32 << 14) * f64::from(so));
    let y = cx.requant_double(sq, DType::Int8, &[real], zo)?;
    cx.bind_output(0, y)
}
