//! SOFTMAX (int8 and int16); LOG_SOFTMAX is in `ops_log_softmax`.
//!
//! **Softmax** reproduces TFLite's fixed-point reference kernel (gemmlowp arithmetic with
//! 5 integer bits for the scaled differences and 12 for the sum of exponentials) as a
//! composite of integer IR operators, one row (last axis) at a time:
//!
//! 1. `d = x - max(x)` in `i32` (REDUCE_MAX, RESCALE, SUB);
//! 2. `e = exp_on_negative_values(d * beta-multiplier)` in Q0.31 by GATHER from a 256-entry
//!    table computed here (0 where `d < diff_min`, which drops those terms as TFLite does);
//! 3. `sum = Σ round(e / 2^12)` (ARITHMETIC_RIGHT_SHIFT with rounding, REDUCE_SUM);
//! 4. the reciprocal of `sum` (TFLite's `GetReciprocal`, [`fixed_ir::reciprocal`]: CLZ,
//!    shift, and gemmlowp's `one_over_one_plus_x_for_x_in_0_1`);
//! 5. `out = round(SRDHM(recip, e) / 2^(35 - clz(sum))) - 128`, saturated to int8.

use super::arith::{fixed, quantize_multiplier};
use super::ctx::{IrT, OpCx, R};
use super::fixed_ir;
use crate::schema::BuiltinOptionsT;
use npuc_ir::{
    ArithmeticRightShiftAttrs, AxisAttrs, DType, MulAttrs, Op, RescaleRounding, TensorData,
};

fn c32(cx: &mut OpCx<'_, '_>, what: &str, rank: usize, v: i32) -> R<IrT> {
    cx.constant(what, vec![1; rank], TensorData::I32(vec![v]))
}

/// The 256-entry exp table indexed by `d + 255`.
pub(crate) fn exp_table(beta: f32, input_scale: f32) -> R<Vec<i32>> {
    const INT_BITS: i32 = 5;
    let real = (f64::from(beta) * f64::from(input_scale) * f64::from(1u32 << (31 - INT_BITS)))
        .min(f64::from(i32::MAX));
    let (m, ls) = quantize_multiplier(real).ok_or("softmax beta * scale out of range")?;
    if ls < 0 {
        return Err("softmax input scale too small (negative left shift)".into());
    }
    let max_rescaled =
        f64::from((1 << INT_BITS) - 1) * (1u64 << (31 - INT_BITS)) as f64 / (1u64 << ls) as f64;
    let diff_min = -(max_rescaled.floor() as i64);
    let mut t = Vec::with_capacity(256);
    for d in -255i64..=0 {
        if d < diff_min {
            t.push(0);
            continue;
        }
        let shifted = d << ls;
        let shifted = i32::try_from(shifted).map_err(|_| "softmax left shift overflows")?;
        let rescaled = fixed::srdhm(shifted, m);
        t.push(fixed::exp_on_negative_values(rescaled, INT_BITS));
    }
    Ok(t)
}

pub(crate) fn softmax(cx: &mut OpCx<'_, '_>, log: bool) -> R<()> {
    if log {
        return super::ops_log_softmax::log_softmax(cx);
    }
    let BuiltinOptionsT::SoftmaxOptions(o) = cx.opts() else {
        return Err("missing SoftmaxOptions".into());
    };
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if OpCx::dtype(xt)? == DType::Int16 && OpCx::dtype(ot)? == DType::Int16 {
        return softmax16(cx, o.beta);
    }
    if OpCx::dtype(xt)? != DType::Int8 || OpCx::dtype(ot)? != DType::Int8 {
        return Err("softmax is lowered for int8 and int16 only".into());
    }
    let (si, _) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    if zo != -128 || so != 1.0 / 256.0 {
        return Err("int8 softmax output must have scale 1/256 and zero point -128".into());
    }
    let xs = OpCx::shape(xt)?;
    let rank = xs.len();
    if rank == 0 {
        return Err("scalar softmax".into());
    }
    let last = rank - 1;
    let table = exp_table(o.beta, si)?;
    let x = cx.input(0)?;
    let mx = cx.emit("max", Op::ReduceMax(AxisAttrs { axis: last }), &[x])?;
    let x32 = cx.widen_i32(x, 0)?;
    let m32 = cx.widen_i32(mx, 0)?;
    let d = cx.emit("diff", Op::Sub, &[x32, m32])?;
    let c255 = c32(cx, "c255", rank, 255)?;
    let di = cx.emit("index", Op::Add, &[d, c255])?;
    let n: usize = xs.iter().product();
    let di = cx.reshape(di, vec![1, n])?;
    let tab = cx.constant("exp_table", vec![1, 256, 1], TensorData::I32(table))?;
    let e = cx.emit("exp", Op::Gather, &[tab, di])?;
    let e = cx.reshape(e, xs.clone())?;
    let c12 = c32(cx, "c12", rank, 12)?;
    let e12 = cx.emit(
        "exp_acc",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[e, c12],
    )?;
    let sum = cx.emit("sum", Op::ReduceSum(AxisAttrs { axis: last }), &[e12])?;
    // GetReciprocal(sum, 12 integer bits).
    let (recip, h) = fixed_ir::reciprocal(cx, sum)?;
    // Exponent of the final division: num_bits_over_unit + 31 - 8 = 35 - clz(sum).
    let c35 = c32(cx, "c35", rank, 35)?;
    let ex = cx.emit("exponent", Op::Sub, &[c35, h])?;
    let prod = fixed_ir::srdhm(cx, recip, e)?;
    let unsat = cx.emit(
        "divide",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[prod, ex],
    )?;
    let y = cx.rescale(
        unsat,
        DType::Int8,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        0,
        -128,
    )?;
    cx.bind_output(0, y)
}

/// Int16 SOFTMAX (TFLite's `SoftmaxInt16`), one row (last axis) at a time:
///
/// 1. `n = max - x` (`i32`, non-negative) and `s = MultiplyByQuantizedMultiplier(-n, m)`
///    with `m` mapping `[-65535, 0]` to `[-10, 0]`; the rounding of the negative product is
///    half away from zero, so it is computed as `-rescale(n)` with round-half-up;
/// 2. `e = LUTLookup(clamp(s + 32767), exp_lut)` (TABLE + RESCALE; the table samples `exp`
///    on `[-10, 0]` in double precision);
/// 3. `sum = Σ e`, `h = clz(sum)`, `r = LUTLookup(clamp(round((sum << (h - 1)) / 2^14) -
///    98304), one_over_one_plus_x_lut)`;
/// 4. `out = clamp(round(e * r / 2^(31 - h)), 0, 32767)`.
fn softmax16(cx: &mut OpCx<'_, '_>, beta: f32) -> R<()> {
    use super::ops_lut16::{lut_lookup_ir, lut_populate_i16_f64};
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    if zi != 0 || zo != 0 || (so - 1.0 / 32768.0).abs() > 0.001 / 32768.0 {
        return Err("int16 softmax needs zero points 0 and output scale 2^-15".into());
    }
    let xs = OpCx::shape(xt)?;
    let rank = xs.len();
    if rank == 0 || rank > 4 {
        return Err("int16 softmax needs rank 1 to 4".into());
    }
    let last = rank - 1;
    let real = f64::from(si * beta) / (10.0 / 65535.0);
    let (m, sh) = quantize_multiplier(real).ok_or("softmax beta * scale out of range")?;
    let range = 65535.0f64;
    let exp_lut = lut_populate_i16_f64(10.0 / range, 32767, 2.0 / range, 0, f64::exp);
    let inv_lut = lut_populate_i16_f64(1.0 / range, -32768, 2.0 / range, 0, |v| 1.0 / (1.0 + v));
    let x = cx.input(0)?;
    let mx = cx.emit("max", Op::ReduceMax(AxisAttrs { axis: last }), &[x])?;
    let x32 = cx.widen_i32(x, 0)?;
    let m32 = cx.widen_i32(mx, 0)?;
    let n = cx.emit("neg_diff", Op::Sub, &[m32, x32])?;
    let ns = cx.rescale(
        n,
        DType::Int32,
        vec![m],
        vec![31 - sh],
        true,
        RescaleRounding::DoubleRound,
        0,
        0,
    )?;
    let c32767 = c32(cx, "c32767", rank, 32767)?;
    let sym = cx.emit("recenter", Op::Sub, &[c32767, ns])?;
    let sym = cx.rescale(
        sym,
        DType::Int16,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    let e =
        lut_lookup_ir(cx, sym, exp_lut, DType::Int32)?.ok_or("exp table slope does not fit i16")?;
    let sum = cx.emit("sum", Op::ReduceSum(AxisAttrs { axis: last }), &[e])?;
    let h = cx.emit("clz", Op::Clz, &[sum])?;
    let c1 = c32(cx, "c1", rank, 1)?;
    let hm1 = cx.emit("clz_minus_one", Op::Sub, &[h, c1])?;
    let norm = cx.emit("normalise", Op::LogicalLeftShift, &[sum, hm1])?;
    let c14 = c32(cx, "c14", rank, 14)?;
    let shifted = cx.emit(
        "q15",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[norm, c14],
    )?;
    let c_off = c32(cx, "c98304", rank, (1 << 15) + (1 << 16))?;
    let sym2 = cx.emit("recenter", Op::Sub, &[shifted, c_off])?;
    let sym2 = cx.rescale(
        sym2,
        DType::Int16,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    let r = lut_lookup_ir(cx, sym2, inv_lut, DType::Int32)?
        .ok_or("reciprocal table slope does not fit i16")?;
    let prod = cx.emit("scale", Op::Mul(MulAttrs { shift: 0 }), &[e, r])?;
    let c31 = c32(cx, "c31", rank, 31)?;
    let rs = cx.emit("right_shift", Op::Sub, &[c31, h])?;
    let q = cx.emit(
        "divide",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[prod, rs],
    )?;
    let q = cx.clamp(q, 0, 32767)?;
    let y = cx.rescale(
        q,
        DType::Int16,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    cx.bind_output(0, y)
}
