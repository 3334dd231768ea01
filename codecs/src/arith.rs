//! The integer arithmetic of the U85 scaling unit (TRM 3.6.6): sign extension and truncation,
//! the rounded shift of `rescale` in every round mode, the average-pool reciprocal. Pure
//! functions on integers, defined once here: the simulator executes with them, and the
//! compiler's lowering uses them to predict what an operation writes.

use crate::isa_fields::{RoundModeIfm, RoundModeOfm};

/// A failed `assert()` of the TRM pseudocode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TRM {section} assert failed: {rule} ({detail})")]
pub struct TrmAssert {
    /// TRM section of the pseudocode holding the assert.
    pub section: &'static str,
    /// The asserted condition, as written in the TRM.
    pub rule: &'static str,
    /// The values involved.
    pub detail: String,
}

/// `sign_extend(v, bits)`: the low `bits` of `v` as two's complement.
#[inline]
pub fn sign_extend(v: i64, bits: u32) -> i64 {
    if bits >= 64 {
        v
    } else {
        (v << (64 - bits)) >> (64 - bits)
    }
}

/// `truncate(v, bits, type)`: the low `bits` of `v`, sign- or zero-extended.
#[inline]
pub fn truncate(v: i64, bits: u32, signed: bool) -> i64 {
    if bits >= 64 {
        v
    } else if signed {
        sign_extend(v, bits)
    } else {
        v & ((1i64 << bits) - 1)
    }
}

/// The IFM round modes as OFM round modes (same encodings 0 and 1, TRM 3.11.25).
pub fn ifm_round_mode(mode: RoundModeIfm) -> RoundModeOfm {
    match mode {
        RoundModeIfm::DoubleSymmetric => RoundModeOfm::DoubleSymmetric,
        RoundModeIfm::Natural => RoundModeOfm::Natural,
    }
}

/// `rounded_shift_right(acc, shift, mode, dbl_rnd)` of TRM 3.6.6, on unbounded integers.
pub fn rounded_shift_right(
    acc: i128,
    shift: u32,
    mode: RoundModeOfm,
    dbl_rnd: u32,
) -> Result<i128, TrmAssert> {
    if shift > 63 {
        return Err(TrmAssert {
            section: "3.6.6",
            rule: "shift>=0 && shift <= 63",
            detail: format!("shift = {shift}"),
        });
    }
    if dbl_rnd > 30 {
        return Err(TrmAssert {
            section: "3.6.6",
            rule: "dbl_rnd>=0 && dbl_rnd <= 30",
            detail: format!("dbl_rnd = {dbl_rnd}"),
        });
    }
    if shift == 0 {
        return Ok(acc);
    }
    // The same arithmetic in i64 when nothing can overflow (the usual case); exact i128
    // otherwise.
    if let Ok(a) = i64::try_from(acc) {
        if let Some(v) = rounding_term_i64(a, shift, mode, dbl_rnd).and_then(|r| a.checked_add(r)) {
            return Ok(i128::from(v >> shift));
        }
    }
    let r: i128 = 1 << (shift - 1);
    let d: i128 = if shift as i64 > 31 - dbl_rnd as i64 {
        1 << (30 - dbl_rnd)
    } else {
        0
    };
    let r = match mode {
        RoundModeOfm::DoubleSymmetric => {
            if acc >= 0 {
                r + d
            } else {
                r - d
            }
        }
        RoundModeOfm::DoubleAsymmetric => r + d,
        RoundModeOfm::TruncateToZero => {
            if acc >= 0 {
                0
            } else {
                (1i128 << shift) - 1
            }
        }
        RoundModeOfm::TruncateToLower => 0,
        RoundModeOfm::Natural => r,
        RoundModeOfm::Symmetric => {
            if acc >= 0 {
                r
            } else {
                r - 1
            }
        }
    };
    Ok((acc + r) >> shift)
}

/// The rounding term `r` of [`rounded_shift_right`] for `1 <= shift <= 63`, `dbl_rnd <= 30`,
/// in i64 (`None` if it does not fit, which it always does).
#[inline]
pub fn rounding_term_i64(acc: i64, shift: u32, mode: RoundModeOfm, dbl_rnd: u32) -> Option<i64> {
    let r: i64 = 1 << (shift - 1);
    let d: i64 = if shift as i64 > 31 - dbl_rnd as i64 {
        1 << (30 - dbl_rnd)
    } else {
        0
    };
    Some(match mode {
        RoundModeOfm::DoubleSymmetric => {
            if acc >= 0 {
                r.checked_add(d)?
            } else {
                r - d
            }
        }
        RoundModeOfm::DoubleAsymmetric => r.checked_add(d)?,
        RoundModeOfm::TruncateToZero => {
            if acc >= 0 {
                0
            } else {
                ((1u64 << shift) - 1) as i64
            }
        }
        RoundModeOfm::TruncateToLower => 0,
        RoundModeOfm::Natural => r,
        RoundModeOfm::Symmetric => {
            if acc >= 0 {
                r
            } else {
                r - 1
            }
        }
    })
}

/// `clz(a, 32)`: leading zeros of a 32-bit value.
#[inline]
pub fn clz32(a: u32) -> u32 {
    a.leading_zeros()
}

/// The built-in average-pool reciprocal of TRM 3.6.6 `rescale` for `d` valid taps:
/// `(scale, shift)` with `scale = (((1<<30)+1)<<k)/d`, `shift = 30+k`, `k = 32-clz(d-1)`.
pub fn avgpool_scale(d: u32) -> (i64, u32) {
    let d = d.max(1);
    let k = 32 - clz32(d - 1);
    let numerator = ((1i64 << 30) + 1) << k;
    (numerator / i64::from(d), 30 + k)
}
