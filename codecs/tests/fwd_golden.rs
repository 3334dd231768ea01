//! Golden test for the fast weight decoder stream (TRM §3.9.11): every FWD
//! stream Vela 5.2 produced for Ethos-U85-256 decodes to exactly the weights
//! in merged TRM §3.9.2 order, and npuc's encoder, given those weights,
//! produces a stream that is byte-identical to Vela's.

mod common;

use npuc_codecs::fwd::{decode_fwd, decode_fwd_stream, encode_fwd, FwdMode};
use npuc_codecs::ordering::WeightOrdering;

fn fwd_cases() -> Vec<(common::GoldenCase, Vec<i16>)> {
    common::golden_cases()
        .into_iter()
        .filter(|c| c.format == "FWD")
        .map(|c| {
            let ordering = WeightOrdering::new(&c.params, c.weights.shape())
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let merged = ordering.order_fwd(&c.weights).unwrap();
            (c, merged)
        })
        .collect()
}

#[test]
fn every_vela_fwd_stream_decodes_to_the_merged_ordered_weights() {
    let cases = fwd_cases();
    assert_eq!(cases.len(), 7);
    for (case, merged) in &cases {
        assert_eq!(
            case.streams.len(),
            1,
            "{}: FWD is a single stream",
            case.name
        );
        let decoded = decode_fwd(&case.streams[0], merged.len())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if let Some(i) = decoded.iter().zip(merged).position(|(a, b)| a != b) {
            panic!(
                "{}: first difference at {i}: decoded {} expected {}",
                case.name, decoded[i], merged[i]
            );
        }
    }
}

#[test]
fn encoding_the_ordered_weights_reproduces_every_vela_fwd_stream() {
    for (case, merged) in &fwd_cases() {
        let ours = encode_fwd(merged).unwrap();
        let vela = &case.streams[0];
        assert!(
            ours.len() <= vela.len(),
            "{}: {} > {}",
            case.name,
            ours.len(),
            vela.len()
        );
        if let Some(i) = ours.iter().zip(vela).position(|(a, b)| a != b) {
            panic!(
                "{}: first byte difference at {i}: ours {:#04x}, Vela {:#04x}",
                case.name, ours[i], vela[i]
            );
        }
        assert_eq!(ours.len(), vela.len(), "{}", case.name);
    }
}

#[test]
fn vela_picks_the_lut_mode_for_few_distinct_values() {
    // conv3x3_c32_o32_few: weights in {-64, -1, 1, 64} plus the zeros the
    // ordering pads with: five values, so the 4-bit LUT, not the 2-bit one.
    let cases = fwd_cases();
    let (case, merged) = cases
        .iter()
        .find(|(c, _)| c.name == "conv3x3_c32_o32_few")
        .unwrap();
    let stream = decode_fwd_stream(&case.streams[0]).unwrap();
    assert_eq!(stream.header.mode(), FwdMode::Lut4);
    assert_eq!(
        stream.header.lut[..5]
            .iter()
            .map(|e| e.value())
            .collect::<Vec<_>>(),
        vec![-64, 1, 64, -1, 0],
        "LUT lists values in order of first appearance"
    );
    assert_eq!(case.streams[0].len(), 32 + merged.len() / 2);
}
