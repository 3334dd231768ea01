//! Output type inference for every operator, with the attribute and operand checks the
//! TOSA pseudocode states as `ERROR_IF` (data-independent errors).

use super::{infer_layout, infer_tensor};
use crate::ops::{Op, TableData};
use crate::types::{DType, Shape, TensorType};
use thiserror::Error;

/// Why an operator's operands or attributes are invalid. `slot` names the offending input,
/// if one is to blame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}{message}", slot.map(|s| format!("input {s}: ")).unwrap_or_default())]
pub struct InferError {
    pub slot: Option<usize>,
    pub message: String,
}

pub(crate) type R<T> = Result<T, InferError>;

/// An error about input `slot`.
pub(crate) fn bad(slot: usize, message: impl Into<String>) -> InferError {
    InferError {
        slot: Some(slot),
        message: message.into(),
    }
}

/// An error about the attributes or the operator as a whole.
pub(crate) fn bad_attr(message: impl Into<String>) -> InferError {
    InferError {
        slot: None,
        message: message.into(),
    }
}

pub(crate) const SIGNED_8_16_32: &[DType] = &[DType::Int8, DType::Int16, DType::Int32];

/// Checks that input `slot` has one of `allowed` element types.
pub(crate) fn dtype_in(inputs: &[TensorType], slot: usize, allowed: &[DType]) -> R<DType> {
    let dt = inputs[slot].dtype;
    if allowed.contains(&dt) {
        Ok(dt)
    } else {
        let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
        Err(bad(
            slot,
            format!(
                "element type {dt} not supported (expected {})",
                names.join("/")
            ),
        ))
    }
}

/// Checks that input `slot` has rank `rank`.
pub(crate) fn rank_is(inputs: &[TensorType], slot: usize, rank: usize) -> R<&Shape> {
    let s = &inputs[slot].shape;
    if s.rank() == rank {
        Ok(s)
    } else {
        Err(bad(slot, format!("expected rank {rank}, got shape {s}")))
    }
}

/// Checks that `value` is representable in `dtype`.
pub(crate) fn in_range(what: &str, value: i64, dtype: DType) -> R<()> {
    if dtype.contains(value) {
        Ok(())
    } else {
        Err(bad_attr(format!("{what} {value} does not fit {dtype}")))
    }
}

/// Zero point rule shared by CONV2D, MATMUL, AVG_POOL2D, NEGATE, ...: only `i8` operands may
/// have a non-zero zero point, and it must fit `i8`.
pub(crate) fn zero_point(what: &str, zp: i64, dtype: DType) -> R<()> {
    if dtype == DType::Int8 {
        in_range(what, zp, dtype)
    } else if zp != 0 {
        Err(bad_attr(format!("{what} must be 0 for {dtype} (is {zp})")))
    } else {
        Ok(())
    }
}

/// TOSA `broadcast_shape` (broadcast_shape.tosac): equal ranks, each dimension equal or 1.
pub(crate) fn broadcast(inputs: &[TensorType], slots: &[usize]) -> R<Shape> {
    let first = &inputs[slots[0]].shape;
    let mut out = first.0.clone();
    for &s in &slots[1..] {
        let sh = &inputs[s].shape;
        if sh.rank() != out.len() {
            return Err(bad(
                s,
                format!("rank of {sh} differs from {first} (broadcast needs equal ranks)"),
            ));
        }
        for (o, &d) in out.iter_mut().zip(sh.iter()) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(bad(
                    s,
                    format!("shape {sh} does not broadcast with {first}"),
                ));
            }
        }
    }
    Ok(Shape(out))
}

fn same_dtype(inputs: &[TensorType], slots: &[usize]) -> R<DType> {
    let dt = inputs[slots[0]].dtype;
    for &s in &slots[1..] {
        if inputs[s].dtype != dt {
            return Err(bad(
                s,
                format!("element type {} differs from {dt}", inputs[s].dtype),
            ));
        }
    }
    Ok(dt)
}

/// Infers the output types of `op` applied to inputs of types `inputs`, checking operand
/// types, shapes and attributes. Every current operator has exactly one output.
pub fn infer_output_types(op: &Op, inputs: &[TensorType]) -> Result<Vec<TensorType>, InferError> {
    match op.arity() {
        Some(n) if inputs.len() != n => {
            return Err(bad_attr(format!(
                "expects {n} inputs, got {}",
                inputs.len()
            )))
        }
        None if inputs.is_empty() => return Err(bad_attr("expects at least one input")),
        _ => {}
    }
    for (slot, t) in inputs.iter().enumerate() {
        check_shape(&t.shape).map_err(|m| bad(slot, m))?;
    }
    let out = infer_one(op, inputs)?;
    check_shape(&out.shape).map_err(|m| bad_attr(format!("output: {m}")))?;
    Ok(vec![out])
}

/// The largest element count a tensor may have.
pub const MAX_ELEMENTS: usize = i32::MAX as usize;

/// Shapes must have extents ≥ 1 (TOSA §1.11.1) and at most [`MAX_ELEMENTS`] elements.
pub(crate) fn check_shape(shape: &Shape) -> Result<(), String> {
    if shape.contains(&0) {
        return Err(format!("shape {shape} has a zero extent"));
    }
    match shape.num_elements() {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(format!("shape {shape} has too many elements")),
    }
}

fn infer_one(op: &Op, inputs: &[TensorType]) -> R<TensorType> {
    use DType::*;
    let same = |dt: DType, shape: Shape| Ok(TensorType::new(dt, shape));
    match op {
        Op::ArgMax(_)
        | Op::AvgPool2d(_)
        | Op::Conv2d(_)
        | Op::DepthwiseConv2d(_)
        | Op::Conv3d(_)
        | Op::TransposeConv2d(_)
        | Op::FullyConnected(_)
        | Op::MatMul(_)
        | Op::MaxPool2d(_)
        | Op::Resize(_) => infer_tensor::infer(op, inputs),
        Op::ReduceAll(_)
        | Op::ReduceAny(_)
        | Op::ReduceMax(_)
        | Op::ReduceMin(_)
        | Op::ReduceSum(_)
        | Op::Concat(_)
        | Op::Pad(_)
        | Op::Reshape(_)
        | Op::Reverse(_)
        | Op::Slice(_)
        | Op::Tile(_)
        | Op::Transpose(_)
        | Op::Gather
        | Op::Scatter
        | Op::Rescale(_) => infer_layout::infer(op, inputs),
        Op::Cast(a) => {
            if a.to == Float32 || inputs[0].dtype == Float32 {
                return Err(bad_attr("CAST does not convert f32"));
            }
            infer_layout::infer(op, inputs)
        }
        Op::Clamp(a) => {
            let dt = dtype_in(inputs, 0, SIGNED_8_16_32)?;
            in_range("min", a.min, dt)?;
            in_range("max", a.max, dt)?;
            if a.min > a.max {
                return Err(bad_attr(format!("min {} > max {}", a.min, a.max)));
            }
            same(dt, inputs[0].shape.clone())
        }
        // ADD of i48 too: a 16x8 convolution's accumulator plus a bias that is not a
        // constant (the compiler's `conv-bias-as-add` rewrite).
        Op::Add => {
            dtype_in(inputs, 0, &[Int8, Int16, Int32, Int48])?;
            let dt = same_dtype(inputs, &[0, 1])?;
            same(dt, broadcast(inputs, &[0, 1])?)
        }
        Op::Sub | Op::Maximum | Op::Minimum => {
            dtype_in(inputs, 0, SIGNED_8_16_32)?;
            let dt = same_dtype(inputs, &[0, 1])?;
            same(dt, broadcast(inputs, &[0, 1])?)
        }
        Op::IntDiv | Op::Clz => {
            dtype_in(inputs, 0, &[Int32])?;
            let slots: &[usize] = if inputs.len() == 2 { &[0, 1] } else { &[0] };
            let dt = same_dtype(inputs, slots)?;
            same(dt, broadcast(inputs, slots)?)
        }
        Op::Mul(a) => {
            let dt = dtype_in(inputs, 0, SIGNED_8_16_32)?;
            same_dtype(inputs, &[0, 1])?;
            if a.shift > 63 {
                return Err(bad_attr(format!("shift {} > 63", a.shift)));
            }
            if a.shift != 0 && dt != Int32 {
                return Err(bad_attr(format!("shift must be 0 for {dt} inputs")));
            }
            same(Int32, broadcast(inputs, &[0, 1])?)
        }
        Op::ArithmeticRightShift(_)
        | Op::LogicalLeftShift
        | Op::LogicalRightShift
        | Op::BitwiseAnd
        | Op::BitwiseOr
        | Op::BitwiseXor => {
            dtype_in(inputs, 0, SIGNED_8_16_32)?;
            let dt = same_dtype(inputs, &[0, 1])?;
            same(dt, broadcast(inputs, &[0, 1])?)
        }
        Op::LogicalAnd | Op::LogicalOr | Op::LogicalXor => {
            dtype_in(inputs, 0, &[Bool])?;
            same_dtype(inputs, &[0, 1])?;
            same(Bool, broadcast(inputs, &[0, 1])?)
        }
        Op::Equal | Op::Greater | Op::GreaterEqual => {
            dtype_in(inputs, 0, SIGNED_8_16_32)?;
            same_dtype(inputs, &[0, 1])?;
            same(Bool, broadcast(inputs, &[0, 1])?)
        }
        Op::Table(a) => {
            let dt = dtype_in(inputs, 0, &[Int8, Int16])?;
            match (&a.table, dt) {
                (TableData::I8(t), Int8) if t.len() == 256 => same(Int8, inputs[0].shape.clone()),
                (TableData::I16(t), Int16) if t.len() == 513 => {
                    same(Int32, inputs[0].shape.clone())
                }
                _ => Err(bad_attr(format!(
                    "{dt} input needs a {} table, got {} entries of {}",
                    if dt == Int8 {
                        "256-entry i8"
                    } else {
                        "513-entry i16"
                    },
                    a.table.len(),
                    match a.table {
                        TableData::I8(_) => "i8",
                        TableData::I16(_) => "i16",
                    }
                ))),
            }
        }
        Op::Abs | Op::BitwiseNot => {
            let dt = dtype_in(inputs, 0, SIGNED_8_16_32)?;
            same(dt, inputs[0].shape.clone())
        }
        Op::LogicalNot => same(dtype_in(inputs, 0, &[Bool])?, inputs[0].shape.clone()),
        Op::Negate(a) => {
            let dt = dtype_in(inputs, 0, SIGNED_8_16_32)?;
            zero_point("input_zp", a.input_zp, dt)?;
            zero_point("output_zp", a.output_zp, dt)?;
            same(dt, inputs[0].shape.clone())
        }
        Op::Select => {
            dtype_in(inputs, 0, &[Bool])?;
            let dt = same_dtype(inputs, &[1, 2])?;
            same(dt, broadcast(inputs, &[0, 1, 2])?)
        }
        Op::Identity => same(inputs[0].dtype, inputs[0].shape.clone()),
        Op::Float(f) => super::infer_float::infer(f, inputs),
    }
}
