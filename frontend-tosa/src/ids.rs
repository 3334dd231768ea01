//! Typed indices into a parsed TOSA model.

use core::fmt;

/// A basic block: region index, block index within the region and the block's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockId {
    pub region: usize,
    pub block: usize,
    pub name: String,
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "region {} block {} ({:?})",
            self.region, self.block, self.name
        )
    }
}

/// Index of a tensor in its block's `tensors` vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorIndex(pub usize);

impl fmt::Display for TensorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Index of an operator in its block's `operators` vector (execution order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperatorId(pub usize);

impl fmt::Display for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
