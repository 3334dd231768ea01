//! The committed model fixtures (`models/tflite`, `models/vela`) parse, and every Vela output
//! exposes its NPU operators.

use std::path::{Path, PathBuf};

use npuc_frontend_tflite::{BuiltinOperator, TfliteModel, VelaOp};

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// Files under `dir` (recursively) whose name ends with `suffix`, sorted.
fn files_ending_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn parse(path: &Path) -> TfliteModel {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    TfliteModel::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_source_model_parses() {
    for path in files_ending_with(&models_dir().join("tflite"), ".tflite") {
        let model = parse(&path);
        let main = model.main_subgraph();
        assert!(
            !main.operators.is_empty(),
            "{}: no operators",
            path.display()
        );
        assert!(
            !main.inputs.is_empty(),
            "{}: no graph inputs",
            path.display()
        );
        // Source models are plain TFLite: nothing compiled for the NPU yet.
        assert!(
            model.ethos_u_ops().unwrap().is_empty(),
            "{}: unexpected ethos-u operator",
            path.display()
        );
    }
}

/// Source models with weights: Vela must put something in region 0 (`read_only`).
/// Models without constants (ADD, pooling, ...) legitimately get an empty `read_only`.
fn has_weights(model: &TfliteModel) -> bool {
    model
        .subgraphs()
        .iter()
        .flat_map(|sg| &sg.operators)
        .any(|op| {
            [
                BuiltinOperator::CONV_2D,
                BuiltinOperator::DEPTHWISE_CONV_2D,
                BuiltinOperator::FULLY_CONNECTED,
                BuiltinOperator::TRANSPOSE_CONV,
            ]
            .contains(&op.opcode.builtin)
        })
}

#[test]
fn every_vela_model_has_its_npu_operators_with_command_streams() {
    let vela_models = files_ending_with(&models_dir().join("vela"), "_vela.tflite");
    assert!(!vela_models.is_empty(), "no models/vela/**/*_vela.tflite");
    for path in vela_models {
        let model = parse(&path);
        let ops = model
            .ethos_u_ops()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Vela leaves some models wholly on the CPU; models/corpus.json records how many
        // ethos-u operators each compilation has, and that is what must be found.
        let expected = expected_ethos_u_ops(&path);
        assert_eq!(ops.len(), expected, "{}: ethos-u operators", path.display());
        if ops.is_empty() {
            // Wholly on the CPU: no arena, nothing more of Vela's to check.
            continue;
        }
        let main = model.main_subgraph();
        for op in &ops {
            let magic = op.payload.get(..4);
            assert!(
                magic == Some(b"COP1") || magic == Some(b"COP2"),
                "{}: payload starts with {magic:?}",
                path.display()
            );
            let declared = main.tensors[op.read_only_tensor.index()].byte_size();
            assert_eq!(Some(op.read_only.len()), declared, "{}", path.display());
            assert!(
                !op.ifms.is_empty() && !op.ofms.is_empty(),
                "{}: operator without feature maps",
                path.display()
            );
        }

        let name = path.file_name().unwrap().to_str().unwrap();
        let source = models_dir()
            .join("tflite")
            .join(name.replace("_vela.tflite", ".tflite"));
        if source.exists() && has_weights(&parse(&source)) {
            assert!(
                ops.iter().any(|op| !op.read_only.is_empty()),
                "{}: weights but empty read_only",
                path.display()
            );
        }

        // The whole-model view agrees with the operator list, and Vela placed the graph
        // inputs and outputs in the arena.
        let vela = model.vela().unwrap();
        assert_eq!(vela.ethos_u_ops().count(), ops.len());
        assert!(vela.offline_memory_allocation.is_some());
        let main = &vela.subgraphs[0];
        assert!(!main.inputs.is_empty() && !main.outputs.is_empty());
        for fm in main.inputs.iter().chain(&main.outputs) {
            assert!(
                fm.arena_offset.is_some(),
                "{}: {} has no arena offset",
                path.display(),
                fm.name
            );
        }
        assert!(main.ops.iter().any(|op| matches!(op, VelaOp::Npu(_))));
    }
}

/// The number of `ethos-u` operators `models/corpus.json` records for
/// `models/vela/<config>/<name>_vela.tflite`.
fn expected_ethos_u_ops(path: &Path) -> usize {
    let corpus: serde_json::Value =
        serde_json::from_slice(&std::fs::read(models_dir().join("corpus.json")).unwrap()).unwrap();
    let name = path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches("_vela.tflite");
    let config = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let model = corpus["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in models/corpus.json"));
    model["vela"][config]["ethos_u_ops"]
        .as_u64()
        .unwrap_or_else(|| panic!("corpus.json has no {config} entry for {name}")) as usize
}
