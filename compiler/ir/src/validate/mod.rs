//! Graph validation: structure, tensor types, and per-operator type inference.
//!
//! Element types accepted per operator (TOSA 1.0 PRO-INT + EXT-INT16, plus the extensions
//! marked *):
//!
//! | operator | inputs → output |
//! |---|---|
//! | CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, FULLY_CONNECTED* | `i8`×`i8` (+`i32` bias) → `i32`; `i16`×`i8` (+`i48` bias) → `i48` |
//! | MATMUL (rank ≥ 2, batch broadcast*) | `i8`×`i8` → `i32`; `i16`×`i16` → `i48` |
//! | AVG_POOL2D, MAX_POOL2D | `i8`, `i16` → same |
//! | ARGMAX | `i8`, `i16`, `i32`* → `i32` |
//! | CLAMP, ABS*, NEGATE, BITWISE_*, shifts, ADD*, SUB*, MAXIMUM*, MINIMUM*, REDUCE_MAX/MIN | `i8`, `i16`, `i32` → same |
//! | MUL | `i8`, `i16`, `i32` → `i32` (shift only for `i32`) |
//! | EQUAL*, GREATER*, GREATER_EQUAL* | `i8`, `i16`, `i32` → `bool` |
//! | INTDIV, CLZ, REDUCE_SUM | `i32` |
//! | LOGICAL_*, REDUCE_ALL/ANY | `bool` |
//! | TABLE | `i8` (256 × `i8`) → `i8`; `i16` (513 × `i16`) → `i32` |
//! | RESIZE | `i8` → `i8` (nearest) / `i32` (bilinear); `i16` → `i16` / `i48` |
//! | RESCALE | `i8`, `u8`*, `i16`, `u16`*, `i32`, `i48` → `i8`, `u8`*, `i16`, `u16`*, `i32` |
//! | CAST* | any → any |
//! | SELECT, CONCAT, PAD, RESHAPE, REVERSE, SLICE, TILE, TRANSPOSE, GATHER, SCATTER, IDENTITY | any (indices `i32`) |
//! | FLOAT_* ([`crate::FloatOp`])* | `f32` (DEQUANTIZE: `i8`/`u8`/`i16` → `f32`; QUANTIZE: `f32` → `i8`/`u8`/`i16`) |
//!
//! `f32` tensors are accepted only by the float operators and the data-movement operators
//! (CAST neither takes nor gives `f32`).
//!
//! (* = beyond TOSA 1.0's integer profile.) Zero points may be non-zero only for `i8`
//! operands (and, for RESCALE, 8-bit unsigned and 16-bit unsigned = 0 or 32768).

mod infer;
mod infer_float;
mod infer_layout;
mod infer_tensor;

pub use infer::{infer_output_types, InferError, MAX_ELEMENTS};
pub use infer_tensor::{accumulator_dtype, window_out};

use crate::graph::{Graph, OpId, TensorId};
use crate::quant::Quantization;
use thiserror::Error;

/// The first problem found in a graph, naming the operator and/or tensor at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    /// An operator's operands, attributes or declared outputs are wrong. `tensor` is the
    /// operand or result concerned, when one is.
    #[error("op {op} '{name}' ({kind}){}: {message}", fmt_tensor(tensor))]
    Op {
        op: OpId,
        name: String,
        kind: &'static str,
        tensor: Option<(TensorId, String)>,
        message: String,
    },
    /// A tensor is malformed (shape, constant data, quantization record, definition).
    #[error("tensor {tensor} '{name}': {message}")]
    Tensor {
        tensor: TensorId,
        name: String,
        message: String,
    },
    /// A graph-wide problem (a cycle).
    #[error("graph: {0}")]
    Graph(String),
}

fn fmt_tensor(t: &Option<(TensorId, String)>) -> String {
    match t {
        Some((id, name)) => format!(", tensor {id} '{name}'"),
        None => String::new(),
    }
}

fn tensor_err(g: &Graph, t: TensorId, message: impl Into<String>) -> ValidationError {
    ValidationError::Tensor {
        tensor: t,
        name: g.tensor(t).map(|x| x.name.clone()).unwrap_or_default(),
        message: message.into(),
    }
}

fn check_quant(q: &Quantization, ty: &crate::types::TensorType) -> Result<(), String> {
    let (scales, zps, axis) = match q {
        Quantization::PerTensor { scale, zero_point } => (vec![*scale], vec![*zero_point], None),
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        } => (scales.clone(), zero_points.clone(), Some(*axis)),
    };
    if let Some(axis) = axis {
        let Some(&extent) = ty.shape.get(axis) else {
            return Err(format!(
                "quantization axis {axis} out of range for {}",
                ty.shape
            ));
        };
        if scales.len() != extent || zps.len() != extent {
            return Err(format!(
                "per-axis quantization needs {extent} scales and zero points, has {} and {}",
                scales.len(),
                zps.len()
            ));
        }
    }
    if let Some(s) = scales.iter().find(|s| !s.is_finite() || **s < 0.0) {
        return Err(format!(
            "quantization scale {s} is not finite and non-negative"
        ));
    }
    let zp_type = if ty.dtype.bits() <= 16 {
        ty.dtype
    } else {
        crate::types::DType::Int64
    };
    if let Some(z) = zps.iter().find(|z| !zp_type.contains(**z)) {
        return Err(format!("zero point {z} does not fit {}", ty.dtype));
    }
    Ok(())
}

/// Checks a whole graph: every tensor's shape, constant data and quantization record; graph
/// inputs (no producer, not constant); that every operand is defined; that the graph is acyclic;
/// and, per operator in topological order, operand types, attributes and that each declared
/// output type equals the inferred one. Returns the first problem found.
pub fn validate(g: &Graph) -> Result<(), ValidationError> {
    for t in g.tensor_ids() {
        let Some(x) = g.tensor(t) else { continue };
        infer::check_shape(&x.ty.shape).map_err(|m| tensor_err(g, t, m))?;
        if x.ty.dtype == crate::types::DType::Bool && x.quant.is_some() {
            return Err(tensor_err(g, t, "bool tensors cannot be quantized"));
        }
        if let Some(q) = &x.quant {
            check_quant(q, &x.ty).map_err(|m| tensor_err(g, t, m))?;
        }
        if let Some(d) = &x.data {
            if g.producer(t).is_some() {
                return Err(tensor_err(g, t, "a constant cannot be produced by an op"));
            }
            if d.dtype() != x.ty.dtype {
                return Err(tensor_err(
                    g,
                    t,
                    format!("data is {}, type is {}", d.dtype(), x.ty),
                ));
            }
            if Some(d.len()) != x.ty.shape.num_elements() {
                return Err(tensor_err(
                    g,
                    t,
                    format!("{} data elements for {}", d.len(), x.ty),
                ));
            }
        }
    }
    for (k, &t) in g.inputs().iter().enumerate() {
        let x = g
            .tensor(t)
            .ok_or_else(|| ValidationError::Graph(format!("input {t} missing")))?;
        if x.is_const() {
            return Err(tensor_err(g, t, "a graph input cannot be a constant"));
        }
        if g.producer(t).is_some() {
            return Err(tensor_err(
                g,
                t,
                "a graph input cannot be produced by an op",
            ));
        }
        if g.inputs()[..k].contains(&t) {
            return Err(tensor_err(g, t, "listed twice as a graph input"));
        }
    }
    let defined = |t: TensorId| {
        g.tensor(t).is_some_and(|x| x.is_const())
            || g.inputs().contains(&t)
            || g.producer(t).is_some()
    };
    for &t in g.outputs() {
        if !defined(t) {
            return Err(tensor_err(g, t, "graph output is never written"));
        }
    }
    let order = g
        .topo_order()
        .map_err(|_| ValidationError::Graph("the graph has a cycle".into()))?;
    for o in order {
        validate_op(g, o, &defined)?;
    }
    Ok(())
}

fn validate_op(
    g: &Graph,
    o: OpId,
    defined: &dyn Fn(TensorId) -> bool,
) -> Result<(), ValidationError> {
    let Some(node) = g.op(o) else { return Ok(()) };
    let op_err = |tensor: Option<TensorId>, message: String| ValidationError::Op {
        op: o,
        name: node.name.clone(),
        kind: node.op.kind(),
        tensor: tensor.map(|t| (t, g.tensor(t).map(|x| x.name.clone()).unwrap_or_default())),
        message,
    };
    let mut types = Vec::with_capacity(node.inputs().len());
    for &t in node.inputs() {
        if !defined(t) {
            return Err(op_err(Some(t), "operand is never written".into()));
        }
        types.push(
            g.tensor(t)
                .map(|x| x.ty.clone())
                .unwrap_or_else(unreachable_type),
        );
    }
    let inferred = infer_output_types(&node.op, &types).map_err(|e| {
        let t = e.slot.and_then(|s| node.inputs().get(s).copied());
        op_err(t, e.message)
    })?;
    if inferred.len() != node.outputs().len() {
        return Err(op_err(
            None,
            format!(
                "has {} outputs, expected {}",
                node.outputs().len(),
                inferred.len()
            ),
        ));
    }
    for (&t, ty) in node.outputs().iter().zip(&inferred) {
        let declared = g.tensor(t).map(|x| &x.ty);
        if declared != Some(ty) {
            let shown = declared.map(|d| d.to_string()).unwrap_or_default();
            return Err(op_err(Some(t), format!("output is {shown}, inferred {ty}")));
        }
    }
    Ok(())
}

/// Only reached for a dangling id, which `Graph` never creates; a placeholder type makes the
/// operator fail inference instead of panicking.
fn unreachable_type() -> crate::types::TensorType {
    crate::types::TensorType::new(crate::types::DType::Bool, crate::types::Shape::new(vec![0]))
}
