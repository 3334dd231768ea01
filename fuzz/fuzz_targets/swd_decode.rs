//! Arbitrary bytes as an SWD weight stream (TRM §3.9.4-3.9.10): decoding never
//! panics, never yields more weights than allowed, and every value is in
//! -255..=255. The first two bytes set the weight cap; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_codecs::swd::decode::decode_traced;

fuzz_target!(|data: &[u8]| {
    let (max_weights, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => (0, data),
    };
    if let Ok(d) = decode_traced(stream, max_weights) {
        assert!(d.weights.len() <= max_weights);
        assert!(d.weights.iter().all(|v| (-255..=255).contains(v)));
        assert_eq!(d.end_bit % 128, 0);
        assert!(d.end_bit <= stream.len() as u64 * 8);
        assert_eq!(
            d.slices.iter().map(|s| s.weight_count).sum::<usize>(),
            d.weights.len()
        );
    }
});
