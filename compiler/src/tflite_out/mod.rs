//! `npuc compile MODEL.tflite -o OUT.tflite`: a TFLite file in Vela's format.
//!
//! [`partition`] decides per operator whether the NPU path supports it and compiles the NPU
//! segments; [`write`](mod@write) replaces each segment by one `ethos-u` custom operator (COP1 payload,
//! `read_only`, `scratch`, `scratch_fast`, the input feature maps) and writes the arena offsets
//! as `OfflineMemoryAllocation` metadata. Operators the NPU cannot run stay ordinary TFLite
//! operators in the same graph.

mod compact;
pub mod partition;
pub mod write;

use crate::compile::Options;
use npuc_frontend_tflite::TfliteModel;
pub use partition::{OpPlacement, Partition, Segment};

/// Why a `.tflite` output could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum TfliteOutError {
    /// The input model cannot be read.
    #[error("{0}")]
    Model(#[from] npuc_frontend_tflite::TfliteError),
    /// Writing the output failed.
    #[error("writing the .tflite output: {0}")]
    Write(String),
}

/// A compiled `.tflite` output.
#[derive(Debug, Clone)]
pub struct TfliteOutput {
    /// The file.
    pub bytes: Vec<u8>,
    /// Where every operator runs and the compiled segments.
    pub partition: Partition,
}

/// Partitions `bytes` (a `.tflite` model), compiles its NPU segments and writes the result.
pub fn compile_tflite(
    bytes: &[u8],
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<TfliteOutput, TfliteOutError> {
    let model = TfliteModel::parse(bytes)?;
    let partition = partition::partition(&model, options, progress);
    let bytes = write::write(bytes, &model, &partition)?;
    Ok(TfliteOutput { bytes, partition })
}
