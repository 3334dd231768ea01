//! Corpus models read by the crate's unit tests: `models/<rel>.tflite` parsed, lowered to
//! the IR and, for [`lowered`], to the U85's NPU operations; and the target the driver would
//! select for a configuration in its default memory system.

use crate::U85Target;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::{presets, MemoryMap};
use npuc_backend_lower::{self as lower, Lowered};
use npuc_target::arch_interface::Target;

/// The IR graph of `models/<rel>.tflite` (`rel` e.g. `"tflite/ds_cnn"`).
pub(crate) fn graph(rel: &str) -> npuc_ir::Graph {
    let path = format!("{}/../../models/{rel}.tflite", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
    npuc_frontend_tflite::lower::lower(&model).unwrap().graph
}

/// The lowered program of `models/<rel>.tflite`.
pub(crate) fn lowered(rel: &str) -> Lowered {
    lower::lower(&graph(rel)).unwrap()
}

/// The target for `accelerator` in the default system configuration and memory mode
/// (`presets::DEFAULT_SYSTEM_CONFIG`, `DEFAULT_MEMORY_MODE`), optimising for performance.
pub(crate) fn target(accelerator: Accelerator) -> Box<dyn Target> {
    let system = presets::system_config(presets::DEFAULT_SYSTEM_CONFIG).unwrap();
    let mode = presets::memory_mode(presets::DEFAULT_MEMORY_MODE).unwrap();
    let map = MemoryMap::new(&system, &mode).unwrap();
    Box::new(U85Target::with_memory(accelerator, map))
}
