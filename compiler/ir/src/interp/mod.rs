//! The reference interpreter: exact integer semantics for every operator.
//!
//! [`run`] validates the graph, executes the operators in [`Graph::topo_order`] and returns
//! the value of every graph input and every operator output, in execution order, keyed by
//! [`TensorId`]. It defines the expected bytes for compiled models: a compiled model is
//! correct when its outputs equal these, and the first divergent intermediate localises a bug.
//!
//! Semantics follow the TOSA 1.0 pseudocode. Where TOSA says `REQUIRE` (the result would be
//! unpredictable: overflow, a shift out of range, an index out of bounds, ...) the interpreter
//! stops with [`InterpError::Undefined`] naming the operator; it never panics or wraps silently.

mod array;
mod conv;
mod convert;
mod elementwise;
mod float;
mod layout;
mod pool;
mod reduce;
mod resize;

use crate::data::TensorValue;
use crate::graph::{Graph, OpId, TensorId};
use crate::ops::Op;
use crate::types::{DType, TensorType};
use crate::validate::{validate, ValidationError};
use array::{Arr, Undef};
use indexmap::IndexMap;
use std::collections::HashMap;
use thiserror::Error;

/// Values of the graph inputs and of every operator output, in execution order.
pub type Values = IndexMap<TensorId, TensorValue>;

/// Why the interpreter stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InterpError {
    /// The graph failed validation.
    #[error("invalid graph: {0}")]
    Invalid(#[from] ValidationError),
    /// The number of input values differs from the number of graph inputs.
    #[error("the graph has {expected} inputs, {actual} values were given")]
    InputCount { expected: usize, actual: usize },
    /// An input value has the wrong element type or shape.
    #[error("input {tensor} '{name}' is {expected}, the value given is {actual}")]
    InputType {
        tensor: TensorId,
        name: String,
        expected: TensorType,
        actual: TensorType,
    },
    /// A data-dependent precondition (TOSA `REQUIRE`) failed: the result is undefined.
    #[error("op {op} '{name}' ({kind}): undefined result: {message}")]
    Undefined {
        op: OpId,
        name: String,
        kind: &'static str,
        message: String,
    },
    /// A graph output has no value (cannot happen for a validated graph).
    #[error("output {tensor} has no value")]
    MissingValue { tensor: TensorId },
    /// An interpreter bug (a value outside its declared type); please report.
    #[error("op {op} '{name}': internal error: {message}")]
    Internal {
        op: OpId,
        name: String,
        message: String,
    },
}

/// Runs `graph` on `inputs` (one value per graph input, in [`Graph::inputs`] order).
///
/// Returns the values of the graph inputs followed by every operator output in execution
/// order. Constants are not included (read them from the graph).
pub fn run(graph: &Graph, inputs: Vec<TensorValue>) -> Result<Values, InterpError> {
    validate(graph)?;
    if inputs.len() != graph.inputs().len() {
        return Err(InterpError::InputCount {
            expected: graph.inputs().len(),
            actual: inputs.len(),
        });
    }
    let mut live: HashMap<TensorId, Arr> = HashMap::new();
    let mut results = Values::new();
    for (&t, v) in graph.inputs().iter().zip(inputs) {
        let decl = graph.tensor(t).map(|x| x.ty.clone());
        if decl.as_ref() != Some(&v.tensor_type()) {
            return Err(InterpError::InputType {
                tensor: t,
                name: graph.tensor(t).map(|x| x.name.clone()).unwrap_or_default(),
                expected: decl.unwrap_or_else(|| v.tensor_type()),
                actual: v.tensor_type(),
            });
        }
        live.insert(t, to_arr(&v));
        results.insert(t, v);
    }
    // Validation succeeded, so topo_order cannot fail.
    let order = graph.topo_order().unwrap_or_default();
    // Uses left of each tensor: its i64 working copy is dropped after its last use, so the
    // interpreter holds only the live tensors in i64 (the typed values are the results).
    let mut uses_left: HashMap<TensorId, usize> = HashMap::new();
    for &o in &order {
        for &t in graph.op(o).map(|n| n.inputs()).unwrap_or_default() {
            *uses_left.entry(t).or_default() += 1;
        }
    }
    for o in order {
        let Some(node) = graph.op(o) else { continue };
        let internal = |message: String| InterpError::Internal {
            op: o,
            name: node.name.clone(),
            message,
        };
        for &t in node.inputs() {
            if let std::collections::hash_map::Entry::Vacant(slot) = live.entry(t) {
                // Not computed and not an input: a constant, converted on first use.
                let tensor = graph
                    .tensor(t)
                    .ok_or_else(|| internal(format!("no tensor {t}")))?;
                let data = tensor
                    .data
                    .as_ref()
                    .ok_or_else(|| internal(format!("operand {t} has no value")))?;
                slot.insert(Arr {
                    shape: tensor.ty.shape.0.clone(),
                    data: data.to_i64_vec(),
                });
            }
        }
        let ins: Vec<&Arr> = node.inputs().iter().filter_map(|t| live.get(t)).collect();
        let dts: Vec<DType> = node
            .inputs()
            .iter()
            .filter_map(|&t| graph.tensor(t).map(|x| x.ty.dtype))
            .collect();
        let out_t = node
            .outputs()
            .first()
            .copied()
            .ok_or_else(|| internal("no output".into()))?;
        let out_ty = graph
            .tensor(out_t)
            .map(|x| x.ty.clone())
            .ok_or_else(|| internal("missing output tensor".into()))?;
        let data =
            eval(&node.op, &ins, &dts, &out_ty).map_err(|message| InterpError::Undefined {
                op: o,
                name: node.name.clone(),
                kind: node.op.kind(),
                message,
            })?;
        let value = TensorValue::from_i64(out_ty.dtype, out_ty.shape.clone(), &data)
            .map_err(|e| internal(e.to_string()))?;
        drop(ins);
        for &t in node.inputs() {
            if let Some(n) = uses_left.get_mut(&t) {
                *n -= 1;
                if *n == 0 {
                    live.remove(&t);
                }
            }
        }
        if uses_left.get(&out_t).is_some_and(|&n| n > 0) {
            live.insert(
                out_t,
                Arr {
                    shape: out_ty.shape.0.clone(),
                    data,
                },
            );
        }
        results.insert(out_t, value);
    }
    Ok(results)
}

/// Runs `graph` and returns only the graph outputs, in [`Graph::outputs`] order.
pub fn run_outputs(
    graph: &Graph,
    inputs: Vec<TensorValue>,
) -> Result<Vec<TensorValue>, InterpError> {
    let values = run(graph, inputs)?;
    graph
        .outputs()
        .iter()
        .map(|&t| {
            values
                .get(&t)
                .cloned()
                .or_else(|| {
                    let x = graph.tensor(t)?;
                    TensorValue::new(x.ty.shape.clone(), x.data.clone()?).ok()
                })
                .ok_or(InterpError::MissingValue { tensor: t })
        })
        .collect()
}

/// The first tensor, in `expected`'s (execution) order, whose value in `actual` differs.
/// Tensors missing from `actual` are skipped, so `actual` may hold just the tensors a compiled
/// model exposes.
pub fn first_mismatch(expected: &Values, actual: &Values) -> Option<TensorId> {
    expected
        .iter()
        .find(|(t, v)| actual.get(*t).is_some_and(|a| a != *v))
        .map(|(t, _)| *t)
}

fn to_arr(v: &TensorValue) -> Arr {
    Arr {
        shape: v.shape().0.clone(),
        data: v.to_i64_vec(),
    }
}

fn eval(op: &Op, ins: &[&Arr], dts: &[DType], out: &TensorType) -> Result<Vec<i64>, Undef> {
    match op {
        Op::Conv2d(_)
        | Op::DepthwiseConv2d(_)
        | Op::Conv3d(_)
        | Op::TransposeConv2d(_)
        | Op::FullyConnected(_)
        | Op::MatMul(_) => conv::eval(op, ins, out),
        Op::AvgPool2d(_) | Op::MaxPool2d(_) => pool::eval(op, ins, dts, out),
        Op::ArgMax(_)
        | Op::ReduceAll(_)
        | Op::ReduceAny(_)
        | Op::ReduceMax(_)
        | Op::ReduceMin(_)
        | Op::ReduceSum(_) => reduce::eval(op, ins, dts, out),
        Op::Concat(_)
        | Op::Pad(_)
        | Op::Reshape(_)
        | Op::Reverse(_)
        | Op::Slice(_)
        | Op::Tile(_)
        | Op::Transpose(_)
        | Op::Gather
        | Op::Scatter
        | Op::Identity => layout::eval(op, ins, out),
        Op::Resize(_) => resize::eval(op, ins, out),
        Op::Cast(_) | Op::Rescale(_) => convert::eval(op, ins, dts, out),
        Op::Float(f) => float::eval(f, ins, out),
        _ => elementwise::eval(op, ins, dts, out),
    }
}
