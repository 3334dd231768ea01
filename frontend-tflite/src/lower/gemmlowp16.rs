//! gemmlowp's 16-bit fixed-point `logistic` and `tanh` (`FixedPoint<int16_t, N>`), as TFLite's
//! integer LSTM kernel applies them to its gates and cell state (`ApplySigmoid`, `ApplyTanh`).
//!
//! Scalar functions evaluated at lowering time to tabulate the activation for every `i16`
//! input; written from gemmlowp's documented fixed-point arithmetic: `Qm.n` raw values,
//! `SaturatingRoundingDoublingHighMul`, `RoundingDivideByPOT` (half away from zero), the
//! Taylor expansion of `exp` on `[-1/4, 0)` with a barrel shifter for the integer part, and
//! three Newton-Raphson steps for the division. Plain `+`/`-` wrap to 16 bits like gemmlowp's
//! scalar `Add`/`Sub`/`Neg`; constants are the 32-bit ones rounded to 16 bits.

/// Wraps to `i16` (C++ conversion of an `int` result to `int16_t`).
fn w(v: i32) -> i32 {
    i32::from(v as i16)
}

/// `SaturatingRoundingDoublingHighMul` on `i16`.
fn srdhm(a: i32, b: i32) -> i32 {
    if a == b && a == -32768 {
        return 32767;
    }
    let ab = a * b;
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    // C++ division truncates towards zero.
    w((ab + nudge) / (1 << 15))
}

/// `RoundingDivideByPOT`: division by `2^e`, rounding half away from zero.
pub(crate) fn rdbpot(x: i32, e: u32) -> i32 {
    let mask = (1i64 << e) - 1;
    let rem = i64::from(x) & mask;
    let threshold = (mask >> 1) + i64::from(x < 0);
    (x >> e) + i32::from(rem > threshold)
}

/// `SaturatingRoundingMultiplyByPOT<e>` on `i16`.
fn sat_pot(x: i32, e: i32) -> i32 {
    match e {
        0 => x,
        e if e < 0 => rdbpot(x, e.unsigned_abs()),
        e => {
            let threshold = (1 << (15 - e)) - 1;
            if x > threshold {
                32767
            } else if x < -threshold {
                -32768
            } else {
                w(x << e)
            }
        }
    }
}

/// A 32-bit fixed-point constant as gemmlowp's 16-bit code uses it (rounded by 2^16).
fn k(raw32: i32) -> i32 {
    w(rdbpot(raw32, 16))
}

/// `exp(a)` for `a` in Q0.15, `-1/4 <= a < 0`.
fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    let constant_term = k(1_895_147_668);
    let one_third = k(715_827_883);
    let x = w(a + (1 << 12));
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = sat_pot(x4, -2);
    let t = sat_pot(w(srdhm(w(x4_over_4 + x3), one_third) + x2), -1);
    (constant_term + srdhm(constant_term, w(x + t))).clamp(-32768, 32767)
}

/// `exp(a)` as Q0.15 for `a <= 0` in Q`integer_bits`.15-`integer_bits`.
fn exp_on_negative_values(a: i32, integer_bits: i32) -> i32 {
    let frac = 15 - integer_bits;
    let quarter = 1 << (frac - 2);
    let a_mod_quarter_minus_quarter = w((a & (quarter - 1)) - quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(sat_pot(
        a_mod_quarter_minus_quarter,
        integer_bits,
    ));
    let remainder = w(a_mod_quarter_minus_quarter - a);
    // exp(-2^e) for e = -2..=4, as 32-bit Q0.31 constants.
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (e, m) in BARREL {
        if integer_bits > e && remainder & (1 << (frac + e)) != 0 {
            result = srdhm(result, k(m));
        }
    }
    if integer_bits > 5 && a < k(-(1 << (36 - integer_bits))) {
        result = 0;
    }
    if a == 0 {
        32767
    } else {
        result
    }
}

/// The Newton-Raphson reciprocal `1 / (1 + a)` (`tanh == false`) or `(1 - a) / (1 + a)` for
/// `a` in Q0.15, `0 <= a < 1`.
fn newton_division(a: i32, tanh: bool) -> i32 {
    let s = a + 32767;
    let half_denominator = w((s + if s >= 0 { 1 } else { -1 }) / 2);
    let mut x = w(k(1_515_870_810) + srdhm(half_denominator, k(-1_010_580_540)));
    let one = 1 << 13; // 1.0 in Q2.13
    for _ in 0..3 {
        let hdx = srdhm(half_denominator, x);
        x = w(x + sat_pot(srdhm(x, w(one - hdx)), 2));
    }
    if tanh {
        sat_pot(w(x - one), 2)
    } else {
        sat_pot(x, 1)
    }
}

/// gemmlowp `logistic` of a Q`integer_bits` `i16`, as Q0.15.
pub(crate) fn logistic(a: i16, integer_bits: i32) -> i16 {
    let a = i32::from(a);
    if a == 0 {
        return 1 << 14;
    }
    let abs = if a > 0 { a } else { w(-a) };
    let positive = newton_division(exp_on_negative_values(w(-abs), integer_bits), false);
    (if a > 0 { positive } else { w(32767 - positive) }) as i16
}

/// gemmlowp `tanh` of a Q`integer_bits` `i16`, as Q0.15.
pub(crate) fn tanh(a: i16, integer_bits: i32) -> i16 {
    let a = i32::from(a);
    if a == 0 {
        return 0;
    }
    let n = if a < 0 { a } else { w(-a) };
    // ExactMulByPot<1>: the same raw value with one more integer bit.
    let t = newton_division(exp_on_negative_values(n, integer_bits + 1), true);
    (if a < 0 { w(-t) } else { t }) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(x: i16, integer_bits: i32) -> f64 {
        f64::from(x) / f64::from(1 << (15 - integer_bits))
    }

    #[test]
    fn logistic_q3_follows_the_sigmoid_to_7_lsb_and_is_symmetric() {
        // 16-bit gemmlowp is within 6.4 LSB of the real function over all inputs.
        for x in i16::MIN..=i16::MAX {
            let y = f64::from(logistic(x, 3)) / 32768.0;
            let want = 1.0 / (1.0 + (-real(x, 3)).exp());
            assert!((y - want).abs() < 7.0 / 32768.0, "x = {x}: {y} vs {want}");
            // logistic(-x) = 1 - logistic(x), with 1 = 32767 (0 maps to exactly 1/2).
            if x != i16::MIN && x != 0 {
                let sum = i32::from(logistic(x, 3)) + i32::from(logistic(-x, 3));
                assert_eq!(sum, 32767, "x = {x}");
            }
        }
        assert_eq!(logistic(0, 3), 16384);
    }

    #[test]
    fn tanh_follows_tanh_to_13_lsb_for_every_integer_bit_count_and_is_odd() {
        // Within 11.2 to 12.1 LSB of the real function, depending on the format.
        for bits in 0..=6 {
            for x in (i16::MIN..=i16::MAX).step_by(3) {
                let y = f64::from(tanh(x, bits)) / 32768.0;
                let want = real(x, bits).tanh();
                assert!(
                    (y - want).abs() < 13.0 / 32768.0,
                    "Q{bits} x = {x}: {y} vs {want}"
                );
                if x != i16::MIN {
                    assert_eq!(tanh(-x, bits), -tanh(x, bits), "Q{bits} x = {x}");
                }
            }
            assert_eq!(tanh(0, bits), 0);
        }
    }

    #[test]
    fn rounding_divide_by_pot_rounds_half_away_from_zero() {
        assert_eq!(rdbpot(3, 1), 2);
        assert_eq!(rdbpot(-3, 1), -2);
        assert_eq!(rdbpot(5, 2), 1);
        assert_eq!(rdbpot(-6, 2), -2);
        assert_eq!(rdbpot(i32::MIN, 31), -1);
    }
}
