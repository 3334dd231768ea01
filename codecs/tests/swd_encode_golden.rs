//! Golden test for the SWD encoder: for every SWD stream Vela 5.2 produced
//! for Ethos-U85-256, npuc's stream for the same ordered weights decodes
//! (with the TRM decoder of `swd::decode`) to exactly those weights and is
//! no larger than Vela's.

mod common;

use npuc_codecs::ordering::WeightOrdering;
use npuc_codecs::swd::decode::decode;
use npuc_codecs::swd::encode::encode_with_stats;

#[test]
fn npuc_swd_streams_round_trip_and_are_no_larger_than_vela() {
    let mut total = (0usize, 0usize);
    let mut cases = 0;
    for case in common::golden_cases() {
        if case.format != "SWD" {
            continue;
        }
        let ordering = WeightOrdering::new(&case.params, case.weights.shape()).unwrap();
        let streams = ordering.order(&case.weights).unwrap();
        for (k, (want, vela)) in streams.iter().zip(&case.streams).enumerate() {
            let (ours, stats) = encode_with_stats(want).unwrap();
            let back = decode(&ours, want.len())
                .unwrap_or_else(|e| panic!("{} stream {k}: {e}", case.name));
            assert!(
                back == *want,
                "{} stream {k}: round trip differs",
                case.name
            );
            eprintln!(
                "{:28} s{k}: npuc {:6} B  Vela {:6} B  ratio {:.3}  ({} slices, {} regions)",
                case.name,
                ours.len(),
                vela.len(),
                ours.len() as f64 / vela.len() as f64,
                stats.slices,
                stats.regions
            );
            assert!(
                ours.len() <= vela.len(),
                "{} stream {k}: npuc {} bytes > Vela {} bytes",
                case.name,
                ours.len(),
                vela.len()
            );
            total.0 += ours.len();
            total.1 += vela.len();
        }
        cases += 1;
    }
    eprintln!(
        "total: npuc {} B, Vela {} B, ratio {:.4}",
        total.0,
        total.1,
        total.0 as f64 / total.1 as f64
    );
    assert_eq!(cases, 9);
}
