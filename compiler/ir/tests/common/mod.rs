//! Helpers shared by the integration tests: run one operator on literal values.
#![allow(dead_code)]

use npuc_ir::*;

/// A tensor value from literal integers.
pub fn val(dtype: DType, shape: &[usize], v: &[i64]) -> TensorValue {
    TensorValue::from_i64(dtype, shape.to_vec(), v).expect("literal fits its type")
}

pub fn i8v(shape: &[usize], v: &[i64]) -> TensorValue {
    val(DType::Int8, shape, v)
}

pub fn i16v(shape: &[usize], v: &[i64]) -> TensorValue {
    val(DType::Int16, shape, v)
}

pub fn i32v(shape: &[usize], v: &[i64]) -> TensorValue {
    val(DType::Int32, shape, v)
}

pub fn i48v(shape: &[usize], v: &[i64]) -> TensorValue {
    val(DType::Int48, shape, v)
}

pub fn boolv(shape: &[usize], v: &[i64]) -> TensorValue {
    val(DType::Bool, shape, v)
}

/// Builds `op(inputs...)` with every operand a graph input.
pub fn graph1(op: Op, inputs: &[TensorValue]) -> Result<Graph, BuildError> {
    let mut b = GraphBuilder::new("one");
    let ids: Vec<TensorId> = inputs
        .iter()
        .enumerate()
        .map(|(k, v)| b.input(&format!("in{k}"), v.dtype(), v.shape().clone()))
        .collect();
    let y = b.op("op", op, &ids);
    b.output(y);
    b.finish()
}

/// Runs `op(inputs...)`; panics if the graph is invalid; returns the interpreter's verdict.
pub fn try_eval(op: Op, inputs: &[TensorValue]) -> Result<TensorValue, InterpError> {
    let g = graph1(op, inputs).expect("valid graph");
    run_outputs(&g, inputs.to_vec()).map(|mut v| v.remove(0))
}

/// Runs `op(inputs...)` and returns the output's dtype, shape and elements.
pub fn eval(op: Op, inputs: &[TensorValue]) -> (DType, Vec<usize>, Vec<i64>) {
    let v = try_eval(op, inputs).expect("defined result");
    (v.dtype(), v.shape().0.clone(), v.to_i64_vec())
}

/// Elements only.
pub fn eval_v(op: Op, inputs: &[TensorValue]) -> Vec<i64> {
    eval(op, inputs).2
}

/// The message of an `Undefined` interpreter error (panics on success or another error).
pub fn undefined(op: Op, inputs: &[TensorValue]) -> String {
    match try_eval(op, inputs) {
        Err(InterpError::Undefined { message, .. }) => message,
        other => panic!("expected an undefined result, got {other:?}"),
    }
}

/// A per-tensor 32-bit RESCALE.
pub fn rescale(out: DType, m: i32, s: i8, rounding: RescaleRounding) -> RescaleAttrs {
    RescaleAttrs::per_tensor(out, m, s, rounding)
}
