//! Errors of the TOSA reader ([`TosaError`]) and of lowering ([`LowerError`]).

use crate::ids::{BlockId, OperatorId, TensorIndex};

/// Everything that can be wrong with a TOSA flatbuffer file.
///
/// Every variant names the block, tensor or operator at fault and, for constant data, the
/// byte offset in the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TosaError {
    #[error("file is {len} bytes, too short for a TOSA flatbuffer (at least 8 needed)")]
    TooShort { len: usize },

    #[error("file identifier at byte 4 is {found:?}, expected \"TOSA\" (not a TOSA file)")]
    WrongIdentifier { found: String },

    #[error("flatbuffer verification failed: {0}")]
    InvalidFlatbuffer(#[from] flatbuffers::InvalidFlatbuffer),

    #[error("{block}: {what} has no name")]
    MissingName { block: BlockId, what: String },

    #[error("{block}: name {name:?} is defined twice (as {first} and as {second})")]
    DuplicateName {
        block: BlockId,
        name: String,
        first: String,
        second: String,
    },

    #[error(
        "{block}: {context} refers to {name:?}, which is neither a tensor nor a shape of the block"
    )]
    DanglingName {
        block: BlockId,
        context: String,
        name: String,
    },

    #[error("{block} tensor {tensor} {name:?}: invalid shape {shape:?}: {reason}")]
    InvalidShape {
        block: BlockId,
        tensor: TensorIndex,
        name: String,
        shape: Vec<i32>,
        reason: String,
    },

    #[error(
        "{block} tensor {tensor} {name:?}: constant data at file offset {offset} holds {actual} \
         bytes, but shape {shape:?} of {dtype} needs {expected}"
    )]
    DataSizeMismatch {
        block: BlockId,
        tensor: TensorIndex,
        name: String,
        shape: Vec<i32>,
        dtype: String,
        offset: usize,
        expected: usize,
        actual: usize,
    },

    #[error(
        "{block} shape {name:?}: rank {rank} needs {expected} bytes of int64 data, the data at \
         file offset {offset} holds {actual}"
    )]
    ShapeDataSize {
        block: BlockId,
        name: String,
        rank: u32,
        offset: usize,
        expected: usize,
        actual: usize,
    },
}

/// Why a parsed TOSA model could not be lowered to the npuc IR.
///
/// Operator errors carry the block, operator index, TOSA operator name and (where one is at
/// fault) the operand name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LowerError {
    #[error("the model has no region with a basic block to lower")]
    NoBlock,

    #[error(
        "the model has {regions} regions / {blocks} blocks; only a single-block graph is lowered"
    )]
    MultipleBlocks { regions: usize, blocks: usize },

    #[error("TOSA version {version} is not supported (1.0 expected)")]
    UnsupportedVersion { version: String },

    #[error("{at}: {reason}")]
    Op { at: OpAt, reason: String },

    #[error("{at}: operand {operand:?}: {reason}")]
    Operand {
        at: OpAt,
        operand: String,
        reason: String,
    },

    #[error("{at}: operator {op} is not in the TOSA 1.0 PRO-INT (+EXT-INT16, EXT-INT4, EXT-DOUBLEROUND) profile lowered here")]
    UnsupportedOperator { at: OpAt, op: String },

    #[error("{block} tensor {name:?}: {reason}")]
    Tensor {
        block: BlockId,
        name: String,
        reason: String,
    },

    #[error("{block}: graph output {name:?} is never produced (not a graph input, constant or operator output)")]
    OutputNotProduced { block: BlockId, name: String },

    #[error("{block}: tensor {name:?} is produced by operators {first} and {second}")]
    ProducedTwice {
        block: BlockId,
        name: String,
        first: OperatorId,
        second: OperatorId,
    },

    #[error("{block}: operator {op} reads {name:?} before any operator produces it (or it is never produced)")]
    NotYetProduced {
        block: BlockId,
        op: OperatorId,
        name: String,
    },

    #[error("lowered graph is invalid: {0}")]
    Invalid(#[from] npuc_ir::ValidationError),

    #[error("building the IR graph failed: {0}")]
    Graph(#[from] npuc_ir::GraphError),
}

/// Names an operator in lowering errors: `region 0 block 0 ("main") operator 4 (CONV2D)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpAt {
    pub block: BlockId,
    pub op: OperatorId,
    /// TOSA operator name.
    pub kind: String,
}

impl core::fmt::Display for OpAt {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} operator {} ({})", self.block, self.op, self.kind)
    }
}
