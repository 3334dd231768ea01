//! Arbitrary weights through the SWD encoder (TRM §3.9.3-3.9.10): every
//! sequence of values in -255..=255 encodes, and the TRM decoder gives it
//! back exactly. Each pair of input bytes is one weight (folded into range).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_codecs::swd::decode::decode;
use npuc_codecs::swd::encode::encode;

fuzz_target!(|data: &[u8]| {
    let w: Vec<i16> = data
        .chunks_exact(2)
        .map(|c| {
            let v = i16::from_le_bytes([c[0], c[1]]);
            // Fold to -255..=255, biased towards small values and zeros.
            (v % 512).clamp(-255, 255) >> (c[1] >> 6)
        })
        .collect();
    let s = encode(&w).unwrap();
    assert_eq!(s.len() % 16, 0);
    assert_eq!(decode(&s, w.len()).unwrap(), w);
});
