//! Float operators never reach the NPU: every operator with an `f32` operand or result (the
//! float islands of a TFLite model, [`npuc_ir::FloatOp`]) is rejected here, before anything
//! else is lowered, so a partitioner leaves it on the CPU.

use crate::unsupported;
use crate::LowerError;
use npuc_ir::{DType, Graph};

/// The first operator of `g` (in execution order) that touches an `f32` tensor, as an error.
pub(crate) fn reject(g: &Graph, order: &[npuc_ir::OpId]) -> Result<(), LowerError> {
    let is_f32 = |t: &npuc_ir::TensorId| g.tensor(*t).is_some_and(|x| x.ty.dtype == DType::Float32);
    for &o in order {
        let Some(node) = g.op(o) else { continue };
        if matches!(node.op, npuc_ir::Op::Float(_))
            || node.inputs().iter().chain(node.outputs()).any(is_f32)
        {
            return Err(unsupported(node, "float operators stay on the CPU"));
        }
    }
    Ok(())
}
