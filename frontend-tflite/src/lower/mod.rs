//! Lowering a parsed TFLite model to the npuc graph IR with TFLite's exact integer semantics.
//!
//! [`lower`] turns the main subgraph of a [`TfliteModel`] into an [`npuc_ir::Graph`] whose
//! reference interpreter reproduces the outputs of TFLite's *reference* kernels bit for bit
//! (the optimised ones where the reference kernel is unusable: SUM).
//! Every TFLite operator becomes one or more IR operators; the quantization arithmetic is
//! explicit:
//!
//! * convolution-like operators produce raw accumulators followed by a [`npuc_ir::Op::Rescale`] with the
//!   rounding TFLite uses (gemmlowp double rounding for int8 conv / depthwise / elementwise,
//!   the 64-bit single-rounding path with a 16-bit multiplier for 16x8 kernels), and the fused
//!   activation becomes an [`npuc_ir::Op::Clamp`];
//! * elementwise ADD/SUB follow TFLite's scheme (inputs shifted left by 20, or 15 for int16,
//!   rescaled per input, summed, rescaled to the output);
//! * table-like activations become [`npuc_ir::Op::Table`]s computed at lowering time;
//! * SOFTMAX, LOG_SOFTMAX and int8 DIV are composites of integer IR operators reproducing
//!   TFLite's fixed-point kernels (`fixed_ir`: gemmlowp's primitives as IR operator chains);
//! * UNIDIRECTIONAL_SEQUENCE_LSTM (the integer kernel) is unrolled over its time steps:
//!   FULLY_CONNECTED gates, RESCALEs, MUL and rounding shifts for the cell update, and
//!   gemmlowp's 16-bit sigmoid/tanh tabulated for every input (GATHER);
//! * SUM reproduces TFLite's optimised kernel (its float rescaling checked exhaustively
//!   against an exact RESCALE, or tabulated);
//! * operators with `f32` operands (DEQUANTIZE, float QUANTIZE, the float islands between
//!   them) become [`npuc_ir::FloatOp`]s following TFLite's reference float kernels
//!   (`ops_float`); they are CPU-only.
//!
//! Multipliers and shifts are derived from the tensors' real scales the way TFLite's
//! documented quantization spec does (frexp-based 31-bit multipliers, computed in double).
//! Anything not supported, or supported only with different numerics, is a [`LowerError`]
//! naming the operator; nothing is silently approximated.

mod arith;
mod ctx;
pub mod dispatch;
mod fixed_ir;
mod gemmlowp16;
mod operator;
mod ops_conv;
mod ops_div;
mod ops_elementwise;
mod ops_float;
mod ops_layout;
mod ops_log_softmax;
mod ops_lstm;
mod ops_lut16;
mod ops_mean_sum;
mod ops_misc;
mod ops_prelu_scatter;
mod ops_softmax;
mod ops_table;
pub mod partition;
mod uint8;
mod uint8_concat;
mod uint8_resize;

use crate::TfliteModel;
use npuc_ir::{Graph, ValidationError};

pub use arith::{activation_range, quantize_multiplier};
pub use operator::{lower_operator, LoweredOperator};

/// The result of [`lower`]: the IR graph and where each TFLite tensor of the main subgraph
/// went.
#[derive(Debug, Clone)]
pub struct LoweredGraph {
    /// The IR graph; inputs and outputs in the TFLite subgraph's order.
    pub graph: Graph,
    /// For each TFLite tensor index of the main subgraph, the IR tensor holding its value
    /// (`None` for tensors that were not needed, e.g. folded constants).
    pub tensor_map: Vec<Option<npuc_ir::TensorId>>,
}

/// Why a model could not be lowered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LowerError {
    /// An operator (or one of its options or operand types) is not supported, or the model
    /// is inconsistent around it.
    #[error("operator {op} ({opcode}): {reason}")]
    Operator {
        /// Index of the operator in the main subgraph.
        op: usize,
        /// Opcode name (`CONV_2D`, ...).
        opcode: String,
        reason: String,
    },
    /// A graph input or output cannot be represented.
    #[error("tensor {tensor} {name:?}: {reason}")]
    Tensor {
        tensor: usize,
        name: String,
        reason: String,
    },
    /// The lowered graph failed IR validation (a lowering bug).
    #[error("lowered graph is invalid: {0}")]
    Invalid(#[from] ValidationError),
}

/// Lowers the main subgraph of `model` to the IR.
pub fn lower(model: &TfliteModel) -> Result<LoweredGraph, LowerError> {
    let sg = model.main_subgraph();
    let name = sg.name.clone().unwrap_or_else(|| "main".into());
    let mut cx = ctx::Lowerer::new(model, sg, &name);
    for &t in &sg.inputs {
        cx.add_graph_input(t)?;
    }
    for op in &sg.operators {
        let mut oc = ctx::OpCx::new(&mut cx, op);
        let res = dispatch::lower_op(&mut oc);
        res.map_err(|reason| LowerError::Operator {
            op: op.id.index(),
            opcode: op.opcode.name().into_owned(),
            reason,
        })?;
    }
    for &t in &sg.outputs {
        cx.add_graph_output(t)?;
    }
    let (graph, tensor_map) = cx.finish();
    npuc_ir::validate(&graph)?;
    Ok(LoweredGraph { graph, tensor_map })
}
