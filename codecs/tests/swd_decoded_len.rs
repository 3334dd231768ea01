//! `swd::decode::decoded_len` walks a stream as `decode` does, without making the values:
//! for any bytes it gives `decode`'s number of values or `decode`'s error (validation checks
//! compiled streams with it, so its verdict must be the decoder's).

mod common;

use npuc_codecs::swd::decode::{decode, decoded_len};
use npuc_codecs::swd::encode::encode;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes: the same count or the same error.
    #[test]
    fn random_bytes_get_the_decoders_verdict(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        max in 0usize..5000,
    ) {
        prop_assert_eq!(decoded_len(&bytes, max), decode(&bytes, max).map(|w| w.len()));
    }

    /// Random chunks after a plausible slice header (deeper into the chunk syntax).
    #[test]
    fn random_chunks_get_the_decoders_verdict(
        bytes in common::bits::header_then_chunks(),
        max in 0usize..5000,
    ) {
        prop_assert_eq!(decoded_len(&bytes, max), decode(&bytes, max).map(|w| w.len()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Encoded weights (sparse to dense, with zero runs): their number, and with one byte
    /// changed or the stream cut short, the decoder's verdict.
    #[test]
    fn encoded_streams_get_the_decoders_verdict(
        w in proptest::collection::vec(prop_oneof![3 => Just(0i16), 2 => -255i16..=255], 0..3000),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = encode(&w).unwrap();
        prop_assert_eq!(decoded_len(&bytes, w.len()), Ok(w.len()));
        prop_assert_eq!(decoded_len(&bytes, w.len()), decode(&bytes, w.len()).map(|v| v.len()));
        let mut changed = bytes.clone();
        let i = at.index(changed.len());
        changed[i] ^= flip;
        prop_assert_eq!(decoded_len(&changed, w.len()), decode(&changed, w.len()).map(|v| v.len()));
        let short = &bytes[..cut.index(bytes.len())];
        prop_assert_eq!(decoded_len(short, w.len()), decode(short, w.len()).map(|v| v.len()));
    }
}
