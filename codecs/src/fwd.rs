//! Fast weight decoder (FWD) stream (TRM 3.9.11, §2.4).
//!
//! A FWD stream is a 256-bit header followed by 256-bit words of weights
//! packed at a fixed width, in the merged weight order of TRM 3.9.2:
//!
//! * header (LSB first): `raw_mode_flag:1`, `small_lut_flag:1`,
//!   `zero_reserved:102`, `zero_point:SINT8`, then 16 LUT entries of
//!   `{lut_sign:1, lut_abs:8}`;
//! * raw mode: 32 × SINT8 per word, weight = value − `zero_point`;
//! * `small_lut_flag == 0`: 64 × 4-bit LUT indices per word;
//! * `small_lut_flag == 1`: 128 × 2-bit LUT indices (entries 0..=3).
//!
//! The encoder picks the smallest mode that represents the sequence
//! exactly: 2-bit if it has at most 4 distinct values, 4-bit if at most 16,
//! otherwise raw (possible when `max − min <= 255`). The LUT lists the
//! distinct values in order of first appearance, unused entries `+0`; in raw
//! mode the LUT (ignored by the hardware) holds the first 16 distinct
//! values, which is what Vela writes too. The last word is padded with the
//! code of weight 0 (the LUT index of 0 if present, else index 0; the byte
//! `zero_point` in raw mode).

use thiserror::Error;

use crate::bitwriter::BitWriter;

/// Bytes in the header and in each weight word (256 bits).
pub const FWD_WORD_BYTES: usize = 32;
/// Number of LUT entries in the header.
pub const FWD_LUT_ENTRIES: usize = 16;
/// Bit offset of `zero_point` in the header.
const ZERO_POINT_BIT: u32 = 104;
/// Bit offset of the first LUT entry in the header.
const LUT_BIT: u32 = 112;

/// Errors of the FWD codec.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FwdError {
    /// Stream shorter than the header.
    #[error("FWD stream has {len} bytes; the header alone needs 32")]
    MissingHeader {
        /// Stream length.
        len: usize,
    },
    /// Stream length not a multiple of 32 bytes.
    #[error("FWD stream length {len} is not a multiple of 32 bytes (a partial word starts at byte offset {offset})")]
    PartialWord {
        /// Stream length.
        len: usize,
        /// Byte offset of the incomplete word.
        offset: usize,
    },
    /// A reserved header bit is set.
    #[error("FWD header reserved bit set at bit offset {bit}")]
    ReservedBitSet {
        /// Bit offset in the stream.
        bit: u32,
    },
    /// Fewer weight slots than requested.
    #[error("FWD stream holds {capacity} weights, {count} requested (stream ends at byte offset {offset})")]
    TooShort {
        /// Requested weights.
        count: usize,
        /// Weight slots in the stream.
        capacity: usize,
        /// Stream end offset.
        offset: usize,
    },
    /// More words than the weight count needs.
    #[error("FWD stream has {extra} word(s) beyond the {count} weights requested, starting at byte offset {offset}")]
    TrailingWords {
        /// Requested weights.
        count: usize,
        /// Superfluous words.
        extra: usize,
        /// Byte offset of the first superfluous word.
        offset: usize,
    },
    /// A weight outside -255..=255 given to the encoder.
    #[error("weight {value} at position {index} is outside -255..=255")]
    WeightOutOfRange {
        /// Position in the input.
        index: usize,
        /// The weight.
        value: i32,
    },
    /// Too many distinct values for a LUT and a range wider than 255 for raw mode.
    #[error("weights span {min}..={max} with more than 16 distinct values: not representable in FWD raw mode (span must be <= 255)")]
    NotRepresentable {
        /// Smallest weight.
        min: i16,
        /// Largest weight.
        max: i16,
    },
    /// A requested LUT does not cover a weight.
    #[error("weight {value} at position {index} is not in the LUT")]
    NotInLut {
        /// Position in the input.
        index: usize,
        /// The weight.
        value: i16,
    },
}

/// One LUT entry: sign and 8-bit magnitude (sign-magnitude, so `-0` exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FwdLutEntry {
    /// `lut_sign`: 1 = negative.
    pub sign: bool,
    /// `lut_abs`: magnitude.
    pub abs: u8,
}

impl FwdLutEntry {
    /// The entry for a weight value (-255..=255); zero is `+0`.
    pub fn from_value(v: i16) -> Self {
        Self {
            sign: v < 0,
            abs: v.unsigned_abs().min(255) as u8,
        }
    }

    /// The weight value of the entry.
    pub fn value(self) -> i16 {
        let a = i16::from(self.abs);
        if self.sign {
            -a
        } else {
            a
        }
    }
}

/// Weight packing mode of a FWD stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FwdMode {
    /// `raw_mode_flag = 1`: 8 bits per weight.
    Raw,
    /// `small_lut_flag = 0`: 4-bit LUT index per weight.
    Lut4,
    /// `small_lut_flag = 1`: 2-bit LUT index per weight.
    Lut2,
}

impl FwdMode {
    /// Bits per weight.
    pub const fn bits_per_weight(self) -> u32 {
        match self {
            FwdMode::Raw => 8,
            FwdMode::Lut4 => 4,
            FwdMode::Lut2 => 2,
        }
    }

    /// Weights per 256-bit word.
    pub const fn weights_per_word(self) -> usize {
        256 / self.bits_per_weight() as usize
    }
}

/// The 256-bit FWD header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FwdHeader {
    /// `raw_mode_flag`.
    pub raw_mode: bool,
    /// `small_lut_flag`.
    pub small_lut: bool,
    /// `zero_point` (raw mode: weight = value − zero_point).
    pub zero_point: i8,
    /// The 16 LUT entries.
    pub lut: [FwdLutEntry; FWD_LUT_ENTRIES],
}

impl FwdHeader {
    /// The packing mode the flags select (`raw_mode_flag` wins).
    pub fn mode(&self) -> FwdMode {
        if self.raw_mode {
            FwdMode::Raw
        } else if self.small_lut {
            FwdMode::Lut2
        } else {
            FwdMode::Lut4
        }
    }

    /// Parses the header from the first 32 bytes of a stream.
    pub fn parse(bytes: &[u8]) -> Result<Self, FwdError> {
        if bytes.len() < FWD_WORD_BYTES {
            return Err(FwdError::MissingHeader { len: bytes.len() });
        }
        let mut raw = [0u8; 32];
        raw.copy_from_slice(&bytes[..32]);
        let lo = u128::from_le_bytes(raw[..16].try_into().unwrap_or([0; 16]));
        let hi = u128::from_le_bytes(raw[16..].try_into().unwrap_or([0; 16]));
        let bit = |b: u32| -> u32 {
            if b < 128 {
                ((lo >> b) & 1) as u32
            } else {
                ((hi >> (b - 128)) & 1) as u32
            }
        };
        let field =
            |start: u32, n: u32| -> u32 { (0..n).fold(0, |acc, i| acc | (bit(start + i) << i)) };
        for b in 2..ZERO_POINT_BIT {
            if bit(b) != 0 {
                return Err(FwdError::ReservedBitSet { bit: b });
            }
        }
        let mut lut = [FwdLutEntry::default(); FWD_LUT_ENTRIES];
        for (i, e) in lut.iter_mut().enumerate() {
            let v = field(LUT_BIT + 9 * i as u32, 9);
            *e = FwdLutEntry {
                sign: v & 1 != 0,
                abs: (v >> 1) as u8,
            };
        }
        Ok(Self {
            raw_mode: bit(0) != 0,
            small_lut: bit(1) != 0,
            zero_point: field(ZERO_POINT_BIT, 8) as u8 as i8,
            lut,
        })
    }

    fn write(&self, w: &mut BitWriter) {
        w.write_bit(self.raw_mode);
        w.write_bit(self.small_lut);
        w.write_repeated(false, 102);
        w.write(u64::from(self.zero_point as u8), 8);
        for e in &self.lut {
            w.write_bit(e.sign);
            w.write(u64::from(e.abs), 8);
        }
    }
}

/// A FWD stream's header plus every weight slot (including end padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FwdStream {
    /// The header.
    pub header: FwdHeader,
    /// Decoded weight of every slot of every word.
    pub slots: Vec<i16>,
}

/// Decodes every word of a FWD stream.
pub fn decode_fwd_stream(bytes: &[u8]) -> Result<FwdStream, FwdError> {
    let header = FwdHeader::parse(bytes)?;
    if bytes.len() % FWD_WORD_BYTES != 0 {
        return Err(FwdError::PartialWord {
            len: bytes.len(),
            offset: bytes.len() / FWD_WORD_BYTES * FWD_WORD_BYTES,
        });
    }
    let body = &bytes[FWD_WORD_BYTES..];
    let mode = header.mode();
    let mut slots = Vec::with_capacity(body.len() * 8 / mode.bits_per_weight() as usize);
    match mode {
        FwdMode::Raw => {
            let zp = i16::from(header.zero_point);
            slots.extend(body.iter().map(|&b| i16::from(b as i8) - zp));
        }
        FwdMode::Lut4 => {
            let lut = header.lut.map(FwdLutEntry::value);
            for &b in body {
                slots.push(lut[usize::from(b & 0xF)]);
                slots.push(lut[usize::from(b >> 4)]);
            }
        }
        FwdMode::Lut2 => {
            let lut = header.lut.map(FwdLutEntry::value);
            for &b in body {
                for k in 0..4 {
                    slots.push(lut[usize::from((b >> (2 * k)) & 3)]);
                }
            }
        }
    }
    Ok(FwdStream { header, slots })
}

/// Decodes the first `count` weights of a FWD stream. The stream must have
/// exactly as many words as `count` weights need (the weight count comes
/// from the ordering, TRM 3.9.2); padding slots of the last word are ignored.
pub fn decode_fwd(bytes: &[u8], count: usize) -> Result<Vec<i16>, FwdError> {
    let FwdStream { header, mut slots } = decode_fwd_stream(bytes)?;
    let per_word = header.mode().weights_per_word();
    let words = (bytes.len() - FWD_WORD_BYTES) / FWD_WORD_BYTES;
    let needed = count.div_ceil(per_word);
    if words < needed {
        return Err(FwdError::TooShort {
            count,
            capacity: slots.len(),
            offset: bytes.len(),
        });
    }
    if words > needed {
        return Err(FwdError::TrailingWords {
            count,
            extra: words - needed,
            offset: FWD_WORD_BYTES * (1 + needed),
        });
    }
    slots.truncate(count);
    Ok(slots)
}

/// Distinct values in order of first appearance, stopping after `limit + 1`.
fn first_distinct(weights: &[i16], limit: usize) -> Vec<i16> {
    let mut seen = [false; 511];
    let mut out = Vec::with_capacity(limit + 1);
    for &w in weights {
        let k = (w + 255) as usize;
        if !seen[k] {
            seen[k] = true;
            out.push(w);
            if out.len() > limit {
                break;
            }
        }
    }
    out
}

/// The smallest and largest weight (0 and 0 for none), or [`FwdError::WeightOutOfRange`] for
/// the first weight outside -255..=255: the extremes from one fold without early exit, which
/// vectorises, the position searched only when one is out of range.
fn checked_range(weights: &[i16]) -> Result<(i16, i16), FwdError> {
    let (lo, hi) = match weights.first() {
        Some(&w0) => weights
            .iter()
            .fold((w0, w0), |(lo, hi), &w| (lo.min(w), hi.max(w))),
        None => (0, 0),
    };
    if lo >= -255 && hi <= 255 {
        return Ok((lo, hi));
    }
    match weights.iter().position(|w| !(-255..=255).contains(w)) {
        Some(index) => Err(FwdError::WeightOutOfRange {
            index,
            value: i32::from(weights[index]),
        }),
        None => Ok((lo, hi)),
    }
}

/// The smallest mode that represents `weights` exactly, or an error.
pub fn choose_fwd_mode(weights: &[i16]) -> Result<FwdMode, FwdError> {
    let range = checked_range(weights)?;
    let distinct = first_distinct(weights, 16).len();
    if distinct <= 4 {
        Ok(FwdMode::Lut2)
    } else if distinct <= 16 {
        Ok(FwdMode::Lut4)
    } else {
        raw_zero_point(range).map(|_| FwdMode::Raw)
    }
}

/// The raw-mode zero point closest to 0 such that every weight plus it fits in SINT8, the
/// weights' extremes being `(min, max)` ([`checked_range`]).
fn raw_zero_point((min, max): (i16, i16)) -> Result<i8, FwdError> {
    // w + zp in -128..=127  <=>  zp in [-128 - min, 127 - max].
    let lo = (-128 - min).max(-128);
    let hi = (127 - max).min(127);
    if lo > hi {
        return Err(FwdError::NotRepresentable { min, max });
    }
    Ok(0i16.clamp(lo, hi) as i8)
}

/// Encodes `weights` (merged TRM 3.9.2 order) in the smallest exact mode.
pub fn encode_fwd(weights: &[i16]) -> Result<Vec<u8>, FwdError> {
    let mode = choose_fwd_mode(weights)?;
    encode_fwd_with_mode(weights, mode)
}

/// Encodes `weights` in a given mode (errors if the mode cannot represent
/// them exactly).
pub fn encode_fwd_with_mode(weights: &[i16], mode: FwdMode) -> Result<Vec<u8>, FwdError> {
    let range = checked_range(weights)?;
    let distinct = first_distinct(weights, 16);
    let mut lut = [FwdLutEntry::default(); FWD_LUT_ENTRIES];
    for (e, &v) in lut.iter_mut().zip(&distinct) {
        *e = FwdLutEntry::from_value(v);
    }
    let zero_point = match mode {
        FwdMode::Raw => raw_zero_point(range)?,
        _ => 0,
    };
    let lut_len = match mode {
        FwdMode::Raw => 0,
        FwdMode::Lut4 => 16,
        FwdMode::Lut2 => 4,
    };
    if mode != FwdMode::Raw && distinct.len() > lut_len {
        let index = weights
            .iter()
            .position(|w| !distinct[..lut_len].contains(w))
            .unwrap_or(0);
        return Err(FwdError::NotInLut {
            index,
            value: weights.get(index).copied().unwrap_or(0),
        });
    }
    let header = FwdHeader {
        raw_mode: mode == FwdMode::Raw,
        small_lut: mode == FwdMode::Lut2,
        zero_point,
        lut,
    };
    let per_word = mode.weights_per_word();
    let words = weights.len().div_ceil(per_word);
    let mut w = BitWriter::with_capacity(FWD_WORD_BYTES * (words + 1));
    header.write(&mut w);
    let bits = mode.bits_per_weight();
    // code for each value -255..=255
    let mut code = [0u16; 511];
    match mode {
        FwdMode::Raw => {
            for v in -255i16..=255 {
                code[(v + 255) as usize] = ((v + i16::from(zero_point)) as u8).into();
            }
        }
        _ => {
            for (i, &v) in distinct.iter().enumerate().take(lut_len) {
                code[(v + 255) as usize] = i as u16;
            }
        }
    }
    let pad_code = match mode {
        FwdMode::Raw => u64::from(zero_point as u8),
        _ => distinct.iter().position(|&v| v == 0).unwrap_or(0) as u64,
    };
    for &v in weights {
        w.write(u64::from(code[(v + 255) as usize]), bits);
    }
    for _ in weights.len()..words * per_word {
        w.write(pad_code, bits);
    }
    Ok(w.into_bytes())
}

/// Size in bytes of the FWD stream [`encode_fwd`] produces, or `None` if
/// the weights are not representable.
pub fn fwd_encoded_len(weights: &[i16]) -> Option<usize> {
    let mode = choose_fwd_mode(weights).ok()?;
    Some(FWD_WORD_BYTES * (1 + weights.len().div_ceil(mode.weights_per_word())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_matches_trm_3_9_11() {
        // LUT mode with values 5, -3: entry 0 = +5, entry 1 = -3.
        let s = encode_fwd(&[5, -3, 5]).unwrap();
        assert_eq!(s.len(), 64);
        let h = FwdHeader::parse(&s).unwrap();
        assert_eq!(h.mode(), FwdMode::Lut2);
        assert_eq!(h.lut[0].value(), 5);
        assert_eq!(h.lut[1].value(), -3);
        // entry 0 at bit 112 = byte 14: sign 0, abs 5 -> bits 0b0_0000_1010
        assert_eq!(s[14], 0b0000_1010);
        // body: indices 0,1,0 then padding (no zero in LUT -> index 0)
        assert_eq!(s[32], 0b00_00_01_00);
    }
}
