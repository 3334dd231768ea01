//! Arbitrary bytes as a FWD weight stream (TRM §3.9.11): decoding never
//! panics, values are in -255..=255, and whatever decodes re-encodes (in the
//! same mode) to a stream that decodes to the same weights. The first two
//! bytes set the weight count; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_codecs::fwd::{decode_fwd, decode_fwd_stream, encode_fwd, FwdHeader};

fuzz_target!(|data: &[u8]| {
    let (count, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => (0, data),
    };
    let _ = decode_fwd_stream(stream);
    if let Ok(w) = decode_fwd(stream, count) {
        assert_eq!(w.len(), count);
        assert!(w.iter().all(|v| (-255..=255).contains(v)));
        let mode = FwdHeader::parse(stream).unwrap().mode();
        // The smallest exact mode is never wider than the one decoded.
        let again = encode_fwd(&w).unwrap();
        assert!(again.len() <= stream.len());
        assert_eq!(decode_fwd(&again, count).unwrap(), w);
        let chosen = FwdHeader::parse(&again).unwrap().mode();
        assert!(chosen.bits_per_weight() <= mode.bits_per_weight());
    }
});
