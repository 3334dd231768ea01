//! gemmlowp's fixed-point primitives (as TFLite's integer kernels use them) expressed as chains
//! of IR operators on `i32` tensors, for the composite lowerings (SOFTMAX, LOG_SOFTMAX, DIV).
//!
//! Every function reproduces the documented integer semantics bit for bit on its stated
//! domain; the IR operators never overflow there (the interpreter would report it). Constants
//! are `[1, ..., 1]` tensors broadcasting against the operand.
//!
//! * `SaturatingRoundingDoublingHighMul` is MUL with shift 31 (`(a*b + 2^30) >> 31` equals
//!   gemmlowp's nudge-and-truncate for every product except `MIN * MIN`, which saturates in
//!   gemmlowp and is never formed here).
//! * `RoundingDivideByPOT` rounds half away from zero; the IR's rounding shift rounds half up,
//!   so it is applied to `|x|` and the sign restored.
//! * `SaturatingRoundingMultiplyByPOT<e>` (e > 0) saturates to `i32::MAX` / `i32::MIN`.

use super::ctx::{IrT, OpCx, R};
use npuc_ir::{ArithmeticRightShiftAttrs, ClampAttrs, MulAttrs, Op, TensorData};

/// What the fixed-point chains need from the lowering context (implemented by [`OpCx`];
/// the unit tests implement it on a bare graph).
pub(crate) trait Emit {
    /// Adds an operator with an inferred output.
    fn emit(&mut self, what: &str, op: Op, inputs: &[IrT]) -> R<IrT>;
    /// Adds a constant.
    fn constant(&mut self, what: &str, shape: Vec<usize>, data: TensorData) -> R<IrT>;
    /// Rank of an IR tensor.
    fn rank(&self, t: IrT) -> usize;
}

impl Emit for OpCx<'_, '_> {
    fn emit(&mut self, what: &str, op: Op, inputs: &[IrT]) -> R<IrT> {
        OpCx::emit(self, what, op, inputs)
    }
    fn constant(&mut self, what: &str, shape: Vec<usize>, data: TensorData) -> R<IrT> {
        OpCx::constant(self, what, shape, data)
    }
    fn rank(&self, t: IrT) -> usize {
        self.ty(t).shape.rank()
    }
}

/// An `i32` constant of shape `[1; rank(like)]`.
pub(crate) fn k32(b: &mut impl Emit, like: IrT, what: &str, v: i32) -> R<IrT> {
    let rank = b.rank(like);
    b.constant(what, vec![1; rank], TensorData::I32(vec![v]))
}

/// Binary operator with a constant right operand.
pub(crate) fn op_k(b: &mut impl Emit, what: &str, op: Op, x: IrT, v: i32) -> R<IrT> {
    let c = k32(b, x, what, v)?;
    b.emit(what, op, &[x, c])
}

/// Binary operator with a constant left operand.
pub(crate) fn k_op(b: &mut impl Emit, what: &str, op: Op, v: i32, x: IrT) -> R<IrT> {
    let c = k32(b, x, what, v)?;
    b.emit(what, op, &[c, x])
}

/// `SaturatingRoundingDoublingHighMul(a, b)`.
pub(crate) fn srdhm(b: &mut impl Emit, x: IrT, y: IrT) -> R<IrT> {
    b.emit("srdhm", Op::Mul(MulAttrs { shift: 31 }), &[x, y])
}

/// `SaturatingRoundingDoublingHighMul(x, v)` with a constant `v`.
pub(crate) fn srdhm_k(b: &mut impl Emit, x: IrT, v: i32) -> R<IrT> {
    op_k(b, "srdhm", Op::Mul(MulAttrs { shift: 31 }), x, v)
}

/// Arithmetic right shift by a constant, truncating (`round == false`) or rounding half up.
pub(crate) fn asr_k(b: &mut impl Emit, x: IrT, e: i32, round: bool) -> R<IrT> {
    op_k(
        b,
        "asr",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round }),
        x,
        e,
    )
}

/// gemmlowp `SaturatingRoundingMultiplyByPOT<e>` for `1 <= e <= 31`: `x << e`, saturated
/// to `i32::MIN` / `i32::MAX`.
pub(crate) fn sat_shl(b: &mut impl Emit, x: IrT, e: u32) -> R<IrT> {
    let lim = (1i64 << (31 - e)) - 1;
    let c = b.emit(
        "sat_clamp",
        Op::Clamp(ClampAttrs {
            min: -lim - 1,
            max: lim,
        }),
        &[x],
    )?;
    let shifted = op_k(b, "sat_shl", Op::LogicalLeftShift, c, e as i32)?;
    let over = op_k(b, "sat_over", Op::Greater, x, lim as i32)?;
    let max = k32(b, x, "i32_max", i32::MAX)?;
    b.emit("sat_select", Op::Select, &[over, max, shifted])
}

/// `x << e` where the caller guarantees no overflow (the value keeps its sign).
pub(crate) fn shl_k(b: &mut impl Emit, x: IrT, e: u32) -> R<IrT> {
    op_k(b, "shl", Op::LogicalLeftShift, x, e as i32)
}

/// gemmlowp `RoundingDivideByPOT(x, e)` (round half away from zero) for a tensor of
/// exponents `e` in `0..=31` (or a constant); `x != i32::MIN`.
pub(crate) fn rdbpot(b: &mut impl Emit, x: IrT, e: IrT) -> R<IrT> {
    let a = b.emit("abs", Op::Abs, &[x])?;
    let r = b.emit(
        "rdbpot",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[a, e],
    )?;
    let neg_r = k_op(b, "neg", Op::Sub, 0, r)?;
    let negative = k_op(b, "is_neg", Op::Greater, 0, x)?;
    b.emit("sign", Op::Select, &[negative, neg_r, r])
}

/// [`rdbpot`] by a constant exponent.
pub(crate) fn rdbpot_k(b: &mut impl Emit, x: IrT, e: i32) -> R<IrT> {
    let c = k32(b, x, "exponent", e)?;
    rdbpot(b, x, c)
}

/// gemmlowp `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a` in Q0.31 with
/// `a >= 0`, as Q0.31 (three Newton-Raphson steps in Q2.29).
pub(crate) fn one_over_one_plus_x(b: &mut impl Emit, a: IrT) -> R<IrT> {
    // RoundingHalfSum(a, One) = (a + 2^31) / 2 for a >= 0.
    let half = asr_k(b, a, 1, false)?;
    let half_den = op_k(b, "half_den", Op::Add, half, 1 << 30)?;
    let t = srdhm_k(b, half_den, -1_010_580_540)?; // -32/17 in Q2.29
    let mut x = k_op(b, "x0", Op::Add, 1_515_870_810, t)?; // 48/17 in Q2.29
    for _ in 0..3 {
        let hdx = srdhm(b, half_den, x)?;
        let one_minus = k_op(b, "one_minus", Op::Sub, 1 << 29, hdx)?;
        let p = srdhm(b, x, one_minus)?;
        // Rescale<2> of a small correction: never saturates.
        let p4 = shl_k(b, p, 2)?;
        x = b.emit("newton", Op::Add, &[x, p4])?;
    }
    // Rescale<0>(ExactMulByPot<-1>(x)): saturates to i32::MAX when x reaches 1.0 (a < 4).
    sat_shl(b, x, 1)
}

/// TFLite `GetReciprocal(x, x_integer_digits)` for `x >= 1`: returns the Q0.31 reciprocal
/// of the normalised `x` and `clz(x)` (`num_bits_over_unit = x_integer_digits - clz(x)`).
pub(crate) fn reciprocal(b: &mut impl Emit, x: IrT) -> R<(IrT, IrT)> {
    let h = b.emit("clz", Op::Clz, &[x])?;
    // clz(0) = 32 is not a valid shift; x = 0 has no reciprocal anyway.
    let h31 = op_k(b, "clz_31", Op::Minimum, h, 31)?;
    let shifted = b.emit("normalise", Op::LogicalLeftShift, &[x, h31])?;
    let a = op_k(b, "minus_one", Op::BitwiseXor, shifted, i32::MIN)?;
    Ok((one_over_one_plus_x(b, a)?, h))
}

/// TFLite `CountLeadingSignBits` of an `i32`: `clz(x ^ (x >> 31)) - 1`.
pub(crate) fn count_leading_sign_bits(b: &mut impl Emit, x: IrT) -> R<IrT> {
    let sign = asr_k(b, x, 31, false)?;
    let folded = b.emit("fold_sign", Op::BitwiseXor, &[x, sign])?;
    let z = b.emit("clz", Op::Clz, &[folded])?;
    op_k(b, "clrsb", Op::Sub, z, 1)
}

/// TFLite `log_x_for_x_greater_than_or_equal_to_1<out_bits>` of a Q`in_bits` value `z >= 1`
/// (any raw value `>= 1`, i.e. real values down to `2^-(31 - in_bits)`), as Q`out_bits`.
///
/// The algorithm normalises `z` two ways (`z` and `z * sqrt(1/2)`), keeps the mantissa `r`
/// in `[sqrt(1/2), 1)` and the matching exponent adjustment, evaluates a rational
/// approximation of `log` around `sqrt(sqrt(1/2))` with one reciprocal, and adds
/// `exponent * log(2)`.
pub(crate) fn log_x_ge_1(b: &mut impl Emit, z: IrT, in_bits: i32, out_bits: i32) -> R<IrT> {
    const LOG_2: i32 = 1_488_522_236;
    const SQRT_SQRT_HALF: i32 = 1_805_811_301;
    const SQRT_HALF: i32 = 1_518_500_250;
    const ALPHA_N: i32 = 117_049_297;
    const ALPHA_D: i32 = 127_690_142;
    const ALPHA_I: i32 = 1_057_819_769;
    const ALPHA_F: i32 = 638_450_708;
    let acc_bits = out_bits + 1;
    // The exponent terms `(in_bits - headroom) << (31 - acc_bits)` must not saturate.
    let limit = (1 << acc_bits.clamp(0, 30)) - 1;
    if !(0..=31).contains(&in_bits)
        || !(1..=29).contains(&acc_bits)
        || 31 - in_bits > limit
        || in_bits > limit
    {
        return Err(format!(
            "log with {in_bits} input and {out_bits} output integer bits is not supported"
        ));
    }
    let exp_shift = 31 - acc_bits;
    let shifted_quarter = 1i32 << (29 - acc_bits);

    // z_a: normalise z to [1/2, 1) (headroom_plus_one = clz(z)).
    let ha1 = b.emit("clz_a", Op::Clz, &[z])?;
    let ha = op_k(b, "headroom_a", Op::Sub, ha1, 1)?;
    let ha = op_k(b, "headroom_a_pos", Op::Maximum, ha, 0)?;
    let r_a_tmp = b.emit("norm_a", Op::LogicalLeftShift, &[z, ha])?;
    let t = srdhm_k(b, r_a_tmp, SQRT_HALF)?;
    let r_a = sat_shl(b, t, 1)?;
    let ea = k_op(b, "exp_a", Op::Sub, in_bits, ha1)?;
    let ea = shl_k(b, ea, exp_shift as u32)?;
    let pow_a = op_k(b, "pow_a", Op::Add, ea, shifted_quarter)?;

    // z_b: the same with z * sqrt(1/2).
    let z_b = srdhm_k(b, z, SQRT_HALF)?;
    let clz_b = b.emit("clz_b", Op::Clz, &[z_b])?;
    let hb = op_k(b, "headroom_b", Op::Sub, clz_b, 1)?;
    let r_b_shl = b.emit("norm_b", Op::LogicalLeftShift, &[z, hb])?;
    // z << hb saturates exactly when hb > clz(z) - 1.
    let sat_b = b.emit("sat_b", Op::GreaterEqual, &[hb, ha1])?;
    let max = k32(b, z, "i32_max", i32::MAX)?;
    let r_b = b.emit("r_b", Op::Select, &[sat_b, max, r_b_shl])?;
    let eb = k_op(b, "exp_b", Op::Sub, in_bits, hb)?;
    let eb = shl_k(b, eb, exp_shift as u32)?;
    let pow_b = op_k(b, "pow_b", Op::Sub, eb, shifted_quarter)?;

    let r = b.emit("r", Op::Minimum, &[r_a, r_b])?;
    let z_pow_2_adj = b.emit("z_pow_2_adj", Op::Maximum, &[pow_a, pow_b])?;

    // p = RoundingHalfSum(r, sqrt_sqrt_half) = (r + SQRT_SQRT_HALF + 1) >> 1 for r >= 0.
    let half_r = asr_k(b, r, 1, false)?;
    let p = op_k(b, "p", Op::Add, half_r, (SQRT_SQRT_HALF + 1) / 2)?;
    let q = op_k(b, "q", Op::Sub, r, SQRT_SQRT_HALF)?;
    let q = b.emit("q2", Op::Add, &[q, q])?;
    let common_sq = srdhm(b, q, q)?;
    let qr = srdhm(b, q, r)?;
    let qcs = srdhm(b, q, common_sq)?;
    let qcsn = srdhm_k(b, qcs, ALPHA_N)?;
    let num = b.emit("num", Op::Add, &[qr, qcsn])?;
    let aiq = k_op(b, "alpha_i_q", Op::Add, ALPHA_I, q)?;
    let adcs = srdhm_k(b, common_sq, ALPHA_D)?;
    let inner = b.emit("inner", Op::Add, &[aiq, adcs])?;
    let pin = srdhm(b, p, inner)?;
    let afq = srdhm_k(b, q, ALPHA_F)?;
    let denom_minus_one = b.emit("denom_minus_one", Op::Add, &[pin, afq])?;
    let recip_denom = one_over_one_plus_x(b, denom_minus_one)?;
    let num_scaled = rdbpot_k(b, num, acc_bits)?;
    let zl = srdhm_k(b, z_pow_2_adj, LOG_2)?;
    let nr = srdhm(b, num_scaled, recip_denom)?;
    let acc = b.emit("log_acc", Op::Add, &[zl, nr])?;
    sat_shl(b, acc, (acc_bits - out_bits) as u32)
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A bare-graph [`Emit`] and scalar ports of the gemmlowp primitives to test the chains
    //! against.
    use super::*;
    use npuc_ir::{DType, Graph, TensorType, TensorValue};

    pub struct Bare {
        pub g: Graph,
        n: usize,
    }

    impl Bare {
        pub fn new() -> Bare {
            Bare {
                g: Graph::new("t"),
                n: 0,
            }
        }
        pub fn input(&mut self, len: usize) -> IrT {
            self.g.add_input("x", TensorType::new(DType::Int32, [len]))
        }
        /// Runs the graph with `x` as its only input and `out` as its output.
        pub fn run(mut self, out: IrT, x: &[i32]) -> Vec<i64> {
            self.g.add_output(out).unwrap();
            npuc_ir::validate(&self.g).unwrap();
            let v = TensorValue::new([x.len()], TensorData::I32(x.to_vec())).unwrap();
            let o = npuc_ir::run_outputs(&self.g, vec![v]).unwrap();
            o[0].to_i64_vec()
        }
    }

    impl Emit for Bare {
        fn emit(&mut self, what: &str, op: Op, inputs: &[IrT]) -> R<IrT> {
            self.n += 1;
            self.g
                .add_op_inferred(format!("{}{what}", self.n), op, inputs)
                .map(|(_, t)| t)
                .map_err(|e| e.to_string())
        }
        fn constant(&mut self, what: &str, shape: Vec<usize>, data: TensorData) -> R<IrT> {
            self.n += 1;
            self.g
                .add_const(format!("{}{what}", self.n), shape, data)
                .map_err(|e| e.to_string())
        }
        fn rank(&self, t: IrT) -> usize {
            self.g.tensor(t).map_or(0, |x| x.ty.shape.rank())
        }
    }

    /// Scalar gemmlowp / TFLite reference arithmetic (from the documented definitions).
    pub mod scalar {
        pub use crate::lower::arith::fixed::{rdbpot, srdhm};

        pub fn sat_pot(x: i32, e: i32) -> i32 {
            if e <= 0 {
                return rdbpot(x, -e);
            }
            let th = (1i64 << (31 - e)) - 1;
            if i64::from(x) > th {
                i32::MAX
            } else if i64::from(x) < -th {
                i32::MIN
            } else {
                x << e
            }
        }

        pub fn one_over_one_plus_x(a: i32) -> i32 {
            let s = i64::from(a) + i64::from(i32::MAX);
            let half = ((s + if s >= 0 { 1 } else { -1 }) / 2) as i32;
            let mut x = 1_515_870_810i32.wrapping_add(srdhm(half, -1_010_580_540));
            for _ in 0..3 {
                let hx = srdhm(half, x);
                let om = (1i32 << 29).wrapping_sub(hx);
                x = x.wrapping_add(sat_pot(srdhm(x, om), 2));
            }
            sat_pot(x, 1)
        }

        pub fn clz(x: i32) -> i32 {
            (x as u32).leading_zeros() as i32
        }

        pub fn log_x_ge_1(z: i32, in_bits: i32, out_bits: i32) -> i32 {
            let acc = out_bits + 1;
            let quarter = rdbpot(536_870_912, acc);
            let ha1 = clz(z);
            let r_a_tmp = sat_pot(z, ha1 - 1);
            let r_a = sat_pot(srdhm(r_a_tmp, 1_518_500_250), 1);
            let pa = sat_pot(in_bits - ha1, 31 - acc).saturating_add(quarter);
            let z_b = srdhm(z, 1_518_500_250);
            let hb = clz(z_b) - 1;
            let r_b = sat_pot(z, hb);
            let pb = sat_pot(in_bits - hb, 31 - acc).saturating_sub(quarter);
            let r = r_a.min(r_b);
            let zp = pa.max(pb);
            let s = i64::from(r) + 1_805_811_301;
            let p = ((s + if s >= 0 { 1 } else { -1 }) / 2) as i32;
            let mut q = r.wrapping_sub(1_805_811_301);
            q = q.wrapping_add(q);
            let cs = srdhm(q, q);
            let num = srdhm(q, r).wrapping_add(srdhm(srdhm(q, cs), 117_049_297));
            let inner = 1_057_819_769i32
                .wrapping_add(q)
                .wrapping_add(srdhm(127_690_142, cs));
            let dm1 = srdhm(p, inner).wrapping_add(srdhm(638_450_708, q));
            let rd = one_over_one_plus_x(dm1);
            let ns = rdbpot(num, acc);
            let sum = srdhm(zp, 1_488_522_236).wrapping_add(srdhm(ns, rd));
            sat_pot(sum, acc - out_bits)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{scalar, Bare};
    use super::*;

    /// Inputs spread over the whole positive range, with every power of two and its
    /// neighbours.
    fn positive_samples() -> Vec<i32> {
        let mut v = vec![1, 2, 3, 4, 5, 7, 100, i32::MAX, i32::MAX - 1];
        for k in 0..31 {
            let p = 1i64 << k;
            for d in [-1i64, 0, 1] {
                if (1..=i64::from(i32::MAX)).contains(&(p + d)) {
                    v.push((p + d) as i32);
                }
            }
        }
        let mut x: u32 = 12345;
        for _ in 0..4000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            v.push((x >> 1).max(1) as i32 >> (x % 31));
        }
        v.retain(|&y| y >= 1);
        v
    }

    #[test]
    fn rdbpot_rounds_half_away_from_zero() {
        let xs = [
            -7,
            -6,
            -5,
            -3,
            -2,
            -1,
            0,
            1,
            2,
            3,
            5,
            6,
            7,
            i32::MAX,
            i32::MIN + 1,
        ];
        for e in [0, 1, 2, 5, 31] {
            let mut b = Bare::new();
            let x = b.input(xs.len());
            let y = rdbpot_k(&mut b, x, e).unwrap();
            let got = b.run(y, &xs);
            let want: Vec<i64> = xs.iter().map(|&x| scalar::rdbpot(x, e).into()).collect();
            assert_eq!(got, want, "exponent {e}");
        }
    }

    #[test]
    fn sat_shl_saturates_to_the_extremes() {
        let xs = [
            i32::MIN,
            -(1 << 30) - 1,
            -(1 << 30),
            -5,
            0,
            5,
            (1 << 30) - 1,
            1 << 30,
            i32::MAX,
        ];
        for e in [1, 2, 7, 31] {
            let mut b = Bare::new();
            let x = b.input(xs.len());
            let y = sat_shl(&mut b, x, e).unwrap();
            let got = b.run(y, &xs);
            let want: Vec<i64> = xs
                .iter()
                .map(|&x| scalar::sat_pot(x, e as i32).into())
                .collect();
            assert_eq!(got, want, "exponent {e}");
        }
    }

    #[test]
    fn reciprocal_matches_gemmlowp() {
        // One over 1 + a for a from the normalised values of every sample, including a = 0
        // (powers of two), where gemmlowp's result saturates to i32::MAX.
        let xs = positive_samples();
        let mut b = Bare::new();
        let x = b.input(xs.len());
        let (r, h) = reciprocal(&mut b, x).unwrap();
        let both = b.emit("pair", Op::BitwiseXor, &[r, h]).unwrap();
        let got = b.run(both, &xs);
        for (i, &x) in xs.iter().enumerate() {
            let h = scalar::clz(x);
            let a = ((x as u32) << h).wrapping_sub(1 << 31) as i32;
            let want = i64::from(scalar::one_over_one_plus_x(a) ^ h);
            assert_eq!(got[i], want, "x = {x}");
        }
        assert_eq!(scalar::one_over_one_plus_x(0), i32::MAX);
    }

    #[test]
    fn count_leading_sign_bits_is_clrsb() {
        let xs = [i32::MIN, -(1 << 20), -2, -1, 0, 1, 2, 255, i32::MAX];
        let mut b = Bare::new();
        let x = b.input(xs.len());
        let y = count_leading_sign_bits(&mut b, x).unwrap();
        let got = b.run(y, &xs);
        let want = [0, 11, 30, 31, 31, 30, 29, 23, 0];
        assert_eq!(got, want);
    }

    #[test]
    fn log_matches_the_scalar_kernel() {
        let xs = positive_samples();
        for (ib, ob) in [(12, 5), (5, 5), (20, 4)] {
            let mut b = Bare::new();
            let x = b.input(xs.len());
            let y = log_x_ge_1(&mut b, x, ib, ob).unwrap();
            let got = b.run(y, &xs);
            for (i, &x) in xs.iter().enumerate() {
                assert_eq!(
                    got[i],
                    i64::from(scalar::log_x_ge_1(x, ib, ob)),
                    "log of raw {x} (Q{ib} -> Q{ob})"
                );
            }
        }
        // log(1.0) = 0 and log(4096 - eps) in Q5.26.
        assert_eq!(scalar::log_x_ge_1(1 << 19, 12, 5), 0);
        let l = f64::from(scalar::log_x_ge_1(i32::MAX, 12, 5)) / f64::from(1 << 26);
        assert!((l - 4096f64.ln()).abs() < 1e-5, "{l}");
    }
}
