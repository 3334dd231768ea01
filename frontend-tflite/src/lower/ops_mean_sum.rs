//! MEAN and SUM (int8 and int16; uint8 on its int8 view, `super::uint8`).
//!
//! **Mean** sums `x - zp` in `i32` and requantizes with TFLite's integer mean multiplier
//! (`(m << k) / n`, `k = min(floor(log2 n), 32, 31 + shift)`), double rounding.
//!
//! **Sum** follows TFLite's optimised kernel (TF 2.21's *reference* int8/int16 SUM kernels are
//! broken, so the goldens come from the optimised ones; `models/README.md`):
//!
//! * equal input and output quantization (the only case TFLite accepts for int16, zero points
//!   0): `Σ (x - zp) + zp` in `i32`, saturated to the output type;
//! * int8 with different quantization: TFLite rescales the `i32` sum `S` of the *raw* values
//!   in `f32`: `clamp(round(f32(f32(S) * scale) + bias) + zp_out)` with
//!   `scale = f32(s_in / s_out)`, `bias = f32(f32(-zp_in * scale) * n)`, `round` half away
//!   from zero. The lowering looks for a RESCALE of `S - n * zp_in` by the exact value of
//!   `scale` (single rounding) and checks it against that float arithmetic for *every*
//!   possible `S` (`n * 255 + 1` values); where the float roundings make a difference it
//!   falls back to a GATHER from the table of all results. Either way the result is exact.

use super::arith::quantize_multiplier;
use super::ctx::{IrT, OpCx, R};
use crate::schema::BuiltinOptionsT;
use npuc_ir::{AxisAttrs, DType, Op, RescaleRounding, TensorData};

/// Largest SUM table (number of possible sums) the lowering builds.
const MAX_SUM_RANGE: i64 = 1 << 20;

pub(crate) fn mean_sum(cx: &mut OpCx<'_, '_>, sum: bool) -> R<()> {
    let BuiltinOptionsT::ReducerOptions(_) = cx.opts() else {
        return Err("missing ReducerOptions".into());
    };
    let what = if sum { "SUM" } else { "MEAN" };
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let dt = OpCx::dtype(xt)?;
    if dt != DType::Int8 && dt != DType::Int16 {
        return Err(format!("{dt} {what} is not lowered yet"));
    }
    if OpCx::dtype(ot)? != dt {
        return Err(format!("{what} input and output types differ"));
    }
    let xs = OpCx::shape(xt)?;
    let rank = xs.len() as i64;
    let mut axes = vec![];
    for a in cx.const_input(1)? {
        let a = if a < 0 { a + rank } else { a };
        if a < 0 || a >= rank {
            return Err(format!("axis {a} out of range"));
        }
        if !axes.contains(&(a as usize)) {
            axes.push(a as usize);
        }
    }
    axes.sort_unstable();
    let n: i64 = axes.iter().map(|&a| xs[a] as i64).product();
    if n == 0 {
        return Err(format!("{what} over an empty axis"));
    }
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    if !sum {
        let v = reduce_sum(cx, &axes, zi)?;
        return mean(cx, v, dt, si, so, zo, n);
    }
    if super::uint8::is_u8(xt) {
        // TFLite's uint8 SUM is its correct reference kernel: `MBQM(Σ x - n zp_in, s_in / s_out)
        // + zp_out`, saturated to uint8, i.e. MEAN's requantization without the division
        // (`n = 1`), exact on the int8 view (docs/decisions.md F6).
        let v = reduce_sum(cx, &axes, zi)?;
        return mean(cx, v, dt, si, so, zo, 1);
    }
    if si == so && zi == zo {
        // Σ (x - zp) + zp, saturated (checked against TFLite's optimised kernel).
        let v = reduce_sum(cx, &axes, zi)?;
        let y = cx.rescale(
            v,
            dt,
            vec![1 << 30],
            vec![30],
            true,
            RescaleRounding::SingleRound,
            0,
            zo,
        )?;
        return cx.bind_output(0, y);
    }
    if dt != DType::Int8 {
        return Err("int16 SUM needs equal input and output quantization (as TFLite)".into());
    }
    match sum_plan(si, zi, so, zo, n)? {
        SumPlan::Rescale { multiplier, shift } => {
            let v = reduce_sum(cx, &axes, zi)?;
            let y = cx.rescale(
                v,
                DType::Int8,
                vec![multiplier],
                vec![shift],
                true,
                RescaleRounding::SingleRound,
                0,
                zo,
            )?;
            cx.bind_output(0, y)
        }
        SumPlan::Table { lo, values } => {
            let v = reduce_sum(cx, &axes, 0)?;
            let r = cx.ty(v).shape.rank();
            let c = cx.constant("sum_offset", vec![1; r], TensorData::I32(vec![-lo as i32]))?;
            let idx = cx.emit("sum_index", Op::Add, &[v, c])?;
            let os = OpCx::shape(ot)?;
            let m: usize = os.iter().product();
            let idx = cx.reshape(idx, vec![1, m])?;
            let k = values.len();
            let tab = cx.constant("sum_table", vec![1, k, 1], TensorData::I32(values))?;
            let y = cx.emit("sum_lookup", Op::Gather, &[tab, idx])?;
            let y = cx.reshape(y, os)?;
            let y = cx.emit(
                "to_int8",
                Op::Cast(npuc_ir::CastAttrs { to: DType::Int8 }),
                &[y],
            )?;
            cx.bind_output(0, y)
        }
    }
}

/// `Σ (x - zp)` in `i32` over `axes`, reshaped to the output shape.
fn reduce_sum(cx: &mut OpCx<'_, '_>, axes: &[usize], zp: i64) -> R<IrT> {
    let x = cx.input(0)?;
    let mut v = cx.widen_i32(x, zp)?;
    for &a in axes {
        v = cx.emit("sum", Op::ReduceSum(AxisAttrs { axis: a }), &[v])?;
    }
    let os = OpCx::shape(cx.tout(0)?)?;
    cx.reshape(v, os)
}

fn mean(cx: &mut OpCx<'_, '_>, v: IrT, dt: DType, si: f32, so: f32, zo: i64, n: i64) -> R<()> {
    let real = f64::from(si) / f64::from(so);
    let (m, s) = quantize_multiplier(real).ok_or("bad mean scale")?;
    let k = (63 - (n as u64).leading_zeros() as i32).min(32).min(31 + s);
    let m2 = ((i64::from(m) << k) / n) as i32;
    let s2 = s - k;
    let y = cx.rescale(
        v,
        dt,
        vec![m2],
        vec![31 - s2],
        true,
        RescaleRounding::DoubleRound,
        0,
        zo,
    )?;
    cx.bind_output(0, y)
}

/// How an int8 SUM with rescaling is lowered.
#[derive(Debug, PartialEq)]
enum SumPlan {
    /// RESCALE of `S - n * zp_in` (single rounding, output zero point `zp_out`).
    Rescale { multiplier: i32, shift: i32 },
    /// GATHER of `values[S - lo]` (already saturated to int8).
    Table { lo: i64, values: Vec<i32> },
}

/// TFLite's float requantization of an int8 sum `s` of `n` raw values (see the module doc).
fn tflite_sum(s: i64, scale: f32, bias: f32, zo: i64) -> i64 {
    let v = (s as f32) * scale + bias;
    (v.round() as i64 + zo).clamp(-128, 127)
}

fn sum_plan(si: f32, zi: i64, so: f32, zo: i64, n: i64) -> R<SumPlan> {
    let (lo, hi) = (-128 * n, 127 * n);
    if hi - lo + 1 > MAX_SUM_RANGE {
        return Err(format!(
            "SUM over {n} elements: too many possible sums to check"
        ));
    }
    let scale = si / so;
    if !scale.is_normal() || scale <= 0.0 {
        return Err(format!(
            "SUM scale ratio {scale} is not a positive normal float"
        ));
    }
    let bias = (-zi as f32) * scale * (n as f32);
    let want = |s: i64| tflite_sum(s, scale, bias, zo);
    // scale = mant * 2^e exactly; multiplier = mant << 7 (in [2^30, 2^31)).
    let bits = scale.to_bits();
    let mant = i64::from((bits & 0x7f_ffff) | 0x80_0000);
    let e = ((bits >> 23) & 0xff) as i32 - 127 - 23;
    let multiplier = (mant << 7) as i32;
    let shift = 7 - e;
    let span = (lo - n * zi).abs().max((hi - n * zi).abs());
    let fits = (2..=62).contains(&shift) && span < 1i64 << (shift - 1).min(40);
    if fits {
        let cand = |s: i64| {
            let v = i128::from(s - n * zi) * i128::from(multiplier) + (1i128 << (shift - 1));
            ((v >> shift) as i64 + zo).clamp(-128, 127)
        };
        if (lo..=hi).all(|s| cand(s) == want(s)) {
            return Ok(SumPlan::Rescale { multiplier, shift });
        }
    }
    let values = (lo..=hi).map(|s| want(s) as i32).collect();
    Ok(SumPlan::Table { lo, values })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_hw_rescales_exactly() {
        // models/tflite/sum_hw.tflite: 30 elements, s_in 2/255, zp_in -1, s_out 0.1296, zp_out 24.
        let plan = sum_plan(0.007_843_138, -1, 0.129_642_47, 24, 30).unwrap();
        assert!(matches!(plan, SumPlan::Rescale { .. }), "{plan:?}");
    }

    #[test]
    fn ties_fall_back_to_the_table() {
        // scale 1/2: S * 0.5 has ties, which TFLite rounds away from zero and RESCALE up.
        let plan = sum_plan(0.5, 0, 1.0, 0, 3).unwrap();
        let SumPlan::Table { lo, values } = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(lo, -384);
        assert_eq!(values.len(), 766);
        // S = -3 -> -1.5 -> -2; S = 3 -> 1.5 -> 2; S = -384 -> -192 saturates.
        assert_eq!(values[(-3 - lo) as usize], -2);
        assert_eq!(values[(3 - lo) as usize], 2);
        assert_eq!(values[0], -128);
    }
}
