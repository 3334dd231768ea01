//! Test-local LSB-first bit writer (TRM §3.9.3), used to hand-assemble streams.

/// Appends LSB-first bit fields to a byte vector.
#[derive(Default, Debug, Clone)]
pub struct Bits {
    /// Bytes written so far (the last one possibly partial).
    pub bytes: Vec<u8>,
    /// Number of bits written.
    pub len: u64,
}

impl Bits {
    /// Writes the low `n` bits of `value`, bit 0 first.
    pub fn put(&mut self, value: u64, n: u32) -> &mut Self {
        for i in 0..n {
            if self.len % 8 == 0 {
                self.bytes.push(0);
            }
            let bit = ((value >> i) & 1) as u8;
            let last = self.bytes.len() - 1;
            self.bytes[last] |= bit << (self.len % 8);
            self.len += 1;
        }
        self
    }

    /// Writes the end of stream: `zdiv = 7` then `1` bits to a 128-bit boundary.
    pub fn end_of_stream(&mut self) -> &mut Self {
        self.put(7, 3);
        while self.len % 128 != 0 {
            self.put(1, 1);
        }
        self
    }
}
