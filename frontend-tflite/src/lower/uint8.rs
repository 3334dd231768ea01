//! uint8 tensors (TFLite's legacy asymmetric quantization, and uint8 graph inputs/outputs).
//!
//! A uint8 tensor `x` with zero point `z` holds the same real values as the int8 tensor
//! `x - 128` with zero point `z - 128`: `s * (x - z) = s * ((x - 128) - (z - 128))`. The
//! operator lowerings work on that *int8 view* ([`super::ctx::OpCx::dtype`] and
//! [`super::ctx::OpCx::qparams`] report it, constants are converted to it, and an IR tensor
//! held as uint8 is read through one RESCALE `u8 -> i8`, `x - 128`), for the operators whose
//! TFLite uint8 kernel computes the same integers as its int8 kernel on the view
//! ([`UINT8_EXACT`]; docs/decisions.md F6 gives the argument per operator). Three listed
//! operators have uint8 kernels of their own, lowered on the view with that arithmetic: SUM
//! (`super::ops_mean_sum`), CONCATENATION of inputs quantized unlike the output
//! (`super::uint8_concat`) and bilinear RESIZE (`super::uint8_resize`). Every other operator with a uint8 operand is refused. Real uint8 IR tensors exist only where TFLite's
//! uint8 bytes are observable: graph inputs and outputs (a graph output computed in the view
//! gets one RESCALE `i8 -> u8`, `x + 128`) and QUANTIZE to or from uint8, which reads and
//! writes uint8 directly (TFLite's `Requantize`: `x - zp_in` scaled by `s_in / s_out` with
//! `MultiplyByQuantizedMultiplier`, plus `zp_out`, saturated to the output type).

use super::ctx::{IrT, Lowerer, OpCx, R};
use crate::{BuiltinOperator, Tensor, TensorType};
use npuc_ir::{DType, Op, Quantization, RescaleAttrs, RescaleRounding, TensorData};

/// The zero-point offset between a uint8 tensor and its int8 view.
const OFFSET: i64 = 128;

/// The operators lowered on the int8 view of their uint8 operands, because TFLite's uint8
/// kernel computes the same integers there as its int8 kernel (docs/decisions.md F6).
pub(crate) const UINT8_EXACT: &[BuiltinOperator] = &[
    BuiltinOperator::QUANTIZE,
    BuiltinOperator::CONV_2D,
    BuiltinOperator::DEPTHWISE_CONV_2D,
    BuiltinOperator::FULLY_CONNECTED,
    BuiltinOperator::TRANSPOSE_CONV,
    BuiltinOperator::ADD,
    BuiltinOperator::SUB,
    BuiltinOperator::MUL,
    BuiltinOperator::DIV,
    BuiltinOperator::MAXIMUM,
    BuiltinOperator::MINIMUM,
    BuiltinOperator::MAX_POOL_2D,
    BuiltinOperator::AVERAGE_POOL_2D,
    BuiltinOperator::SOFTMAX,
    BuiltinOperator::LOG_SOFTMAX,
    BuiltinOperator::LOGISTIC,
    BuiltinOperator::TANH,
    BuiltinOperator::LEAKY_RELU,
    BuiltinOperator::HARD_SWISH,
    BuiltinOperator::GELU,
    BuiltinOperator::RELU,
    BuiltinOperator::RELU6,
    BuiltinOperator::RELU_N1_TO_1,
    BuiltinOperator::RELU_0_TO_1,
    BuiltinOperator::PRELU,
    BuiltinOperator::EQUAL,
    BuiltinOperator::NOT_EQUAL,
    BuiltinOperator::LESS,
    BuiltinOperator::LESS_EQUAL,
    BuiltinOperator::GREATER,
    BuiltinOperator::GREATER_EQUAL,
    BuiltinOperator::ARG_MAX,
    BuiltinOperator::CONCATENATION,
    BuiltinOperator::MEAN,
    BuiltinOperator::SUM,
    BuiltinOperator::PAD,
    BuiltinOperator::PADV2,
    BuiltinOperator::RESIZE_NEAREST_NEIGHBOR,
    BuiltinOperator::RESIZE_BILINEAR,
    BuiltinOperator::RESHAPE,
    BuiltinOperator::SQUEEZE,
    BuiltinOperator::EXPAND_DIMS,
    BuiltinOperator::TRANSPOSE,
    BuiltinOperator::SLICE,
    BuiltinOperator::STRIDED_SLICE,
    BuiltinOperator::SPLIT,
    BuiltinOperator::SPLIT_V,
    BuiltinOperator::PACK,
    BuiltinOperator::UNPACK,
    BuiltinOperator::GATHER,
    BuiltinOperator::MIRROR_PAD,
    BuiltinOperator::TILE,
    BuiltinOperator::DEPTH_TO_SPACE,
    BuiltinOperator::SPACE_TO_DEPTH,
    BuiltinOperator::REVERSE_V2,
    BuiltinOperator::SCATTER_ND,
    BuiltinOperator::SPACE_TO_BATCH_ND,
    BuiltinOperator::CAST,
    BuiltinOperator::SELECT,
    BuiltinOperator::SELECT_V2,
    BuiltinOperator::REDUCE_MAX,
    BuiltinOperator::REDUCE_MIN,
];

/// The weight zero point of a convolution's weights in their working type: a uint8 weight
/// tensor's own zero point (per tensor) minus 128; int8 weights have none.
pub(crate) fn weight_zp(w: &Tensor) -> R<i64> {
    if !is_u8(w) {
        return Ok(0);
    }
    let zps = w.quantization.as_ref().map(|q| q.zero_point.clone());
    match zps.as_deref() {
        Some([z]) => Ok(z - OFFSET),
        Some([]) | None => Ok(-OFFSET),
        Some(_) => Err(format!(
            "uint8 weights {:?} must be quantized per tensor",
            w.name
        )),
    }
}

/// True if `t` is stored as uint8.
pub(crate) fn is_u8(t: &Tensor) -> bool {
    t.dtype == TensorType::Uint8
}

/// How much a zero point of `t` moves in its working type (128 for uint8, else 0).
pub(crate) fn offset(t: &Tensor) -> i64 {
    if is_u8(t) {
        OFFSET
    } else {
        0
    }
}

/// A uint8 tensor's quantization record moved to its int8 view.
pub(crate) fn shift_quant(q: Quantization) -> Quantization {
    match q {
        Quantization::PerTensor { scale, zero_point } => Quantization::PerTensor {
            scale,
            zero_point: zero_point - OFFSET,
        },
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        } => Quantization::PerAxis {
            axis,
            scales,
            zero_points: zero_points.into_iter().map(|z| z - OFFSET).collect(),
        },
    }
}

/// Constant data in its working type: uint8 values become their int8 view (`x - 128`).
pub(crate) fn view_data(d: TensorData) -> TensorData {
    match d {
        TensorData::U8(v) => TensorData::I8(v.into_iter().map(|x| (x ^ 0x80) as i8).collect()),
        d => d,
    }
}

/// Refuses an operator with a uint8 operand unless its uint8 kernel is exact on the int8 view.
pub(crate) fn check(cx: &OpCx<'_, '_>) -> R<()> {
    let sg = cx.l.sg;
    let touches_u8 = cx
        .op
        .inputs
        .iter()
        .flatten()
        .chain(&cx.op.outputs)
        .any(|t| is_u8(&sg.tensors[t.index()]));
    if touches_u8 && !UINT8_EXACT.contains(&cx.op.opcode.builtin) {
        return Err(format!(
            "uint8 operands are not supported in {} (int8 and int16 only)",
            cx.op.opcode.name()
        ));
    }
    Ok(())
}

/// The identity RESCALE between a uint8 tensor and its int8 view: `x - 128` (`to_view`) or
/// `x + 128`.
fn retype(to_view: bool) -> Op {
    Op::Rescale(RescaleAttrs {
        output_dtype: if to_view { DType::Int8 } else { DType::UInt8 },
        multiplier: vec![1 << 30],
        shift: vec![30],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: if to_view { OFFSET } else { -OFFSET },
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    })
}

/// `ir` in its working type: an IR tensor held as uint8 is read through its int8 view (one
/// RESCALE per tensor, shared by all readers).
pub(crate) fn int8_view(cx: &mut OpCx<'_, '_>, ir: IrT) -> R<IrT> {
    if cx.ty(ir).dtype != DType::UInt8 {
        return Ok(ir);
    }
    if let Some(&v) = cx.l.views.get(&ir) {
        return Ok(v);
    }
    let v = cx.emit("int8_view", retype(true), &[ir])?;
    let src = cx.l.g.tensor(ir).map(|t| (t.name.clone(), t.quant.clone()));
    if let (Some((name, q)), Some(t)) = (src, cx.l.g.tensor_mut(v)) {
        t.name = format!("{name}/int8");
        t.quant = q.map(shift_quant);
    }
    cx.l.views.insert(ir, v);
    Ok(v)
}

/// The IR tensor of graph output `t`: a uint8 output computed in its int8 view `ir` is
/// converted back (`x + 128`); the view keeps the name with `/int8` appended.
pub(crate) fn graph_output(l: &mut Lowerer<'_>, t: &Tensor, ir: IrT) -> R<IrT> {
    let held = l.g.tensor(ir).map(|x| x.ty.dtype);
    if !is_u8(t) || held != Some(DType::Int8) {
        return Ok(ir);
    }
    let (_, u) =
        l.g.add_op_inferred(format!("{}/uint8", t.name), retype(false), &[ir])
            .map_err(|e| e.to_string())?;
    let q = l.g.tensor(ir).and_then(|x| x.quant.clone());
    if let Some(x) = l.g.tensor_mut(ir) {
        x.name = format!("{}/int8", t.name);
    }
    if let Some(x) = l.g.tensor_mut(u) {
        x.name = t.name.clone();
        x.quant = q.map(|q| match q {
            Quantization::PerTensor { scale, zero_point } => Quantization::PerTensor {
                scale,
                zero_point: zero_point + OFFSET,
            },
            other => other,
        });
    }
    Ok(u)
}

/// QUANTIZE with a uint8 input or output: TFLite's `Requantize`
/// (`clamp(MultiplyByQuantizedMultiplier(x - zp_in, M, s) + zp_out)`, `(M, s)` from
/// `s_in / s_out`). A uint8 input is read as uint8 with its own zero point; a uint8 output
/// is written as uint8. uint8 to uint8 goes through the exact difference `x - zp_in` in i16
/// (the IR's RESCALE has no unsigned-to-unsigned form).
pub(crate) fn quantize(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let (din, dout) = (OpCx::raw_dtype(xt)?, OpCx::raw_dtype(ot)?);
    // TFLite's Prepare: a uint8 input goes to int8 or uint8, uint8 comes from int8 or uint8.
    let both_8bit = |d| matches!(d, DType::Int8 | DType::UInt8);
    if !both_8bit(din) || !both_8bit(dout) {
        return Err(format!(
            "requantization {din} -> {dout} (TFLite has uint8 <-> int8/uint8 only)"
        ));
    }
    let (si, _) = OpCx::raw_qparams(xt)?;
    let (so, zo) = OpCx::raw_qparams(ot)?;
    let real = f64::from(si) / f64::from(so);
    let (m, s) = super::arith::quantize_multiplier(real)
        .ok_or_else(|| format!("scale {real} cannot be expressed as a multiplier"))?;
    let x = cx.input_raw(0)?;
    let held = cx.ty(x).dtype;
    // The zero point of the tensor as held (uint8, or its int8 view).
    let (_, zi) = if held == DType::UInt8 {
        OpCx::raw_qparams(xt)?
    } else {
        OpCx::qparams(xt)?
    };
    let (x, zi) = if held == DType::UInt8 && dout == DType::UInt8 {
        let d = cx.rescale(
            x,
            DType::Int16,
            vec![1 << 30],
            vec![30],
            true,
            RescaleRounding::SingleRound,
            zi,
            0,
        )?;
        (d, 0)
    } else {
        (x, zi)
    };
    let y = cx.rescale(
        x,
        dout,
        vec![m],
        vec![31 - s],
        true,
        RescaleRounding::DoubleRound,
        zi,
        zo,
    )?;
    cx.bind_output(0, y)
}

/// CAST of a uint8 tensor to int16 or int32: TFLite converts the byte `x` itself (no
/// quantization), `x = view + 128`, one exact RESCALE of the view.
pub(crate) fn cast(cx: &mut OpCx<'_, '_>) -> R<()> {
    let to = OpCx::dtype(cx.tout(0)?)?;
    if !matches!(to, DType::Int16 | DType::Int32) {
        return Err(format!("CAST uint8 -> {to} (uint8 -> int16/int32 only)"));
    }
    let x = cx.input(0)?;
    let y = cx.rescale(
        x,
        to,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        -OFFSET,
        0,
    )?;
    cx.bind_output(0, y)
}
