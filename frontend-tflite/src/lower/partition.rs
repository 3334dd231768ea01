//! Lowering a subset of the main subgraph's operators on its own.
//!
//! A compiler that runs part of a TFLite graph on an accelerator and leaves the rest to the
//! CPU needs the IR of one part at a time: [`boundary`] finds the tensors a set of operators
//! reads from outside the set (its inputs) and the tensors it produces that something outside
//! the set reads (its outputs), and [`lower_ops`] lowers exactly those operators into a graph
//! whose inputs and outputs are those boundary tensors. Constants are materialised as IR
//! constants, as in [`super::lower`].

use super::{ctx, dispatch::lower_op, LowerError, LoweredGraph};
use crate::{OpId, TensorId, TfliteModel};
use std::collections::BTreeSet;

/// The boundary tensors of a set of operators of the main subgraph: graph inputs (outputs)
/// first, in the subgraph's order, then the others in first-use (production) order, so that
/// the boundary of all operators is the subgraph's own inputs and outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    /// Non-constant tensors read by the set but not produced in it.
    pub inputs: Vec<TensorId>,
    /// Tensors produced in the set and read after it (by another operator or as a graph
    /// output).
    pub outputs: Vec<TensorId>,
}

/// The boundary of `ops` (operator indices of the main subgraph, in any order).
pub fn boundary(model: &TfliteModel, ops: &[OpId]) -> Boundary {
    let sg = model.main_subgraph();
    let set: BTreeSet<OpId> = ops.iter().copied().collect();
    let mut produced = BTreeSet::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for op in sg.operators.iter().filter(|o| set.contains(&o.id)) {
        for t in op.inputs.iter().flatten() {
            let constant = sg
                .tensor(*t)
                .is_some_and(|x| model.tensor_data(x).is_some());
            if !constant && !produced.contains(t) && !inputs.contains(t) {
                inputs.push(*t);
            }
        }
        produced.extend(op.outputs.iter().copied());
    }
    let graph_first = |v: &mut Vec<TensorId>, order: &[TensorId]| {
        let mut sorted: Vec<TensorId> = order.iter().filter(|t| v.contains(t)).copied().collect();
        sorted.extend(v.iter().filter(|t| !order.contains(t)));
        *v = sorted;
    };
    graph_first(&mut inputs, &sg.inputs);
    for op in sg.operators.iter().filter(|o| set.contains(&o.id)) {
        for t in &op.outputs {
            let read_outside = sg
                .operators
                .iter()
                .filter(|o| !set.contains(&o.id))
                .any(|o| o.inputs.iter().flatten().any(|x| x == t));
            if (read_outside || sg.outputs.contains(t)) && !outputs.contains(t) {
                outputs.push(*t);
            }
        }
    }
    graph_first(&mut outputs, &sg.outputs);
    Boundary { inputs, outputs }
}

/// Lowers the operators `ops` of the main subgraph (executed in the subgraph's order) into a
/// graph with `inputs` as its inputs and `outputs` as its outputs (e.g. a [`Boundary`]).
///
/// The tensor map covers the main subgraph's tensors; only those the operators touch are
/// set. Errors are those of [`super::lower`], for the operators of the set.
pub fn lower_ops(
    model: &TfliteModel,
    ops: &[OpId],
    inputs: &[TensorId],
    outputs: &[TensorId],
) -> Result<LoweredGraph, LowerError> {
    let sg = model.main_subgraph();
    let set: BTreeSet<OpId> = ops.iter().copied().collect();
    let name = sg.name.clone().unwrap_or_else(|| "main".into());
    let mut cx = ctx::Lowerer::new(model, sg, &name);
    for &t in inputs {
        cx.add_graph_input(t)?;
    }
    for op in sg.operators.iter().filter(|o| set.contains(&o.id)) {
        let mut oc = ctx::OpCx::new(&mut cx, op);
        lower_op(&mut oc).map_err(|reason| LowerError::Operator {
            op: op.id.index(),
            opcode: op.opcode.name().into_owned(),
            reason,
        })?;
    }
    for &t in outputs {
        cx.add_graph_output(t)?;
    }
    let (graph, tensor_map) = cx.finish();
    npuc_ir::validate(&graph)?;
    Ok(LoweredGraph { graph, tensor_map })
}
