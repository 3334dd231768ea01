//! Unary int8 operators as 256-entry TABLEs computed at lowering time by evaluating
//! TFLite's kernel for every input value (exact by construction, given the kernel's
//! arithmetic):
//!
//! * LEAKY_RELU, ABS: TFLite's integer requantization (`MultiplyByQuantizedMultiplier`,
//!   gemmlowp double rounding) per sign; NEG: raw negation (TFLite's int8 kernel);
//! * RSQRT: TFLite's integer kernel (`GetInvSqrtQuantizedMultiplierExp`, see `rsqrt_int8`);
//! * EXP, LOG, GELU, ELU, LOGISTIC, TANH, HARD_SWISH: TFLite's float lookup-table
//!   construction (`dequantize → f(x) in f32 → round(y / s_out) + zp_out`, saturated).

use super::arith::{fixed, quantize_multiplier};
use super::ctx::{OpCx, R};
use crate::schema::BuiltinOptionsT;
use crate::BuiltinOperator;
use npuc_ir::{DType, Op, TableAttrs, TableData};

/// TFLite `MultiplyByQuantizedMultiplier(x, real)` with double rounding.
pub(crate) fn mbqm(x: i64, real: f64) -> R<i64> {
    let (m, s) = quantize_multiplier(real).ok_or("scale out of range")?;
    let x = i32::try_from(x).map_err(|_| "value out of range")?;
    let left = s.max(0);
    let right = (-s).max(0);
    let v = fixed::srdhm(x.wrapping_mul(1 << left), m);
    Ok(i64::from(fixed::rdbpot(v, right)))
}

/// TFLite `MultiplyByQuantizedMultiplier(x, multiplier, shift)` (32-bit, double rounding;
/// `shift` positive = left).
fn mbqm_exp(x: i32, m: i32, shift: i32) -> i32 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    fixed::rdbpot(fixed::srdhm(x.wrapping_mul(1 << left), m), right)
}

/// TFLite's int8 RSQRT kernel (integer, not a float table): `v = q - zp_in`; `v == 0` gives
/// 127; otherwise `1 / sqrt(v)` from `GetInvSqrtQuantizedMultiplierExp`, scaled by 2^20,
/// then requantized by `1 / (sqrt(s_in) * s_out)` and shifted back by 20, plus `zp_out`. It
/// differs from the float table where the exact result is within a few thousandths of a
/// rounding tie (`s_in` 0.0074721, `s_out` 0.0032620, q = 79: exact 118.497, TFLite 119;
/// issue 16 A.2). TFLite refuses negative `v` at run time; the table keeps -128 there (the
/// float table's NaN value).
fn rsqrt_int8(si: f32, zi: i64, so: f32, zo: i64) -> R<Vec<i64>> {
    const SHIFT: i32 = 20;
    let (om, os) = quantize_multiplier(1.0 / (f64::from(si).sqrt() * f64::from(so)))
        .ok_or("RSQRT output scale out of range")?;
    Ok((-128i64..=127)
        .map(|q| {
            let v = q - zi;
            if v < 0 {
                return -128;
            }
            if v == 0 {
                return 127;
            }
            let (m, s) = fixed::inv_sqrt_exp(v as i32);
            let data = mbqm_exp(1, m, s + SHIFT);
            (i64::from(mbqm_exp(data, om, os - SHIFT)) + zo).clamp(-128, 127)
        })
        .collect())
}

/// TFLite's `LUTPopulateInt8`: a NaN result (LOG or RSQRT of a negative value) becomes
/// -128, infinities saturate.
fn float_lut(si: f32, zi: i64, so: f32, zo: i64, f: impl Fn(f32) -> f32) -> Vec<i64> {
    (-128i64..=127)
        .map(|q| {
            let x = si * (q - zi) as f32;
            let y = f(x);
            if y.is_nan() {
                return -128;
            }
            let r = ((y / so).round() as i64).saturating_add(zo);
            r.clamp(-128, 127)
        })
        .collect()
}

pub(crate) fn unary(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    use BuiltinOperator as B;
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let dt = OpCx::dtype(xt)?;
    if dt == DType::Int16 {
        return super::ops_lut16::unary16(cx, code);
    }
    if dt != DType::Int8 || OpCx::dtype(ot)? != DType::Int8 {
        return Err(format!("{} is lowered for int8 only", cx.op.opcode.name()));
    }
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    let table: Vec<i64> = match code {
        B::LEAKY_RELU => {
            let BuiltinOptionsT::LeakyReluOptions(o) = cx.opts() else {
                return Err("missing LeakyReluOptions".into());
            };
            let r_id = f64::from(si) / f64::from(so);
            let r_alpha = f64::from(si) * f64::from(o.alpha) / f64::from(so);
            (-128i64..=127)
                .map(|q| {
                    let v = q - zi;
                    let r = if v >= 0 {
                        mbqm(v, r_id)?
                    } else {
                        mbqm(v, r_alpha)?
                    };
                    Ok((r + zo).clamp(-128, 127))
                })
                .collect::<R<_>>()?
        }
        B::ABS => {
            let r = f64::from(si) / f64::from(so);
            (-128i64..=127)
                .map(|q| Ok((mbqm((q - zi).abs(), r)? + zo).clamp(-128, 127)))
                .collect::<R<_>>()?
        }
        // TFLite's int8 NEG negates the raw values (ignoring the zero points and scales),
        // wrapping -(-128) to -128.
        B::NEG => (-128i64..=127).map(|q| i64::from((-q) as i8)).collect(),
        B::EXP => float_lut(si, zi, so, zo, f32::exp),
        B::LOG => float_lut(si, zi, so, zo, f32::ln),
        B::RSQRT => rsqrt_int8(si, zi, so, zo)?,
        B::LOGISTIC => float_lut(si, zi, so, zo, |x| 1.0 / (1.0 + (-x).exp())),
        B::TANH => float_lut(si, zi, so, zo, f32::tanh),
        B::ELU => float_lut(si, zi, so, zo, |x| if x < 0.0 { x.exp() - 1.0 } else { x }),
        B::HARD_SWISH => float_lut(si, zi, so, zo, |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0),
        B::GELU => {
            let approx = matches!(cx.opts(), BuiltinOptionsT::GeluOptions(o) if o.approximate);
            if approx {
                float_lut(si, zi, so, zo, |x| {
                    0.5 * x * (1.0 + (0.797_884_6_f32 * (x + 0.044_715 * x * x * x)).tanh())
                })
            } else {
                float_lut(si, zi, so, zo, |x| {
                    0.5 * x * (1.0 + erf(f64::from(x) / std::f64::consts::SQRT_2) as f32)
                })
            }
        }
        _ => return Err(format!("{} is not lowered yet", cx.op.opcode.name())),
    };
    let t: Vec<i8> = table.iter().map(|&v| v as i8).collect();
    let x = cx.input(0)?;
    let y = cx.emit(
        "table",
        Op::Table(TableAttrs {
            table: TableData::I8(t),
        }),
        &[x],
    )?;
    cx.bind_output(0, y)
}

/// Error function (Abramowitz–Stegun 7.1.26 is not exact enough; use a series / continued
/// fraction to double precision).
fn erf(x: f64) -> f64 {
    if x.abs() < 3.0 {
        // Taylor series.
        let mut sum = x;
        let mut term = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let s = x.signum();
        let a = x.abs();
        // Continued fraction for erfc.
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = (k as f64 / 2.0) / (a + f);
        }
        let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f);
        s * (1.0 - erfc)
    }
}
