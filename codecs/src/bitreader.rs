//! LSB-first bit reader for weight streams (Ethos-U85 TRM §3.9.3).
//!
//! Bits are consumed in ascending bit order within each byte (bit 0 first) and
//! bytes in ascending address order. A multi-bit symbol is stored LSB first,
//! so `read(n)` returns the next `n` bits with the first bit read in bit 0
//! (`SYMBOL_UINT`). Example from the TRM: bytes `0x72, 0xAB` read as 5, 4 and
//! 7 bits give `0x12`, `0xB` and `0x55`.

use thiserror::Error;

/// A read ran past the end of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("bit stream ends at bit {end_bit}: {wanted} bits wanted at bit {bit_offset}")]
pub struct UnexpectedEnd {
    /// Bit offset of the read that failed.
    pub bit_offset: u64,
    /// Number of bits requested.
    pub wanted: u32,
    /// Total number of bits in the input.
    pub end_bit: u64,
}

/// Reads LSB-first bit fields from a byte slice.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    pos: u64,
}

impl<'a> BitReader<'a> {
    /// A reader positioned at bit 0 of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Current position, in bits from the start of the input.
    pub fn bit_offset(&self) -> u64 {
        self.pos
    }

    /// Total number of bits in the input.
    pub fn bit_len(&self) -> u64 {
        self.bytes.len() as u64 * 8
    }

    /// Number of bits not yet read.
    pub fn remaining_bits(&self) -> u64 {
        self.bit_len() - self.pos
    }

    /// Reads one bit.
    pub fn read_bit(&mut self) -> Result<bool, UnexpectedEnd> {
        Ok(self.read(1)? == 1)
    }

    /// Reads an `n`-bit unsigned field (`SYMBOL_UINT`), `n <= 32`; the first bit
    /// read becomes bit 0 of the result. `read(0)` returns 0 and consumes nothing.
    ///
    /// # Errors
    /// [`UnexpectedEnd`] if fewer than `n` bits remain (the position is left unchanged).
    pub fn read(&mut self, n: u32) -> Result<u32, UnexpectedEnd> {
        assert!(n <= 32, "BitReader::read supports at most 32 bits");
        if u64::from(n) > self.remaining_bits() {
            return Err(UnexpectedEnd {
                bit_offset: self.pos,
                wanted: n,
                end_bit: self.bit_len(),
            });
        }
        let mut value: u64 = 0;
        let mut got = 0u32;
        while got < n {
            // In range: pos + (n - got) <= bit_len.
            let byte = self.bytes[(self.pos / 8) as usize];
            let shift = (self.pos % 8) as u32;
            let take = (8 - shift).min(n - got);
            let bits = (u64::from(byte) >> shift) & ((1u64 << take) - 1);
            value |= bits << got;
            got += take;
            self.pos += u64::from(take);
        }
        Ok(value as u32)
    }

    /// Reads an `n`-bit two's complement field (`SYMBOL_SINT`), `1 <= n <= 32`.
    ///
    /// # Errors
    /// [`UnexpectedEnd`] if fewer than `n` bits remain.
    pub fn read_signed(&mut self, n: u32) -> Result<i32, UnexpectedEnd> {
        assert!(
            (1..=32).contains(&n),
            "BitReader::read_signed needs 1..=32 bits"
        );
        let raw = self.read(n)?;
        let shift = 32 - n;
        Ok(((raw << shift) as i32) >> shift)
    }

    /// Number of bits from the current position to the next multiple of `align_bits`.
    pub fn bits_to_alignment(&self, align_bits: u64) -> u64 {
        (align_bits - self.pos % align_bits) % align_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trm_3_9_3_example() {
        // 0x12 (5 bits), 0xB (4 bits), 0x55 (7 bits) are stored as bytes 0x72, 0xAB.
        let mut r = BitReader::new(&[0x72, 0xAB]);
        assert_eq!(r.read(5), Ok(0x12));
        assert_eq!(r.read(4), Ok(0xB));
        assert_eq!(r.read(7), Ok(0x55));
        assert_eq!(r.remaining_bits(), 0);
    }

    #[test]
    fn wide_reads_cross_bytes() {
        let mut r = BitReader::new(&[0x01, 0x23, 0x45, 0x67, 0x89]);
        assert_eq!(r.read(4), Ok(0x1));
        assert_eq!(r.read(32), Ok(0x9674_5230));
        assert_eq!(r.read(4), Ok(0x8));
    }

    #[test]
    fn signed_reads_sign_extend() {
        let mut r = BitReader::new(&[0xFF, 0x7F]);
        assert_eq!(r.read_signed(8), Ok(-1));
        assert_eq!(r.read_signed(8), Ok(127));
    }

    #[test]
    fn reading_past_end_names_the_offset() {
        let mut r = BitReader::new(&[0xFF]);
        assert_eq!(r.read(3), Ok(7));
        assert_eq!(
            r.read(6),
            Err(UnexpectedEnd {
                bit_offset: 3,
                wanted: 6,
                end_bit: 8
            })
        );
        assert_eq!(r.bit_offset(), 3);
        assert_eq!(r.bits_to_alignment(8), 5);
    }
}
