//! Float (`f32`) operators: the islands a TFLite converter leaves in float between quantized
//! operators (DEQUANTIZE -> NEG -> QUANTIZE in a Keras LayerNormalization, float graph inputs
//! and outputs, ...).
//!
//! An operator with any `f32` input or output is lowered here, to [`npuc_ir::FloatOp`]s that
//! compute what TFLite's *reference* kernel computes (see that type), or to the ordinary data
//! movement operators, which move `f32` bit patterns unchanged. The NPU compiler rejects
//! every such operator, so they always stay on the CPU.
//!
//! The fused activation of float ADD/SUB/MUL/DIV/FULLY_CONNECTED is TFLite's
//! `ActivationFunctionWithMinMax`, applied even for `NONE` (range `[lowest, max]`, which turns
//! infinities into `±FLT_MAX`).

use super::ctx::{IrT, OpCx, R};
use super::ops_elementwise::to_rank;
use super::{ops_layout, ops_misc};
use crate::schema::{ActivationFunctionType, BuiltinOptionsT, FullyConnectedOptionsWeightsFormat};
use crate::{BuiltinOperator, TensorType};
use npuc_ir::{DType, F32Bits, FloatBinary, FloatOp, FloatUnary, Op};

/// True if any input or output of the operator is `f32`.
pub(crate) fn touches_float(cx: &OpCx<'_, '_>) -> bool {
    let sg = cx.l.sg;
    cx.op
        .inputs
        .iter()
        .flatten()
        .chain(&cx.op.outputs)
        .any(|t| {
            sg.tensor(*t)
                .is_some_and(|t| t.dtype == TensorType::Float32)
        })
}

/// Lowers an operator that touches `f32` tensors.
pub(crate) fn lower(cx: &mut OpCx<'_, '_>) -> R<()> {
    use BuiltinOperator as B;
    let code = cx.op.opcode.builtin;
    let unary = |u| Some(FloatOp::Unary(u));
    let single = match code {
        B::NEG => unary(FloatUnary::Neg),
        B::ABS => unary(FloatUnary::Abs),
        B::SQRT => unary(FloatUnary::Sqrt),
        B::RSQRT => unary(FloatUnary::Rsqrt),
        B::EXP => unary(FloatUnary::Exp),
        B::LOG => unary(FloatUnary::Log),
        B::TANH => unary(FloatUnary::Tanh),
        B::LOGISTIC => unary(FloatUnary::Logistic),
        B::ELU => unary(FloatUnary::Elu),
        B::SQUARE => unary(FloatUnary::Square),
        B::RELU => Some(clamp(0.0, f32::INFINITY)),
        B::RELU6 => Some(clamp(0.0, 6.0)),
        B::RELU_N1_TO_1 => Some(clamp(-1.0, 1.0)),
        B::RELU_0_TO_1 => Some(clamp(0.0, 1.0)),
        _ => None,
    };
    if let Some(f) = single {
        float_operands(cx, &[0])?;
        let x = cx.input(0)?;
        let y = cx.emit("float", Op::Float(f), &[x])?;
        return cx.bind_output(0, y);
    }
    match code {
        B::DEQUANTIZE => dequantize(cx),
        B::QUANTIZE => quantize(cx),
        B::ADD => binary(cx, FloatBinary::Add, true),
        B::SUB => binary(cx, FloatBinary::Sub, true),
        B::MUL => binary(cx, FloatBinary::Mul, true),
        B::DIV => binary(cx, FloatBinary::Div, true),
        B::SQUARED_DIFFERENCE => binary(cx, FloatBinary::SquaredDifference, false),
        B::MAXIMUM => binary(cx, FloatBinary::Maximum, false),
        B::MINIMUM => binary(cx, FloatBinary::Minimum, false),
        B::MEAN | B::SUM => reduce(cx, code == B::MEAN),
        B::SOFTMAX => softmax(cx),
        B::FULLY_CONNECTED => fully_connected(cx),
        B::RESHAPE | B::SQUEEZE | B::EXPAND_DIMS => ops_layout::reshape(cx),
        B::TRANSPOSE => ops_layout::transpose(cx),
        B::CONCATENATION => ops_layout::concat(cx),
        B::PAD | B::PADV2 => ops_layout::pad(cx),
        B::SLICE | B::STRIDED_SLICE => ops_layout::slice(cx, code == B::STRIDED_SLICE),
        B::SPLIT | B::SPLIT_V => ops_layout::split(cx, code == B::SPLIT_V),
        B::PACK => ops_misc::pack(cx),
        B::UNPACK => ops_misc::unpack(cx),
        B::TILE => ops_misc::tile(cx),
        B::REVERSE_V2 => ops_misc::reverse(cx),
        B::GATHER => ops_misc::gather(cx),
        _ => Err(format!(
            "float operator {} is not supported",
            cx.op.opcode.name()
        )),
    }
}

fn clamp(min: f32, max: f32) -> FloatOp {
    FloatOp::Clamp {
        min: F32Bits::new(min),
        max: F32Bits::new(max),
    }
}

/// Checks that inputs `slots` and output 0 are `f32`.
fn float_operands(cx: &OpCx<'_, '_>, slots: &[usize]) -> R<()> {
    for &i in slots {
        let t = cx.tin(i)?;
        if t.dtype != TensorType::Float32 {
            return Err(format!(
                "input {i} {:?} is {:?}; mixed float and integer operands are not supported",
                t.name, t.dtype
            ));
        }
    }
    let t = cx.tout(0)?;
    if t.dtype != TensorType::Float32 {
        return Err(format!(
            "output {:?} is {:?}; mixed float and integer operands are not supported",
            t.name, t.dtype
        ));
    }
    Ok(())
}

/// TFLite's `CalculateActivationRange` for `f32`.
fn activation(cx: &mut OpCx<'_, '_>, x: IrT, act: ActivationFunctionType) -> R<IrT> {
    let (lo, hi) = match act {
        ActivationFunctionType::NONE => (f32::MIN, f32::MAX),
        ActivationFunctionType::RELU => (0.0, f32::MAX),
        ActivationFunctionType::RELU6 => (0.0, 6.0),
        ActivationFunctionType::RELU_N1_TO_1 => (-1.0, 1.0),
        a => return Err(format!("fused activation {a:?} is not supported")),
    };
    cx.emit("act", Op::Float(clamp(lo, hi)), &[x])
}

fn dequantize(cx: &mut OpCx<'_, '_>) -> R<()> {
    let xt = cx.tin(0)?;
    if !matches!(
        xt.dtype,
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    ) {
        return Err(format!(
            "DEQUANTIZE of {:?} is not supported (int8, uint8, int16)",
            xt.dtype
        ));
    }
    float_operands_out(cx)?;
    // A uint8 input is read as its int8 view, with the view's zero point (`super::uint8`).
    let (scale, zero_point) = OpCx::qparams(xt)?;
    let x = cx.input(0)?;
    let op = FloatOp::Dequantize {
        scale: F32Bits::new(scale),
        zero_point,
    };
    let y = cx.emit("dequantize", Op::Float(op), &[x])?;
    cx.bind_output(0, y)
}

fn float_operands_out(cx: &OpCx<'_, '_>) -> R<()> {
    let t = cx.tout(0)?;
    if t.dtype != TensorType::Float32 {
        return Err(format!("output {:?} is {:?}, not float32", t.name, t.dtype));
    }
    Ok(())
}

fn quantize(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if xt.dtype != TensorType::Float32 {
        return Err(format!("QUANTIZE of {:?} to float32", xt.dtype));
    }
    // A uint8 output is produced as its int8 view (zero point - 128, `super::uint8`):
    // clamp(q + zp - 128, -128, 127) = clamp(q + zp, 0, 255) - 128.
    let output = match ot.dtype {
        TensorType::Int8 | TensorType::Uint8 => DType::Int8,
        TensorType::Int16 => DType::Int16,
        t => {
            return Err(format!(
                "QUANTIZE to {t:?} is not supported (int8, uint8, int16)"
            ))
        }
    };
    let (scale, zero_point) = OpCx::qparams(ot)?;
    let x = cx.input(0)?;
    let op = FloatOp::Quantize {
        scale: F32Bits::new(scale),
        zero_point,
        output,
    };
    let y = cx.emit("quantize", Op::Float(op), &[x])?;
    cx.bind_output(0, y)
}

fn binary(cx: &mut OpCx<'_, '_>, f: FloatBinary, fused: bool) -> R<()> {
    float_operands(cx, &[0, 1])?;
    let act = match cx.opts() {
        BuiltinOptionsT::AddOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::SubOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::MulOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::DivOptions(o) => o.fused_activation_function,
        _ => ActivationFunctionType::NONE,
    };
    let rank = OpCx::shape(cx.tout(0)?)?.len();
    let a = cx.input(0)?;
    let a = to_rank(cx, a, rank)?;
    let b = cx.input(1)?;
    let b = to_rank(cx, b, rank)?;
    let mut y = cx.emit("float", Op::Float(FloatOp::Binary(f)), &[a, b])?;
    if fused {
        y = activation(cx, y, act)?;
    }
    cx.bind_output(0, y)
}

fn reduce(cx: &mut OpCx<'_, '_>, mean: bool) -> R<()> {
    float_operands(cx, &[0])?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    let rank = xs.len() as i64;
    let mut axes = vec![];
    for a in cx.const_input(1)? {
        let a = if a < 0 { a + rank } else { a };
        if a < 0 || a >= rank {
            return Err(format!("axis {a} out of range"));
        }
        if !axes.contains(&(a as usize)) {
            axes.push(a as usize);
        }
    }
    axes.sort_unstable();
    let x = cx.input(0)?;
    let y = cx.emit(
        if mean { "mean" } else { "sum" },
        Op::Float(FloatOp::Reduce { axes, mean }),
        &[x],
    )?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let y = cx.reshape(y, os)?;
    cx.bind_output(0, y)
}

fn softmax(cx: &mut OpCx<'_, '_>) -> R<()> {
    float_operands(cx, &[0])?;
    let BuiltinOptionsT::SoftmaxOptions(o) = cx.opts() else {
        return Err("missing SoftmaxOptions".into());
    };
    let beta = F32Bits::new(o.beta);
    let x = cx.input(0)?;
    let y = cx.emit("softmax", Op::Float(FloatOp::Softmax { beta }), &[x])?;
    cx.bind_output(0, y)
}

fn fully_connected(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::FullyConnectedOptions(o) = cx.opts() else {
        return Err("missing FullyConnectedOptions".into());
    };
    if o.weights_format != FullyConnectedOptionsWeightsFormat::DEFAULT {
        return Err("shuffled weights are not supported".into());
    }
    float_operands(cx, &[0, 1])?;
    let ws = OpCx::shape(cx.tin(1)?)?;
    let xs = OpCx::shape(cx.tin(0)?)?;
    if ws.len() != 2 {
        return Err("FULLY_CONNECTED weights must be 2-D".into());
    }
    let (oc, ic) = (ws[0], ws[1]);
    let total: usize = xs.iter().product();
    if ic == 0 || total % ic != 0 {
        return Err(format!("input {xs:?} is not a multiple of {ic}"));
    }
    let x = cx.input(0)?;
    let x = cx.reshape(x, vec![total / ic, ic])?;
    let w = cx.input(1)?;
    let b = if cx.has_input(2) {
        float_operands(cx, &[2])?;
        let b = cx.input(2)?;
        cx.reshape(b, vec![oc])?
    } else {
        // TFLite adds a bias of 0.0f when there is none.
        cx.constant(
            "bias",
            vec![oc],
            npuc_ir::TensorData::from_f32(&vec![0.0; oc]),
        )?
    };
    let y = cx.emit("fc", Op::Float(FloatOp::FullyConnected), &[x, w, b])?;
    let y = activation(cx, y, o.fused_activation_function)?;
    let os = OpCx::shape(cx.tout(0)?)?;
    let y = cx.reshape(y, os)?;
    cx.bind_output(0, y)
}
