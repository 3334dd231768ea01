//! NEGATE as `RESCALE (to i32, input zero point) -> SUB from 0 -> RESCALE (saturating, output
//! zero point)`, a graph rewrite before lowering (the elementwise SUB path with its fused
//! rescales runs it).
//!
//! TOSA §2.5 NEGATE: `acc = 0 - (in - input_zp)` in i32, `out = clamp(acc + output_zp)` to the
//! output type. The RESCALEs multiply by `2^30 >> 30` (exact, no rounding), so the first is
//! `in - input_zp` and the last `acc + output_zp` saturated, which is the definition. An i32
//! NEGATE (zero points 0) is the SUB alone.

use crate::LowerError;
use npuc_ir::{DType, Graph, Op, OpId, RescaleAttrs, RescaleRounding, TensorData};

/// `g` with every NEGATE replaced, or `None` if it has none.
pub(crate) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let negs: Vec<OpId> = g
        .op_ids()
        .filter(|&o| matches!(g.op(o).map(|n| &n.op), Some(Op::Negate(_))))
        .collect();
    if negs.is_empty() {
        return Ok(None);
    }
    let mut g = g.clone();
    for o in negs {
        one(&mut g, o).map_err(|e| LowerError::Graph(e.to_string()))?;
    }
    Ok(Some(g))
}

fn identity(output_dtype: DType, input_zp: i64, output_zp: i64) -> RescaleAttrs {
    RescaleAttrs {
        input_zp,
        output_zp,
        ..RescaleAttrs::per_tensor(output_dtype, 1 << 30, 30, RescaleRounding::SingleRound)
    }
}

fn one(g: &mut Graph, o: OpId) -> Result<(), npuc_ir::GraphError> {
    let node = g.op(o).expect("NEGATE").clone();
    let Op::Negate(a) = &node.op else {
        unreachable!("not a NEGATE")
    };
    let (x, y) = (node.inputs()[0], node.outputs()[0]);
    let ty = g.tensor(x).expect("NEGATE input").ty.clone();
    let name = node.name.clone();
    g.remove_op(o)?;
    let wide = if ty.dtype == DType::Int32 {
        x
    } else {
        let r = Op::Rescale(identity(DType::Int32, a.input_zp, 0));
        g.add_op_inferred(format!("{name}/widen"), r, &[x])?.1
    };
    let ones = vec![1; ty.shape.0.len()];
    let zero = g.add_const(format!("{name}/zero"), ones, TensorData::I32(vec![0]))?;
    if ty.dtype == DType::Int32 {
        g.add_op(name, Op::Sub, &[zero, wide], &[y])?;
    } else {
        let acc = g
            .add_op_inferred(format!("{name}/sub"), Op::Sub, &[zero, wide])?
            .1;
        let r = Op::Rescale(identity(ty.dtype, 0, a.output_zp));
        g.add_op(name, r, &[acc], &[y])?;
    }
    Ok(())
}
