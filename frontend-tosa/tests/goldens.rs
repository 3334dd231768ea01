//! Every TOSA model under `models/tosa/` against the TOSA reference model's outputs in
//! `models/golden-tosa/<name>/` (`input<i>_<k>.npy`, `output<j>_<k>.npy`): parse, lower, run
//! the IR interpreter and compare every output element. Models expected to fail are listed in
//! [`KNOWN_FAILURES`] with the reason; a listed model that passes also fails the test (so the
//! table stays current). Nothing is skipped silently: a model without goldens is a failure.

use npuc_test_support::models_dir;
use std::path::Path;

use npuc_frontend_tosa::{lower, TosaModel};
use npuc_ir::TensorValue;

/// `(model, reason)`: models whose lowering or results are known to fail, and why.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// A golden `.npy` array: shape and elements (the workspace's shared reader).
fn read_npy(path: &Path) -> Result<(Vec<usize>, Vec<i64>), String> {
    let a = npuc_test_support::npy::read(path)?;
    Ok((a.shape.clone(), a.to_i64()?))
}

/// Runs one model on all its golden samples; `Err` describes the first problem.
fn check_model(name: &str) -> Result<usize, String> {
    let dir = models_dir();
    let bytes =
        std::fs::read(dir.join("tosa").join(format!("{name}.tosa"))).map_err(|e| e.to_string())?;
    let model = TosaModel::parse(&bytes).map_err(|e| format!("parse: {e}"))?;
    let graph = lower(&model).map_err(|e| format!("lower: {e}"))?;
    let gdir = dir.join("golden-tosa").join(name);
    let mut samples = 0;
    for k in 0.. {
        if !gdir.join(format!("output0_{k}.npy")).exists() {
            break;
        }
        let mut inputs = Vec::new();
        for (i, &t) in graph.inputs().iter().enumerate() {
            let ty = &graph.tensor(t).ok_or("bad input")?.ty;
            let (shape, vals) = read_npy(&gdir.join(format!("input{i}_{k}.npy")))?;
            if shape != ty.shape.0 {
                return Err(format!(
                    "input {i}: golden shape {shape:?}, graph {}",
                    ty.shape
                ));
            }
            inputs.push(
                TensorValue::from_i64(ty.dtype, shape, &vals)
                    .map_err(|e| format!("input {i}: {e}"))?,
            );
        }
        let outs = npuc_ir::run_outputs(&graph, inputs).map_err(|e| format!("run {k}: {e}"))?;
        for (j, out) in outs.iter().enumerate() {
            let (shape, want) = read_npy(&gdir.join(format!("output{j}_{k}.npy")))?;
            if shape != out.shape().0 {
                return Err(format!(
                    "sample {k} output {j}: shape {} vs golden {shape:?}",
                    out.shape()
                ));
            }
            let got = out.to_i64_vec();
            if let Some(i) = (0..want.len()).find(|&i| got.get(i) != want.get(i)) {
                let diffs = (0..want.len()).filter(|&i| got[i] != want[i]).count();
                return Err(format!(
                    "sample {k} output {j}: {diffs}/{} elements differ, first at {i}: got {}, golden {}",
                    want.len(),
                    got[i],
                    want[i]
                ));
            }
        }
        samples += 1;
    }
    if samples == 0 {
        return Err("no golden samples".into());
    }
    Ok(samples)
}

#[test]
fn tosa_goldens() {
    let dir = models_dir().join("tosa");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!("{} is missing", dir.display());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "tosa").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no TOSA models in {}", dir.display());
    let mut problems = Vec::new();
    let (mut passed, mut known) = (0, 0);
    for name in &names {
        let expected_failure = KNOWN_FAILURES.iter().find(|(n, _)| n == name);
        match (check_model(name), expected_failure) {
            (Ok(n), None) => {
                passed += 1;
                eprintln!("ok    {name} ({n} samples)");
            }
            (Ok(_), Some(_)) => {
                problems.push(format!("{name}: passes now; remove it from KNOWN_FAILURES"))
            }
            (Err(e), Some((_, why))) => {
                known += 1;
                eprintln!("known {name}: {e} [{why}]");
            }
            (Err(e), None) => problems.push(format!("{name}: {e}")),
        }
    }
    for (n, _) in KNOWN_FAILURES {
        if !names.iter().any(|m| m == n) {
            problems.push(format!("{n}: in KNOWN_FAILURES but there is no such model"));
        }
    }
    eprintln!(
        "{passed} passed, {known} known failures, {} problems",
        problems.len()
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
