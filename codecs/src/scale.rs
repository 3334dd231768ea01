//! Scale and bias stream (TRM 3.7) and the quantized multiplier rule.
//!
//! The stream holds one 80-bit record per output channel, grouped in
//! *channel sets* of `channels_in_set = align_up(microblock_depth(), 16)`
//! channels (TRM 3.7.1). Sets follow the OFM channel order, or the reverse
//! order when the OFM is written channel-reversed (TRM 3.7.2); the channel
//! order inside a set is never reversed. Unused records of the last set are
//! all zero (TRM 3.7.3).
//!
//! Record layout (LSB first, TRM 3.7.3 `parse_scale_bias_channel_set`):
//!
//! | accumulator | bias | scale | reserved | shift | reserved |
//! |-------------|------|-------|----------|-------|----------|
//! | `i32`       | 32   | 31    | 1        | 6     | 10       |
//! | `i48`       | 48   | 15    | 1        | 6     | 10       |
//!
//! The bias is two's complement; scale and shift are unsigned. The
//! hardware computes `rounded_shift_right(acc * scale, shift)` (TRM 3.6.6).

use thiserror::Error;

/// Bytes per channel record (80 bits).
pub const RECORD_BYTES: usize = 10;

/// Accumulator format (`NPU_SET_ACC_FORMAT.acc_format`), which selects the
/// record layout; defined with the other ISA field enums in [`crate::isa_fields`].
pub use crate::isa_fields::AccFormat;

impl AccFormat {
    /// Width of the bias field in bits.
    pub const fn bias_bits(self) -> u32 {
        match self {
            AccFormat::I32 => 32,
            AccFormat::I48 => 48,
        }
    }

    /// Width of the (unsigned) scale field in bits.
    pub const fn scale_bits(self) -> u32 {
        match self {
            AccFormat::I32 => 31,
            AccFormat::I48 => 15,
        }
    }

    fn bias_range(self) -> (i64, i64) {
        let b = self.bias_bits() - 1;
        (-(1i64 << b), (1i64 << b) - 1)
    }
}

/// Largest value of the 6-bit shift field.
pub const MAX_SHIFT: u32 = 63;

/// Errors of the scale and bias codec.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScaleError {
    /// The real scale is NaN, infinite or negative.
    #[error("real scale {0} is not a finite non-negative number")]
    InvalidRealScale(f64),
    /// The real scale needs a negative shift: it is too large for the
    /// scale field of this accumulator format.
    #[error("real scale {value} is too large for a {bits}-bit scale with a non-negative shift ({acc:?} accumulator)")]
    ScaleTooLarge {
        /// The requested scale.
        value: f64,
        /// Scale field width.
        bits: u32,
        /// Accumulator format.
        acc: AccFormat,
    },
    /// An integer multiplier/shift pair has no exact representation.
    #[error("multiplier {multiplier} with shift {shift} cannot be represented exactly as a {bits}-bit scale and 6-bit shift")]
    NotRepresentable {
        /// The multiplier.
        multiplier: i64,
        /// The right shift.
        shift: i32,
        /// Scale field width.
        bits: u32,
    },
    /// A channel's bias does not fit the bias field.
    #[error("channel {channel}: bias {bias} does not fit in {bits} bits")]
    BiasOutOfRange {
        /// Output channel.
        channel: usize,
        /// The bias.
        bias: i64,
        /// Bias field width.
        bits: u32,
    },
    /// A channel's scale does not fit the scale field.
    #[error("channel {channel}: scale {scale} does not fit in {bits} bits")]
    ScaleOutOfRange {
        /// Output channel.
        channel: usize,
        /// The scale.
        scale: u32,
        /// Scale field width.
        bits: u32,
    },
    /// A channel's shift exceeds 63.
    #[error("channel {channel}: shift {shift} exceeds 63")]
    ShiftOutOfRange {
        /// Output channel.
        channel: usize,
        /// The shift.
        shift: u8,
    },
    /// Microblock depth not one of 8, 16, 32, 64, 128.
    #[error("unsupported microblock depth {0} (expected 8, 16, 32, 64 or 128)")]
    UnsupportedMicroblockDepth(u32),
    /// Channel reverse with a depth that is neither <= 16 nor a multiple of
    /// the set size (TRM 3.7.2 assert).
    #[error(
        "channel reverse needs OFM depth <= 16 or a multiple of {channels_in_set}, got {ofm_depth}"
    )]
    ReverseNotPermitted {
        /// OFM depth.
        ofm_depth: usize,
        /// Channels per set.
        channels_in_set: usize,
    },
    /// Stream length differs from what the OFM depth requires.
    #[error("scale/bias stream has {actual} bytes, expected {expected}")]
    WrongLength {
        /// Required length.
        expected: usize,
        /// Given length.
        actual: usize,
    },
    /// A reserved bit is set.
    #[error("reserved bit set in the scale/bias record at byte offset {offset}")]
    ReservedBitSet {
        /// Byte offset of the record.
        offset: usize,
    },
    /// A padding record (unused channel of the last set) is not all zero.
    #[error("padding record at byte offset {offset} is not zero")]
    PaddingNotZero {
        /// Byte offset of the record.
        offset: usize,
    },
}

/// A scale multiplier and right shift as stored in a record:
/// the real scale is `scale / 2^shift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuantizedScale {
    /// Unsigned multiplier (< 2^31 for `i32`, < 2^15 for `i48`).
    pub scale: u32,
    /// Right shift, 0..=63.
    pub shift: u8,
}

/// `frexp` for finite non-negative `x`: returns `(m, e)` with
/// `x = m * 2^e`, `m` in `[0.5, 1)` (or `(0, 0)` for zero).
pub fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp_field = ((bits >> 52) & 0x7FF) as i32;
    if exp_field == 0 {
        // Subnormal: scale into the normal range first (exact).
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000)); // 2^54
        return (m, e - 54);
    }
    let e = exp_field - 1022;
    // Replace the exponent with the one of [0.5, 1): biased 1022.
    let m = f64::from_bits((bits & !(0x7FFu64 << 52)) | (1022u64 << 52));
    (m, e)
}

impl QuantizedScale {
    /// Quantizes a real scale (`ifm_scale * weight_scale / ofm_scale`,
    /// computed in double precision) the way TFLite's `QuantizeMultiplier`
    /// and Vela do, expressed as an NPU right shift:
    ///
    /// `(m, e) = frexp(x)`, `P = 31` (`i32`) or `15` (`i48`),
    /// `scale = round(m * 2^P)` (half away from zero), and if that rounds up
    /// to `2^P` the mantissa is renormalised (`scale = 2^(P-1)`, `e += 1`);
    /// `shift = P - e`.
    ///
    /// Edge cases:
    /// * `x == 0` gives `scale = 0, shift = P` (what `frexp(0) = (0, 0)`
    ///   gives).
    /// * Tiny scales with `e < -31` are flushed to a zero multiplier
    ///   (`scale = 0, shift = P`) exactly like TFLite, whose reference
    ///   kernels then output the zero point only. With this rule the shift
    ///   never exceeds 62.
    /// * Scales that would need a negative shift (`x >= 2^P` after
    ///   rounding) cannot be represented: [`ScaleError::ScaleTooLarge`].
    /// * NaN, infinities and negative values: [`ScaleError::InvalidRealScale`].
    pub fn from_real(x: f64, acc: AccFormat) -> Result<Self, ScaleError> {
        if !x.is_finite() || x < 0.0 {
            return Err(ScaleError::InvalidRealScale(x));
        }
        let p = acc.scale_bits() as i32;
        if x == 0.0 {
            return Ok(Self {
                scale: 0,
                shift: p as u8,
            });
        }
        let (m, mut e) = frexp(x);
        // m * 2^p is exact (power-of-two scaling of a double in range).
        let mut q = (m * f64::from(1u32 << p)).round() as u64;
        if q == 1u64 << p {
            q >>= 1;
            e += 1;
        }
        if e < -31 {
            return Ok(Self {
                scale: 0,
                shift: p as u8,
            });
        }
        let shift = p - e;
        if shift < 0 {
            return Err(ScaleError::ScaleTooLarge {
                value: x,
                bits: p as u32,
                acc,
            });
        }
        // e >= -31 keeps shift <= p + 31 <= 62.
        Ok(Self {
            scale: q as u32,
            shift: shift as u8,
        })
    }

    /// Represents `multiplier / 2^shift` exactly in the record fields of
    /// `acc`, folding where this is exact:
    ///
    /// * trailing zero bits of the multiplier are dropped (reducing the
    ///   shift) when the multiplier is too wide for the scale field (for
    ///   example a 31-bit TOSA multiplier for a 48-bit accumulator) or the
    ///   shift exceeds 63;
    /// * a negative shift is folded into the multiplier when the result
    ///   still fits.
    ///
    /// Anything else is [`ScaleError::NotRepresentable`]. A zero multiplier
    /// is always representable (`scale = 0`, shift clamped to 0..=63).
    pub fn from_multiplier(
        multiplier: i64,
        shift: i32,
        acc: AccFormat,
    ) -> Result<Self, ScaleError> {
        let bits = acc.scale_bits();
        let err = || ScaleError::NotRepresentable {
            multiplier,
            shift,
            bits,
        };
        if multiplier < 0 {
            return Err(err());
        }
        if multiplier == 0 {
            return Ok(Self {
                scale: 0,
                shift: shift.clamp(0, MAX_SHIFT as i32) as u8,
            });
        }
        let mut m = multiplier as u64;
        let mut s = i64::from(shift);
        // Negative shift: multiply up.
        while s < 0 {
            if m >= (1u64 << bits) {
                return Err(err());
            }
            m <<= 1;
            s += 1;
        }
        // Too wide or too large a shift: drop trailing zeros.
        while m >= (1u64 << bits) || s > i64::from(MAX_SHIFT) {
            if m & 1 != 0 || s == 0 {
                return Err(err());
            }
            m >>= 1;
            s -= 1;
        }
        Ok(Self {
            scale: m as u32,
            shift: s as u8,
        })
    }

    /// The real value `scale / 2^shift`.
    pub fn to_real(self) -> f64 {
        f64::from(self.scale) * (-f64::from(self.shift)).exp2()
    }
}

/// One output channel's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChannelScale {
    /// Bias added to the accumulator (two's complement, 32 or 48 bits).
    pub bias: i64,
    /// Unsigned scale multiplier.
    pub scale: u32,
    /// Right shift, 0..=63.
    pub shift: u8,
}

impl ChannelScale {
    /// A record from a bias and a quantized scale.
    pub fn new(bias: i64, q: QuantizedScale) -> Self {
        Self {
            bias,
            scale: q.scale,
            shift: q.shift,
        }
    }
}

/// Layout parameters of a scale and bias stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScaleStreamParams {
    /// Accumulator format (record layout).
    pub acc: AccFormat,
    /// `microblock_depth()` of the operation (8, 16, 32, 64 or 128).
    pub microblock_depth: u32,
    /// `NPU_SET_OFM_PRECISION.activation_reverse == C`.
    pub reverse_c: bool,
}

impl ScaleStreamParams {
    /// `channels_in_set = align_up(microblock_depth(), 16)` (TRM 3.7.1).
    pub fn channels_in_set(&self) -> Result<usize, ScaleError> {
        match self.microblock_depth {
            8 | 16 | 32 | 64 | 128 => Ok((self.microblock_depth as usize).next_multiple_of(16)),
            d => Err(ScaleError::UnsupportedMicroblockDepth(d)),
        }
    }

    /// Stream length in bytes for `ofm_depth` channels.
    pub fn stream_len(&self, ofm_depth: usize) -> Result<usize, ScaleError> {
        let cis = self.channels_in_set()?;
        Ok(ofm_depth.div_ceil(cis) * cis * RECORD_BYTES)
    }

    /// Set start channels in stream order (TRM 3.7.2).
    fn set_order(&self, ofm_depth: usize) -> Result<Vec<usize>, ScaleError> {
        let cis = self.channels_in_set()?;
        let n = ofm_depth.div_ceil(cis);
        if self.reverse_c {
            if !(ofm_depth <= 16 || ofm_depth % cis == 0) {
                return Err(ScaleError::ReverseNotPermitted {
                    ofm_depth,
                    channels_in_set: cis,
                });
            }
            Ok((0..n).rev().map(|k| k * cis).collect())
        } else {
            Ok((0..n).map(|k| k * cis).collect())
        }
    }
}

fn pack_record(c: &ChannelScale, acc: AccFormat) -> [u8; RECORD_BYTES] {
    let bb = acc.bias_bits();
    let sb = acc.scale_bits();
    let mut v: u128 = (c.bias as u128) & ((1u128 << bb) - 1);
    v |= u128::from(c.scale) << bb;
    // one reserved bit at bb + sb
    v |= u128::from(c.shift & 0x3F) << (bb + sb + 1);
    let mut out = [0u8; RECORD_BYTES];
    out.copy_from_slice(&v.to_le_bytes()[..RECORD_BYTES]);
    out
}

/// Encodes per-channel records into a scale and bias stream.
///
/// `channels[oc]` is output channel `oc` in original (un-reversed) order.
pub fn encode_scale_stream(
    channels: &[ChannelScale],
    params: &ScaleStreamParams,
) -> Result<Vec<u8>, ScaleError> {
    let acc = params.acc;
    let (lo, hi) = acc.bias_range();
    for (channel, c) in channels.iter().enumerate() {
        if c.bias < lo || c.bias > hi {
            return Err(ScaleError::BiasOutOfRange {
                channel,
                bias: c.bias,
                bits: acc.bias_bits(),
            });
        }
        if c.scale >= 1u32 << acc.scale_bits() {
            return Err(ScaleError::ScaleOutOfRange {
                channel,
                scale: c.scale,
                bits: acc.scale_bits(),
            });
        }
        if u32::from(c.shift) > MAX_SHIFT {
            return Err(ScaleError::ShiftOutOfRange {
                channel,
                shift: c.shift,
            });
        }
    }
    let cis = params.channels_in_set()?;
    let order = params.set_order(channels.len())?;
    let mut out = Vec::with_capacity(params.stream_len(channels.len())?);
    for start in order {
        for oc in start..start + cis {
            let rec = channels
                .get(oc)
                .map_or([0u8; RECORD_BYTES], |c| pack_record(c, acc));
            out.extend_from_slice(&rec);
        }
    }
    Ok(out)
}

/// Encodes a stream from biases and real scales, quantizing each scale with
/// [`QuantizedScale::from_real`].
pub fn encode_scale_stream_from_real(
    biases: &[i64],
    scales: &[f64],
    params: &ScaleStreamParams,
) -> Result<Vec<u8>, ScaleError> {
    let channels = biases
        .iter()
        .zip(scales)
        .map(|(&b, &s)| {
            Ok(ChannelScale::new(
                b,
                QuantizedScale::from_real(s, params.acc)?,
            ))
        })
        .collect::<Result<Vec<_>, ScaleError>>()?;
    encode_scale_stream(&channels, params)
}

/// Decodes a scale and bias stream of `ofm_depth` channels. Returns the
/// records in original output channel order. The stream must have exactly
/// the length required; reserved bits and unused (padding) records must be
/// zero.
pub fn decode_scale_stream(
    bytes: &[u8],
    ofm_depth: usize,
    params: &ScaleStreamParams,
) -> Result<Vec<ChannelScale>, ScaleError> {
    let expected = params.stream_len(ofm_depth)?;
    if bytes.len() != expected {
        return Err(ScaleError::WrongLength {
            expected,
            actual: bytes.len(),
        });
    }
    let cis = params.channels_in_set()?;
    let order = params.set_order(ofm_depth)?;
    let acc = params.acc;
    let bb = acc.bias_bits();
    let sb = acc.scale_bits();
    let mut out = vec![ChannelScale::default(); ofm_depth];
    for (set_idx, start) in order.into_iter().enumerate() {
        for i in 0..cis {
            let offset = (set_idx * cis + i) * RECORD_BYTES;
            let mut raw = [0u8; 16];
            raw[..RECORD_BYTES].copy_from_slice(&bytes[offset..offset + RECORD_BYTES]);
            let v = u128::from_le_bytes(raw);
            let oc = start + i;
            if oc >= ofm_depth {
                if v != 0 {
                    return Err(ScaleError::PaddingNotZero { offset });
                }
                continue;
            }
            // One reserved bit between scale and shift, ten after the 6-bit shift.
            let reserved_mask = (1u128 << (bb + sb)) | (0x3FFu128 << (bb + sb + 7));
            if v & reserved_mask != 0 {
                return Err(ScaleError::ReservedBitSet { offset });
            }
            let bias_raw = (v & ((1u128 << bb) - 1)) as u64;
            let bias = ((bias_raw << (64 - bb)) as i64) >> (64 - bb);
            let scale = ((v >> bb) & ((1u128 << sb) - 1)) as u32;
            let shift = ((v >> (bb + sb + 1)) & 0x3F) as u8;
            out[oc] = ChannelScale { bias, scale, shift };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_matches_definition() {
        for &x in &[1.0, 0.5, 0.75, 3.0, 1e-300, 5e-324, 1e300, 0.0004] {
            let (m, e) = frexp(x);
            assert!((0.5..1.0).contains(&m), "{x}: m={m}");
            let back = if e < 0 {
                m * 2f64.powi(e + 200) * 2f64.powi(-200)
            } else {
                m * 2f64.powi(e)
            };
            assert_eq!(back, x, "{x}");
        }
    }
}
