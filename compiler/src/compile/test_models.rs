//! Corpus models read by the crate's unit tests: `models/<rel>.tflite` parsed, lowered to
//! the IR and, for [`lowered`], to the U85's NPU operations.

use super::lower::{self, Lowered};

/// The IR graph of `models/<rel>.tflite` (`rel` e.g. `"tflite/ds_cnn"`).
pub(crate) fn graph(rel: &str) -> npuc_ir::Graph {
    let path = format!("{}/../models/{rel}.tflite", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
    npuc_frontend_tflite::lower::lower(&model).unwrap().graph
}

/// The lowered program of `models/<rel>.tflite`.
pub(crate) fn lowered(rel: &str) -> Lowered {
    lower::lower(&graph(rel)).unwrap()
}
