//! Lowering one operator of any subgraph on its own: the graph's inputs are the operator's
//! non-constant inputs, its outputs are the operator's outputs. This is how a runtime runs the
//! operators an NPU compiler left for the CPU (each between NPU operators) on the reference
//! interpreter.

use super::{ctx, dispatch::lower_op, LowerError, LoweredGraph};
use crate::{OpId, SubgraphId, TensorId, TfliteModel};

/// One operator lowered on its own, with the TFLite tensors its graph inputs and outputs
/// stand for (in the graph's order).
#[derive(Debug, Clone)]
pub struct LoweredOperator {
    /// The graph and tensor map (indexed by the subgraph's tensor ids).
    pub lowered: LoweredGraph,
    /// The TFLite tensors of the graph inputs: the operator's non-constant inputs.
    pub inputs: Vec<TensorId>,
    /// The TFLite tensors of the graph outputs: the operator's outputs.
    pub outputs: Vec<TensorId>,
}

/// Lowers operator `op` of subgraph `subgraph` alone.
pub fn lower_operator(
    model: &TfliteModel,
    subgraph: SubgraphId,
    op: OpId,
) -> Result<LoweredOperator, LowerError> {
    let err = |opcode: String, reason: String| LowerError::Operator {
        op: op.index(),
        opcode,
        reason,
    };
    let sg = model
        .subgraphs()
        .get(subgraph.index())
        .ok_or_else(|| err("?".into(), format!("subgraph {subgraph} does not exist")))?;
    let o = sg
        .operator(op)
        .ok_or_else(|| err("?".into(), format!("not in subgraph {subgraph}")))?;
    let name = format!("{}/op{}", sg.name.as_deref().unwrap_or("main"), op.index());
    let mut cx = ctx::Lowerer::new(model, sg, &name);
    let mut inputs = Vec::new();
    for &t in o.inputs.iter().flatten() {
        let constant = sg.tensor(t).is_some_and(|t| model.tensor_data(t).is_some());
        if !constant && !inputs.contains(&t) {
            cx.add_graph_input(t)?;
            inputs.push(t);
        }
    }
    let mut oc = ctx::OpCx::new(&mut cx, o);
    lower_op(&mut oc).map_err(|reason| err(o.opcode.name().into_owned(), reason))?;
    for &t in &o.outputs {
        cx.add_graph_output(t)?;
    }
    let (graph, tensor_map) = cx.finish();
    npuc_ir::validate(&graph)?;
    Ok(LoweredOperator {
        lowered: LoweredGraph { graph, tensor_map },
        inputs,
        outputs: o.outputs.clone(),
    })
}
