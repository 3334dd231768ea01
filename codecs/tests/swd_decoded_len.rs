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
        zdiv in prop::sample::select(vec![0u64, 1, 2, 3, 6]),
        slicelen_m1 in 0u64..64,
        wdiv in prop::sample::select(vec![0u64, 1, 2, 3, 4, 5, 7]),
        wtrunc in any::<bool>(),
        pal in (0u64..32, 0u64..32, 0u64..8),
        tail in proptest::collection::vec(any::<u8>(), 0..400),
        max in 0usize..5000,
    ) {
        let mut b = common::bits::Bits::default();
        b.put(zdiv, 3).put(slicelen_m1, 15).put(wdiv, 3).put(u64::from(wtrunc), 1).put(1, 1);
        b.put(pal.0, 5).put(pal.1, 5).put(pal.2, 3);
        let mut bytes = b.bytes;
        bytes.extend_from_slice(&tail);
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
