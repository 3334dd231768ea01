//! LSB-first bit writer (TRM 3.9.3 "Bit order convention").
//!
//! Bits are stored in ascending bit-number order: the first bit written is
//! bit 0 of byte 0. Multi-bit symbols are written least significant bit
//! first. The same convention is used by the weight streams (SWD and FWD) and
//! by the scale and bias stream (TRM 3.7.3).

/// Accumulates bits LSB-first into a byte vector.
#[derive(Debug, Clone, Default)]
pub struct BitWriter {
    bytes: Vec<u8>,
    /// Pending bits not yet flushed to `bytes` (LSB = oldest).
    acc: u64,
    /// Number of valid bits in `acc` (always < 32 between calls).
    nacc: u32,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer with room for `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            acc: 0,
            nacc: 0,
        }
    }

    /// Writes the low `n` bits of `value`, least significant first
    /// (TRM `SYMBOL_UINT`). Bits of `value` above `n` are ignored.
    /// `n` may be 0..=32; use [`Self::write_u64`] for wider fields.
    #[inline]
    pub fn write(&mut self, value: u64, n: u32) {
        debug_assert!(n <= 32, "BitWriter::write supports at most 32 bits at once");
        let n = n.min(32);
        let masked = value & ((1u64 << n) - 1);
        self.acc |= masked << self.nacc;
        self.nacc += n;
        if self.nacc >= 32 {
            self.bytes
                .extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.nacc -= 32;
        }
    }

    /// Writes a wide value (up to 64 bits) in two parts.
    pub fn write_u64(&mut self, value: u64, n: u32) {
        let n = n.min(64);
        if n > 32 {
            self.write(value & 0xFFFF_FFFF, 32);
            self.write(value >> 32, n - 32);
        } else {
            self.write(value, n);
        }
    }

    /// Writes a single bit.
    #[inline]
    pub fn write_bit(&mut self, bit: bool) {
        self.write(u64::from(bit), 1);
    }

    /// Writes `n` copies of `bit` (any `n`).
    pub fn write_repeated(&mut self, bit: bool, mut n: u64) {
        let pattern = if bit { u64::MAX } else { 0 };
        while n > 0 {
            let k = n.min(32) as u32;
            self.write(pattern, k);
            n -= u64::from(k);
        }
    }

    /// Total number of bits written so far.
    #[inline]
    pub fn bit_len(&self) -> u64 {
        self.bytes.len() as u64 * 8 + u64::from(self.nacc)
    }

    /// Pads with `bit` until the bit length is a multiple of `bits`
    /// (`bits` > 0).
    pub fn align(&mut self, bits: u64, bit: bool) {
        if bits == 0 {
            return;
        }
        let rem = self.bit_len() % bits;
        if rem != 0 {
            self.write_repeated(bit, bits - rem);
        }
    }

    /// Finishes the stream, padding the final partial byte with zero bits.
    pub fn into_bytes(mut self) -> Vec<u8> {
        while self.nacc > 0 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.nacc = self.nacc.saturating_sub(8);
        }
        self.bytes
    }
}

/// Where an encoder's bits go: a [`BitWriter`] keeps them, a [`BitCounter`] only counts
/// them, so that one emission routine gives both a stream and its exact length.
pub trait BitSink {
    /// Writes the low `n` bits of `value` (`n` <= 32), as [`BitWriter::write`].
    fn write(&mut self, value: u64, n: u32);

    /// Writes a single bit.
    #[inline]
    fn write_bit(&mut self, bit: bool) {
        self.write(u64::from(bit), 1);
    }

    /// Total number of bits written so far.
    fn bit_len(&self) -> u64;
}

impl BitSink for BitWriter {
    #[inline]
    fn write(&mut self, value: u64, n: u32) {
        BitWriter::write(self, value, n);
    }

    #[inline]
    fn bit_len(&self) -> u64 {
        BitWriter::bit_len(self)
    }
}

/// A [`BitSink`] that counts the bits written and keeps none of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct BitCounter {
    bits: u64,
}

impl BitCounter {
    /// A counter at zero bits.
    pub fn new() -> Self {
        Self::default()
    }
}

impl BitSink for BitCounter {
    #[inline]
    fn write(&mut self, _value: u64, n: u32) {
        self.bits += u64::from(n.min(32));
    }

    #[inline]
    fn bit_len(&self) -> u64 {
        self.bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trm_3_9_3_example_bytes() {
        // Writing 0x12 (5 bits), 0xB (4 bits), 0x55 (7 bits) gives 0x72, 0xAB.
        let mut w = BitWriter::new();
        w.write(0x12, 5);
        w.write(0xB, 4);
        w.write(0x55, 7);
        assert_eq!(w.bit_len(), 16);
        assert_eq!(w.into_bytes(), vec![0x72, 0xAB]);
    }

    #[test]
    fn wide_values_and_alignment() {
        let mut w = BitWriter::new();
        w.write_bit(true);
        w.write_u64(0x8000_0000_0000_0001, 64);
        w.align(128, true);
        assert_eq!(w.bit_len(), 128);
        let b = w.into_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(b[0], 0b0000_0011);
        assert_eq!(b[8], 0b1111_1111); // bit 64 = value bit 63, rest padding ones
    }

    #[test]
    fn the_counter_counts_what_the_writer_writes() {
        let (mut w, mut c) = (BitWriter::new(), BitCounter::new());
        for (v, n) in [(0x12, 5), (0, 0), (1, 1), (0xFFFF_FFFF, 32), (3, 2)] {
            BitSink::write(&mut w, v, n);
            c.write(v, n);
            assert_eq!(BitSink::bit_len(&w), c.bit_len());
        }
    }
}
