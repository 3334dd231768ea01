//! Parse + lower time of the largest corpus networks (issue 5 goal: under 20 ms for
//! MobileNetV2 1.0 224, `models/large/tflite/mobilenet_v2_100_224.tflite`).
//!
//! `cargo bench -p npuc-frontend-tflite --bench lower`

use criterion::{criterion_group, criterion_main, Criterion};
use npuc_frontend_tflite::{lower::lower, TfliteModel};
use std::path::Path;

fn bench(c: &mut Criterion) {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    for path in [
        "large/tflite/mobilenet_v2_100_224",
        "tflite/mobilenet_v2_050_128_pruned",
        "tflite/mobilenet_v1_050_128_clustered",
        "tflite/mobilenet_tiny",
    ] {
        let bytes = std::fs::read(models.join(format!("{path}.tflite"))).expect("corpus model");
        let name = path.rsplit('/').next().unwrap_or(path);
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
