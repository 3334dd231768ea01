//! SWD weight stream decoder (Ethos-U85 TRM §3.9.4–§3.9.10).
//!
//! [`decode`] turns one weight decoder's stream into the weight values in
//! stream order (the order of [`crate::ordering`]); [`decode_traced`] also
//! returns the slice structure. Every malformed input is reported as a
//! [`DecodeError`] naming the bit offset and the rule broken; output size is
//! capped by the caller's `max_weights`.

use thiserror::Error;

use super::{
    Palette, SliceHeader, WeightIndexMode, ZeroRunMode, BALANCE_LIMIT, DIROFS_BITS, PALBITS_BITS,
    PALSIZE_BITS, SLICELEN_M1_BITS, STREAM_ALIGN_BITS, WDIV_BITS, WEIGHT_INDEX_MAX, WQ_MAX,
    WUNARY0_BITS, ZDIV_BITS, ZDIV_END_OF_STREAM,
};
use crate::bitreader::{BitReader, UnexpectedEnd};

mod count;

/// Why an SWD stream could not be decoded. Every variant names the bit offset
/// (from the start of the stream) of the field that broke the rule.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The stream ended inside a field (or before the end-of-stream `zdiv == 7`).
    #[error(transparent)]
    UnexpectedEnd(#[from] UnexpectedEnd),
    /// `zdiv` 4 or 5 (reserved, §3.9.4).
    #[error("bit {bit_offset}: reserved zdiv {zdiv}")]
    ReservedZdiv {
        /// Offset of the `zdiv` field.
        bit_offset: u64,
        /// The value read.
        zdiv: u8,
    },
    /// `wdiv` 6 (reserved, §3.9.5).
    #[error("bit {bit_offset}: reserved wdiv {wdiv}")]
    ReservedWdiv {
        /// Offset of the `wdiv` field.
        bit_offset: u64,
        /// The value read.
        wdiv: u8,
    },
    /// The first slice of a stream has `newpal == 0` (§3.9.5: newpal must be set for the first slice).
    #[error("bit {bit_offset}: first slice has newpal = 0")]
    FirstSliceWithoutNewpal {
        /// Offset of the `newpal` field.
        bit_offset: u64,
    },
    /// A slice switches between alternating and non-alternating mode with
    /// `newpal == 0` (§3.9.9).
    #[error("bit {bit_offset}: zero-run mode changes from the previous slice without newpal")]
    ModeSwitchWithoutNewpal {
        /// Offset of the `newpal` field.
        bit_offset: u64,
    },
    /// A weight quotient `wq` exceeds 31 (§3.9.7).
    #[error("bit {bit_offset}: weight quotient wq = {wq} exceeds 31")]
    QuotientTooLarge {
        /// Offset of the `wunary0` field of the chunk where the limit was passed.
        bit_offset: u64,
        /// The quotient reached.
        wq: u32,
    },
    /// A weight index exceeds 9 bits (511, §3.9.6).
    #[error("bit {bit_offset}: weight index {index} exceeds 511")]
    WeightIndexTooLarge {
        /// Offset of the `wremain` field that completed the index.
        bit_offset: u64,
        /// The index.
        index: u16,
    },
    /// A weight index maps (through the palette or `dirofs`) to a magnitude above 255 (§3.9.1).
    #[error("bit {bit_offset}: weight index {index} maps to code {code}, magnitude above 255")]
    WeightValueOutOfRange {
        /// Offset of the `wremain` field that completed the index.
        bit_offset: u64,
        /// The index.
        index: u16,
        /// The sign-magnitude code `tmp` it maps to.
        code: u32,
    },
    /// A weight index codes the value zero in alternating mode other than as
    /// the single weight of an all-zero `newpal` slice (§3.9.9).
    #[error(
        "bit {bit_offset}: weight index {position} of the slice codes zero in alternating mode"
    )]
    ZeroWeightInAlternatingMode {
        /// Offset of the `wremain` field that completed the index.
        bit_offset: u64,
        /// Position of the index within its slice.
        position: u32,
    },
    /// The stream decodes to more weights than the caller allowed.
    #[error("bit {bit_offset}: stream decodes to more than {max_weights} weights")]
    TooManyWeights {
        /// Offset of the field that pushed the count over the limit.
        bit_offset: u64,
        /// The caller's limit.
        max_weights: usize,
    },
    /// An end-of-stream padding bit is `0` (§3.9.4: padding is `1` bits).
    #[error("bit {bit_offset}: end-of-stream padding bit is 0, must be 1")]
    PaddingNotOnes {
        /// Offset of the offending bit.
        bit_offset: u64,
    },
}

/// One decoded slice, for tests and encoder size comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceTrace {
    /// Offset of the slice's `zdiv` field.
    pub bit_offset: u64,
    /// Offset just past the slice's last chunk.
    pub end_bit_offset: u64,
    /// The header (with the new palette when `newpal == 1`).
    pub header: SliceHeader,
    /// Number of chunks (iterations carrying `wunary0`, `zunary` or uncompressed indices).
    pub chunks: u32,
    /// Index in the decoded output of the slice's first weight (zero runs included).
    pub first_weight: usize,
    /// Number of weight values the slice produced (zero runs included).
    pub weight_count: usize,
}

impl SliceTrace {
    /// Size of the slice in bits, header included.
    pub fn bit_len(&self) -> u64 {
        self.end_bit_offset - self.bit_offset
    }
}

/// A decoded stream with its structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedStream {
    /// Weight values in stream order.
    pub weights: Vec<i16>,
    /// The slices, in stream order.
    pub slices: Vec<SliceTrace>,
    /// Offset of the end-of-stream `zdiv == 7` field.
    pub end_of_stream_bit: u64,
    /// Offset just past the end-of-stream padding (a multiple of 128); bytes
    /// of the input from `end_bit / 8` on were not read.
    pub end_bit: u64,
}

/// Decodes one SWD weight stream into weight values in stream order.
///
/// `max_weights` caps the number of values (and so the memory) the stream may
/// produce; pass the weight count the ordering expects for this decoder. Bytes
/// after the end-of-stream padding are ignored.
///
/// # Errors
/// A [`DecodeError`] for any malformed or truncated stream.
pub fn decode(bytes: &[u8], max_weights: usize) -> Result<Vec<i16>, DecodeError> {
    decode_traced(bytes, max_weights).map(|d| d.weights)
}

/// Like [`decode`], also returning the slice structure.
///
/// # Errors
/// A [`DecodeError`] for any malformed or truncated stream.
pub fn decode_traced(bytes: &[u8], max_weights: usize) -> Result<DecodedStream, DecodeError> {
    let mut weights = Vec::new();
    let mut slices = Vec::new();
    let (end_of_stream_bit, end_bit) = walk(bytes, max_weights, &mut weights, Some(&mut slices))?;
    Ok(DecodedStream {
        weights,
        slices,
        end_of_stream_bit,
        end_bit,
    })
}

/// The number of weight values [`decode`] gives, checking everything [`decode`] checks
/// (every field read in the same order, every rule at the same field: `count`) without
/// making the values: for validation, which needs the stream to be well formed and of the
/// right length, not its values.
///
/// # Errors
/// The [`DecodeError`] [`decode`] returns.
pub fn decoded_len(bytes: &[u8], max_weights: usize) -> Result<usize, DecodeError> {
    count::decoded_len(bytes, max_weights)
}

/// [`decoded_len`] as it was: the decoder's own walk with a counting sink, the oracle of
/// `count`'s tests.
#[cfg(test)]
fn decoded_len_reference(bytes: &[u8], max_weights: usize) -> Result<usize, DecodeError> {
    let mut count = Count(0);
    walk(bytes, max_weights, &mut count, None)?;
    Ok(count.0)
}

/// Where a walk of the stream puts the slices' weights.
trait Weights {
    /// The weights so far.
    fn len(&self) -> usize;
    /// Appends one slice's weights (its indices range-checked, sizes within the budget).
    fn expand(&mut self, header: &SliceHeader, palette: &Palette, indices: &[u16], zruns: &[u64]);
}

impl Weights for Vec<i16> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn expand(&mut self, header: &SliceHeader, palette: &Palette, indices: &[u16], zruns: &[u64]) {
        expand(header, palette, indices, zruns, self);
    }
}

/// The number of weights only.
#[cfg(test)]
struct Count(usize);

#[cfg(test)]
impl Weights for Count {
    fn len(&self) -> usize {
        self.0
    }
    fn expand(&mut self, _: &SliceHeader, _: &Palette, indices: &[u16], zruns: &[u64]) {
        // `expand`'s values: one per index and the zero runs (`z_cnt`: none in plain mode,
        // one after each index and, with a new palette, one before them in alternating mode).
        self.0 += indices.len() + zruns.iter().sum::<u64>() as usize;
    }
}

/// Walks the stream's slices, appending their weights to `weights` and (when given) their
/// structure to `slices`; returns the offsets of the end-of-stream field and past its padding.
fn walk(
    bytes: &[u8],
    max_weights: usize,
    weights: &mut impl Weights,
    mut slices: Option<&mut Vec<SliceTrace>>,
) -> Result<(u64, u64), DecodeError> {
    let mut r = BitReader::new(bytes);
    let mut palette: Option<Palette> = None;
    let mut prev_mode: Option<ZeroRunMode> = None;
    loop {
        let bit_offset = r.bit_offset();
        let zdiv = r.read(ZDIV_BITS)? as u8;
        if zdiv == ZDIV_END_OF_STREAM {
            while r.bits_to_alignment(STREAM_ALIGN_BITS) > 0 {
                let pad_bit = r.bit_offset();
                if !r.read_bit()? {
                    return Err(DecodeError::PaddingNotOnes {
                        bit_offset: pad_bit,
                    });
                }
            }
            return Ok((bit_offset, r.bit_offset()));
        }
        let zero_run_mode =
            ZeroRunMode::from_zdiv(zdiv).ok_or(DecodeError::ReservedZdiv { bit_offset, zdiv })?;
        let header = read_slice_header(&mut r, zero_run_mode, &mut palette, prev_mode)?;
        prev_mode = Some(zero_run_mode);
        let first_weight = weights.len();
        // `palette` is set by the first slice (checked in read_slice_header).
        let current = palette
            .as_ref()
            .ok_or(DecodeError::FirstSliceWithoutNewpal { bit_offset })?;
        let chunks = decode_slice_body(&mut r, &header, current, weights, max_weights)?;
        if let Some(slices) = slices.as_deref_mut() {
            slices.push(SliceTrace {
                bit_offset,
                end_bit_offset: r.bit_offset(),
                header,
                chunks,
                first_weight,
                weight_count: weights.len() - first_weight,
            });
        }
    }
}

/// Reads a slice header after its `zdiv` (§3.9.5) and updates the palette state.
fn read_slice_header(
    r: &mut BitReader<'_>,
    zero_run_mode: ZeroRunMode,
    palette: &mut Option<Palette>,
    prev_mode: Option<ZeroRunMode>,
) -> Result<SliceHeader, DecodeError> {
    let slicelen = r.read(SLICELEN_M1_BITS)? + 1;
    let wdiv_offset = r.bit_offset();
    let wdiv = r.read(WDIV_BITS)? as u8;
    let weight_index_mode = WeightIndexMode::from_wdiv(wdiv).ok_or(DecodeError::ReservedWdiv {
        bit_offset: wdiv_offset,
        wdiv,
    })?;
    let wtrunc = r.read_bit()?;
    let newpal_offset = r.bit_offset();
    let newpal = r.read_bit()?;
    let new_palette = if newpal {
        let dirofs = r.read(DIROFS_BITS)? as u8;
        let palsize = r.read(PALSIZE_BITS)? as usize;
        let palbits = r.read(PALBITS_BITS)? as u8;
        let palette_size = if palsize == 0 { 0 } else { palsize + 1 };
        let palette_bits = palbits + 2;
        let mut entries = Vec::with_capacity(palette_size);
        for _ in 0..palette_size {
            entries.push(r.read(u32::from(palette_bits))? as u16);
        }
        let p = Palette {
            dirofs,
            palette_bits,
            entries,
        };
        *palette = Some(p.clone());
        Some(p)
    } else {
        match prev_mode {
            None => {
                return Err(DecodeError::FirstSliceWithoutNewpal {
                    bit_offset: newpal_offset,
                })
            }
            Some(prev) if prev.is_alternating() != zero_run_mode.is_alternating() => {
                return Err(DecodeError::ModeSwitchWithoutNewpal {
                    bit_offset: newpal_offset,
                })
            }
            Some(_) => None,
        }
    };
    Ok(SliceHeader {
        zero_run_mode,
        slicelen,
        weight_index_mode,
        wtrunc,
        new_palette,
    })
}

/// Decodes the chunks of one slice (§3.9.10) and appends its weight values to `out`.
/// Returns the number of chunks.
fn decode_slice_body(
    r: &mut BitReader<'_>,
    header: &SliceHeader,
    palette: &Palette,
    out: &mut impl Weights,
    max_weights: usize,
) -> Result<u32, DecodeError> {
    let too_many = |r: &BitReader<'_>| DecodeError::TooManyWeights {
        bit_offset: r.bit_offset(),
        max_weights,
    };
    let w_cnt = header.w_cnt() as usize;
    let z_cnt = header.z_cnt() as usize;
    if out.len().saturating_add(w_cnt) > max_weights {
        return Err(too_many(r));
    }
    // Zero runs may only add `budget` more values.
    let mut budget = (max_weights - out.len() - w_cnt) as u64;

    let alternating = header.zero_run_mode.is_alternating();
    let zdiv = u32::from(header.zero_run_mode.zdiv());
    let zunary_len = header.zero_run_mode.zunary_len();
    let (uncompressed, wdiv) = match header.weight_index_mode {
        WeightIndexMode::GolombRice { wdiv } => (false, u32::from(wdiv)),
        WeightIndexMode::Uncompressed => (true, 0),
    };
    let wremain_bits = if uncompressed {
        palette.uncompressed_bits()
    } else {
        wdiv
    };
    let uncompressed_per_chunk = palette.uncompressed_per_chunk();

    let mut weight_indices = vec![0u16; w_cnt];
    let mut zruns = vec![0u64; z_cnt];
    let (mut wq, mut wq_i, mut wr_i) = (0u32, 0usize, 0usize);
    let (mut zq, mut zq_i, mut zr_i) = (0u64, 0usize, 0usize);
    let (mut prev_w_enable, mut prev_wq_i) = (false, 0usize);
    let (mut prev_z_enable, mut prev_zq_i) = (false, 0usize);
    let mut chunks = 0u32;
    loop {
        let balance = wq_i as i64 - zq_i as i64;
        let w_enable = (!alternating || balance < BALANCE_LIMIT) && wq_i < w_cnt;
        let z_enable = alternating && balance >= 0 && zq_i < z_cnt;
        let wunary0_offset = r.bit_offset();
        let wunary0 = if w_enable && !uncompressed {
            r.read(WUNARY0_BITS)?
        } else {
            0
        };
        if z_enable {
            let zunary = r.read(zunary_len)?;
            for i in 0..zunary_len {
                if zq_i >= z_cnt {
                    break; // encoder padding beyond the slice's last zero run
                }
                if (zunary >> i) & 1 == 1 {
                    zq += 1;
                } else {
                    let zrun = zq << zdiv;
                    budget = budget.checked_sub(zrun).ok_or_else(|| too_many(r))?;
                    zruns[zq_i] = zrun;
                    zq_i += 1;
                    zq = 0;
                }
            }
        }
        if w_enable && !uncompressed {
            let wunary1 = r.read(wunary0.count_ones())?;
            let mut j = 0;
            for i in 0..WUNARY0_BITS {
                if wq_i >= w_cnt {
                    break;
                }
                let mut c = 0;
                if (wunary0 >> i) & 1 == 1 {
                    c = 1 + ((wunary1 >> j) & 1);
                    j += 1;
                }
                wq += c;
                if wq > WQ_MAX {
                    return Err(DecodeError::QuotientTooLarge {
                        bit_offset: wunary0_offset,
                        wq,
                    });
                }
                if c < 2 || header.wtrunc {
                    weight_indices[wq_i] = (wq << wdiv) as u16;
                    wq_i += 1;
                    wq = 0;
                }
            }
        }
        if w_enable && uncompressed {
            // Indices are all remainder; they are read with the next chunk.
            wq_i += uncompressed_per_chunk.min(w_cnt - wq_i);
        }
        if prev_w_enable {
            while wr_i < prev_wq_i {
                let offset = r.bit_offset();
                let wremain = r.read(wremain_bits)? as u16;
                let index = weight_indices[wr_i] + wremain;
                weight_indices[wr_i] = index;
                check_index(header, palette, index, wr_i, offset)?;
                wr_i += 1;
            }
        }
        if prev_z_enable {
            while zr_i < prev_zq_i {
                let zremain = u64::from(r.read(zdiv)?);
                budget = budget.checked_sub(zremain).ok_or_else(|| too_many(r))?;
                zruns[zr_i] += zremain;
                zr_i += 1;
            }
        }
        if w_enable || z_enable {
            chunks += 1;
        }
        prev_w_enable = w_enable;
        prev_wq_i = wq_i;
        prev_z_enable = z_enable;
        prev_zq_i = zq_i;
        if !(prev_w_enable || prev_z_enable) {
            break;
        }
    }
    debug_assert!(wr_i == w_cnt && zr_i == z_cnt);
    out.expand(header, palette, &weight_indices, &zruns);
    Ok(chunks)
}

/// Checks a completed weight index against the §3.9.6 / §3.9.9 rules.
fn check_index(
    header: &SliceHeader,
    palette: &Palette,
    index: u16,
    position: usize,
    bit_offset: u64,
) -> Result<(), DecodeError> {
    if index > WEIGHT_INDEX_MAX {
        return Err(DecodeError::WeightIndexTooLarge { bit_offset, index });
    }
    let value = palette
        .index_to_value(index)
        .ok_or(DecodeError::WeightValueOutOfRange {
            bit_offset,
            index,
            code: palette.index_to_code(index),
        })?;
    let all_zero_newpal_slice =
        position == 0 && header.new_palette.is_some() && header.slicelen == 1;
    if value == 0 && header.zero_run_mode.is_alternating() && !all_zero_newpal_slice {
        return Err(DecodeError::ZeroWeightInAlternatingMode {
            bit_offset,
            position: position as u32,
        });
    }
    Ok(())
}

/// Appends the slice's weights: values interleaved with zero runs in
/// alternating mode (§3.9.9), values only otherwise.
fn expand(
    header: &SliceHeader,
    palette: &Palette,
    weight_indices: &[u16],
    zruns: &[u64],
    out: &mut Vec<i16>,
) {
    // Indices were range-checked in `check_index`; sizes were checked against the budget.
    let value = |index: u16| palette.index_to_value(index).unwrap_or(0);
    let zeros = |out: &mut Vec<i16>, n: u64| out.resize(out.len() + n as usize, 0);
    if !header.zero_run_mode.is_alternating() {
        out.extend(weight_indices.iter().map(|&i| value(i)));
        return;
    }
    let newpal = header.newpal() as usize;
    if newpal == 1 {
        zeros(out, zruns[0]);
    }
    for (i, &index) in weight_indices.iter().enumerate() {
        out.push(value(index));
        zeros(out, zruns[i + newpal]);
    }
}
