//! Weight ordering (Ethos-U85 TRM §3.9.2).
//!
//! The NPU reads weights in blocks matched to its MAC array: OFM blocks, then
//! IFM blocks (serpentine), kernel decomposition into sub-kernels, microblocks
//! of `wblk_o` output channels, kernel positions (part-kernel first, with
//! stride phases) and groups of `i_sz` input channels, with zero padding to
//! whole blocks. Output channel `o` of a microblock goes to stream
//! `(o >> 2) & (num_wd - 1)`; the fast weight decoder (FWD) reads one stream
//! merged from these in `wblk_size` pieces.
//!
//! [`WeightOrdering`] computes the order once per (parameters, shape) as a
//! plan of source indices; [`WeightOrdering::order`] applies it to weights and
//! [`WeightOrdering::unorder`] inverts it.

mod params;
mod plan;
mod weights;

pub use params::{
    DerivedBlocks, IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock,
    Operation, OrderingParams, WeightOrder, WeightSparsity,
};
pub use weights::{OhwiWeights, WeightShape};

use plan::PAD;
use thiserror::Error;

/// Why weights could not be ordered or un-ordered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum OrderingError {
    /// The parameters break a TRM constraint.
    #[error("invalid ordering parameters: {rule}")]
    InvalidParams {
        /// The rule broken.
        rule: &'static str,
    },
    /// A dimension of the weight shape is zero.
    #[error("weight shape has a zero dimension")]
    EmptyShape,
    /// Depthwise weights must have `ifm_depth == 1` (one weight per channel and position).
    #[error("depthwise weights must have ifm_depth 1, got {ifm_depth}")]
    DepthwiseIfmDepth {
        /// The shape's `ifm_depth`.
        ifm_depth: usize,
    },
    /// The weight tensor is too large to index with 32 bits.
    #[error("weight tensor too large ({len} weights)")]
    TooLarge {
        /// Number of weights.
        len: usize,
    },
    /// A value count does not match the shape.
    #[error("expected {expected} weights, got {actual}")]
    ShapeMismatch {
        /// Count the shape implies.
        expected: usize,
        /// Count given.
        actual: usize,
    },
    /// The weights' shape differs from the ordering's.
    #[error("weights have shape {actual:?}, ordering was built for {expected:?}")]
    WrongShape {
        /// The ordering's shape.
        expected: WeightShape,
        /// The weights' shape.
        actual: WeightShape,
    },
    /// Wrong number of streams given to [`WeightOrdering::unorder`].
    #[error("expected {expected} streams, got {actual}")]
    StreamCount {
        /// `num_wd`.
        expected: usize,
        /// Streams given.
        actual: usize,
    },
    /// A stream's length differs from the ordering's.
    #[error("stream {stream} has {actual} entries, ordering has {expected}")]
    StreamLength {
        /// Stream number.
        stream: usize,
        /// Entries the ordering has.
        expected: usize,
        /// Entries given.
        actual: usize,
    },
    /// A padding position holds a nonzero value.
    #[error("stream {stream} position {position} is padding but holds {value}")]
    NonZeroPadding {
        /// Stream number.
        stream: usize,
        /// Position in the stream.
        position: usize,
        /// The value found.
        value: i16,
    },
}

/// The stream order of one weight tensor shape under one set of parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightOrdering {
    params: OrderingParams,
    blocks: DerivedBlocks,
    shape: WeightShape,
    /// Per stream, the OHWI index of each entry or [`PAD`].
    streams: Vec<Vec<u32>>,
}

impl WeightOrdering {
    /// Computes the order for weights of `shape` (undilated kernel; depthwise
    /// as `[C][KH][KW][1]`, see [`OhwiWeights::from_depthwise_hwc`]).
    ///
    /// # Errors
    /// [`OrderingError`] if the parameters or shape are invalid.
    pub fn new(params: &OrderingParams, shape: WeightShape) -> Result<Self, OrderingError> {
        let blocks = Self::blocks_of(params, shape)?;
        let streams = plan::build(params, &blocks, shape);
        Ok(Self {
            params: *params,
            blocks,
            shape,
            streams,
        })
    }

    /// `weights` in the stream order of `params`: what [`Self::order`] of
    /// [`Self::new`]`(params, weights.shape())` gives, made in one walk of the loop nest
    /// without the table of source indices (for weights ordered once).
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn ordered(
        params: &OrderingParams,
        weights: &OhwiWeights,
    ) -> Result<Vec<Vec<i16>>, OrderingError> {
        let shape = weights.shape();
        let blocks = Self::blocks_of(params, shape)?;
        let v = weights.values();
        Ok(plan::build_with(params, &blocks, shape, &plan::Values(v)))
    }

    /// The number of entries (weights and padding) of each stream of weights of `shape` in
    /// `params`' order: [`Self::stream_len`] of every stream of [`Self::new`]`(params, shape)`,
    /// counted per unit of the loop nest (its blocks and kernel parts), not per entry.
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn stream_lens(
        params: &OrderingParams,
        shape: WeightShape,
    ) -> Result<Vec<usize>, OrderingError> {
        let blocks = Self::blocks_of(params, shape)?;
        Ok(plan::lengths(params, &blocks, shape))
    }

    /// The derived block sizes of `params` for `shape`, or why they cannot order it.
    fn blocks_of(
        params: &OrderingParams,
        shape: WeightShape,
    ) -> Result<DerivedBlocks, OrderingError> {
        if shape.is_empty() {
            return Err(OrderingError::EmptyShape);
        }
        if shape.len() >= PAD as usize {
            return Err(OrderingError::TooLarge { len: shape.len() });
        }
        if params.operation == Operation::Depthwise && shape.ifm_depth != 1 {
            return Err(OrderingError::DepthwiseIfmDepth {
                ifm_depth: shape.ifm_depth,
            });
        }
        params.derive(shape.kernel_height, shape.kernel_width)
    }

    /// The parameters.
    pub fn params(&self) -> &OrderingParams {
        &self.params
    }

    /// The derived block sizes (`wblk_k`, `wblk_o`, `num_wd`, ...).
    pub fn blocks(&self) -> &DerivedBlocks {
        &self.blocks
    }

    /// The weight shape.
    pub fn shape(&self) -> WeightShape {
        self.shape
    }

    /// `num_wd`: number of streams.
    pub fn num_streams(&self) -> usize {
        self.streams.len()
    }

    /// `wcnt[k]`: number of entries (weights and padding) in stream `k`.
    /// All streams have the same length.
    pub fn stream_len(&self, k: usize) -> usize {
        self.streams.get(k).map_or(0, Vec::len)
    }

    /// For each entry of stream `k`, the flat OHWI index it holds, or `None` for padding.
    pub fn stream_sources(&self, k: usize) -> impl Iterator<Item = Option<usize>> + '_ {
        self.streams
            .get(k)
            .into_iter()
            .flatten()
            .map(|&i| (i != PAD).then_some(i as usize))
    }

    /// Orders `weights` into `num_wd` streams (padding entries are 0).
    ///
    /// # Errors
    /// [`OrderingError::WrongShape`] if the weights' shape differs from the ordering's.
    pub fn order(&self, weights: &OhwiWeights) -> Result<Vec<Vec<i16>>, OrderingError> {
        if weights.shape() != self.shape {
            return Err(OrderingError::WrongShape {
                expected: self.shape,
                actual: weights.shape(),
            });
        }
        let v = weights.values();
        Ok(self
            .streams
            .iter()
            .map(|s| {
                s.iter()
                    .map(|&i| if i == PAD { 0 } else { v[i as usize] })
                    .collect()
            })
            .collect())
    }

    /// Orders `weights` into the single merged stream the FWD reads.
    ///
    /// # Errors
    /// As [`Self::order`].
    pub fn order_fwd(&self, weights: &OhwiWeights) -> Result<Vec<i16>, OrderingError> {
        Ok(self.merge_fwd(&self.order(weights)?))
    }

    /// Merges per-decoder streams into the FWD order: for each `wblk_size`
    /// piece, stream 0's piece, then stream 1's, ... (TRM §3.9.2, last listing).
    pub fn merge_fwd<T: Copy>(&self, streams: &[Vec<T>]) -> Vec<T> {
        let bs = self.blocks.wblk_size().max(1);
        let len = streams.first().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(len * streams.len());
        for start in (0..len).step_by(bs) {
            for s in streams {
                let end = (start + bs).min(s.len());
                out.extend_from_slice(s.get(start..end).unwrap_or(&[]));
            }
        }
        out
    }

    /// Splits an FWD-ordered sequence back into `num_wd` equally long
    /// per-decoder streams (inverse of [`Self::merge_fwd`]). A tail that does
    /// not fill every stream equally is dropped.
    pub fn split_fwd<T: Copy>(&self, merged: &[T]) -> Vec<Vec<T>> {
        let n = self.num_streams().max(1);
        let bs = self.blocks.wblk_size().max(1);
        let len = merged.len() / n;
        let mut out: Vec<Vec<T>> = vec![Vec::with_capacity(len); n];
        let mut at = 0;
        for start in (0..len).step_by(bs) {
            let piece = bs.min(len - start);
            for s in out.iter_mut() {
                s.extend_from_slice(&merged[at..at + piece]);
                at += piece;
            }
        }
        out
    }

    /// Rebuilds the OHWI weights from per-decoder streams (inverse of [`Self::order`]).
    ///
    /// # Errors
    /// [`OrderingError`] if the stream count or lengths differ from the
    /// ordering's or a padding entry is nonzero.
    pub fn unorder(&self, streams: &[Vec<i16>]) -> Result<OhwiWeights, OrderingError> {
        if streams.len() != self.streams.len() {
            return Err(OrderingError::StreamCount {
                expected: self.streams.len(),
                actual: streams.len(),
            });
        }
        let mut values = vec![0i16; self.shape.len()];
        for (stream, (plan, given)) in self.streams.iter().zip(streams).enumerate() {
            if plan.len() != given.len() {
                return Err(OrderingError::StreamLength {
                    stream,
                    expected: plan.len(),
                    actual: given.len(),
                });
            }
            for (position, (&src, &value)) in plan.iter().zip(given).enumerate() {
                if src == PAD {
                    if value != 0 {
                        return Err(OrderingError::NonZeroPadding {
                            stream,
                            position,
                            value,
                        });
                    }
                } else {
                    values[src as usize] = value;
                }
            }
        }
        OhwiWeights::new(self.shape, values)
    }
}
