//! Errors of the TFLite reader.

use core::fmt;

use crate::ids::{BufferId, OpId, SubgraphId, TensorId};

/// Names a tensor in error messages: `subgraph 0 tensor 3 "conv/weights"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorRef {
    pub subgraph: SubgraphId,
    pub tensor: TensorId,
    pub name: String,
}

impl fmt::Display for TensorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "subgraph {} tensor {} {:?}",
            self.subgraph, self.tensor, self.name
        )
    }
}

/// Names an operator in error messages: `subgraph 0 operator 5 (CONV_2D)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRef {
    pub subgraph: SubgraphId,
    pub op: OpId,
    /// Opcode name (`CONV_2D`, or the custom code), empty when unknown.
    pub opcode: String,
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "subgraph {} operator {}", self.subgraph, self.op)?;
        if !self.opcode.is_empty() {
            write!(f, " ({})", self.opcode)?;
        }
        Ok(())
    }
}

/// Everything that can be wrong with a TFLite file, or with a Vela artifact inside one.
///
/// Every variant names the offending object (tensor, operator, buffer, metadata entry) and,
/// where known, the byte offset in the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TfliteError {
    #[error("truncated or not a TFLite file: {len} bytes, too short for a TFLite flatbuffer (at least 8 needed)")]
    TooShort { len: usize },

    #[error("file identifier at byte 4 is {found:?}, expected \"TFL3\" (not a TFLite file)")]
    WrongIdentifier { found: String },

    /// The flatbuffer does not verify: a truncated file, or not a TFLite file at all.
    #[error("{problem}")]
    InvalidFlatbuffer {
        /// What the verifier found, in terms of the file (one line).
        problem: String,
    },

    #[error("model has no subgraphs")]
    NoSubgraphs,

    #[error(
        "buffer {buffer}: data at file offset {offset} with size {size} is past the end of the \
         {file_len}-byte file"
    )]
    BufferOutOfFile {
        buffer: BufferId,
        offset: u64,
        size: u64,
        file_len: usize,
    },

    #[error(
        "buffer {buffer}: has both inline data ({inline_len} bytes) and out-of-flatbuffer data \
         (offset {offset}, size {size})"
    )]
    AmbiguousBuffer {
        buffer: BufferId,
        inline_len: usize,
        offset: u64,
        size: u64,
    },

    #[error("{at}: buffer index {buffer} out of range (model has {num_buffers} buffers)")]
    BufferIndexOutOfRange {
        at: TensorRef,
        buffer: u32,
        num_buffers: usize,
    },

    #[error("{at}: unknown tensor type code {code}")]
    UnknownTensorType { at: TensorRef, code: i8 },

    #[error("{at}: invalid shape {shape:?}: {reason}")]
    InvalidShape {
        at: TensorRef,
        shape: Vec<i32>,
        reason: String,
    },

    #[error(
        "{at}: buffer {buffer} holds {actual} bytes, but shape {shape:?} of {dtype} needs \
         {expected} bytes"
    )]
    DataSizeMismatch {
        at: TensorRef,
        buffer: BufferId,
        shape: Vec<i32>,
        dtype: crate::TensorType,
        expected: usize,
        actual: usize,
    },

    #[error("{at}: invalid quantization: {reason}")]
    InvalidQuantization { at: TensorRef, reason: String },

    #[error(
        "{at}: dynamic shape {shape:?} (signature {signature:?}) where a static shape is required"
    )]
    DynamicShape {
        at: TensorRef,
        shape: Vec<i32>,
        signature: Option<Vec<i32>>,
    },

    #[error("subgraph {subgraph}: {context} refers to tensor {index}, out of range ({num_tensors} tensors)")]
    TensorIndexOutOfRange {
        subgraph: SubgraphId,
        context: String,
        index: i64,
        num_tensors: usize,
    },

    #[error("subgraph {subgraph} operator {op}: opcode index {index} out of range ({num_opcodes} operator codes)")]
    OpcodeIndexOutOfRange {
        subgraph: SubgraphId,
        op: OpId,
        index: u32,
        num_opcodes: usize,
    },

    #[error(
        "{at}: custom options at file offset {offset} with size {size} are past the end of the \
         {file_len}-byte file"
    )]
    CustomOptionsOutOfFile {
        at: OpRef,
        offset: u64,
        size: u64,
        file_len: usize,
    },

    #[error(
        "metadata {name:?}: buffer index {buffer} out of range (model has {num_buffers} buffers)"
    )]
    MetadataBufferOutOfRange {
        name: String,
        buffer: u32,
        num_buffers: usize,
    },

    #[error("{context}: subgraph index {index} out of range ({num_subgraphs} subgraphs)")]
    SubgraphIndexOutOfRange {
        context: String,
        index: u32,
        num_subgraphs: usize,
    },

    #[error("OfflineMemoryAllocation metadata: {reason}")]
    OfflineMemoryAllocation { reason: String },

    #[error("{at}: not a valid ethos-u operator: {reason}")]
    EthosU { at: OpRef, reason: String },
}

impl TfliteError {
    /// The verifier's finding on a `file_len`-byte file, said in terms of the file: an
    /// offset past its end means it is truncated (or not a TFLite file at all).
    pub fn invalid_flatbuffer(e: &flatbuffers::InvalidFlatbuffer, file_len: usize) -> TfliteError {
        let problem = match e {
            flatbuffers::InvalidFlatbuffer::RangeOutOfBounds { range, .. }
                if range.end > file_len =>
            {
                format!(
                    "truncated or not a TFLite file: the flatbuffer refers to bytes {}..{} of a {file_len}-byte file",
                    range.start, range.end
                )
            }
            flatbuffers::InvalidFlatbuffer::ApparentSizeTooLarge => format!(
                "truncated or not a TFLite file: the flatbuffer does not fit the {file_len}-byte file"
            ),
            other => {
                let text = other.to_string();
                format!(
                    "not a TFLite file (or a corrupted one): the flatbuffer does not verify ({})",
                    text.lines().next().unwrap_or("").trim().trim_end_matches('.')
                )
            }
        };
        TfliteError::InvalidFlatbuffer { problem }
    }
}
