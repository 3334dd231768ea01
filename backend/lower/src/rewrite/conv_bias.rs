//! A convolution whose bias is not a constant (a graph input or a computed tensor), as the
//! same convolution with a zero bias followed by an ADD of the bias (a graph rewrite before
//! lowering, decision L37).
//!
//! The NPU reads biases from the scale/bias stream, which is built at compile time. TOSA
//! §2.3: `acc = bias[oc] + Σ (in - input_zp) * (w - weight_zp)`, on i32 for i8 inputs; the
//! same terms with the bias added last:
//!
//! ```text
//! acc = ADD(CONV(x, w, 0), RESHAPE(bias, [1, .., 1, OC or 1]))
//! ```
//!
//! The convolution's raw i32 accumulator is then a tensor of its own (decision L36) and the
//! ADD a plain i32 elementwise ADD with broadcast; a RESCALE that read the accumulator now
//! reads the ADD. A 48-bit bias (i16 inputs) the same way: the ADD is then on i48, which
//! the NPU runs on its 48-bit accumulator (`conv::bias48`, decision L50).

use super::{dtype, graph_err, is_constant};
use crate::LowerError;
use npuc_ir::{DType, Graph, Op, OpId, ReshapeAttrs, TensorData};

/// `g` with every convolution-family operator whose bias is not a constant rewritten, or
/// `None` if it has none.
pub(super) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let convs: Vec<OpId> = g
        .op_ids()
        .filter(|&o| {
            let Some(n) = g.op(o) else { return false };
            let conv = matches!(
                n.op,
                Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::TransposeConv2d(_) | Op::Conv3d(_)
            );
            let acc = dtype(g, n.outputs()[0]);
            conv && n.inputs().len() >= 3
                && !is_constant(g, n.inputs()[2])
                && matches!(acc, Some(DType::Int32 | DType::Int48))
                && dtype(g, n.inputs()[2]) == acc
        })
        .collect();
    if convs.is_empty() {
        return Ok(None);
    }
    let mut g = g.clone();
    for o in convs {
        one(&mut g, o)?;
    }
    Ok(Some(g))
}

fn one(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let node = g
        .op(o)
        .ok_or_else(|| graph_err("convolution vanished"))?
        .clone();
    let name = node.name.clone();
    let (b, acc) = (node.inputs()[2], node.outputs()[0]);
    let bias_dims = g
        .tensor(b)
        .map(|t| t.ty.shape.dims().to_vec())
        .ok_or_else(|| graph_err("bias"))?;
    let rank = g
        .tensor(acc)
        .map(|t| t.ty.shape.dims().len())
        .ok_or_else(|| graph_err("accumulator"))?;
    let n: usize = bias_dims.iter().product();
    let bias_dtype = dtype(g, b).ok_or_else(|| graph_err("bias"))?;
    let zeros = TensorData::from_i64(bias_dtype, &vec![0; n]).map_err(graph_err)?;
    let zero = g
        .add_const(format!("{name}/zero_bias"), bias_dims, zeros)
        .map_err(graph_err)?;
    g.remove_op(o).map_err(graph_err)?;
    let mut inputs = node.inputs().to_vec();
    inputs[2] = zero;
    let (_, sum) = g
        .add_op_inferred(name.clone(), node.op.clone(), &inputs)
        .map_err(graph_err)?;
    let mut shape = vec![1; rank];
    shape[rank - 1] = n;
    let (_, bias) = g
        .add_op_inferred(
            format!("{name}/bias_shape"),
            Op::Reshape(ReshapeAttrs {
                shape: shape.into(),
            }),
            &[b],
        )
        .map_err(graph_err)?;
    g.add_op(format!("{name}/bias"), Op::Add, &[sum, bias], &[acc])
        .map_err(graph_err)?;
    Ok(())
}
