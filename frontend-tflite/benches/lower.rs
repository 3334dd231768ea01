//! Parse + lower time of the largest corpus networks (issue 5 goal: under 20 ms for
//! MobileNetV2 1.0 224; the corpus' largest is MobileNetV2 0.5 at 128x128).
//!
//! `cargo bench -p npuc-frontend-tflite --bench lower`

use criterion::{criterion_group, criterion_main, Criterion};
use npuc_frontend_tflite::{lower::lower, TfliteModel};
use std::path::Path;

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/tflite");
    for name in [
        "mobilenet_v2_050_128_pruned",
        "mobilenet_v1_050_128_clustered",
        "mobilenet_tiny",
    ] {
        let bytes = std::fs::read(dir.join(format!("{name}.tflite"))).expect("corpus model");
        c.bench_function(
            &format!("parse+lower {name} ({} KB)", bytes.len() / 1024),
            |b| {
                b.iter(|| {
                    let model = TfliteModel::parse(&bytes).expect("parses");
                    lower(&model).expect("lowers")
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
