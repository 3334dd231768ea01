//! Why a graph could not be lowered.

use thiserror::Error;

/// Why a graph could not be lowered to NPU operations (the driver's `CompileError` wraps it,
/// with the same text).
#[derive(Debug, Error)]
pub enum LowerError {
    /// An operator (group) the NPU path does not support (yet).
    #[error("operator {name} ({kind}) is not supported on the NPU: {reason}")]
    Unsupported {
        name: String,
        kind: String,
        reason: String,
    },
    /// The graph itself is malformed.
    #[error("invalid graph: {0}")]
    Graph(String),
}
