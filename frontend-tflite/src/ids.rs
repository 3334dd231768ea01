//! Typed indices into a [`TfliteModel`](crate::TfliteModel).
//!
//! TFLite refers to everything by position in a flatbuffer vector. These newtypes keep the
//! different index spaces apart: a [`TensorId`] and an [`OpId`] are positions inside one
//! subgraph, a [`SubgraphId`], [`BufferId`] and [`OpcodeId`] positions in the model.
//! Every id stored in a parsed model has been range-checked against its vector.

use core::fmt;

macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(usize);

        impl $name {
            /// Wraps a raw position.
            pub const fn new(index: usize) -> Self {
                Self(index)
            }

            /// The raw position in the flatbuffer vector.
            pub const fn index(self) -> usize {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

index_type!(
    /// Position of a tensor in its subgraph's `tensors` vector.
    TensorId
);
index_type!(
    /// Position of an operator in its subgraph's `operators` vector (execution order).
    OpId
);
index_type!(
    /// Position of a subgraph in the model's `subgraphs` vector; 0 is the main graph.
    SubgraphId
);
index_type!(
    /// Position of a buffer in the model's `buffers` vector; 0 is the empty sentinel.
    BufferId
);
index_type!(
    /// Position of an operator code in the model's `operator_codes` vector.
    OpcodeId
);
