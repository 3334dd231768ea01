//! Golden test: every SWD stream Vela 5.2 produced for Ethos-U85-256
//! (`models/fixtures/weights-u85-256`, `format == "SWD"`, 2:4 sparse included)
//! decodes to exactly the weights of `weights.npy` in TRM §3.9.2 order.
//!
//! TFLite int8 weights are symmetric (weight zero point 0), so the stream
//! values are the `weights.npy` values themselves; the exact match confirms it.

mod common;

use npuc_codecs::ordering::WeightOrdering;
use npuc_codecs::swd::decode::decode_traced;
use npuc_codecs::swd::STREAM_ALIGN_BITS;

#[test]
fn every_vela_swd_stream_decodes_to_the_ordered_weights() {
    let mut checked = Vec::new();
    for case in common::golden_cases() {
        if case.format != "SWD" {
            continue;
        }
        let ordering = WeightOrdering::new(&case.params, case.weights.shape())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let expected = ordering.order(&case.weights).unwrap();
        assert_eq!(
            case.streams.len(),
            expected.len(),
            "{}: stream count",
            case.name
        );
        for (k, (bytes, want)) in case.streams.iter().zip(&expected).enumerate() {
            let decoded = decode_traced(bytes, want.len())
                .unwrap_or_else(|e| panic!("{} stream {k}: {e}", case.name));
            assert_eq!(
                decoded.weights.len(),
                want.len(),
                "{} stream {k}: weight count",
                case.name
            );
            if let Some(i) = decoded.weights.iter().zip(want).position(|(a, b)| a != b) {
                panic!(
                    "{} stream {k}: first difference at {i}: decoded {} expected {}",
                    case.name, decoded.weights[i], want[i]
                );
            }
            // The end-of-stream padding ends on a 128-bit boundary, exactly at
            // the end of NPU_SET_WEIGHT_LENGTH.
            assert_eq!(decoded.end_bit % STREAM_ALIGN_BITS, 0);
            assert_eq!(
                decoded.end_bit,
                bytes.len() as u64 * 8,
                "{} stream {k}: length",
                case.name
            );
            let s = &decoded.slices;
            assert!(s[0].header.new_palette.is_some(), "first slice sets newpal");
            assert_eq!(s.iter().map(|t| t.weight_count).sum::<usize>(), want.len());
        }
        checked.push(case.name);
    }
    eprintln!("SWD golden cases decoded exactly: {checked:?}");
    assert_eq!(
        checked.len(),
        9,
        "expected 9 SWD golden cases, got {checked:?}"
    );
}
