//! Fast weight decoder stream (TRM §3.9.11): mode choice, header layout,
//! errors and round-trip properties.

use npuc_codecs::fwd::{
    choose_fwd_mode, decode_fwd, decode_fwd_stream, encode_fwd, encode_fwd_with_mode, FwdError,
    FwdHeader, FwdMode, FWD_WORD_BYTES,
};
use proptest::prelude::*;

#[test]
fn smallest_exact_mode_is_chosen() {
    assert_eq!(choose_fwd_mode(&[0, 1, -1, 7]), Ok(FwdMode::Lut2));
    assert_eq!(choose_fwd_mode(&[0, 1, -1, 7, 8]), Ok(FwdMode::Lut4));
    let sixteen: Vec<i16> = (-8..8).collect();
    assert_eq!(choose_fwd_mode(&sixteen), Ok(FwdMode::Lut4));
    let seventeen: Vec<i16> = (-8..9).collect();
    assert_eq!(choose_fwd_mode(&seventeen), Ok(FwdMode::Raw));
    assert_eq!(choose_fwd_mode(&[]), Ok(FwdMode::Lut2));
}

#[test]
fn word_sizes_follow_the_mode() {
    // 2-bit: 128 weights per word; 4-bit: 64; raw: 32.
    assert_eq!(encode_fwd(&[1; 128]).unwrap().len(), 2 * FWD_WORD_BYTES);
    assert_eq!(encode_fwd(&[1; 129]).unwrap().len(), 3 * FWD_WORD_BYTES);
    let v: Vec<i16> = (0..65).map(|i| i % 10).collect();
    assert_eq!(encode_fwd(&v).unwrap().len(), 3 * FWD_WORD_BYTES);
    let v: Vec<i16> = (0..33).map(|i| i - 16).collect();
    assert_eq!(encode_fwd(&v).unwrap().len(), 3 * FWD_WORD_BYTES);
    assert_eq!(encode_fwd(&[]).unwrap().len(), FWD_WORD_BYTES);
}

#[test]
fn raw_mode_uses_a_zero_point_for_shifted_ranges() {
    // 0..=200 does not fit SINT8 directly: any zero point in [-128, -73]
    // maps it into -128..=127; the one closest to 0 is chosen.
    let v: Vec<i16> = (0..=200).collect();
    let s = encode_fwd(&v).unwrap();
    let h = FwdHeader::parse(&s).unwrap();
    assert_eq!(h.mode(), FwdMode::Raw);
    assert_eq!(h.zero_point, -73);
    assert_eq!(decode_fwd(&s, v.len()).unwrap(), v);
    // Full int8 range: zero point 0.
    let v: Vec<i16> = (-128..=127).collect();
    let s = encode_fwd(&v).unwrap();
    assert_eq!(FwdHeader::parse(&s).unwrap().zero_point, 0);
    // Negative values down to -255.
    let v: Vec<i16> = (-255..=-1).collect();
    let s = encode_fwd(&v).unwrap();
    assert_eq!(FwdHeader::parse(&s).unwrap().zero_point, 127);
    assert_eq!(decode_fwd(&s, v.len()).unwrap(), v);
}

#[test]
fn unrepresentable_weights_are_errors() {
    let v: Vec<i16> = (-200..=200).collect();
    assert_eq!(
        encode_fwd(&v),
        Err(FwdError::NotRepresentable {
            min: -200,
            max: 200
        })
    );
    assert_eq!(
        encode_fwd(&[0, 256]),
        Err(FwdError::WeightOutOfRange {
            index: 1,
            value: 256
        })
    );
    assert_eq!(
        encode_fwd(&[-256]),
        Err(FwdError::WeightOutOfRange {
            index: 0,
            value: -256
        })
    );
    let five = [1, 2, 3, 4, 5];
    assert_eq!(
        encode_fwd_with_mode(&five, FwdMode::Lut2),
        Err(FwdError::NotInLut { index: 4, value: 5 })
    );
}

#[test]
fn lut_entries_carry_magnitudes_up_to_255() {
    let v = [255, -255, 0, 17];
    let s = encode_fwd(&v).unwrap();
    assert_eq!(decode_fwd(&s, 4).unwrap(), v);
    // Padding uses the LUT index of weight 0 (index 2 here).
    let slots = decode_fwd_stream(&s).unwrap().slots;
    assert!(slots[4..].iter().all(|&w| w == 0));
    assert_eq!(s[33], 0b1010_1010);
}

#[test]
fn decoder_errors_name_the_offset() {
    assert_eq!(
        decode_fwd(&[0; 10], 0),
        Err(FwdError::MissingHeader { len: 10 })
    );
    assert_eq!(
        decode_fwd(&[0; 40], 0),
        Err(FwdError::PartialWord {
            len: 40,
            offset: 32
        })
    );
    let mut s = encode_fwd(&[1, 2]).unwrap();
    assert_eq!(
        decode_fwd(&s, 129),
        Err(FwdError::TooShort {
            count: 129,
            capacity: 128,
            offset: 64
        })
    );
    assert_eq!(
        decode_fwd(&s, 0),
        Err(FwdError::TrailingWords {
            count: 0,
            extra: 1,
            offset: 32
        })
    );
    s[5] = 0x10; // reserved header bit 44
    assert_eq!(decode_fwd(&s, 2), Err(FwdError::ReservedBitSet { bit: 44 }));
}

fn weights_strategy() -> impl Strategy<Value = Vec<i16>> {
    let len = 0usize..5000;
    prop_oneof![
        // uniform over a random sub-range of -255..=255 that raw mode can hold
        (len.clone(), -255i16..=0, 0i16..=255).prop_flat_map(|(n, lo, span)| {
            let hi = (lo + span).min(255);
            prop::collection::vec(lo..=hi, n)
        }),
        // Laplacian-like int8
        prop::collection::vec(
            (any::<bool>(), 0u32..1000).prop_map(|(s, u)| {
                let m = (-(1.0 - f64::from(u) / 1000.0).ln() * 12.0).min(127.0) as i16;
                if s {
                    -m
                } else {
                    m
                }
            }),
            len.clone()
        ),
        // clustered to <= 16 values, or <= 4
        (prop::collection::vec(-255i16..=255, 1..=16), len.clone())
            .prop_flat_map(|(c, n)| { prop::collection::vec(prop::sample::select(c), n) }),
        (prop::collection::vec(-255i16..=255, 1..=4), len.clone())
            .prop_flat_map(|(c, n)| { prop::collection::vec(prop::sample::select(c), n) }),
        // sparse
        prop::collection::vec(
            prop_oneof![9 => Just(0i16), 1 => -127i16..=127],
            len.clone()
        ),
        // all zero / single value
        len.clone().prop_map(|n| vec![0i16; n]),
        (len, -255i16..=255).prop_map(|(n, v)| vec![v; n]),
    ]
}

proptest! {
    #[test]
    fn fwd_streams_round_trip(w in weights_strategy()) {
        let s = encode_fwd(&w).unwrap();
        let mode = FwdHeader::parse(&s).unwrap().mode();
        prop_assert_eq!(s.len(), FWD_WORD_BYTES * (1 + w.len().div_ceil(mode.weights_per_word())));
        prop_assert_eq!(decode_fwd(&s, w.len()).unwrap(), w.clone());
        let mut distinct = w.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let expected = match distinct.len() {
            0..=4 => FwdMode::Lut2,
            5..=16 => FwdMode::Lut4,
            _ => FwdMode::Raw,
        };
        prop_assert_eq!(mode, expected);
    }

    #[test]
    fn every_representable_mode_round_trips(w in weights_strategy()) {
        for mode in [FwdMode::Lut2, FwdMode::Lut4, FwdMode::Raw] {
            if let Ok(s) = encode_fwd_with_mode(&w, mode) {
                prop_assert_eq!(decode_fwd(&s, w.len()).unwrap(), w.clone());
            }
        }
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        count in 0usize..2000,
    ) {
        let _ = decode_fwd(&bytes, count);
        let _ = decode_fwd_stream(&bytes);
    }
}
