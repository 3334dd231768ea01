//! SWD encoder against Vela on synthetic realistic weights
//! (`models/fixtures/swd-synthetic-u85-256`: Laplacian, Gaussian, clustered,
//! magnitude-pruned and 2:4-pruned int8 convolutions compiled by Vela 5.2 for
//! Ethos-U85-256 with FWD disabled; `make.py` there regenerates them).
//!
//! Vela's stream is decoded with the TRM decoder to get the weights in
//! stream order; npuc re-encodes them, and its stream must decode to the
//! same weights and be no larger than Vela's.

use std::path::Path;

use npuc_codecs::swd::decode::decode;
use npuc_codecs::swd::encode::encode;

fn cases() -> Vec<(String, Vec<u8>)> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/fixtures/swd-synthetic-u85-256");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("vela_stream0.bin").exists())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path().join("vela_stream0.bin")).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn npuc_is_no_larger_than_vela_on_realistic_weights() {
    let cases = cases();
    assert_eq!(cases.len(), 8);
    let (mut tn, mut tv) = (0usize, 0usize);
    for (name, vela) in &cases {
        let weights = decode(vela, 1 << 22).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = encode(&weights).unwrap();
        assert_eq!(decode(&ours, weights.len()).unwrap(), weights, "{name}");
        eprintln!(
            "{name:32} {:7} weights  npuc {:6} B  Vela {:6} B  ratio {:.3}",
            weights.len(),
            ours.len(),
            vela.len(),
            ours.len() as f64 / vela.len() as f64
        );
        assert!(
            ours.len() <= vela.len(),
            "{name}: {} > {}",
            ours.len(),
            vela.len()
        );
        tn += ours.len();
        tv += vela.len();
    }
    eprintln!(
        "total: npuc {tn} B, Vela {tv} B, ratio {:.4}",
        tn as f64 / tv as f64
    );
}

/// npuc's stream sizes on the realistic cases may not grow. The 1x1
/// Laplacian, 1x1 and 3x3 80 %-pruned cases sit at the format's one-code
/// lower bound (`cargo run --release -p npuc-codecs --example swd_bounds`;
/// the 3x3 case with `PADDING=1280,1152` for its ordering padding): every
/// slice codes its indices and zero runs with one prefix code from a small
/// family, and these weights are stationary.
#[test]
fn npuc_sizes_on_realistic_weights_do_not_grow() {
    let most = [
        ("conv1x1_c128_o128_laplacian", 14528),
        ("conv1x1_c128_o128_pruned80", 4800),
        ("conv3x3_c64_o64_clustered16", 14992),
        ("conv3x3_c64_o64_gaussian", 35184),
        ("conv3x3_c64_o64_laplacian", 31632),
        ("conv3x3_c64_o64_pruned24", 21840),
        ("conv3x3_c64_o64_pruned80", 10624),
        ("dw3x3_c128_laplacian", 1216),
    ];
    let cases = cases();
    assert_eq!(cases.len(), most.len());
    for ((name, vela), (want_name, most)) in cases.iter().zip(most) {
        assert_eq!(name, want_name);
        let weights = decode(vela, 1 << 22).unwrap();
        let ours = encode(&weights).unwrap();
        assert!(ours.len() <= most, "{name}: {} > {most}", ours.len());
    }
}
