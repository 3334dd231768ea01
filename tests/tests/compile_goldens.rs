//! `npuc compile` + `npuc run` against the external goldens. Every corpus model with goldens
//! (TFLite reference kernels: `models/golden`; TOSA reference model: `models/golden-tosa`) that
//! compiles into an npuc container runs through `npuc::run::run_container` on every golden
//! input, and must reproduce every golden output byte for byte. A model that does not compile
//! must fail with an error, never a panic. All five configurations.

mod common;

use npuc::compile::Options;
use npuc::run::npy;
use npuc_backend::arch::Accelerator;
use std::path::{Path, PathBuf};

/// Minimum number of models that must compile and reproduce their goldens, per frontend.
const TFLITE_FLOOR: usize = 303;
const TOSA_FLOOR: usize = 121;

fn read_npy(p: &Path) -> npy::Array {
    npy::read(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The golden samples of one model: (inputs, outputs) per sample.
fn samples(dir: &Path) -> Vec<(Vec<npy::Array>, Vec<npy::Array>)> {
    let mut out = Vec::new();
    for s in 0.. {
        if !dir.join(format!("input0_{s}.npy")).exists() {
            break;
        }
        let series = |prefix: &str| -> Vec<npy::Array> {
            (0..)
                .map(|k| dir.join(format!("{prefix}{k}_{s}.npy")))
                .take_while(|p| p.exists())
                .map(|p| read_npy(&p))
                .collect()
        };
        out.push((series("input"), series("output")));
    }
    out
}

/// Every model with goldens: (name, model path, golden directory).
fn models(golden: &str, models: &str, ext: &str) -> Vec<(String, PathBuf, PathBuf)> {
    let root = common::models_dir();
    let mut out: Vec<_> = std::fs::read_dir(root.join(golden))
        .unwrap_or_else(|e| panic!("models/{golden}: {e}"))
        .flatten()
        .filter_map(|d| {
            let name = d.file_name().to_string_lossy().to_string();
            let model = root.join(models).join(format!("{name}.{ext}"));
            model.exists().then(|| (name, model, d.path()))
        })
        .collect();
    out.sort();
    out
}

/// Compiles and runs every model on `accel`; returns the names that compiled (all of which
/// reproduced their goldens, or the function panics).
fn sweep(accel: Accelerator, golden: &str, dir: &str, ext: &str) -> Vec<String> {
    let mut passed = Vec::new();
    for (name, path, gdir) in models(golden, dir, ext) {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(container) = npuc::compile_file_to_container(&bytes, &Options::new(accel)) else {
            continue;
        };
        for (s, (inputs, expected)) in samples(&gdir).into_iter().enumerate() {
            let run = npuc::run::run_container(&container, &inputs)
                .unwrap_or_else(|e| panic!("{name} on {accel}, sample {s}: {e}"));
            assert_eq!(run.outputs.len(), expected.len(), "{name}: output count");
            for (k, (got, want)) in run.outputs.iter().zip(&expected).enumerate() {
                assert_eq!(got.shape, want.shape, "{name} output {k}: shape");
                if let Some(pos) = got.data.iter().zip(&want.data).position(|(a, b)| a != b) {
                    panic!(
                        "{name} on {accel}, sample {s}, output {k}: first differing byte {pos}: golden {:#04x}, npuc {:#04x}",
                        want.data[pos], got.data[pos]
                    );
                }
                assert_eq!(got.data.len(), want.data.len(), "{name} output {k}: size");
            }
        }
        passed.push(name);
    }
    passed
}

fn check(configs: &[Accelerator]) {
    for &accel in configs {
        let tflite = sweep(accel, "golden", "tflite", "tflite");
        let tosa = sweep(accel, "golden-tosa", "tosa", "tosa");
        eprintln!(
            "{accel}: {} TFLite and {} TOSA models reproduce their goldens",
            tflite.len(),
            tosa.len()
        );
        assert!(
            tflite.len() >= TFLITE_FLOOR,
            "{accel}: only {} TFLite models compiled and reproduced their goldens",
            tflite.len()
        );
        assert!(
            tosa.len() >= TOSA_FLOOR,
            "{accel}: only {} TOSA models compiled and reproduced their goldens",
            tosa.len()
        );
    }
}

#[test]
fn compiled_containers_reproduce_the_goldens_on_all_configurations() {
    check(&Accelerator::ALL);
}
