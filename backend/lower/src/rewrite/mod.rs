//! The IR-to-IR rewrites that run before lowering, as named passes in a fixed order.
//!
//! Each pass turns operators the NPU has no direct form for into IR operators that the
//! lowering of `super` handles, and returns `None` when the graph has nothing to rewrite (the
//! graph is then used as it is). The rewritten graphs compute the same values: every module
//! says why.

mod argmax_i16;
mod broadcast_tile;
mod builder;
mod conv3d;
mod conv_bias;
mod conv_runtime_weights;
mod negate;
mod reduce_sum_axis;
mod tconv_rows;

use crate::LowerError;
use npuc_ir::{DType, Graph, Op, TensorData, TensorId};

/// One rewrite: the rewritten graph, or `None` when nothing in the graph matched.
pub(crate) type Rewrite = fn(&Graph) -> Result<Option<Graph>, LowerError>;

/// The rewrites, by name, in the order they run.
pub(crate) const PASSES: &[(&str, Rewrite)] = &[
    // The bias is read from the scale/bias stream built at compile time: a convolution whose
    // bias is not a constant becomes the convolution with a zero bias and an i32 ADD of the
    // bias after it (`conv_bias`, decision L37).
    ("conv-bias-as-add", conv_bias::rewrite),
    // CONV3D has no NPU kernel: it becomes one CONV2D over a batch of the output depths
    // whose input channels hold the depth taps (`conv3d`).
    ("conv3d-as-batched-conv2d", conv3d::rewrite),
    // Weights that are graph data cannot go through the weight decoder: padding becomes a PAD
    // with the input zero point, batches one convolution per image joined by a CONCAT,
    // DEPTHWISE a CONV2D with weights built at run time and TRANSPOSE_CONV2D a stride-1
    // CONV2D over the zero-inserted input, all for the matrix-product lowering of
    // `conv::dynamic_weights` (`conv_runtime_weights`, decision L38).
    ("conv-runtime-weights-prep", conv_runtime_weights::rewrite),
    // NEGATE has no elementwise mode: it becomes `RESCALE -> SUB from 0 -> RESCALE`, which
    // the elementwise SUB lowering (with its fused rescales) runs (`negate`).
    ("negate-as-sub", negate::rewrite),
    // The argmax pool cannot rank i16 values: an i16 ARGMAX becomes `REDUCE_MAX -> EQUAL ->
    // ARGMAX of the i8 matches` (`argmax_i16`).
    ("argmax-i16-via-matches", argmax_i16::rewrite),
    // The NPU sums along the depth only: a REDUCE_SUM over an outer axis becomes `TRANSPOSE
    // (the axis last) -> REDUCE_SUM -> RESHAPE` (`reduce_sum_axis`).
    ("reduce-sum-axis-last", reduce_sum_axis::rewrite),
    // An elementwise operation sees (H, W, C): operands whose broadcast axes do not fold into
    // three groups are first expanded by a TILE (`broadcast_tile`). Last, so that it sees the
    // elementwise operators the passes before it made.
    ("tile-broadcast-operands", broadcast_tile::rewrite),
];

/// Runs [`PASSES`] in order on `g`: the rewritten graph (`None`: no pass matched) and the
/// names of the passes that rewrote it.
pub(crate) fn run(g: &Graph) -> Result<(Option<Graph>, Vec<&'static str>), LowerError> {
    let mut rewritten: Option<Graph> = None;
    let mut applied = Vec::new();
    for &(name, pass) in PASSES {
        if let Some(next) = pass(rewritten.as_ref().unwrap_or(g))? {
            rewritten = Some(next);
            applied.push(name);
        }
    }
    Ok((rewritten, applied))
}

// Helpers the passes share.

/// A malformed graph met while rewriting.
fn graph_err(e: impl std::fmt::Display) -> LowerError {
    LowerError::Graph(e.to_string())
}

fn dtype(g: &Graph, t: TensorId) -> Option<DType> {
    g.tensor(t).map(|x| x.ty.dtype)
}

fn dims(g: &Graph, t: TensorId) -> Vec<usize> {
    g.tensor(t)
        .map(|x| x.ty.shape.0.clone())
        .unwrap_or_default()
}

/// The data of a constant, also through RESHAPE/IDENTITY chains.
fn const_data(g: &Graph, mut t: TensorId) -> Option<&TensorData> {
    loop {
        let x = g.tensor(t)?;
        if let Some(d) = &x.data {
            return Some(d);
        }
        let p = g.op(g.producer(t)?)?;
        match p.op {
            Op::Reshape(_) | Op::Identity => t = p.inputs()[0],
            _ => return None,
        }
    }
}

/// A constant, also through RESHAPE/IDENTITY chains.
fn is_constant(g: &Graph, t: TensorId) -> bool {
    const_data(g, t).is_some()
}
