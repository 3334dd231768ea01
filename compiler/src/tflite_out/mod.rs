//! `npuc compile MODEL.tflite -o OUT.tflite`: a TFLite file in Vela's format.
//!
//! [`partition`] decides per operator whether the NPU path supports it and compiles the NPU
//! segments; [`write`](mod@write) replaces each segment by one `ethos-u` custom operator (COP1 payload,
//! `read_only`, `scratch`, `scratch_fast`, the input feature maps) and writes the arena offsets
//! as `OfflineMemoryAllocation` metadata. Operators the NPU cannot run stay ordinary TFLite
//! operators in the same graph.

mod compact;
pub mod partition;
pub mod whole;
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
    #[error(transparent)]
    Payload(#[from] crate::payload::PayloadError),
    /// The model already holds a compiled NPU operator.
    #[error(
        "operator {0} is an ethos-u operator: this model is already compiled for the NPU \
         (a Vela or npuc .tflite output); compile the original model instead"
    )]
    AlreadyCompiled(usize),
}

/// The index of the first `ethos-u` operator of the main subgraph: a model holding one has
/// already been compiled (by Vela or npuc) and compiling it again would leave that stream
/// untouched on the "CPU" with nothing for the NPU.
pub fn already_compiled(model: &TfliteModel) -> Option<usize> {
    model
        .main_subgraph()
        .operators
        .iter()
        .find(|op| op.opcode.is_ethos_u())
        .map(|op| op.id.index())
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
    if let Some(op) = already_compiled(&model) {
        return Err(TfliteOutError::AlreadyCompiled(op));
    }
    let mut partition = partition::partition(&model, options, progress);
    for s in &mut partition.segments {
        crate::tflite_sources(&model, &mut s.model);
    }
    let bytes = write::write(bytes, &model, &partition)?;
    Ok(TfliteOutput { bytes, partition })
}
