//! Output types of the float operators ([`FloatOp`]).

use super::infer::{bad, bad_attr, broadcast, dtype_in, rank_is, R};
use crate::ops::FloatOp;
use crate::types::{DType, TensorType};

pub(crate) fn infer(op: &FloatOp, inputs: &[TensorType]) -> R<TensorType> {
    use DType::*;
    let t0 = &inputs[0];
    match op {
        FloatOp::Dequantize { scale, .. } => {
            dtype_in(inputs, 0, &[Int8, UInt8, Int16])?;
            finite_scale(scale.get())?;
            Ok(TensorType::new(Float32, t0.shape.clone()))
        }
        FloatOp::Quantize {
            scale,
            zero_point,
            output,
        } => {
            dtype_in(inputs, 0, &[Float32])?;
            finite_scale(scale.get())?;
            if !matches!(output, Int8 | UInt8 | Int16) {
                return Err(bad_attr(format!("output type {output} is not i8/u8/i16")));
            }
            if i32::try_from(*zero_point).is_err() {
                return Err(bad_attr(format!(
                    "zero point {zero_point} does not fit i32"
                )));
            }
            Ok(TensorType::new(*output, t0.shape.clone()))
        }
        FloatOp::Unary(_) | FloatOp::Clamp { .. } | FloatOp::Softmax { .. } => {
            dtype_in(inputs, 0, &[Float32])?;
            if matches!(op, FloatOp::Softmax { .. }) && t0.shape.rank() == 0 {
                return Err(bad(0, "softmax needs rank >= 1"));
            }
            Ok(t0.clone())
        }
        FloatOp::Binary(_) => {
            dtype_in(inputs, 0, &[Float32])?;
            dtype_in(inputs, 1, &[Float32])?;
            Ok(TensorType::new(Float32, broadcast(inputs, &[0, 1])?))
        }
        FloatOp::Reduce { axes, .. } => {
            dtype_in(inputs, 0, &[Float32])?;
            let mut d = t0.shape.0.clone();
            for (k, &a) in axes.iter().enumerate() {
                if a >= d.len() || axes[..k].contains(&a) {
                    return Err(bad_attr(format!(
                        "axes {axes:?} are not distinct axes of {}",
                        t0.shape
                    )));
                }
                d[a] = 1;
            }
            Ok(TensorType::new(Float32, d))
        }
        FloatOp::FullyConnected => {
            for slot in 0..3 {
                dtype_in(inputs, slot, &[Float32])?;
            }
            let x = rank_is(inputs, 0, 2)?;
            let w = rank_is(inputs, 1, 2)?;
            let b = rank_is(inputs, 2, 1)?;
            if w[1] != x[1] {
                return Err(bad(1, format!("weight {w} does not match input {x}")));
            }
            if b[0] != w[0] {
                return Err(bad(2, format!("bias {b} does not match weight {w}")));
            }
            Ok(TensorType::new(Float32, [x[0], w[0]]))
        }
    }
}

fn finite_scale(scale: f32) -> R<()> {
    if scale.is_finite() && scale > 0.0 {
        Ok(())
    } else {
        Err(bad_attr(format!(
            "scale {scale} is not a positive finite number"
        )))
    }
}
