//! The graph-building steps the convolution rewrites share: operators named after the
//! operator they replace (`{name}/{suffix}`), each with its output type inferred, and the
//! insertion of `s - 1` constant elements after every element of one axis by a PAD of a
//! reshaped view (L38's zero-inserted input, L49's zero-inserted columns).

use super::graph_err;
use crate::LowerError;
use npuc_ir::{
    Graph, Op, OpId, OpNode, PadAttrs, ReshapeAttrs, TensorId, TransposeAttrs, TransposeConvAttrs,
};

/// TRANSPOSE_CONV2D `o` of `g`, which a rewrite replaces: its node (a copy) and attributes.
pub(super) fn transpose_conv(
    g: &Graph,
    o: OpId,
) -> Result<(OpNode, TransposeConvAttrs), LowerError> {
    let node = g
        .op(o)
        .ok_or_else(|| graph_err("TRANSPOSE_CONV2D vanished"))?
        .clone();
    let Op::TransposeConv2d(a) = &node.op else {
        return Err(graph_err("not a TRANSPOSE_CONV2D"));
    };
    let a = a.clone();
    Ok((node, a))
}

/// Adds the operators of a rewrite of operator `name`.
pub(super) struct Builder<'n> {
    name: &'n str,
}

impl<'n> Builder<'n> {
    /// The builder of the rewrite of operator `name`.
    pub(super) fn new(name: &'n str) -> Self {
        Builder { name }
    }

    /// `op` on `ins` as operator `{name}/{suffix}`: its output tensor.
    pub(super) fn add(
        &self,
        g: &mut Graph,
        suffix: &str,
        op: Op,
        ins: &[TensorId],
    ) -> Result<TensorId, LowerError> {
        g.add_op_inferred(format!("{}/{suffix}", self.name), op, ins)
            .map(|(_, t)| t)
            .map_err(graph_err)
    }

    /// `t` reshaped to `shape`.
    pub(super) fn reshape(
        &self,
        g: &mut Graph,
        suffix: &str,
        t: TensorId,
        shape: Vec<usize>,
    ) -> Result<TensorId, LowerError> {
        let attrs = ReshapeAttrs {
            shape: shape.into(),
        };
        self.add(g, suffix, Op::Reshape(attrs), &[t])
    }

    /// `t` padded by `padding` (`[before, after]` per axis) with `value`.
    pub(super) fn pad(
        &self,
        g: &mut Graph,
        suffix: &str,
        t: TensorId,
        padding: Vec<[usize; 2]>,
        value: i64,
    ) -> Result<TensorId, LowerError> {
        let attrs = PadAttrs {
            padding,
            pad_const: value,
        };
        self.add(g, suffix, Op::Pad(attrs), &[t])
    }

    /// `t` transposed by `perms`.
    pub(super) fn transpose(
        &self,
        g: &mut Graph,
        suffix: &str,
        t: TensorId,
        perms: Vec<usize>,
    ) -> Result<TensorId, LowerError> {
        self.add(g, suffix, Op::Transpose(TransposeAttrs { perms }), &[t])
    }

    /// `t` with `s - 1` elements of `value` inserted after every element of one axis: `t`
    /// read as `[outer, len, 1, inner]` (the axis is `len`), padded along the unit axis to
    /// `s`, which is `[outer, len * s, inner]` in memory, read as `shape`. The operators are
    /// `{what}`, `{what}_inserted` and `{what}_upscaled`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_after(
        &self,
        g: &mut Graph,
        what: &str,
        t: TensorId,
        [outer, len, inner]: [usize; 3],
        s: usize,
        value: i64,
        shape: Vec<usize>,
    ) -> Result<TensorId, LowerError> {
        let t = self.reshape(g, what, t, vec![outer, len, 1, inner])?;
        let padding = vec![[0, 0], [0, 0], [0, s - 1], [0, 0]];
        let t = self.pad(g, &format!("{what}_inserted"), t, padding, value)?;
        self.reshape(g, &format!("{what}_upscaled"), t, shape)
    }
}
