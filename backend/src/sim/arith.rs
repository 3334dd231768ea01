//! Arithmetic of the output stage (TRM 3.6.6, 3.6.7): rounded shifts, rescale, activation
//! clamp and lookup tables.

use super::error::{check, Fault};
use crate::isa::{ActivationClipRange, ActivationFunction, RoundModeIfm, RoundModeOfm};

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
) -> Result<i128, Fault> {
    check(shift <= 63, "3.6.6", "shift>=0 && shift <= 63", || {
        format!("shift = {shift}")
    })?;
    check(
        dbl_rnd <= 30,
        "3.6.6",
        "dbl_rnd>=0 && dbl_rnd <= 30",
        || format!("dbl_rnd = {dbl_rnd}"),
    )?;
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
pub(crate) fn rounding_term_i64(
    acc: i64,
    shift: u32,
    mode: RoundModeOfm,
    dbl_rnd: u32,
) -> Option<i64> {
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

/// Activation parameters (TRM 3.6.7), read once per operation.
#[derive(Debug, Clone, Copy)]
pub struct Activation {
    /// OFM is 64-bit: no activation at all.
    pub b64: bool,
    /// OFM zero point (already sign/zero-extended per the OFM type).
    pub zero_point: i64,
    /// ACTIVATION_MIN per the OFM type.
    pub min: i64,
    /// ACTIVATION_MAX per the OFM type.
    pub max: i64,
    /// Function (LUT mode).
    pub function: ActivationFunction,
    /// Table number.
    pub table: u32,
    /// Clip range.
    pub clip: ActivationClipRange,
}

fn lut_read(lut: &[u8], index: i64, size: usize) -> Result<i64, Fault> {
    let start = index.checked_mul(size as i64).filter(|&s| s >= 0);
    let bytes = start.and_then(|s| lut.get(s as usize..s as usize + size));
    let Some(b) = bytes else {
        return Err(Fault::OutOfRegion {
            access: "read",
            region: -1,
            addr: start.unwrap_or(0) as u64,
            len: size as u64,
            size: lut.len() as u64,
        });
    };
    Ok(match size {
        1 => i64::from(b[0] as i8),
        2 => i64::from(i16::from_le_bytes([b[0], b[1]])),
        _ => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    })
}

impl Activation {
    /// `activation(acc64)` of TRM 3.6.7.
    #[inline]
    pub fn apply(&self, acc64: i64, lut: &[u8]) -> Result<i64, Fault> {
        if self.b64 {
            return Ok(acc64);
        }
        let mut acc = i64::from(acc64.wrapping_add(self.zero_point) as i32);
        acc = match self.function {
            ActivationFunction::LutTanh => acc.clamp(-0x10000, 0xffff),
            ActivationFunction::LutSigmoid => acc.clamp(-0x1f000, 0x1efff),
            _ if self.clip == ActivationClipRange::B16 => {
                if acc < self.min {
                    self.min
                } else if acc > self.max {
                    self.max
                } else {
                    acc
                }
            }
            _ => acc,
        };
        let t = i64::from(self.table);
        Ok(match self.function {
            ActivationFunction::LutNone => acc,
            ActivationFunction::LutU8U8 => lut_read(lut, (t << 8) + (acc & 0xff), 1)? & 0xff,
            ActivationFunction::LutS8S8 => lut_read(lut, (t << 8) + ((acc + 128) & 0xff), 1)?,
            ActivationFunction::LutS8S16 => lut_read(lut, (t << 8) + ((acc + 128) & 0xff), 2)?,
            ActivationFunction::LutS8S32 => lut_read(lut, (t << 8) + ((acc + 128) & 0xff), 4)?,
            ActivationFunction::LutS16S16 | ActivationFunction::LutS16S32 => {
                let index = 256 + (acc >> 7);
                let base = lut_read(lut, 2 * index, 2)?;
                let slope = lut_read(lut, 2 * index + 1, 2)?;
                if self.function == ActivationFunction::LutS16S16 {
                    i64::from((((base << 7) + (acc & 0x7f) * slope + 64) >> 7) as i16)
                } else {
                    (base << 7) + (acc & 0x7f) * slope
                }
            }
            ActivationFunction::LutTanh => {
                let index = 256 + (acc >> 8);
                let base = lut_read(lut, 2 * index, 2)?;
                let slope = lut_read(lut, 2 * index + 1, 2)?;
                let round = if acc >= 0 { 0x80 } else { 0x7f };
                ((base << 8) + (acc & 0xff) * slope + round) >> 8
            }
            ActivationFunction::LutSigmoid => {
                let index = 256 + (acc >> 9);
                let base = lut_read(lut, 2 * index, 2)?;
                let slope = lut_read(lut, 2 * index + 1, 2)?;
                let round = if acc >= 0 { 0x100_0200 } else { 0x100_01ff };
                ((base << 9) + (acc & 0x1ff) * slope + round) >> 10
            }
        })
    }

    /// Checks the table-number asserts of TRM 3.6.7 once per operation.
    pub fn check_table(&self) -> Result<(), Fault> {
        let t = self.table;
        let (ok, rule) = match self.function {
            ActivationFunction::LutS8S16 => (t < 4, "table < 4"),
            ActivationFunction::LutS8S32 => (t < 2, "table < 2"),
            ActivationFunction::LutS16S16
            | ActivationFunction::LutS16S32
            | ActivationFunction::LutTanh
            | ActivationFunction::LutSigmoid => (t == 0, "table == 0"),
            _ => (true, ""),
        };
        check(ok, "3.6.7", rule, || format!("table = {t}"))
    }
}
