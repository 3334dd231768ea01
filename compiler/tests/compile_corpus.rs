//! Corpus models through the TFLite frontend and `npuc::compile`: every model that compiles
//! must run on the simulator bit-exactly like the reference interpreter runs the lowered graph
//! (seeded random full-range inputs, all five configurations). Models outside the slice must
//! fail with a `CompileError`, never a panic.

mod compile_common;

use compile_common::*;
use npuc::compile::compile;
use npuc_backend::arch::Accelerator;
use std::path::PathBuf;

#[test]
fn corpus_models_compile_and_match_the_interpreter() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/tflite");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("models/tflite")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tflite"))
        .collect();
    paths.sort();
    let mut compiled = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(path).unwrap();
        let Ok(model) = npuc_frontend_tflite::TfliteModel::parse(&bytes) else {
            continue;
        };
        let Ok(lowered) = npuc_frontend_tflite::lower::lower(&model) else {
            continue;
        };
        let g = lowered.graph;
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
            // The attainable compute bound (the best candidate of each operation, memories
            // aside) is positive where a kernel operation runs and never above the schedule.
            let s = &m.schedule;
            let kernels = s.ops.iter().any(|o| o.kernel != "DMA");
            assert!(
                s.compute_bound <= s.total_cycles && (s.compute_bound > 0) == kernels,
                "{name} on {accel}: compute bound {} against {} cycles",
                s.compute_bound,
                s.total_cycles
            );
            let mut rng = Rng(0x5eed ^ u64::from(accel.macs_per_cc()));
            let mut compared = 0;
            for _ in 0..8 {
                if compared == 2 {
                    break;
                }
                let inputs = random_inputs(&g, &mut rng);
                let Ok(expected) = npuc_ir::run_outputs(&g, inputs.clone()) else {
                    continue;
                };
                let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
                let got = simulate(&m, &bytes);
                for (i, (e, o)) in expected.iter().zip(&got).enumerate() {
                    let e = e.to_le_bytes();
                    if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                        panic!(
                            "{name} on {accel}, output {i}: first mismatch at byte {pos}: expected {} got {}",
                            e[pos] as i8, o[pos] as i8
                        );
                    }
                }
                compared += 1;
            }
            assert!(compared > 0, "{name} on {accel}: no defined sample");
        }
    }
    eprintln!(
        "{} corpus models compiled and verified: {compiled:?}",
        compiled.len()
    );
    assert!(
        compiled.len() >= 275,
        "only {} models compiled",
        compiled.len()
    );
}
