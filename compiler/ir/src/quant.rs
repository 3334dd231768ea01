//! Quantization metadata and the exact integer scaling arithmetic.
//!
//! Quantization records ([`Quantization`]) are *descriptive*: they say how a frontend maps the
//! integers of a tensor to real numbers (`real = scale * (q - zero_point)`). The operators never
//! read them; every zero point, multiplier and shift that affects a result is an explicit
//! operator attribute. Passes use the records to compute those attributes.
//!
//! The scaling functions here follow the TOSA 1.0 pseudocode (`pseudocode/library/
//! scale_helpers.tosac`, spec §1.8 "Integer Behavior" / RESCALE §2.12.1) and, for the
//! cross-check in the tests, gemmlowp's documented fixed-point primitives.

use thiserror::Error;

/// How a tensor's integers map to real numbers: `real = scale * (q - zero_point)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Quantization {
    /// One scale and zero point for the whole tensor.
    PerTensor { scale: f64, zero_point: i64 },
    /// One scale and zero point per index of dimension `axis`.
    PerAxis {
        axis: usize,
        scales: Vec<f64>,
        zero_points: Vec<i64>,
    },
}

impl Quantization {
    /// Per-tensor quantization.
    pub fn per_tensor(scale: f64, zero_point: i64) -> Quantization {
        Quantization::PerTensor { scale, zero_point }
    }

    /// Per-axis quantization.
    pub fn per_axis(axis: usize, scales: Vec<f64>, zero_points: Vec<i64>) -> Quantization {
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        }
    }

    /// All zero points (one for per-tensor).
    pub fn zero_points(&self) -> Vec<i64> {
        match self {
            Quantization::PerTensor { zero_point, .. } => vec![*zero_point],
            Quantization::PerAxis { zero_points, .. } => zero_points.clone(),
        }
    }
}

/// Rounding applied by a 32-bit-multiplier requantization (TOSA `rounding_mode_t`, §2.12.1).
///
/// Both modes compute `(value * multiplier + round) >> shift` exactly in 64 bits with an
/// arithmetic (flooring) shift; they differ only in `round`:
/// * `SingleRound`: `round = 1 << (shift - 1)` — round half towards +infinity, one rounding.
///   TFLite's fully-connected per-channel path and its 64-bit (16x8) requantization behave like
///   this.
/// * `DoubleRound`: as `SingleRound`, but when `shift > 31` add `1 << 30` (value ≥ 0) or subtract
///   it (value < 0). This equals gemmlowp's `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul
///   (value, multiplier), shift - 31)`: TFLite's conv / depthwise / elementwise requantization.
///   TOSA extension EXT-DOUBLEROUND. Only valid with 32-bit multipliers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RescaleRounding {
    SingleRound,
    DoubleRound,
}

impl RescaleRounding {
    /// Name used by the text dump.
    pub fn name(self) -> &'static str {
        match self {
            RescaleRounding::SingleRound => "single_round",
            RescaleRounding::DoubleRound => "double_round",
        }
    }
}

/// A violated precondition (`REQUIRE`) of a scaling function: the result would be undefined.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScaleError {
    #[error("multiplier {0} is negative")]
    NegativeMultiplier(i64),
    #[error("shift {0} is outside 2..=62")]
    ShiftRange(i64),
    #[error("value {value} is outside [-2^{e}, 2^{e}) for shift {shift}", e = shift - 1)]
    ValueRange { value: i64, shift: i64 },
    #[error("scaled result {0} does not fit int32")]
    ResultRange(i128),
}

/// TOSA `apply_scale_32` (scale_helpers.tosac): `(value * multiplier + round) >> shift` with
/// `round` chosen by `double_round` (see [`RescaleRounding`]).
///
/// Requires `multiplier >= 0`, `2 <= shift <= 62` and `-2^(shift-1) <= value < 2^(shift-1)`,
/// which guarantees the result fits `i32`.
pub fn apply_scale_32(
    value: i64,
    multiplier: i32,
    shift: i32,
    double_round: bool,
) -> Result<i32, ScaleError> {
    if multiplier < 0 {
        return Err(ScaleError::NegativeMultiplier(multiplier.into()));
    }
    if !(2..=62).contains(&shift) {
        return Err(ScaleError::ShiftRange(shift.into()));
    }
    let half = 1i128 << (shift - 1);
    let v = i128::from(value);
    if v < -half || v >= half {
        return Err(ScaleError::ValueRange {
            value,
            shift: shift.into(),
        });
    }
    let mut round = half;
    if double_round && shift > 31 {
        if value >= 0 {
            round += 1 << 30;
        } else {
            round -= 1 << 30;
        }
    }
    let result = (v * i128::from(multiplier) + round) >> shift;
    i32::try_from(result).map_err(|_| ScaleError::ResultRange(result))
}

/// TOSA `apply_scale_16` (scale_helpers.tosac): `(value * multiplier + (1 << (shift-1))) >> shift`
/// for a 48-bit `value` and 16-bit `multiplier`; single rounding only.
///
/// Requires `multiplier >= 0`, `2 <= shift <= 62`, and a result that fits `i32`.
pub fn apply_scale_16(value: i64, multiplier: i16, shift: i32) -> Result<i32, ScaleError> {
    if multiplier < 0 {
        return Err(ScaleError::NegativeMultiplier(multiplier.into()));
    }
    if !(2..=62).contains(&shift) {
        return Err(ScaleError::ShiftRange(shift.into()));
    }
    let round = 1i128 << (shift - 1);
    let result = (i128::from(value) * i128::from(multiplier) + round) >> shift;
    i32::try_from(result).map_err(|_| ScaleError::ResultRange(result))
}

/// TOSA `reciprocal_scale` (scale_helpers.tosac): a `(multiplier, shift)` with
/// `multiplier * 2^-shift ≈ 1 / value`, used by AVG_POOL2D. `value` must be ≥ 1.
pub fn reciprocal_scale(value: u32) -> Option<(i32, i32)> {
    if value == 0 {
        return None;
    }
    // k = 32 - clz(value - 1), so (1 << k) / 2 < value <= (1 << k).
    let k = 32 - (value - 1).leading_zeros() as i32;
    let numerator = ((1i64 << 30) + 1) << k;
    let multiplier = numerator / i64::from(value);
    Some((i32::try_from(multiplier).ok()?, 30 + k))
}

/// Splits a positive finite `x` into `(m, e)` with `x = m * 2^e` and `0.5 <= m < 1` (C `frexp`).
fn frexp(x: f64) -> (f64, i32) {
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

fn quantize_multiplier(real: f64, bits: i32, max_shift: i32) -> Option<(i64, i32)> {
    if !real.is_finite() || real < 0.0 {
        return None;
    }
    if real == 0.0 {
        return Some((0, 2));
    }
    let (m, mut e) = frexp(real);
    let mut q = (m * 2f64.powi(bits)).round() as i64;
    if q == 1i64 << bits {
        q /= 2;
        e += 1;
    }
    let mut shift = bits - e;
    while shift > max_shift {
        // Too small to express exactly: drop precision from the multiplier.
        q = (q + 1) / 2;
        shift -= 1;
    }
    if shift < 2 {
        return None;
    }
    Some((q, shift))
}

/// Approximates a real scale as `multiplier * 2^-shift` with a 32-bit multiplier in
/// `[2^30, 2^31)` (the frexp method: `multiplier = round(m * 2^31)`, `shift = 31 - e`), clamping
/// the shift to TOSA's 2..=62. Returns `None` for negative, non-finite or too large scales.
pub fn quantize_multiplier_32(real: f64) -> Option<(i32, i32)> {
    let (q, s) = quantize_multiplier(real, 31, 62)?;
    Some((i32::try_from(q).ok()?, s))
}

/// As [`quantize_multiplier_32`] with a 16-bit multiplier in `[2^14, 2^15)`.
pub fn quantize_multiplier_16(real: f64) -> Option<(i16, i32)> {
    let (q, s) = quantize_multiplier(real, 15, 62)?;
    Some((i16::try_from(q).ok()?, s))
}

/// gemmlowp's fixed-point primitives, written from their documented definitions. They are not
/// used by the interpreter (which follows TOSA's single-step formulation); the test-suite uses
/// them to show that `DoubleRound` reproduces TFLite's two-step rounding.
pub mod gemmlowp {
    /// `SaturatingRoundingDoublingHighMul(a, b)`: the high 32 bits of `2 * a * b`, rounded to
    /// nearest: `(a*b + nudge) / 2^31` with truncating division, `nudge = 2^30` when `a*b >= 0`
    /// and `1 - 2^30` otherwise. The only overflow, `a == b == i32::MIN`, saturates to
    /// `i32::MAX`.
    pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
        if a == i32::MIN && b == i32::MIN {
            return i32::MAX;
        }
        let ab = i64::from(a) * i64::from(b);
        let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
        ((ab + nudge) / (1i64 << 31)) as i32
    }

    /// `RoundingDivideByPOT(x, exponent)`: `x / 2^exponent` rounded to nearest, ties away from
    /// zero. `exponent` must be in `0..=31`.
    pub fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
        let exponent = exponent.min(31);
        let mask: i64 = (1i64 << exponent) - 1;
        let remainder = i64::from(x) & mask;
        let threshold = (mask >> 1) + i64::from(x < 0);
        ((i64::from(x) >> exponent) + i64::from(remainder > threshold)) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_scale_matches_spec_examples() {
        // count 1: k = 0, multiplier = 2^30 + 1, shift 30.
        assert_eq!(reciprocal_scale(1), Some(((1 << 30) + 1, 30)));
        // count 9: k = 4, multiplier = ((2^30 + 1) << 4) / 9 = 1908874355, shift 34.
        assert_eq!(reciprocal_scale(9), Some((1_908_874_355, 34)));
        assert_eq!(reciprocal_scale(0), None);
    }

    #[test]
    fn quantize_multiplier_frexp() {
        assert_eq!(quantize_multiplier_32(0.5), Some((1 << 30, 31)));
        assert_eq!(quantize_multiplier_32(1.0), Some((1 << 30, 30)));
        assert_eq!(quantize_multiplier_16(0.25), Some((1 << 14, 16)));
        let (m, s) = quantize_multiplier_32(0.1234).unwrap();
        let approx = f64::from(m) / 2f64.powi(s);
        assert!((approx - 0.1234).abs() < 1e-9);
        assert_eq!(quantize_multiplier_32(-1.0), None);
        // 2^-40 needs shift 70: the multiplier gives up 8 bits to fit shift 62.
        assert_eq!(quantize_multiplier_32(2f64.powi(-40)), Some((1 << 22, 62)));
        // 2^29 would need shift 1 < 2.
        assert_eq!(quantize_multiplier_32(2f64.powi(29)), None);
        // A mantissa that rounds up to 2^31 is renormalised: (2^31 - 0.4) / 2^31 -> 2^30, shift 30.
        assert_eq!(
            quantize_multiplier_32(1.0 - 0.4 / 2f64.powi(31)),
            Some((1 << 30, 30))
        );
    }

    #[test]
    fn gemmlowp_primitives() {
        use gemmlowp::*;
        // 2 * (2^30) * (2^30) / 2^32 = 2^29
        assert_eq!(
            saturating_rounding_doubling_high_mul(1 << 30, 1 << 30),
            1 << 29
        );
        assert_eq!(
            saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN),
            i32::MAX
        );
        // 5 / 2 = 2.5 -> 3, -5 / 2 = -2.5 -> -3 (ties away from zero)
        assert_eq!(rounding_divide_by_pot(5, 1), 3);
        assert_eq!(rounding_divide_by_pot(-5, 1), -3);
        assert_eq!(rounding_divide_by_pot(-6, 2), -2); // -1.5 -> -2
        assert_eq!(rounding_divide_by_pot(-5, 2), -1); // -1.25 -> -1
    }
}
