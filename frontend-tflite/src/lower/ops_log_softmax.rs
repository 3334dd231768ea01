//! LOG_SOFTMAX (int8): TFLite's fixed-point reference kernel (`reference_integer_ops::
//! LogSoftmax`) as a composite of integer IR operators, one row (last axis) at a time.
//!
//! The input differences are Q5.26 (`d_q5 = MultiplyByQuantizedMultiplier(d, m, ls)` with
//! `m * 2^ls` the input scale times `2^26`), the sum of exponentials Q12.19, the output
//! `-16..0` with scale 1/16 and zero point 127:
//!
//! 1. `d = x - max(x)` in `i32` (REDUCE_MAX, RESCALE, SUB), index `d + 255`;
//! 2. `sum = Σ RoundingDivideByPOT(exp_on_negative_values(d_q5), 12)` over `d >= diff_min`:
//!    GATHER from the same 256-entry exp table as SOFTMAX, rounding shift, REDUCE_SUM;
//! 3. `L = log_x_for_x_greater_than_or_equal_to_1<5>(sum)` in Q5.26
//!    ([`fixed_ir::log_x_ge_1`]);
//! 4. `adjusted_diff_min = max(diff_min - 1, MultiplyByQuantizedMultiplier(L + i32::MIN,
//!    reverse multiplier))`: the input difference below which the output saturates;
//! 5. `out = d > adjusted_diff_min ? clamp(RoundingDivideByPOT(d_q5 - L, 22) + 127) : -128`,
//!    with `d_q5` from a second 256-entry table. `d_q5` is raised to at least `-2^30` first:
//!    below that the output saturates to -128 anyway, and `d_q5 - L` cannot overflow.

use super::arith::{fixed, quantize_multiplier};
use super::ctx::{OpCx, R};
use super::fixed_ir::{self, k32, op_k, rdbpot_k, srdhm_k};
use super::ops_softmax::exp_table;
use npuc_ir::{ArithmeticRightShiftAttrs, AxisAttrs, CastAttrs, DType, Op, TensorData};

/// Integer bits of the scaled input differences (`kInputIntegerBits`).
const INPUT_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (`kAccumulationIntegerBits`).
const ACC_BITS: i32 = 12;
/// Integer bits of the output (`kOutputIntegerBits`).
const OUTPUT_BITS: i32 = 4;

/// The kernel's constants for an input scale: `(multiplier, left shift, diff_min, reverse
/// multiplier, reverse right shift)` (TFLite's `PreprocessLogSoftmaxScalingExp` and
/// `CalculateInputRadius`, in double).
fn params(input_scale: f32) -> R<(i32, i32, i32, i32, i32)> {
    let real =
        (f64::from(input_scale) * f64::from(1u32 << (31 - INPUT_BITS))).min(f64::from(i32::MAX));
    let (m, ls) = quantize_multiplier(real).ok_or("log_softmax input scale out of range")?;
    if !(1..=30).contains(&ls) {
        return Err(format!(
            "log_softmax input scale {input_scale} needs left shift {ls} (1..=30 supported)"
        ));
    }
    let max_rescaled =
        f64::from((1 << INPUT_BITS) - 1) * (1u64 << (31 - INPUT_BITS)) as f64 / (1u64 << ls) as f64;
    let diff_min = -(max_rescaled.floor() as i32);
    let reverse = f64::from(1u32 << (31 - ls)) / f64::from(m);
    let (rm, rs) = quantize_multiplier(reverse).ok_or("log_softmax reverse scale")?;
    if rs > 0 || -rs > 31 {
        return Err(format!(
            "log_softmax reverse scaling shift {rs} out of range"
        ));
    }
    Ok((m, ls, diff_min, rm, -rs))
}

/// `d_q5 = MultiplyByQuantizedMultiplier(d, m, ls)` for `d = -255..=0` (index `d + 255`);
/// `-2^30` where `d < diff_min` (those elements always give -128).
fn diff_table(m: i32, ls: i32, diff_min: i32) -> Vec<i32> {
    (-255i32..=0)
        .map(|d| {
            if d < diff_min {
                -(1 << 30)
            } else {
                fixed::srdhm(d << ls, m)
            }
        })
        .collect()
}

pub(crate) fn log_softmax(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if OpCx::dtype(xt)? != DType::Int8 || OpCx::dtype(ot)? != DType::Int8 {
        return Err("LOG_SOFTMAX is lowered for int8 only".into());
    }
    let (si, _) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    if so != 16.0 / 256.0 || zo != 127 {
        return Err("int8 LOG_SOFTMAX output must have scale 1/16 and zero point 127".into());
    }
    let xs = OpCx::shape(xt)?;
    let Some(&depth) = xs.last() else {
        return Err("scalar LOG_SOFTMAX".into());
    };
    // The Q12.19 sum of up to 2^12 exponentials cannot overflow.
    if depth > 1 << ACC_BITS {
        return Err(format!("LOG_SOFTMAX over {depth} > 4096 elements"));
    }
    let last = xs.len() - 1;
    let (m, ls, diff_min, rev_m, rev_rs) = params(si)?;
    let exp = exp_table(1.0, si)?;
    let dq5 = diff_table(m, ls, diff_min);

    let x = cx.input(0)?;
    let mx = cx.emit("max", Op::ReduceMax(AxisAttrs { axis: last }), &[x])?;
    let x32 = cx.widen_i32(x, 0)?;
    let m32 = cx.widen_i32(mx, 0)?;
    let d = cx.emit("diff", Op::Sub, &[x32, m32])?;
    let idx = op_k(cx, "index", Op::Add, d, 255)?;
    let n: usize = xs.iter().product();
    let idx = cx.reshape(idx, vec![1, n])?;
    let lookup = |cx: &mut OpCx<'_, '_>, what: &str, table: Vec<i32>| -> R<_> {
        let tab = cx.constant(what, vec![1, 256, 1], TensorData::I32(table))?;
        let v = cx.emit(what, Op::Gather, &[tab, idx])?;
        cx.reshape(v, xs.clone())
    };
    let e = lookup(cx, "exp_table", exp)?;
    let e12 = op_k(
        cx,
        "exp_acc",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        e,
        ACC_BITS,
    )?;
    let sum = cx.emit("sum", Op::ReduceSum(AxisAttrs { axis: last }), &[e12])?;
    let log_sum = fixed_ir::log_x_ge_1(cx, sum, ACC_BITS, INPUT_BITS)?;

    let shifted = op_k(cx, "shifted_log_sum", Op::Add, log_sum, i32::MIN)?;
    let rev = srdhm_k(cx, shifted, rev_m)?;
    let rev = rdbpot_k(cx, rev, rev_rs)?;
    let adm = op_k(cx, "adjusted_diff_min", Op::Maximum, rev, diff_min - 1)?;

    let dq5 = lookup(cx, "diff_q5", dq5)?;
    let dq5 = op_k(cx, "diff_q5_floor", Op::Maximum, dq5, -(1 << 30))?;
    let t = cx.emit("minus_log_sum", Op::Sub, &[dq5, log_sum])?;
    let t = rdbpot_k(cx, t, 31 - INPUT_BITS - OUTPUT_BITS)?;
    let t = op_k(cx, "output_zp", Op::Add, t, 127)?;
    let t = cx.clamp(t, -128, 127)?;
    let keep = cx.emit("in_range", Op::Greater, &[d, adm])?;
    let floor = k32(cx, t, "out_min", -128)?;
    let y = cx.emit("select", Op::Select, &[keep, t, floor])?;
    let y = cx.emit("to_int8", Op::Cast(CastAttrs { to: DType::Int8 }), &[y])?;
    cx.bind_output(0, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_model_parameters() {
        // models/tflite/log_softmax.tflite: input scale 10/255.
        let (m, ls, diff_min, rev_m, rev_rs) = params(0.039_215_688).unwrap();
        assert_eq!(ls, 22);
        assert!((1 << 30..i32::MAX).contains(&m));
        // floor(31 * 2^26 / 2^22) = 496: every int8 difference is in range.
        assert_eq!(diff_min, -496);
        // reverse scale = 2^9 / m, about 1/(10/255 * 2^26).
        let real = f64::from(rev_m) * 2f64.powi(-31 - rev_rs);
        assert!((real - 512.0 / f64::from(m)).abs() < 1e-15, "{real}");
    }
}
