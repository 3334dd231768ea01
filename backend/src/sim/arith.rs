//! The activation unit (TRM 3.6.7): clamp and lookup tables. The scaling unit's integer
//! arithmetic (rounded shifts, sign extension, TRM 3.6.6) is `npuc_codecs::arith`, shared with
//! the compiler.

use super::error::{check, Fault};
use crate::isa::{ActivationClipRange, ActivationFunction};

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
