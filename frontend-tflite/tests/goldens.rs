//! Golden test: every model in `models/tflite/` with goldens in `models/golden/<name>/` is
//! lowered to the IR and run on the reference interpreter; every output byte must equal the
//! TFLite reference-kernel output.
//!
//! Models that cannot be lowered yet, or differ for a known reason, are listed in [`KNOWN`]
//! with the reason. Listed models are still run: a listed model that passes fails the test
//! (remove it from the table), so the table can only shrink.

use npuc_frontend_tflite::lower::lower;
use npuc_frontend_tflite::TfliteModel;
use npuc_ir::TensorValue;
use npuc_test_support::models_dir;
use std::path::Path;

/// `(model, reason)` for models that are expected not to match yet.
const KNOWN: &[(&str, &str)] = &[];

/// Models with goldens in `models/golden/` (`models/README.md`): a golden that disappears
/// fails the test.
const GOLDEN_MODELS: usize = 304;

fn read_npy(path: &Path) -> Result<TensorValue, String> {
    npuc_test_support::npy::read_tensor(path)
}

/// Lowers and runs one model on all its golden samples; `Err` describes the first problem.
fn check_model(name: &str) -> Result<usize, String> {
    check_model_in(&models_dir(), name)
}

/// [`check_model`] for a model stored under `dir` (`models/` or `models/large/`).
fn check_model_in(dir: &Path, name: &str) -> Result<usize, String> {
    let bytes =
        std::fs::read(dir.join(format!("tflite/{name}.tflite"))).map_err(|e| e.to_string())?;
    let model = TfliteModel::parse(&bytes).map_err(|e| format!("parse: {e}"))?;
    let lowered = lower(&model).map_err(|e| format!("lower: {e}"))?;
    let g = &lowered.graph;
    let gdir = dir.join(format!("golden/{name}"));
    let mut checked = 0;
    for k in 0.. {
        let first = gdir.join(format!("input0_{k}.npy"));
        if !first.exists() {
            break;
        }
        let inputs = (0..g.inputs().len())
            .map(|i| read_npy(&gdir.join(format!("input{i}_{k}.npy"))))
            .collect::<Result<Vec<_>, _>>()?;
        let outs = npuc_ir::run_outputs(g, inputs).map_err(|e| format!("sample {k}: run: {e}"))?;
        for (j, got) in outs.iter().enumerate() {
            let want = read_npy(&gdir.join(format!("output{j}_{k}.npy")))?;
            if got.shape() != want.shape() || got.dtype() != want.dtype() {
                return Err(format!(
                    "sample {k} output {j}: got {} expected {}",
                    got.tensor_type(),
                    want.tensor_type()
                ));
            }
            let (a, b) = (got.to_i64_vec(), want.to_i64_vec());
            let diffs: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
            if let Some(&i) = diffs.first() {
                let maxd = diffs
                    .iter()
                    .map(|&i| (a[i] - b[i]).abs())
                    .max()
                    .unwrap_or(0);
                return Err(format!(
                    "sample {k} output {j}: {} of {} elements differ (max |diff| {maxd}); first at {i}: got {} expected {}",
                    diffs.len(),
                    a.len(),
                    a[i],
                    b[i]
                ));
            }
            checked += 1;
        }
    }
    if checked == 0 {
        return Err("no golden samples".into());
    }
    Ok(checked)
}

fn golden_models() -> Vec<String> {
    let dir = models_dir();
    let mut names: Vec<String> = std::fs::read_dir(dir.join("tflite"))
        .expect("models/tflite")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "tflite" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .filter(|n| dir.join(format!("golden/{n}/meta.json")).exists())
        .collect();
    names.sort();
    names
}

#[test]
fn goldens_bit_exact() {
    let names = golden_models();
    assert_eq!(
        names.len(),
        GOLDEN_MODELS,
        "golden models in models/golden/"
    );
    let mut unexpected = vec![];
    let mut passed = 0;
    for name in &names {
        let known = KNOWN.iter().find(|(n, _)| n == name);
        match (check_model(name), known) {
            (Ok(_), None) => passed += 1,
            (Ok(_), Some(_)) => {
                unexpected.push(format!("{name}: passes now; remove it from KNOWN"))
            }
            (Err(e), None) => unexpected.push(format!("{name}: {e}")),
            (Err(e), Some((_, why))) => eprintln!("known: {name}: {why} ({e})"),
        }
    }
    eprintln!(
        "{passed} of {} models bit-exact, {} known",
        names.len(),
        KNOWN.len()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

/// The networks under `models/large/` (kept out of the per-model sweeps): MobileNetV2 1.0 at
/// 224x224 must parse and lower on every run...
#[test]
fn large_networks_lower() {
    let dir = models_dir().join("large");
    let bytes = std::fs::read(dir.join("tflite/mobilenet_v2_100_224.tflite")).expect("model");
    let model = TfliteModel::parse(&bytes).expect("parses");
    let g = lower(&model).expect("lowers").graph;
    assert!(g.num_ops() > 100);
}

/// ...and match its goldens bit for bit. Ignored by default: the reference interpreter needs
/// minutes for its three 224x224 samples in a test build. Run it with
/// `cargo test -p npuc-frontend-tflite --release --test goldens -- --ignored`.
#[test]
#[ignore]
fn large_networks_bit_exact() {
    let dir = models_dir().join("large");
    let checked = check_model_in(&dir, "mobilenet_v2_100_224").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked, 3);
}

/// An LSTM lowered on its own (as `npuc run` lowers a CPU operator between NPU operators)
/// takes its output and cell state as graph inputs; fed TFLite's reset values (the zero point,
/// 0) it reproduces the goldens, and another state changes the output.
#[test]
fn lstm_lowered_alone_takes_its_state_as_inputs() {
    use npuc_frontend_tflite::lower::lower_operator;
    use npuc_frontend_tflite::OpId;
    use npuc_ir::TensorData;
    let dir = models_dir();
    let bytes = std::fs::read(dir.join("tflite/lstm.tflite")).expect("model");
    let model = TfliteModel::parse(&bytes).expect("parses");
    let sg = model.main_subgraph();
    let l = lower_operator(&model, sg.id, OpId::new(0)).expect("lowers");
    assert_eq!(l.inputs.len(), 3, "input, output state, cell state");
    let gdir = dir.join("golden/lstm");
    let run = |h0: i8| {
        let x = read_npy(&gdir.join("input0_0.npy")).unwrap();
        let h = TensorValue::new([1, 9], TensorData::I8(vec![h0; 9])).unwrap();
        let c = TensorValue::new([1, 9], TensorData::I16(vec![0; 9])).unwrap();
        let out = npuc_ir::run_outputs(&l.lowered.graph, vec![x, h, c]).expect("runs");
        out[0].to_i64_vec()
    };
    let zp = sg.tensors[l.inputs[1].index()]
        .quantization
        .as_ref()
        .unwrap()
        .zero_point[0];
    let want = read_npy(&gdir.join("output0_0.npy")).unwrap().to_i64_vec();
    assert_eq!(run(zp as i8), want);
    assert_ne!(run(zp as i8 + 40), want);
}
