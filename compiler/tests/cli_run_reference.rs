//! `npuc run` on plain models: a .tflite without ethos-u operators or a .tosa file runs on the
//! reference interpreter and reproduces the external goldens (TFLite reference kernels, TOSA
//! reference model) byte for byte.

use npuc::run::npy;
use std::path::{Path, PathBuf};
use std::process::Command;

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn data_of(path: &Path) -> npy::Array {
    npy::read(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs `npuc run model --input ... --output-dir` for sample `k` and compares every output.
fn check(model: &Path, golden: &Path, k: usize) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_npuc"));
    cmd.arg("run").arg(model);
    let mut i = 0;
    while golden.join(format!("input{i}_{k}.npy")).exists() {
        cmd.arg("--input")
            .arg(golden.join(format!("input{i}_{k}.npy")));
        i += 1;
    }
    assert!(i > 0, "{}: no inputs", golden.display());
    let out_dir = npuc_test_support::Scratch::new(&format!(
        "run-ref-{}-{k}",
        model.file_stem().unwrap().to_string_lossy()
    ));
    let out = cmd.arg("--output-dir").arg(&*out_dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        model.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut j = 0;
    while golden.join(format!("output{j}_{k}.npy")).exists() {
        let want = data_of(&golden.join(format!("output{j}_{k}.npy")));
        let got = data_of(&out_dir.join(format!("out{j}.npy")));
        assert_eq!(
            (got.dtype, &got.shape),
            (want.dtype, &want.shape),
            "{} output {j}",
            model.display()
        );
        assert!(
            got.data == want.data,
            "{} output {j} sample {k} differs from the golden",
            model.display()
        );
        j += 1;
    }
    assert!(j > 0, "{}: no outputs", golden.display());
}

#[test]
fn plain_tflite_models_run_on_the_reference_interpreter() {
    for name in [
        "conv2d_3x3_relu",
        "mobilenet_tiny",
        "add_broadcast",
        "softmax",
        "conv2d_16x8",
    ] {
        let model = models().join("tflite").join(format!("{name}.tflite"));
        for k in 0..3 {
            check(&model, &models().join("golden").join(name), k);
        }
    }
}

#[test]
fn tosa_models_run_on_the_reference_interpreter() {
    let mut names: Vec<String> = std::fs::read_dir(models().join("tosa"))
        .unwrap()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".tosa")
                .map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30, "expected the TOSA corpus");
    // A spread of the corpus: every fourth model, sample 0.
    for name in names.iter().step_by(4) {
        check(
            &models().join("tosa").join(format!("{name}.tosa")),
            &models().join("golden-tosa").join(name),
            0,
        );
    }
}

#[test]
fn a_plain_model_with_wrong_inputs_is_a_clear_error() {
    let model = models().join("tflite/conv2d_3x3_relu.tflite");
    let wrong = models().join("golden/dense/input0_0.npy");
    let out = Command::new(env!("CARGO_BIN_EXE_npuc"))
        .arg("run")
        .arg(&model)
        .arg("--input")
        .arg(&wrong)
        .arg("--output-dir")
        .arg(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reference interpreter") && err.contains("input 0"),
        "{err}"
    );
}
