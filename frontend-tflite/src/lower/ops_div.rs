//! DIV (int8): TFLite's quantized division (`reference_ops::DivElementwise`) as a chain of
//! integer IR operators, per element:
//!
//! 1. `v1 = x1 - zp1`, `v2 = x2 - zp2` in `i32`; if `v2 < 0` both change sign;
//! 2. `inv = GetReciprocal(v2, 31)`: the Q0.31 reciprocal of `v2` normalised to `[1, 2)` and
//!    `recip_shift = 31 - clz(v2)` ([`fixed_ir::reciprocal`]);
//! 3. `headroom = CountLeadingSignBits(v1)`, `q = SRDHM(v1 << headroom, inv)`;
//! 4. `out = clamp(zp_out + RoundingDivideByPOT(SRDHM(q, m), e))` with `m * 2^shift =
//!    s1 / (s2 * s_out)` (the ratio computed in `f32`, as TFLite does with the tensors'
//!    `float` scales) and `e = recip_shift + headroom - shift`.
//!
//! When `e >= 32` TFLite's `RoundingDivideByPOT` shifts an `int32` by 32 or more, which C++
//! leaves undefined; TF 2.21 on x86-64 computes `(x >> (e - 32)) + (x >= 0)` there (the shift
//! count is taken modulo 32 and the rounding mask becomes all ones), which the goldens pin
//! (e.g. `x1 == zp1` with `v2 >= 128` gives `zp_out + 1`). The lowering reproduces that
//! (`docs/decisions.md`). A zero divisor (`x2 == zp2`) is undefined in TFLite; the lowering
//! divides by 1 there.

use super::arith::{activation_range, quantize_multiplier};
use super::ctx::{OpCx, R};
use super::fixed_ir::{self, k32, k_op, op_k, srdhm, srdhm_k};
use super::ops_elementwise::to_rank;
use crate::schema::{ActivationFunctionType, BuiltinOptionsT};
use npuc_ir::{ArithmeticRightShiftAttrs, CastAttrs, ClampAttrs, DType, Op};

pub(crate) fn div(cx: &mut OpCx<'_, '_>) -> R<()> {
    let act = match cx.opts() {
        BuiltinOptionsT::DivOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::NONE => ActivationFunctionType::NONE,
        _ => return Err("unexpected options".into()),
    };
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    for t in [t1, t2, to] {
        if OpCx::dtype(t)? != DType::Int8 {
            return Err("DIV is lowered for int8 only".into());
        }
    }
    let (s1, z1) = OpCx::qparams(t1)?;
    let (s2, z2) = OpCx::qparams(t2)?;
    let (so, zo) = OpCx::qparams(to)?;
    let real = s1 / (s2 * so);
    let (m, shift) = quantize_multiplier(f64::from(real))
        .ok_or_else(|| format!("DIV scale ratio {real} cannot be expressed as a multiplier"))?;
    // |v1|, |v2| <= 255: headroom in 23..=31, recip_shift in 0..=7.
    let (e_min, e_max) = (23 - shift, 38 - shift);
    if e_min < 0 || e_max > 63 {
        return Err(format!(
            "DIV scale ratio {real} (exponent {shift}) is outside what TFLite computes"
        ));
    }
    let (lo, hi) = activation_range(act, so, zo, -128, 127)?;
    let rank = OpCx::shape(to)?.len();

    let x1 = cx.input(0)?;
    let x1 = to_rank(cx, x1, rank)?;
    let x2 = cx.input(1)?;
    let x2 = to_rank(cx, x2, rank)?;
    let v1 = cx.widen_i32(x1, z1)?;
    let v2 = cx.widen_i32(x2, z2)?;
    let negative = k_op(cx, "divisor_negative", Op::Greater, 0, v2)?;
    let minus_v1 = k_op(cx, "minus_v1", Op::Sub, 0, v1)?;
    let v1 = cx.emit("numerator", Op::Select, &[negative, minus_v1, v1])?;
    let v2 = cx.emit("divisor", Op::Abs, &[v2])?;
    let v2 = op_k(cx, "divisor_nonzero", Op::Maximum, v2, 1)?;

    let (inv, clz_v2) = fixed_ir::reciprocal(cx, v2)?;
    let headroom = fixed_ir::count_leading_sign_bits(cx, v1)?;
    let normalised = cx.emit("normalise", Op::LogicalLeftShift, &[v1, headroom])?;
    let q = srdhm(cx, normalised, inv)?;
    let x = srdhm_k(cx, q, m)?;
    // e = (31 - clz(v2)) + headroom - shift
    let e = cx.emit("exponent", Op::Sub, &[headroom, clz_v2])?;
    let e = op_k(cx, "exponent", Op::Add, e, 31 - shift)?;
    let e31 = op_k(cx, "exponent_31", Op::Minimum, e, 31)?;
    let mut y = fixed_ir::rdbpot(cx, x, e31)?;
    if e_max >= 32 {
        // (x >> (e - 32)) + (x >= 0) where e >= 32.
        let e_wrapped = op_k(cx, "exponent_mod_32", Op::Sub, e, 32)?;
        let e_wrapped = cx.emit(
            "exponent_mod_32",
            Op::Clamp(ClampAttrs { min: 0, max: 31 }),
            &[e_wrapped],
        )?;
        let shifted = cx.emit(
            "shift_mod_32",
            Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: false }),
            &[x, e_wrapped],
        )?;
        let plus_one = op_k(cx, "plus_one", Op::Add, shifted, 1)?;
        let non_negative = op_k(cx, "non_negative", Op::GreaterEqual, x, 0)?;
        let wrapped = cx.emit("wrapped", Op::Select, &[non_negative, plus_one, shifted])?;
        let big = op_k(cx, "exponent_ge_32", Op::GreaterEqual, e, 32)?;
        y = cx.emit("select_shift", Op::Select, &[big, wrapped, y])?;
    }
    let zp = k32(cx, y, "output_zp", zo as i32)?;
    let y = cx.emit("plus_zp", Op::Add, &[y, zp])?;
    let y = cx.clamp(y, lo, hi)?;
    let y = cx.emit("to_int8", Op::Cast(CastAttrs { to: DType::Int8 }), &[y])?;
    cx.bind_output(0, y)
}
