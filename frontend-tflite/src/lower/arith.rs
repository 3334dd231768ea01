//! TFLite's quantization arithmetic, written from its documented definitions: the frexp-based
//! 31-bit multipliers, activation ranges, and the gemmlowp fixed-point primitives used by
//! the softmax kernels (evaluated at lowering time to build tables).

use crate::schema::ActivationFunctionType;

/// TFLite's `QuantizeMultiplier`: `real ≈ multiplier * 2^(shift - 31)` with `multiplier` in
/// `[2^30, 2^31)` (or 0), `shift` the TFLite exponent (positive = left shift).
///
/// `frexp(real) = (m, e)`, `multiplier = round(m * 2^31)` (half away from zero), carried into
/// the exponent when it reaches `2^31`; exponents below -31 flush to `(0, 0)`.
pub fn quantize_multiplier(real: f64) -> Option<(i32, i32)> {
    if !real.is_finite() || real < 0.0 {
        return None;
    }
    if real == 0.0 {
        return Some((0, 0));
    }
    let (m, mut e) = frexp(real);
    let mut q = (m * (1u64 << 31) as f64).round() as i64;
    if q == 1i64 << 31 {
        q /= 2;
        e += 1;
    }
    if e < -31 {
        return Some((0, 0));
    }
    if e > 30 {
        return None;
    }
    Some((q as i32, e))
}

fn frexp(x: f64) -> (f64, i32) {
    // Exact for normal numbers: scale by powers of two only.
    let mut e = x.log2().floor() as i32 + 1;
    let mut m = x / 2f64.powi(e);
    while m >= 1.0 {
        m /= 2.0;
        e += 1;
    }
    while m < 0.5 {
        m *= 2.0;
        e -= 1;
    }
    (m, e)
}

/// TFLite's 64-bit-accumulator requantization uses a 16-bit multiplier derived from the
/// 31-bit one: `(multiplier + 2^15) >> 16`, saturated to `0x7FFF`; the right shift becomes
/// `15 - shift`.
pub fn reduce_multiplier_16(m: i32) -> i32 {
    if m < 0x7FFF_0000 {
        (m + (1 << 15)) >> 16
    } else {
        0x7FFF
    }
}

/// TFLite's `Quantize(f)` for activation bounds: `zero_point + round(f / scale)` in `f32`.
fn quantize_f32(f: f32, scale: f32, zp: i64) -> i64 {
    zp + i64::from((f / scale).round() as i32)
}

/// The clamp bounds TFLite derives from a fused activation (`CalculateActivationRangeQuantized`)
/// for an output with `scale`, `zp` and integer range `[qmin, qmax]`.
pub fn activation_range(
    act: ActivationFunctionType,
    scale: f32,
    zp: i64,
    qmin: i64,
    qmax: i64,
) -> Result<(i64, i64), String> {
    let q = |f: f32| quantize_f32(f, scale, zp);
    Ok(match act {
        ActivationFunctionType::NONE => (qmin, qmax),
        ActivationFunctionType::RELU => (qmin.max(q(0.0)), qmax),
        ActivationFunctionType::RELU6 => (qmin.max(q(0.0)), qmax.min(q(6.0))),
        ActivationFunctionType::RELU_N1_TO_1 => (qmin.max(q(-1.0)), qmax.min(q(1.0))),
        other => return Err(format!("fused activation {other:?} is not supported")),
    })
}

/// gemmlowp fixed-point primitives on `i32` raw values (documented semantics).
pub mod fixed {
    /// `SaturatingRoundingDoublingHighMul`.
    pub fn srdhm(a: i32, b: i32) -> i32 {
        if a == i32::MIN && b == i32::MIN {
            return i32::MAX;
        }
        let ab = i64::from(a) * i64::from(b);
        let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
        ((ab + nudge) / (1i64 << 31)) as i32
    }

    /// `SaturatingRoundingMultiplyByPOT<exponent>`: a saturating left shift for a positive
    /// exponent, `RoundingDivideByPOT` for a negative one.
    pub fn srmbpot(x: i32, exponent: i32) -> i32 {
        if exponent <= 0 {
            return rdbpot(x, -exponent);
        }
        if x > i32::MAX >> exponent {
            i32::MAX
        } else if x < i32::MIN >> exponent {
            i32::MIN
        } else {
            x << exponent
        }
    }

    /// TFLite's `GetInvSqrtQuantizedMultiplierExp(input, reverse_shift = -1)`: `(multiplier,
    /// shift)` with `1 / sqrt(input) ≈ multiplier * 2^(shift - 31)`, from five Newton-Raphson
    /// steps in Q3.28 starting at 1 (inputs 0 and 1 give `(i32::MAX, 0)`).
    pub fn inv_sqrt_exp(input: i32) -> (i32, i32) {
        if input <= 1 {
            return (i32::MAX, 0);
        }
        let mut input = input;
        let mut shift = 11;
        while input >= 1 << 29 {
            input /= 4;
            shift += 1;
        }
        let max_left_shift_bits = input.leading_zeros() as i32 - 1;
        let left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
        shift -= left_shift_bit_pairs;
        input <<= 2 * left_shift_bit_pairs;
        // Q3.28 (3 integer bits): raw one is 2^28.
        let fixed_input = input >> 1;
        let half_input = srmbpot(fixed_input, -1);
        let half_three = (1 << 28) + (1 << 27);
        let mut x: i32 = 1 << 28;
        for _ in 0..5 {
            // x*x*x has 9 integer bits: rescaled to 3 by a saturating << 6.
            let x3 = srmbpot(srdhm(srdhm(x, x), x), 6);
            // Both products have 6 integer bits: rescaled to 3 by a saturating << 3.
            x = srmbpot(srdhm(half_three, x).wrapping_sub(srdhm(half_input, x3)), 3);
        }
        // Times sqrt(2)/2 in Q0.31.
        let mut m = srdhm(x, 1_518_500_250);
        if shift < 0 {
            m <<= -shift;
            shift = 0;
        }
        (m, -shift)
    }

    /// `RoundingDivideByPOT`: round half away from zero.
    pub fn rdbpot(x: i32, exponent: i32) -> i32 {
        let mask: i64 = (1i64 << exponent) - 1;
        let remainder = i64::from(x) & mask;
        let threshold = (mask >> 1) + i64::from(x < 0);
        ((i64::from(x) >> exponent) + i64::from(remainder > threshold)) as i32
    }

    /// `exp_on_interval_between_negative_one_quarter_and_0_excl` (0 integer bits in/out).
    fn exp_quarter(a: i32) -> i32 {
        let constant_term: i32 = 1_895_147_668; // exp(-1/8) in Q0.31
        let constant_1_over_3 = 715_827_883; // 1/3 in Q0.31
                                             // x = a + 1/8
        let x = a.wrapping_add(1 << 28);
        let x2 = srdhm(x, x);
        let x3 = srdhm(x2, x);
        let x4 = srdhm(x2, x2);
        let x4_over_4 = rdbpot(x4, 2);
        let inner = srdhm(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2);
        let poly = rdbpot(inner, 1);
        constant_term.wrapping_add(srdhm(constant_term, x.wrapping_add(poly)))
    }

    /// gemmlowp's `exp_on_negative_values` for a fixed-point input with `int_bits` integer
    /// bits (raw `a <= 0`); returns the raw Q0.31 result.
    pub fn exp_on_negative_values(a: i32, int_bits: i32) -> i32 {
        let frac_bits = 31 - int_bits;
        let one_quarter = 1i32 << (frac_bits - 2);
        let mask = one_quarter - 1;
        let a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
        // Rescale to 0 integer bits.
        let rescaled = a_mod_quarter_minus_one_quarter << int_bits;
        let mut result = exp_quarter(rescaled);
        let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
        // exp(-2^k) for k = -2 .. 4 in Q0.31.
        const BARREL: [(i32, i32); 7] = [
            (-2, 1_672_461_947),
            (-1, 1_302_514_674),
            (0, 790_015_084),
            (1, 290_630_308),
            (2, 39_332_535),
            (3, 720_401),
            (4, 242),
        ];
        for (exponent, mult) in BARREL {
            if int_bits > exponent {
                let shift = frac_bits + exponent;
                if (0..31).contains(&shift) && remainder & (1 << shift) != 0 {
                    result = srdhm(result, mult);
                }
            }
        }
        if int_bits > 5 {
            let clamp = -(1i32 << (frac_bits + 5));
            if a < clamp {
                result = 0;
            }
        }
        if a == 0 {
            i32::MAX
        } else {
            result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipliers() {
        assert_eq!(quantize_multiplier(0.5), Some((1 << 30, 0)));
        assert_eq!(quantize_multiplier(1.0), Some((1 << 30, 1)));
        assert_eq!(quantize_multiplier(0.25), Some((1 << 30, -1)));
        assert_eq!(quantize_multiplier(0.0), Some((0, 0)));
        assert_eq!(reduce_multiplier_16(1 << 30), 1 << 14);
    }

    #[test]
    fn exp_fixed_point() {
        // exp(0) saturates to 1.0 - epsilon; exp(-1) with 5 integer bits.
        assert_eq!(fixed::exp_on_negative_values(0, 5), i32::MAX);
        let r = fixed::exp_on_negative_values(-(1 << 26), 5);
        let v = f64::from(r) / 2f64.powi(31);
        assert!((v - (-1f64).exp()).abs() < 1e-6, "{v}");
        let r = fixed::exp_on_negative_values(-(3 << 25), 5);
        let v = f64::from(r) / 2f64.powi(31);
        assert!((v - (-1.5f64).exp()).abs() < 1e-6, "{v}");
    }
}
