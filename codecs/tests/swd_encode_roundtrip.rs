//! SWD encoder properties: for any weight sequence (values -255..=255,
//! lengths 0..5000, several distributions), `decode(encode(w)) == w` with
//! the TRM decoder, the stream ends on a 128-bit boundary, and the encoder
//! is deterministic.

use npuc_codecs::swd::decode::{decode, decode_traced};
use npuc_codecs::swd::encode::{encode, EncodeError};
use proptest::prelude::*;

fn laplacian(scale: f64) -> impl Strategy<Value = i16> {
    (any::<bool>(), 0u32..100_000).prop_map(move |(neg, u)| {
        let m = (-(1.0 - f64::from(u) / 100_000.0).ln() * scale).min(255.0) as i16;
        if neg {
            -m
        } else {
            m
        }
    })
}

fn weights_strategy() -> impl Strategy<Value = Vec<i16>> {
    let len = 0usize..5000;
    prop_oneof![
        // uniform over the full range or over int8
        prop::collection::vec(-255i16..=255, len.clone()),
        prop::collection::vec(-127i16..=127, len.clone()),
        // Laplacian, narrow and wide
        (1.0f64..40.0, len.clone()).prop_flat_map(|(b, n)| prop::collection::vec(laplacian(b), n)),
        // sparse: mostly zeros
        (1u32..20, len.clone()).prop_flat_map(|(p, n)| {
            prop::collection::vec(prop_oneof![p => Just(0i16), 1 => -255i16..=255], n)
        }),
        // 2:4 pruned: two zeros in every group of four
        (len.clone(), any::<u64>()).prop_flat_map(|(n, _)| {
            prop::collection::vec((laplacian(20.0), laplacian(20.0), 0usize..6), n.div_ceil(4))
                .prop_map(move |groups| {
                    let pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];
                    let mut out = Vec::with_capacity(groups.len() * 4);
                    for (a, b, p) in groups {
                        let mut g = [0i16; 4];
                        g[pairs[p].0] = a;
                        g[pairs[p].1] = b;
                        out.extend_from_slice(&g);
                    }
                    out.truncate(n);
                    out
                })
        }),
        // clustered to <= 16 values
        (prop::collection::vec(-255i16..=255, 1..=16), len.clone())
            .prop_flat_map(|(c, n)| prop::collection::vec(prop::sample::select(c), n)),
        // all zero, single value
        len.clone().prop_map(|n| vec![0i16; n]),
        (len.clone(), -255i16..=255).prop_map(|(n, v)| vec![v; n]),
        // long zero runs between dense stretches
        prop::collection::vec(
            prop_oneof![
                (0usize..3000).prop_map(|n| vec![0i16; n]),
                prop::collection::vec(-127i16..=127, 0..300),
            ],
            0..8
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn decode_of_encode_is_identity(w in weights_strategy()) {
        let s = encode(&w).unwrap();
        prop_assert_eq!(s.len() % 16, 0);
        let d = decode_traced(&s, w.len()).unwrap();
        prop_assert_eq!(d.end_bit, s.len() as u64 * 8);
        prop_assert!(d.weights == w);
        prop_assert_eq!(encode(&w).unwrap(), s);
    }
}

#[test]
fn out_of_range_weights_are_errors() {
    assert_eq!(
        encode(&[0, 1, 256]),
        Err(EncodeError::WeightOutOfRange {
            index: 2,
            value: 256
        })
    );
    assert_eq!(
        encode(&[-256]),
        Err(EncodeError::WeightOutOfRange {
            index: 0,
            value: -256
        })
    );
}

#[test]
fn slices_longer_than_32768_weights_are_split() {
    let w: Vec<i16> = (0..100_000)
        .map(|i| ((i * 31) % 255 - 127) as i16)
        .collect();
    let s = encode(&w).unwrap();
    let d = decode_traced(&s, w.len()).unwrap();
    assert!(d.weights == w);
    assert!(d.slices.len() >= 4);
    assert!(d.slices.iter().all(|t| t.header.slicelen <= 32768));
}

#[test]
fn alternating_slices_longer_than_32768_nonzero_weights_are_split() {
    // Half zeros in runs of 0..3: alternating mode, ~75000 nonzero weights.
    let w: Vec<i16> = (0..150_000u32)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761) >> 24;
            if h % 2 == 0 {
                0
            } else {
                (h % 61) as i16 - 30
            }
        })
        .collect();
    let s = encode(&w).unwrap();
    let d = decode_traced(&s, w.len()).unwrap();
    assert!(d.weights == w);
    assert!(d
        .slices
        .iter()
        .all(|t| t.header.zero_run_mode.is_alternating()));
    assert!(d.slices.len() >= 3);
}

#[test]
fn a_very_long_zero_run_is_one_zero_run() {
    let mut w = vec![0i16; 1_000_000];
    w[500_000] = 3;
    let s = encode(&w).unwrap();
    assert_eq!(decode(&s, w.len()).unwrap(), w);
    // Two runs of ~500000 zeros at zdiv 3: ~62500 unary bits each.
    assert!(s.len() < 17_000, "{} bytes", s.len());
}

#[test]
fn a_long_stream_without_zeros_round_trips() {
    // No zero anywhere (the mode plan must not cost a zero weight it cannot index): 4 x 2048
    // weights cycling through -100..=100 without 0.
    let w: Vec<i16> = (0..4 * 2048)
        .map(|i| {
            let v = (i * 37 % 200) as i16 - 100;
            if v >= 0 {
                v + 1
            } else {
                v
            }
        })
        .collect();
    assert!(!w.contains(&0));
    let bytes = encode(&w).unwrap();
    assert_eq!(decode(&bytes, w.len()).unwrap(), w);
}
