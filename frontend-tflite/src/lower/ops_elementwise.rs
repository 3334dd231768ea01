//! ADD, SUB, MUL, MAXIMUM, MINIMUM, the RELU family and table-based unary activations.
//!
//! ADD/SUB follow TFLite's quantized scheme: each input becomes `(x - zp) << left_shift`
//! (20 for int8, 15 for int16) in `i32`, is rescaled by `s_i / (2 * max(s1, s2))` (double
//! rounding), the two are added (subtracted) and the sum is rescaled by
//! `2 * max(s1, s2) / (2^left_shift * s_out)` to the output. MUL multiplies the zero-point
//! corrected inputs in `i32` and rescales by `s1 * s2 / s_out`.

use super::ctx::{IrT, OpCx, R};
use crate::schema::{ActivationFunctionType, BuiltinOptionsT};
use crate::BuiltinOperator;
use npuc_ir::{DType, MulAttrs, Op, TensorData};

/// Reshapes `x` to `rank` dimensions by prepending 1s (TFLite broadcasting aligns trailing
/// dimensions).
pub(crate) fn to_rank(cx: &mut OpCx<'_, '_>, x: IrT, rank: usize) -> R<IrT> {
    let s = cx.ty(x).shape.0;
    if s.len() >= rank {
        return Ok(x);
    }
    let mut ns = vec![1; rank - s.len()];
    ns.extend(s);
    cx.reshape(x, ns)
}

fn int_type(dt: DType) -> R<()> {
    match dt {
        DType::Int8 | DType::Int16 => Ok(()),
        other => Err(format!(
            "element type {other} is not supported (int8 or int16)"
        )),
    }
}

/// TFLite's `CheckedLog2`: the scale is a power of two within 1e-3 in log2 (f32).
fn is_pot(scale: f32) -> bool {
    let l = scale.ln() * (1.0f32 / 2f32.ln());
    (l - l.round()).abs() < 1e-3
}

/// `(x - zp) << shift` as `i32`.
fn shifted_i32(cx: &mut OpCx<'_, '_>, x: IrT, zp: i64, shift: i32) -> R<IrT> {
    let v = cx.widen_i32(x, zp)?;
    let rank = cx.ty(v).shape.rank();
    let c = cx.constant("shift", vec![1; rank], TensorData::I32(vec![shift]))?;
    cx.emit("shl", Op::LogicalLeftShift, &[v, c])
}

pub(crate) fn add_sub(cx: &mut OpCx<'_, '_>, sub: bool) -> R<()> {
    let act = match cx.opts() {
        BuiltinOptionsT::AddOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::SubOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::NONE => ActivationFunctionType::NONE,
        _ => return Err("unexpected options".into()),
    };
    let pot16 = match cx.opts() {
        BuiltinOptionsT::AddOptions(o) => o.pot_scale_int16,
        BuiltinOptionsT::SubOptions(o) => o.pot_scale_int16,
        _ => true,
    };
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let dt = OpCx::dtype(t1)?;
    if OpCx::dtype(t2)? != dt || OpCx::dtype(to)? != dt {
        return Err("inputs and output must have the same type".into());
    }
    if dt == DType::Int32 {
        return int32_arith(cx, if sub { Op::Sub } else { Op::Add }, act);
    }
    int_type(dt)?;
    let (s1, z1) = OpCx::qparams(t1)?;
    let (s2, z2) = OpCx::qparams(t2)?;
    let (so, zo) = OpCx::qparams(to)?;
    // With pot_scale_int16, TFLite takes its power-of-two shift path only when all three
    // scales are powers of two (within its CheckedLog2 tolerance); otherwise the general one.
    if dt == DType::Int16 && pot16 && [s1, s2, so].into_iter().all(is_pot) {
        return Err(
            "int16 with pot_scale_int16 and power-of-two scales (TFLite's shift path) is not supported"
                .into(),
        );
    }
    let ls = if dt == DType::Int8 { 20 } else { 15 };
    let twice_max = 2.0 * f64::from(s1).max(f64::from(s2));
    let r1 = f64::from(s1) / twice_max;
    let r2 = f64::from(s2) / twice_max;
    let ro = twice_max / (f64::from(1u32 << ls) * f64::from(so));
    let rank = OpCx::shape(to)?.len();
    let mut parts = vec![];
    for (slot, zp, r) in [(0, z1, r1), (1, z2, r2)] {
        let x = cx.input(slot)?;
        let x = to_rank(cx, x, rank)?;
        let v = shifted_i32(cx, x, zp, ls)?;
        let v = cx.requant_double(v, DType::Int32, &[r], 0)?;
        parts.push(v);
    }
    let sum = cx.emit(
        if sub { "sub" } else { "add" },
        if sub { Op::Sub } else { Op::Add },
        &parts,
    )?;
    let y = cx.requant_double(sum, dt, &[ro], zo)?;
    let y = cx.activation(y, act, so, zo)?;
    cx.bind_output(0, y)
}

pub(crate) fn mul(cx: &mut OpCx<'_, '_>) -> R<()> {
    let act = match cx.opts() {
        BuiltinOptionsT::MulOptions(o) => o.fused_activation_function,
        BuiltinOptionsT::NONE => ActivationFunctionType::NONE,
        _ => return Err("unexpected options".into()),
    };
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let dt = OpCx::dtype(t1)?;
    if OpCx::dtype(t2)? != dt || OpCx::dtype(to)? != dt {
        return Err("inputs and output must have the same type".into());
    }
    if dt == DType::Int32 {
        return int32_arith(cx, Op::Mul(MulAttrs { shift: 0 }), act);
    }
    int_type(dt)?;
    let (s1, z1) = OpCx::qparams(t1)?;
    let (s2, z2) = OpCx::qparams(t2)?;
    let (so, zo) = OpCx::qparams(to)?;
    let rank = OpCx::shape(to)?.len();
    let mut parts = vec![];
    for (slot, zp) in [(0, z1), (1, z2)] {
        let x = cx.input(slot)?;
        let x = to_rank(cx, x, rank)?;
        parts.push(cx.widen_i32(x, zp)?);
    }
    let p = cx.emit("mul", Op::Mul(MulAttrs { shift: 0 }), &parts)?;
    // TFLite's Prepare multiplies and divides the scales as `float`s before widening the
    // result to `double` (mul.cc); with 16-bit products the difference shows (decision F9).
    let real = f64::from(s1 * s2 / so);
    let y = cx.requant_double(p, dt, &[real], zo)?;
    let y = cx.activation(y, act, so, zo)?;
    cx.bind_output(0, y)
}

/// ADD, SUB or MUL of int32 tensors (no quantization): TFLite's reference kernels compute
/// the raw sum, difference or product and clamp it to the fused activation's range
/// (`CalculateActivationRange<int32_t>`: RELU `[0, max]`, RELU6 `[0, 6]`, RELU_N1_TO_1
/// `[-1, 1]`), which is `activation` with scale 1 and zero point 0. A result outside i32 is
/// undefined there (signed overflow) and in the IR alike.
fn int32_arith(cx: &mut OpCx<'_, '_>, op: Op, act: ActivationFunctionType) -> R<()> {
    let rank = OpCx::shape(cx.tout(0)?)?.len();
    let mut parts = vec![];
    for slot in 0..2 {
        let x = cx.input(slot)?;
        parts.push(to_rank(cx, x, rank)?);
    }
    let name = match op {
        Op::Add => "add",
        Op::Sub => "sub",
        _ => "mul",
    };
    let y = cx.emit(name, op, &parts)?;
    let y = cx.activation(y, act, 1.0, 0)?;
    cx.bind_output(0, y)
}

pub(crate) fn min_max(cx: &mut OpCx<'_, '_>, max: bool) -> R<()> {
    let (t1, t2, to) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let dt = OpCx::dtype(t1)?;
    int_type(dt)?;
    if OpCx::qparams(t1)? != OpCx::qparams(to)? || OpCx::qparams(t2)? != OpCx::qparams(to)? {
        return Err("inputs and output must share quantization".into());
    }
    let rank = OpCx::shape(to)?.len();
    let a = cx.input(0)?;
    let a = to_rank(cx, a, rank)?;
    let b = cx.input(1)?;
    let b = to_rank(cx, b, rank)?;
    let y = cx.emit(
        if max { "max" } else { "min" },
        if max { Op::Maximum } else { Op::Minimum },
        &[a, b],
    )?;
    cx.bind_output(0, y)
}

pub(crate) fn relu(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let dt = OpCx::dtype(xt)?;
    int_type(dt)?;
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    let q = |f: f32| zo + i64::from((f / so).round() as i32);
    let (lo, hi) = match code {
        BuiltinOperator::RELU => (q(0.0), dt.max_value()),
        BuiltinOperator::RELU6 => (q(0.0), q(6.0)),
        BuiltinOperator::RELU_N1_TO_1 => (q(-1.0), q(1.0)),
        _ => (q(0.0), q(1.0)),
    };
    let (lo, hi) = (lo.max(dt.min_value()), hi.min(dt.max_value()));
    let x = cx.input(0)?;
    let v = cx.widen_i32(x, zi)?;
    let real = f64::from(si / so);
    let y = cx.requant_double(v, dt, &[real], zo)?;
    let y = cx.clamp(y, lo, hi)?;
    cx.bind_output(0, y)
}

pub(crate) fn unary(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    if code == BuiltinOperator::QUANTIZE {
        return quantize(cx);
    }
    super::ops_table::unary(cx, code)
}

/// QUANTIZE between integer types (requantization, TFLite's `Requantize`): `x - zp_in`
/// scaled by `s_in / s_out` (`MultiplyByQuantizedMultiplier`, double rounding), plus
/// `zp_out`, saturated.
fn quantize(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if super::uint8::is_u8(xt) || super::uint8::is_u8(ot) {
        return super::uint8::quantize(cx);
    }
    let (di, dout) = (OpCx::dtype(xt)?, OpCx::dtype(ot)?);
    int_type(di)?;
    int_type(dout)?;
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    let x = cx.input(0)?;
    let v = cx.widen_i32(x, zi)?;
    let real = f64::from(si) / f64::from(so);
    let y = cx.requant_double(v, dout, &[real], zo)?;
    cx.bind_output(0, y)
}
