//! ARGMAX of an i16 tensor as `REDUCE_MAX -> EQUAL -> ARGMAX of the matches` (a graph rewrite
//! before lowering).
//!
//! The argmax pool keeps `v + 65536 * k` of the first strict maximum, but its accumulator
//! starts at -2^31, whose low half is 0: a value is only taken if it exceeds 0 (decision #6
//! of the semantics digest). For i8 a zero point of -128 lifts every value to `x + 128 >= 0`;
//! an i16 value has no such headroom in the pool's 16-bit comparison. So the maximum `m` of
//! each reduced line is found first (a max pool), then `x == m` marks its positions (bytes 0 /
//! 1), and the i8 argmax of the marks (read with zero point -128: 128 / 129) gives the first
//! marked position, which is TOSA §2.3.1's first index of the maximum.

use crate::LowerError;
use npuc_ir::{AxisAttrs, CastAttrs, DType, Graph, Op, OpId};

/// `g` with every ARGMAX of i16 replaced, or `None` if it has none.
pub(crate) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let todo: Vec<OpId> = g
        .op_ids()
        .filter(|&o| {
            let n = g.op(o).expect("op");
            matches!(n.op, Op::ArgMax(_))
                && g.tensor(n.inputs()[0]).map(|t| t.ty.dtype) == Some(DType::Int16)
        })
        .collect();
    if todo.is_empty() {
        return Ok(None);
    }
    let err = |e: npuc_ir::GraphError| LowerError::Graph(e.to_string());
    let mut g = g.clone();
    for o in todo {
        let node = g.op(o).expect("ARGMAX").clone();
        let Op::ArgMax(AxisAttrs { axis }) = node.op else {
            unreachable!("not an ARGMAX")
        };
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        let name = node.name.clone();
        g.remove_op(o).map_err(err)?;
        let max = Op::ReduceMax(AxisAttrs { axis });
        let (_, m) = g
            .add_op_inferred(format!("{name}/max"), max, &[x])
            .map_err(err)?;
        let (_, eq) = g
            .add_op_inferred(format!("{name}/is_max"), Op::Equal, &[x, m])
            .map_err(err)?;
        let cast = Op::Cast(CastAttrs { to: DType::Int8 });
        let (_, marks) = g
            .add_op_inferred(format!("{name}/marks"), cast, &[eq])
            .map_err(err)?;
        g.add_op(name, Op::ArgMax(AxisAttrs { axis }), &[marks], &[y])
            .map_err(err)?;
    }
    Ok(Some(g))
}
