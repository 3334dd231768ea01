//! Models with float (`f32`) operators (`models/float/`, made by
//! `models/scripts/make_float_islands.py`): the float operators stay on the CPU and `npuc run`
//! executes them on the IR's reference interpreter. Every golden output (TFLite's reference
//! kernels) must be reproduced byte for byte by
//!
//! * the plain `.tflite` on the reference interpreter,
//! * npuc's `.tflite` output (NPU segments on the simulator, float operators on the
//!   interpreter) on all five configurations,
//! * Vela's compilation of the model,
//!
//! and compiling such a model whole onto the NPU (an npuc container) must fail, naming the
//! float operators.

mod common;

use npuc::compile::Options;
use npuc::run::npy;
use npuc_backend::arch::Accelerator;
use std::path::{Path, PathBuf};

/// The models and the operators that must stay on the CPU in npuc's `.tflite` output.
const MODELS: &[(&str, &[&str])] = &[
    ("layernorm", &["DEQUANTIZE", "NEG", "QUANTIZE"]),
    ("float_io", &["QUANTIZE", "DEQUANTIZE"]),
    ("float_io_16x8", &["QUANTIZE", "DEQUANTIZE"]),
    (
        "float_ops",
        &[
            "FULLY_CONNECTED",
            "ABS",
            "SQRT",
            "LOG",
            "RSQRT",
            "DIV",
            "EXP",
            "MAXIMUM",
            "MEAN",
            "SUB",
            "MINIMUM",
            "NEG",
            "RELU",
            "TRANSPOSE",
            "SUM",
            "TANH",
            "SQUARED_DIFFERENCE",
            "LOGISTIC",
            "MUL",
            "ADD",
            "SOFTMAX",
            "CONCATENATION",
        ],
    ),
    ("float_elu", &["MUL", "ELU", "ADD"]),
];

fn root() -> PathBuf {
    common::models_dir().join("float")
}

fn read_npy(p: &Path) -> npy::Array {
    npy::read(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (inputs, outputs) per golden sample.
fn samples(name: &str) -> Vec<(Vec<npy::Array>, Vec<npy::Array>)> {
    let dir = root().join("golden").join(name);
    let series = |prefix: &str, s: usize| -> Vec<npy::Array> {
        (0..)
            .map(|k| dir.join(format!("{prefix}{k}_{s}.npy")))
            .take_while(|p| p.exists())
            .map(|p| read_npy(&p))
            .collect()
    };
    let out: Vec<_> = (0..)
        .take_while(|s| dir.join(format!("input0_{s}.npy")).exists())
        .map(|s| (series("input", s), series("output", s)))
        .collect();
    assert_eq!(out.len(), 3, "{name}: golden samples");
    out
}

fn model(name: &str) -> Vec<u8> {
    std::fs::read(root().join(format!("tflite/{name}.tflite"))).unwrap()
}

/// Runs a model on golden inputs, giving its outputs.
type Runner<'a> = dyn FnMut(&[npy::Array]) -> Result<Vec<npy::Array>, String> + 'a;

/// Runs `run` on every sample of `name` and compares every output byte.
fn check(name: &str, what: &str, run: &mut Runner<'_>) {
    for (s, (inputs, expected)) in samples(name).into_iter().enumerate() {
        let got = run(&inputs).unwrap_or_else(|e| panic!("{name} ({what}), sample {s}: {e}"));
        assert_eq!(got.len(), expected.len(), "{name} ({what}): output count");
        for (k, (g, w)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(
                (g.dtype, &g.shape),
                (w.dtype, &w.shape),
                "{name} ({what}) output {k}"
            );
            if let Some(pos) = g.data.iter().zip(&w.data).position(|(a, b)| a != b) {
                panic!(
                    "{name} ({what}), sample {s}, output {k}: first differing byte {pos}: golden {:#04x}, npuc {:#04x}",
                    w.data[pos], g.data[pos]
                );
            }
        }
    }
}

#[test]
fn plain_models_reproduce_the_goldens_on_the_reference_interpreter() {
    for (name, _) in MODELS {
        let bytes = model(name);
        check(name, "reference interpreter", &mut |inputs| {
            npuc::reference::run_file(&bytes, inputs).map_err(|e| e.to_string())
        });
    }
}

#[test]
fn npuc_tflite_outputs_keep_float_operators_on_the_cpu_and_reproduce_the_goldens() {
    for (name, cpu) in MODELS {
        let bytes = model(name);
        for accel in Accelerator::ALL {
            let out = npuc::compile_file_to_tflite(&bytes, &Options::new(accel))
                .unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
            let mut cpu_ops = Vec::new();
            check(name, &format!("npuc .tflite, {accel}"), &mut |inputs| {
                npuc::run::run_vela(&out, inputs)
                    .map(|r| {
                        if cpu_ops.is_empty() {
                            cpu_ops = r.cpu_ops.clone();
                        }
                        r.outputs
                    })
                    .map_err(|e| e.to_string())
            });
            for op in *cpu {
                assert!(
                    cpu_ops.iter().any(|c| c == op),
                    "{name} on {accel}: {op} must run on the CPU (CPU operators: {cpu_ops:?})"
                );
            }
        }
    }
}

#[test]
fn vela_compilations_reproduce_the_goldens() {
    for (name, _) in MODELS {
        let path = root().join(format!("vela/u85_256/{name}_vela.tflite"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(name, "Vela u85_256", &mut |inputs| {
            npuc::run::run_vela(&bytes, inputs)
                .map(|r| r.outputs)
                .map_err(|e| e.to_string())
        });
    }
}

#[test]
fn a_float_operator_cannot_be_compiled_onto_the_npu() {
    for (name, _) in MODELS {
        let e = npuc::compile_file_to_container(&model(name), &Options::new(Accelerator::U85_256))
            .expect_err(name)
            .to_string();
        assert!(
            e.contains("float operators stay on the CPU"),
            "{name}: unexpected error {e}"
        );
    }
}
