//! TOSA corpus models through the TOSA frontend and `npuc::compile`: every model that compiles
//! must run on the simulator bit-exactly like the reference interpreter runs the lowered graph
//! (seeded random full-range inputs, all five configurations). Models outside the slice must
//! fail with a `CompileError`, never a panic.

mod compile_common;

use compile_common::*;
use npuc::compile::compile;
use npuc_backend::arch::Accelerator;
use std::path::PathBuf;

#[test]
fn tosa_corpus_models_compile_and_match_the_interpreter() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/tosa");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("models/tosa")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tosa"))
        .collect();
    paths.sort();
    let mut compiled = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(path).unwrap();
        let Ok(model) = npuc_frontend_tosa::TosaModel::parse(&bytes) else {
            continue;
        };
        let Ok(g) = npuc_frontend_tosa::lower(&model) else {
            continue;
        };
        if g.num_ops() == 0 {
            continue;
        }
        for accel in Accelerator::ALL {
            let Ok(m) = compile(&g, &options(accel)) else {
                break;
            };
            if accel == Accelerator::U85_128 {
                compiled.push(name.clone());
            }
            let mut rng = Rng(0x705a ^ u64::from(accel.macs_per_cc()));
            let mut compared = 0;
            // Random full-range inputs, then the golden inputs of the TOSA reference model
            // (inside every REQUIRE domain: shift amounts, divisors, index ranges).
            let goldens = golden_inputs(&name, &g);
            for attempt in 0..8 + goldens.len() {
                if compared == 2 || (attempt >= 8 && compared > 0) {
                    break;
                }
                let inputs = match attempt.checked_sub(8) {
                    None => random_inputs(&g, &mut rng),
                    Some(k) => goldens[k].clone(),
                };
                let Ok(expected) = npuc_ir::run_outputs(&g, inputs.clone()) else {
                    continue;
                };
                let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
                let got = simulate(&m, &bytes);
                for (i, (e, o)) in expected.iter().zip(&got).enumerate() {
                    let e = e.to_le_bytes();
                    if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                        panic!(
                            "{name} on {accel}, output {i}: first mismatch at byte {pos}: expected {:#04x} got {:#04x}",
                            e[pos], o[pos]
                        );
                    }
                }
                compared += 1;
            }
            assert!(compared > 0, "{name} on {accel}: no defined sample");
        }
    }
    eprintln!(
        "{} TOSA corpus models compiled and verified: {compiled:?}",
        compiled.len()
    );
    assert!(
        compiled.len() >= 121,
        "only {} TOSA models compiled",
        compiled.len()
    );
}

/// The golden input samples of `models/golden-tosa/<name>/` (none if it has no goldens).
fn golden_inputs(name: &str, g: &npuc_ir::Graph) -> Vec<Vec<npuc_ir::TensorValue>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models/golden-tosa")
        .join(name);
    let mut out = Vec::new();
    if g.inputs().is_empty() {
        return out;
    }
    for s in 0.. {
        let mut sample = Vec::new();
        for (i, &t) in g.inputs().iter().enumerate() {
            let Ok(bytes) = std::fs::read(dir.join(format!("input{i}_{s}.npy"))) else {
                return out;
            };
            let a = npuc::run::npy::read(&bytes).expect("golden .npy");
            let ty = &g.tensor(t).unwrap().ty;
            sample.push(
                npuc_ir::TensorValue::from_le_bytes(ty.dtype, a.shape, &a.data)
                    .expect("golden input"),
            );
        }
        out.push(sample);
    }
    out
}
