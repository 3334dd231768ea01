//! REDUCE_SUM over an axis followed by axes of extent above 1, as `TRANSPOSE (the axis
//! last) -> REDUCE_SUM (last axis) -> RESHAPE` (a graph rewrite before lowering).
//!
//! The NPU sums along the depth only (POOL reduce_sum, the one pool mode that reads i32), and
//! a feature map's channels are always contiguous, so the reduced axis must become the
//! innermost. The sums are of the same elements (i32 addition is associative, wrapping or
//! not), and dropping the reduced unit axis does not change the order of the results, so the
//! RESHAPE is a view. REDUCE_SUMs of a MEAN chain (an exact widening of an i8 or i16 tensor,
//! REDUCE_SUMs, one per-tensor RESCALE: TFLite's MEAN / SUM) are left to the convolution
//! lowering, which reduces any axes.

use crate::reduce::reduction::mean_applies;
use crate::LowerError;
use npuc_ir::{AxisAttrs, Graph, Op, OpId, ReshapeAttrs, Shape, TransposeAttrs};

/// Whether the REDUCE_SUM reading `t` continues a MEAN chain ([`mean_applies`] on the chain's
/// first REDUCE_SUM), which the convolution lowering reduces whole.
fn in_mean_chain(g: &Graph, mut t: npuc_ir::TensorId, o: OpId) -> bool {
    let mut first = o;
    while let Some(p) = g.producer(t) {
        match g.op(p).map(|n| &n.op) {
            Some(Op::ReduceSum(_)) => {
                first = p;
                t = g.op(p).expect("producer").inputs()[0];
            }
            _ => break,
        }
    }
    mean_applies(g, first)
}

/// `g` with every REDUCE_SUM over an inner axis rewritten, or `None` if it has none.
pub(crate) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let dims = |t| {
        g.tensor(t)
            .map(|x| x.ty.shape.0.clone())
            .unwrap_or_default()
    };
    let todo: Vec<OpId> = g
        .op_ids()
        .filter(|&o| {
            let n = g.op(o).expect("op");
            let Op::ReduceSum(a) = &n.op else {
                return false;
            };
            let x = n.inputs()[0];
            !in_mean_chain(g, x, o) && dims(x)[a.axis + 1..].iter().any(|&e| e != 1)
        })
        .collect();
    if todo.is_empty() {
        return Ok(None);
    }
    let err = |e: npuc_ir::GraphError| LowerError::Graph(e.to_string());
    let mut g = g.clone();
    for o in todo {
        let node = g.op(o).expect("REDUCE_SUM").clone();
        let Op::ReduceSum(AxisAttrs { axis }) = node.op else {
            unreachable!("not a REDUCE_SUM")
        };
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        let rank = g.tensor(x).expect("input").ty.shape.0.len();
        let name = node.name.clone();
        g.remove_op(o).map_err(err)?;
        let mut perms: Vec<usize> = (0..rank).filter(|&i| i != axis).collect();
        perms.push(axis);
        let (_, t) = g
            .add_op_inferred(
                format!("{name}/axis_last"),
                Op::Transpose(TransposeAttrs { perms }),
                &[x],
            )
            .map_err(err)?;
        let (_, s) = g
            .add_op_inferred(
                format!("{name}/sum"),
                Op::ReduceSum(AxisAttrs { axis: rank - 1 }),
                &[t],
            )
            .map_err(err)?;
        let shape = Shape::new(g.tensor(y).expect("output").ty.shape.0.clone());
        g.add_op(name, Op::Reshape(ReshapeAttrs { shape }), &[s], &[y])
            .map_err(err)?;
    }
    Ok(Some(g))
}
