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

/// Random tails after a plausible slice header (zdiv, slice length, wdiv, wtrunc, a
/// palette), reaching deeper into the chunk syntax than arbitrary bytes do.
pub fn header_then_chunks() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    (
        prop::sample::select(vec![0u64, 1, 2, 3, 6]),
        0u64..64,
        prop::sample::select(vec![0u64, 1, 2, 3, 4, 5, 7]),
        any::<bool>(),
        (0u64..32, 0u64..32, 0u64..8),
        proptest::collection::vec(any::<u8>(), 0..400),
    )
        .prop_map(|(zdiv, slicelen_m1, wdiv, wtrunc, pal, tail)| {
            let mut b = Bits::default();
            b.put(zdiv, 3)
                .put(slicelen_m1, 15)
                .put(wdiv, 3)
                .put(u64::from(wtrunc), 1)
                .put(1, 1);
            b.put(pal.0, 5).put(pal.1, 5).put(pal.2, 3);
            let mut bytes = b.bytes;
            bytes.extend_from_slice(&tail);
            bytes
        })
}
