//! [`super::decoded_len`]'s walk: the decoder's walk of a stream (every field read in the same
//! order, every rule checked at the same field) counting the weights instead of making them.
//!
//! What makes it cheaper than the decoder's walk with a counting sink, with the same verdict
//! on every input (`tests` below hold it to that walk, kept under `cfg(test)`):
//! - fields are read from a 64-bit window loaded at the bit position ([`Reader`]), one bounds
//!   check per field instead of a loop over its bytes;
//! - a `zunary` field is taken a zero run at a time (`trailing_zeros` of its zero bits), not a
//!   bit at a time, and its runs are charged to the weight budget together: they all fail at
//!   the same offset, and the budget only shrinks, so the sum fails iff one of them does;
//! - the weights are counted from the budget (every value not left in it is a weight), so the
//!   zero runs are not stored, and the indices waiting for their `wremain` (at most two
//!   chunks' worth) sit in a 32-entry ring instead of a per-slice vector;
//! - an index is checked against the palette's valid set (a bit mask of the palette entries
//!   and a range of the direct indices, made once per `newpal`); only an index outside it goes
//!   through the full rule check, which gives the decoder's error (or, for the one index of an
//!   all-zero `newpal` slice, accepts it).

use super::DecodeError;
use crate::bitreader::UnexpectedEnd;
use crate::swd::{
    WeightIndexMode, ZeroRunMode, BALANCE_LIMIT, DIROFS_BITS, PALBITS_BITS, PALETTE_SIZE_MAX,
    PALSIZE_BITS, SLICELEN_M1_BITS, STREAM_ALIGN_BITS, WDIV_BITS, WEIGHT_INDEX_MAX, WQ_MAX,
    WUNARY0_BITS, ZDIV_BITS, ZDIV_END_OF_STREAM,
};

/// LSB-first field reader over a 64-bit window loaded at the current bit (TRM §3.9.3).
struct Reader<'a> {
    bytes: &'a [u8],
    pos: u64,
    end: u64,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            end: bytes.len() as u64 * 8,
        }
    }

    /// The bits from the current position on, the first in bit 0: at least 57 of them, zero
    /// past the end of the input.
    #[inline(always)]
    fn peek(&self) -> u64 {
        let i = (self.pos / 8) as usize;
        let word = match self.bytes.get(i..i + 8) {
            Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            None => {
                let mut last = [0u8; 8];
                let tail = self.bytes.get(i..).unwrap_or(&[]);
                last[..tail.len()].copy_from_slice(tail);
                u64::from_le_bytes(last)
            }
        };
        word >> (self.pos % 8)
    }

    /// Reads an `n`-bit field, `n <= 32`, as [`crate::bitreader::BitReader::read`] does (the
    /// same error, the position unchanged on it).
    #[inline(always)]
    fn read(&mut self, n: u32) -> Result<u32, UnexpectedEnd> {
        if u64::from(n) > self.end - self.pos {
            return Err(self.unexpected_end(n));
        }
        let value = self.peek() & ((1u64 << n) - 1);
        self.pos += u64::from(n);
        Ok(value as u32)
    }

    #[cold]
    fn unexpected_end(&self, wanted: u32) -> UnexpectedEnd {
        UnexpectedEnd {
            bit_offset: self.pos,
            wanted,
            end_bit: self.end,
        }
    }
}

/// The palette state of the last `newpal` slice (§3.9.5, §3.9.6), with the set of indices
/// that pass [`check_index`] in that slice's zero-run mode (which later slices keep: a mode
/// change needs a new palette).
struct PaletteState {
    entries: [u16; PALETTE_SIZE_MAX],
    len: u32,
    dirofs: u32,
    /// `uncompressed_bits` (§3.9.8).
    uncompressed_bits: u32,
    /// `uncompressed_per_chunk`.
    uncompressed_per_chunk: usize,
    /// Bit `i % 64` of word `i / 64`: index `i` (below 1,024, the largest a quotient of 31
    /// and a remainder can make) passes [`check_index`] at any position.
    valid: [u64; 16],
    /// The indices `0..valid_prefix` are all valid.
    valid_prefix: u32,
}

impl PaletteState {
    fn new(entries: [u16; PALETTE_SIZE_MAX], len: u32, dirofs: u32, palette_bits: u32) -> Self {
        let uncompressed_bits = match len {
            0 => palette_bits,
            n => u32::BITS - (n - 1).leading_zeros(),
        };
        Self {
            entries,
            len,
            dirofs,
            uncompressed_bits,
            uncompressed_per_chunk: if uncompressed_bits <= 5 { 12 } else { 8 },
            valid: [0; 16],
            valid_prefix: 0,
        }
    }

    /// Sets the valid set for slices in `alternating` mode or not.
    fn set_mode(&mut self, alternating: bool) {
        // A palette entry is below `1 << 9`: its magnitude is at most 255; it codes zero when
        // its magnitude is 0.
        let mut valid = [0u64; 16];
        for (i, &e) in self.entries[..self.len as usize].iter().enumerate() {
            if !(alternating && e >> 1 == 0) {
                valid[0] |= 1 << i;
            }
        }
        // A direct index `i >= len` codes `i - len + dirofs`: at most 511 (magnitude 255), and
        // at least 2 (not zero) in alternating mode; the index itself at most 511.
        let max = u32::from(WEIGHT_INDEX_MAX);
        let hi = max.min(max + self.len - self.dirofs);
        let lo = self.len
            + if alternating {
                2u32.saturating_sub(self.dirofs)
            } else {
                0
            };
        for (w, word) in (0u32..).zip(valid.iter_mut()) {
            let (from, to) = (lo.max(64 * w), hi.min(64 * w + 63));
            if from <= to {
                *word |= (u64::MAX >> (63 - (to - from))) << (from - 64 * w);
            }
        }
        self.valid = valid;
        self.valid_prefix = 0;
        for word in valid {
            self.valid_prefix += word.trailing_ones();
            if word != u64::MAX {
                break;
            }
        }
    }

    /// `index_to_code` (§3.9.6).
    fn code(&self, index: u32) -> u32 {
        match self.entries[..self.len as usize].get(index as usize) {
            Some(&e) => u32::from(e),
            None => index - self.len + self.dirofs,
        }
    }

    /// Whether [`check_index`] passes `index` at any position of a slice.
    #[inline(always)]
    fn valid(&self, index: u32) -> bool {
        self.valid[(index / 64) as usize % 16] >> (index % 64) & 1 != 0
    }
}

/// What a slice's header fixes for its chunks.
struct Slice {
    alternating: bool,
    zdiv: u32,
    zunary_len: u32,
    uncompressed: bool,
    wdiv: u32,
    wtrunc: bool,
    newpal: bool,
    w_cnt: usize,
    z_cnt: usize,
}

/// The number of weights `decode` gives, or its error.
pub(super) fn decoded_len(bytes: &[u8], max_weights: usize) -> Result<usize, DecodeError> {
    let mut r = Reader::new(bytes);
    let mut palette: Option<PaletteState> = None;
    let mut prev_alternating: Option<bool> = None;
    let mut total = 0usize;
    loop {
        let bit_offset = r.pos;
        let zdiv = r.read(ZDIV_BITS)? as u8;
        if zdiv == ZDIV_END_OF_STREAM {
            padding(&mut r)?;
            return Ok(total);
        }
        let mode =
            ZeroRunMode::from_zdiv(zdiv).ok_or(DecodeError::ReservedZdiv { bit_offset, zdiv })?;
        let alternating = mode.is_alternating();
        let slicelen = r.read(SLICELEN_M1_BITS)? + 1;
        let wdiv_offset = r.pos;
        let wdiv = r.read(WDIV_BITS)? as u8;
        let index_mode = WeightIndexMode::from_wdiv(wdiv).ok_or(DecodeError::ReservedWdiv {
            bit_offset: wdiv_offset,
            wdiv,
        })?;
        let wtrunc = r.read(1)? == 1;
        let newpal_offset = r.pos;
        let newpal = r.read(1)? == 1;
        if newpal {
            let dirofs = r.read(DIROFS_BITS)?;
            let palsize = r.read(PALSIZE_BITS)?;
            let palette_bits = r.read(PALBITS_BITS)? + 2;
            let len = if palsize == 0 { 0 } else { palsize + 1 };
            let mut entries = [0u16; PALETTE_SIZE_MAX];
            for e in &mut entries[..len as usize] {
                *e = r.read(palette_bits)? as u16;
            }
            let mut p = PaletteState::new(entries, len, dirofs, palette_bits);
            p.set_mode(alternating);
            palette = Some(p);
        } else {
            match prev_alternating {
                None => {
                    return Err(DecodeError::FirstSliceWithoutNewpal {
                        bit_offset: newpal_offset,
                    })
                }
                Some(prev) if prev != alternating => {
                    return Err(DecodeError::ModeSwitchWithoutNewpal {
                        bit_offset: newpal_offset,
                    })
                }
                Some(_) => {}
            }
        }
        prev_alternating = Some(alternating);
        let palette = palette
            .as_ref()
            .ok_or(DecodeError::FirstSliceWithoutNewpal { bit_offset })?;
        let (uncompressed, wdiv) = match index_mode {
            WeightIndexMode::GolombRice { wdiv } => (false, u32::from(wdiv)),
            WeightIndexMode::Uncompressed => (true, 0),
        };
        let slice = Slice {
            alternating,
            zdiv: u32::from(mode.zdiv()),
            zunary_len: mode.zunary_len(),
            uncompressed,
            wdiv,
            wtrunc,
            newpal,
            w_cnt: slicelen as usize,
            z_cnt: if alternating {
                slicelen as usize + usize::from(newpal)
            } else {
                0
            },
        };
        total = slice_body(&mut r, &slice, palette, total, max_weights)?;
    }
}

/// The end-of-stream padding: `1` bits up to the next multiple of 128 (§3.9.4), checked 32 at a
/// time with the error a bit-at-a-time read gives.
fn padding(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    let mut left = (STREAM_ALIGN_BITS - r.pos % STREAM_ALIGN_BITS) % STREAM_ALIGN_BITS;
    while left > 0 {
        let n = left.min(32).min(r.end - r.pos) as u32;
        if n == 0 {
            return Err(r.unexpected_end(1).into());
        }
        let ones = (1u64 << n) - 1;
        let bits = r.peek() & ones;
        if bits != ones {
            return Err(DecodeError::PaddingNotOnes {
                bit_offset: r.pos + u64::from((!bits).trailing_zeros()),
            });
        }
        r.pos += u64::from(n);
        left -= u64::from(n);
    }
    Ok(())
}

/// Walks one slice's chunks (§3.9.10) as the decoder does; returns the weight count after it.
fn slice_body(
    r: &mut Reader<'_>,
    s: &Slice,
    palette: &PaletteState,
    total: usize,
    max_weights: usize,
) -> Result<usize, DecodeError> {
    let too_many = |bit_offset: u64| DecodeError::TooManyWeights {
        bit_offset,
        max_weights,
    };
    if total.saturating_add(s.w_cnt) > max_weights {
        return Err(too_many(r.pos));
    }
    // Zero runs may only add `budget` more values; what they leave of it gives the count.
    let mut budget = (max_weights - total - s.w_cnt) as u64;
    let wremain_bits = if s.uncompressed {
        palette.uncompressed_bits
    } else {
        s.wdiv
    };
    // At least 57 bits are in a window; fields of at most 9 bits.
    let per_window = 56u32
        .checked_div(wremain_bits)
        .map_or(usize::MAX, |n| n as usize);
    // Quotients of the indices `wr_i..wq_i` (at most two chunks' worth), by index mod 32;
    // uncompressed indices have none (0).
    let mut quotients = [0u8; 32];
    let (mut wq, mut wq_i, mut wr_i) = (0u32, 0usize, 0usize);
    let (mut zq, mut zq_i, mut zr_i) = (0u64, 0usize, 0usize);
    let (mut prev_w_enable, mut prev_wq_i) = (false, 0usize);
    // The largest quotient the chunk's slots reached (every index completed in it is at most
    // that), and the previous chunk's.
    let mut prev_largest = 0u32;
    let (mut prev_z_enable, mut prev_zq_i) = (false, 0usize);
    loop {
        let balance = wq_i as i64 - zq_i as i64;
        let w_enable = (!s.alternating || balance < BALANCE_LIMIT) && wq_i < s.w_cnt;
        let z_enable = s.alternating && balance >= 0 && zq_i < s.z_cnt;
        let wunary0_offset = r.pos;
        let wunary0 = if w_enable && !s.uncompressed {
            r.read(WUNARY0_BITS)?
        } else {
            0
        };
        if z_enable {
            // Each 0 ends a run of the 1s before it; bits past the slice's last run are padding.
            let len = s.zunary_len;
            let field = u64::from(r.read(len)?);
            let zeros = !field & ((1u64 << len) - 1);
            let count = zeros.count_ones() as usize;
            let mut ended = 0u64;
            if count == 0 {
                zq += u64::from(len);
            } else if count <= s.z_cnt - zq_i {
                // Every 0 ends a run: they take the carried quotient and the 1s below the last
                // 0; the 1s above it start the next run.
                let last = 63 - zeros.leading_zeros();
                ended = zq + u64::from((field & ((1u64 << last) - 1)).count_ones());
                zq = u64::from(len - 1 - last);
                zq_i += count;
            } else {
                let (mut bits, mut left) = (field, len);
                while zq_i < s.z_cnt {
                    let zeros = !bits & ((1u64 << left) - 1);
                    if zeros == 0 {
                        zq += u64::from(left);
                        break;
                    }
                    let ones = zeros.trailing_zeros();
                    ended += zq + u64::from(ones);
                    zq = 0;
                    zq_i += 1;
                    bits >>= ones + 1;
                    left -= ones + 1;
                }
            }
            budget = budget
                .checked_sub(ended << s.zdiv)
                .ok_or_else(|| too_many(r.pos))?;
        }
        let largest = if w_enable && !s.uncompressed {
            let wunary1 = u64::from(r.read(wunary0.count_ones())?);
            let chunk = Unary {
                wunary0,
                wunary1,
                offset: wunary0_offset,
            };
            chunk.quotients(s, &mut wq, &mut wq_i, &mut quotients)?
        } else {
            0
        };
        if w_enable && s.uncompressed {
            // Indices are all remainder; they are read with the next chunk.
            wq_i += palette.uncompressed_per_chunk.min(s.w_cnt - wq_i);
        }
        if prev_w_enable && wr_i < prev_wq_i {
            // Every index of the previous chunk is below `(largest + 1) << wdiv` (or, when
            // uncompressed, `1 << wremain_bits`): if all of those are valid, the remainders
            // need not be looked at, only skipped.
            let below = if s.uncompressed {
                1 << wremain_bits
            } else {
                (prev_largest + 1) << s.wdiv
            };
            let fields = Fields {
                bits: wremain_bits,
                per_window,
                all_valid: below <= palette.valid_prefix,
            };
            remainders(r, s, palette, &quotients, wr_i..prev_wq_i, fields)?;
            wr_i = prev_wq_i;
        }
        if prev_z_enable && zr_i < prev_zq_i {
            budget = zero_remainders(r, s.zdiv, prev_zq_i - zr_i, budget, max_weights)?;
            zr_i = prev_zq_i;
        }
        prev_w_enable = w_enable;
        prev_wq_i = wq_i;
        prev_largest = largest;
        prev_z_enable = z_enable;
        prev_zq_i = zq_i;
        if !(w_enable || z_enable) {
            break;
        }
    }
    Ok(max_weights - budget as usize)
}

/// A chunk's weight unary fields (§3.9.7).
struct Unary {
    wunary0: u32,
    wunary1: u64,
    /// Where `wunary0` is.
    offset: u64,
}

impl Unary {
    /// Adds the slots' quotients to the one being accumulated (`wq`, of index `wq_i`), stores
    /// each completed one in `quotients`, as the decoder's slot loop does, with its error;
    /// returns the largest quotient reached.
    #[inline(always)]
    fn quotients(
        &self,
        s: &Slice,
        wq: &mut u32,
        wq_i: &mut usize,
        quotients: &mut [u8; 32],
    ) -> Result<u32, DecodeError> {
        if s.w_cnt - *wq_i >= WUNARY0_BITS as usize {
            // No slot reaches the slice's last index: all twelve, without branches. Only if a
            // quotient passes 31 are they taken again one at a time, for the error.
            let (mut q, mut i, mut j, mut largest) = (*wq, *wq_i, 0, 0);
            for k in 0..WUNARY0_BITS {
                let b0 = (self.wunary0 >> k) & 1;
                let b1 = (self.wunary1 >> j) as u32 & b0;
                j += b0;
                q += b0 + b1;
                largest = largest.max(q);
                quotients[i % 32] = q as u8;
                let done = b1 == 0 || s.wtrunc;
                i += usize::from(done);
                q = if done { 0 } else { q };
            }
            if largest <= WQ_MAX {
                (*wq, *wq_i) = (q, i);
                return Ok(largest);
            }
        }
        let (mut j, mut largest) = (0, *wq);
        for k in 0..WUNARY0_BITS {
            if *wq_i >= s.w_cnt {
                break;
            }
            let b0 = (self.wunary0 >> k) & 1;
            let b1 = (self.wunary1 >> j) as u32 & b0;
            j += b0;
            *wq += b0 + b1;
            if *wq > WQ_MAX {
                return Err(DecodeError::QuotientTooLarge {
                    bit_offset: self.offset,
                    wq: *wq,
                });
            }
            largest = largest.max(*wq);
            quotients[*wq_i % 32] = *wq as u8;
            if b1 == 0 || s.wtrunc {
                *wq_i += 1;
                *wq = 0;
            }
        }
        Ok(largest)
    }
}

/// The width of a slice's `wremain` fields and how many a [`Reader::peek`] window holds.
#[derive(Clone, Copy)]
struct Fields {
    bits: u32,
    per_window: usize,
    /// Every index these fields can complete is valid.
    all_valid: bool,
}

/// Reads the `wremain` fields (`bits` each, one after another) of the indices `at` of the
/// slice and checks each index, with the verdict of the decoder's field-at-a-time loop: a
/// window of 64 bits holds several fields, and the indices are checked together against the
/// valid set, one at a time (for the first error) only if one of them is outside it.
#[inline(always)]
fn remainders(
    r: &mut Reader<'_>,
    s: &Slice,
    palette: &PaletteState,
    quotients: &[u8; 32],
    at: std::ops::Range<usize>,
    fields: Fields,
) -> Result<(), DecodeError> {
    let bits = fields.bits;
    let quotient = |i: usize| u32::from(quotients[i % 32]) << s.wdiv;
    let n = at.len();
    if u64::from(bits) * n as u64 > r.end - r.pos {
        // The stream ends in one of them: a field at a time, for the decoder's error.
        for i in at {
            let offset = r.pos;
            let index = quotient(i) + r.read(bits)?;
            if !palette.valid(index) {
                check_index(s, palette, index, i, offset)?;
            }
        }
        return Ok(());
    }
    if fields.all_valid {
        r.pos += u64::from(bits) * n as u64;
        return Ok(());
    }
    let start = r.pos;
    let mask = (1u64 << bits) - 1;
    let mut indices = [0u32; 32];
    let mut all_valid = true;
    let mut k = 0;
    while k < n {
        let mut window = r.peek();
        let fields = fields.per_window.min(n - k);
        for (j, index) in indices.iter_mut().enumerate().skip(k).take(fields) {
            *index = quotient(at.start + j) + (window & mask) as u32;
            window >>= bits;
            all_valid &= palette.valid(*index);
        }
        r.pos += u64::from(bits) * fields as u64;
        k += fields;
    }
    if !all_valid {
        for (j, &index) in indices.iter().enumerate().take(n) {
            if !palette.valid(index) {
                let offset = start + u64::from(bits) * j as u64;
                check_index(s, palette, index, at.start + j, offset)?;
            }
        }
    }
    Ok(())
}

/// Reads `n` `zremain` fields (`zdiv` bits each) and charges them to `budget`, with the
/// verdict of the decoder's field-at-a-time loop; returns what is left of the budget.
#[inline(always)]
fn zero_remainders(
    r: &mut Reader<'_>,
    zdiv: u32,
    n: usize,
    budget: u64,
    max_weights: usize,
) -> Result<u64, DecodeError> {
    let bits = u64::from(zdiv) * n as u64;
    if bits <= 56 && bits <= r.end - r.pos {
        let mut window = r.peek();
        let mask = (1u64 << zdiv) - 1;
        let mut sum = 0u64;
        for _ in 0..n {
            sum += window & mask;
            window >>= zdiv;
        }
        if let Some(left) = budget.checked_sub(sum) {
            r.pos += bits;
            return Ok(left);
        }
    }
    // The stream ends in one of them, or the budget in one of them: a field at a time.
    let mut budget = budget;
    for _ in 0..n {
        let zremain = u64::from(r.read(zdiv)?);
        budget = budget
            .checked_sub(zremain)
            .ok_or(DecodeError::TooManyWeights {
                bit_offset: r.pos,
                max_weights,
            })?;
    }
    Ok(budget)
}

/// The decoder's check of a completed weight index (§3.9.6, §3.9.9), for an index outside the
/// palette's valid set: its error, or `Ok` for the one index of an all-zero `newpal` slice.
#[cold]
fn check_index(
    s: &Slice,
    palette: &PaletteState,
    index: u32,
    position: usize,
    bit_offset: u64,
) -> Result<(), DecodeError> {
    if index > u32::from(WEIGHT_INDEX_MAX) {
        return Err(DecodeError::WeightIndexTooLarge {
            bit_offset,
            index: index as u16,
        });
    }
    let code = palette.code(index);
    let magnitude = code >> 1;
    if magnitude > 255 {
        return Err(DecodeError::WeightValueOutOfRange {
            bit_offset,
            index: index as u16,
            code,
        });
    }
    let all_zero_newpal_slice = position == 0 && s.newpal && s.w_cnt == 1;
    if magnitude == 0 && s.alternating && !all_zero_newpal_slice {
        return Err(DecodeError::ZeroWeightInAlternatingMode {
            bit_offset,
            position: position as u32,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::decoded_len_reference;
    use super::decoded_len;
    use crate::bitwriter::BitWriter;
    use crate::swd::encode::encode;
    use proptest::prelude::*;

    /// Slices with random headers (any zdiv and wdiv, reserved ones included, `newpal` or not,
    /// palettes of any size and width) each followed by random chunk bits, then optionally the
    /// end of stream with its padding (sometimes with a 0 in it): deeper into the slice and
    /// chunk syntax than arbitrary bytes, across slice boundaries.
    fn slices() -> impl Strategy<Value = Vec<u8>> {
        let slice = (
            prop_oneof![4 => 0u64..4, 3 => Just(6u64), 1 => 4u64..6],
            prop_oneof![3 => 0u64..40, 1 => 0u64..(1 << 15)],
            prop_oneof![6 => 0u64..6, 3 => Just(7u64), 1 => Just(6u64)],
            any::<bool>(),
            prop_oneof![4 => Just(true), 1 => Just(false)],
            (0u64..32, prop_oneof![Just(0u64), 1u64..32], 0u64..8),
            proptest::collection::vec(any::<u64>(), 0..8),
            any::<u64>(),
            0u32..64,
        );
        (
            proptest::collection::vec(slice, 1..4),
            any::<bool>(),
            prop_oneof![5 => Just(None), 1 => (0u32..128).prop_map(Some)],
        )
            .prop_map(|(slices, end, zero_at)| {
                let mut w = BitWriter::new();
                for (zdiv, len_m1, wdiv, wtrunc, newpal, pal, words, palette, tail) in slices {
                    w.write(zdiv, 3);
                    w.write(len_m1, 15);
                    w.write(wdiv, 3);
                    w.write_bit(wtrunc);
                    w.write_bit(newpal);
                    if newpal {
                        let (dirofs, palsize, palbits) = pal;
                        w.write(dirofs, 5);
                        w.write(palsize, 5);
                        w.write(palbits, 3);
                        let size = if palsize == 0 { 0 } else { palsize + 1 };
                        for k in 0..size {
                            w.write_u64(palette.rotate_left(k as u32 * 7), palbits as u32 + 2);
                        }
                    }
                    for word in words {
                        w.write_u64(word, 64);
                    }
                    w.write_u64(palette, tail);
                }
                if end {
                    w.write(7, 3);
                    let pad = (128 - w.bit_len() % 128) % 128;
                    for k in 0..pad {
                        w.write_bit(zero_at != Some(k as u32));
                    }
                }
                w.into_bytes()
            })
    }

    /// Weights with zero runs and clusters in varying mixes, as the encoder's planner sees
    /// them (alternating and plain slices, palettes and direct indices, several regions).
    fn weights() -> impl Strategy<Value = Vec<i16>> {
        proptest::collection::vec(
            (
                0u32..100,
                prop_oneof![Just(2i16), Just(8), Just(40), Just(255)],
                0usize..1500,
            ),
            1..4,
        )
        .prop_flat_map(|parts| {
            parts
                .into_iter()
                .map(|(zeros, wide, n)| {
                    proptest::collection::vec(
                        (0u32..100, -wide..=wide)
                            .prop_map(move |(z, v)| if z < zeros { 0 } else { v }),
                        n,
                    )
                })
                .collect::<Vec<_>>()
        })
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn arbitrary_bytes_get_the_decoders_walks_verdict(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            max in 0usize..5000,
        ) {
            prop_assert_eq!(decoded_len(&bytes, max), decoded_len_reference(&bytes, max));
        }

        #[test]
        fn random_slices_get_the_decoders_walks_verdict(
            bytes in slices(),
            max in prop_oneof![0usize..100, 0usize..100_000],
        ) {
            prop_assert_eq!(decoded_len(&bytes, max), decoded_len_reference(&bytes, max));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Encoded streams: their count; with any limit, a bit or a byte changed, or cut
        /// short, the old walk's verdict.
        #[test]
        fn encoded_streams_mutated_get_the_decoders_walks_verdict(
            w in weights(),
            max in any::<prop::sample::Index>(),
            bits in proptest::collection::vec(any::<prop::sample::Index>(), 1..4),
            byte in (any::<prop::sample::Index>(), 1u8..=255),
            cut in any::<prop::sample::Index>(),
        ) {
            let bytes = encode(&w).unwrap();
            prop_assert_eq!(decoded_len(&bytes, w.len()), Ok(w.len()));
            let limit = max.index(w.len() + 2);
            prop_assert_eq!(decoded_len(&bytes, limit), decoded_len_reference(&bytes, limit));
            let mut flipped = bytes.clone();
            for b in &bits {
                let at = b.index(flipped.len() * 8);
                flipped[at / 8] ^= 1 << (at % 8);
                prop_assert_eq!(
                    decoded_len(&flipped, w.len()),
                    decoded_len_reference(&flipped, w.len())
                );
            }
            let mut changed = bytes.clone();
            let at = byte.0.index(changed.len());
            changed[at] ^= byte.1;
            prop_assert_eq!(decoded_len(&changed, w.len()), decoded_len_reference(&changed, w.len()));
            let short = &bytes[..cut.index(bytes.len())];
            prop_assert_eq!(decoded_len(short, w.len()), decoded_len_reference(short, w.len()));
        }
    }
}
