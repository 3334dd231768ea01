//! CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, AVERAGE_POOL_2D, MAX_POOL_2D.
//!
//! Convolutions produce the raw IR accumulator (`i32` for int8 inputs, `i48` for int16),
//! followed by a per-channel RESCALE: int8 uses TFLite's 31-bit multiplier with gemmlowp
//! double rounding (`MultiplyByQuantizedMultiplier`); 16x8 kernels use TFLite's 64-bit path,
//! whose multiplier is reduced to 16 bits (`(m + 2^15) >> 16`) with one rounding. Fused
//! activations are clamps with TFLite's quantized activation range.

use super::arith::{quantize_multiplier, reduce_multiplier_16};
use super::ctx::{IrT, OpCx, R};
use crate::schema::{
    ActivationFunctionType, BuiltinOptionsT, FullyConnectedOptionsWeightsFormat, Padding,
};
use crate::Tensor;
use npuc_ir::{
    AvgPool2dAttrs, AvgPoolRounding, ConvAttrs, DType, FullyConnectedAttrs, Op, PoolAttrs,
    RescaleRounding, TensorData, TransposeConvAttrs,
};

/// `(pad_before, pad_after, out)` of TFLite's SAME/VALID padding for one spatial dimension.
pub(crate) fn padding(
    p: Padding,
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> R<(usize, usize, usize)> {
    if stride == 0 || dilation == 0 || kernel == 0 {
        return Err("stride, dilation and kernel must be positive".into());
    }
    let eff = (kernel - 1) * dilation + 1;
    match p {
        Padding::SAME => {
            let out = input.div_ceil(stride);
            let total = ((out - 1) * stride + eff).saturating_sub(input);
            Ok((total / 2, total - total / 2, out))
        }
        Padding::VALID => {
            if input < eff {
                return Err(format!("VALID window {eff} larger than input {input}"));
            }
            Ok((0, 0, (input - eff) / stride + 1))
        }
        other => Err(format!("padding {other:?} is not supported")),
    }
}

fn pos(v: i32, what: &str) -> R<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{what} {v} must be positive"))
}

/// Per-output-channel weight scales (one per channel or a single shared one).
fn weight_scales(w: &Tensor, channels: usize) -> R<Vec<f32>> {
    let q = w
        .quantization
        .as_ref()
        .filter(|q| !q.scale.is_empty())
        .ok_or_else(|| format!("weights {:?} are not quantized", w.name))?;
    if !super::uint8::is_u8(w) && q.zero_point.iter().any(|&z| z != 0) {
        return Err(format!("weights {:?} have a non-zero zero point", w.name));
    }
    match q.scale.len() {
        1 => Ok(vec![q.scale[0]; channels]),
        n if n == channels => Ok(q.scale.clone()),
        n => Err(format!(
            "weights {:?} have {n} scales for {channels} output channels",
            w.name
        )),
    }
}

/// The bias operand: TFLite's bias (int32 for int8, int64 → i48 for int16) or a zero `[1]`.
fn bias(cx: &mut OpCx<'_, '_>, slot: usize, acc: DType, channels: usize) -> R<IrT> {
    if !cx.has_input(slot) {
        return cx.constant("zero_bias", vec![1], TensorData::zeros(acc, 1));
    }
    let t = cx.tin(slot)?;
    let vals = cx.const_input(slot)?;
    if vals.len() != channels {
        return Err(format!(
            "bias {:?} has {} values for {channels} channels",
            t.name,
            vals.len()
        ));
    }
    let data = TensorData::from_i64(acc, &vals).map_err(|e| format!("bias {:?}: {e}", t.name))?;
    cx.constant("bias", vec![channels], data)
}

fn check_weight_type(w: &Tensor) -> R<()> {
    if OpCx::dtype(w)? != DType::Int8 {
        return Err(format!(
            "weights {:?} must be int8, are {:?}",
            w.name, w.dtype
        ));
    }
    Ok(())
}

fn acc_type(input: DType) -> R<DType> {
    match input {
        DType::Int8 => Ok(DType::Int32),
        DType::Int16 => Ok(DType::Int48),
        other => Err(format!(
            "input type {other} is not supported (int8 or int16)"
        )),
    }
}

/// Requantizes a convolution accumulator to the output tensor and applies the activation.
/// `single_round` selects TFLite's single-rounding 32-bit path (per-channel fully connected).
pub(crate) fn requant(
    cx: &mut OpCx<'_, '_>,
    acc: IrT,
    input_scale: f32,
    w_scales: &[f32],
    out: &Tensor,
    act: ActivationFunctionType,
    single_round: bool,
) -> R<IrT> {
    let (so, zo) = OpCx::qparams(out)?;
    let odt = OpCx::dtype(out)?;
    let reals: Vec<f64> = w_scales
        .iter()
        .map(|&ws| f64::from(input_scale) * f64::from(ws) / f64::from(so))
        .collect();
    let y = match odt {
        DType::Int8 if !single_round => cx.requant_double(acc, odt, &reals, zo)?,
        DType::Int8 => {
            let mut ms = vec![];
            let mut ss = vec![];
            for &r in &reals {
                let (m, s) = quantize_multiplier(r).ok_or("bad output scale")?;
                ms.push(m);
                ss.push(31 - s);
            }
            cx.rescale(acc, odt, ms, ss, true, RescaleRounding::SingleRound, 0, zo)?
        }
        DType::Int16 if single_round => {
            // TFLite's 16x8 per-channel fully connected: 64-bit accumulator, 31-bit
            // multiplier, one rounding.
            if zo != 0 {
                return Err("int16 output must have zero point 0".into());
            }
            let a32 = cx.rescale(
                acc,
                DType::Int32,
                vec![1 << 14],
                vec![14],
                false,
                RescaleRounding::SingleRound,
                0,
                0,
            )?;
            let mut ms = vec![];
            let mut ss = vec![];
            for &r in &reals {
                let (m, s) = quantize_multiplier(r).ok_or("bad output scale")?;
                ms.push(m);
                ss.push(31 - s);
            }
            cx.rescale(a32, odt, ms, ss, true, RescaleRounding::SingleRound, 0, 0)?
        }
        DType::Int16 => {
            if zo != 0 {
                return Err("int16 output must have zero point 0".into());
            }
            let mut ms = vec![];
            let mut ss = vec![];
            for &r in &reals {
                let (m, s) = quantize_multiplier(r).ok_or("bad output scale")?;
                ms.push(reduce_multiplier_16(m));
                ss.push(15 - s);
            }
            cx.rescale(acc, odt, ms, ss, false, RescaleRounding::SingleRound, 0, 0)?
        }
        other => return Err(format!("output type {other} is not supported")),
    };
    let (so, zo) = OpCx::qparams(out)?;
    cx.activation(y, act, so, zo)
}

fn input_zp(dt: DType, zp: i64) -> R<i64> {
    if dt == DType::Int16 && zp != 0 {
        return Err("int16 input must have zero point 0".into());
    }
    Ok(zp)
}

pub(crate) fn conv2d(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::Conv2DOptions(o) = cx.opts() else {
        return Err("missing Conv2DOptions".into());
    };
    let (xt, wt, ot) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    check_weight_type(wt)?;
    let xs = OpCx::shape(xt)?;
    let ws = OpCx::shape(wt)?;
    if xs.len() != 4 || ws.len() != 4 {
        return Err("CONV_2D needs 4-D input and weights".into());
    }
    if ws[3] != xs[3] {
        return Err(format!(
            "grouped convolution (weights {ws:?}, input {xs:?}) is not supported"
        ));
    }
    let dt = OpCx::dtype(xt)?;
    let acc_t = acc_type(dt)?;
    let (sx, zx) = OpCx::qparams(xt)?;
    let oc = ws[0];
    let (sy, sxx) = (pos(o.stride_h, "stride_h")?, pos(o.stride_w, "stride_w")?);
    let (dy, dx) = (
        pos(o.dilation_h_factor, "dilation_h")?,
        pos(o.dilation_w_factor, "dilation_w")?,
    );
    let (pt, pb, _) = padding(o.padding, xs[1], ws[1], sy, dy)?;
    let (pl, pr, _) = padding(o.padding, xs[2], ws[2], sxx, dx)?;
    let w_scales = weight_scales(wt, oc)?;
    let x = cx.input(0)?;
    let w = cx.input(1)?;
    let b = bias(cx, 2, acc_t, oc)?;
    let acc = cx.emit(
        "conv",
        Op::Conv2d(ConvAttrs {
            pad: [pt, pb, pl, pr],
            stride: [sy, sxx],
            dilation: [dy, dx],
            input_zp: input_zp(dt, zx)?,
            weight_zp: super::uint8::weight_zp(wt)?,
        }),
        &[x, w, b],
    )?;
    let y = requant(
        cx,
        acc,
        sx,
        &w_scales,
        ot,
        o.fused_activation_function,
        false,
    )?;
    cx.bind_output(0, y)
}

pub(crate) fn depthwise(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::DepthwiseConv2DOptions(o) = cx.opts() else {
        return Err("missing DepthwiseConv2DOptions".into());
    };
    let (xt, wt, ot) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    check_weight_type(wt)?;
    let xs = OpCx::shape(xt)?;
    let ws = OpCx::shape(wt)?;
    if xs.len() != 4 || ws.len() != 4 || ws[0] != 1 {
        return Err("DEPTHWISE_CONV_2D needs 4-D input and [1,KH,KW,C*M] weights".into());
    }
    let (c, oc) = (xs[3], ws[3]);
    if oc % c != 0 {
        return Err(format!("{oc} output channels is not a multiple of {c}"));
    }
    let m = oc / c;
    if o.depth_multiplier > 0 && o.depth_multiplier as usize != m {
        // TFLite derives the multiplier from the shapes; the option is informational.
    }
    let dt = OpCx::dtype(xt)?;
    let acc_t = acc_type(dt)?;
    let (sx, zx) = OpCx::qparams(xt)?;
    let (sy, sxx) = (pos(o.stride_h, "stride_h")?, pos(o.stride_w, "stride_w")?);
    let (dy, dx) = (
        pos(o.dilation_h_factor, "dilation_h")?,
        pos(o.dilation_w_factor, "dilation_w")?,
    );
    let (pt, pb, _) = padding(o.padding, xs[1], ws[1], sy, dy)?;
    let (pl, pr, _) = padding(o.padding, xs[2], ws[2], sxx, dx)?;
    let w_scales = weight_scales(wt, oc)?;
    let wv = cx.const_input(1)?;
    let wdata = TensorData::from_i64(DType::Int8, &wv).map_err(|e| e.to_string())?;
    let w = cx.constant("weights_khkwcm", vec![ws[1], ws[2], c, m], wdata)?;
    let x = cx.input(0)?;
    let b = bias(cx, 2, acc_t, oc)?;
    let acc = cx.emit(
        "depthwise",
        Op::DepthwiseConv2d(ConvAttrs {
            pad: [pt, pb, pl, pr],
            stride: [sy, sxx],
            dilation: [dy, dx],
            input_zp: input_zp(dt, zx)?,
            weight_zp: super::uint8::weight_zp(wt)?,
        }),
        &[x, w, b],
    )?;
    let y = requant(
        cx,
        acc,
        sx,
        &w_scales,
        ot,
        o.fused_activation_function,
        false,
    )?;
    cx.bind_output(0, y)
}

pub(crate) fn fully_connected(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::FullyConnectedOptions(o) = cx.opts() else {
        return Err("missing FullyConnectedOptions".into());
    };
    if o.weights_format != FullyConnectedOptionsWeightsFormat::DEFAULT {
        return Err("shuffled weights are not supported".into());
    }
    let (xt, wt, ot) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    check_weight_type(wt)?;
    let xs = OpCx::shape(xt)?;
    let ws = OpCx::shape(wt)?;
    if ws.len() != 2 {
        return Err("FULLY_CONNECTED weights must be 2-D".into());
    }
    let (oc, ic) = (ws[0], ws[1]);
    let total: usize = xs.iter().product();
    if ic == 0 || total % ic != 0 {
        return Err(format!("input {xs:?} is not a multiple of {ic}"));
    }
    let n = total / ic;
    let dt = OpCx::dtype(xt)?;
    let acc_t = acc_type(dt)?;
    let (sx, zx) = OpCx::qparams(xt)?;
    let w_scales = weight_scales(wt, oc)?;
    let per_channel = wt.quantization.as_ref().is_some_and(|q| q.scale.len() > 1);
    let x = cx.input(0)?;
    let x2 = cx.reshape(x, vec![n, ic])?;
    let w = cx.input(1)?;
    let b = bias(cx, 2, acc_t, oc)?;
    let acc = cx.emit(
        "fc",
        Op::FullyConnected(FullyConnectedAttrs {
            input_zp: input_zp(dt, zx)?,
            weight_zp: super::uint8::weight_zp(wt)?,
        }),
        &[x2, w, b],
    )?;
    let y = requant(
        cx,
        acc,
        sx,
        &w_scales,
        ot,
        o.fused_activation_function,
        per_channel,
    )?;
    let os = OpCx::shape(ot)?;
    let y = cx.reshape(y, os)?;
    cx.bind_output(0, y)
}

pub(crate) fn transpose_conv(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::TransposeConvOptions(o) = cx.opts() else {
        return Err("missing TransposeConvOptions".into());
    };
    let (wt, xt, ot) = (cx.tin(1)?, cx.tin(2)?, cx.tout(0)?);
    check_weight_type(wt)?;
    let xs = OpCx::shape(xt)?;
    let ws = OpCx::shape(wt)?;
    let os = OpCx::shape(ot)?;
    if xs.len() != 4 || ws.len() != 4 || os.len() != 4 || ws[3] != xs[3] {
        return Err("TRANSPOSE_CONV needs 4-D input, OHWI weights and output".into());
    }
    let dt = OpCx::dtype(xt)?;
    let acc_t = acc_type(dt)?;
    let (sx, zx) = OpCx::qparams(xt)?;
    let oc = ws[0];
    let (sy, sxx) = (pos(o.stride_h, "stride_h")?, pos(o.stride_w, "stride_w")?);
    // TFLite pads as the forward convolution from the output size would.
    let (pt, _, _) = padding(o.padding, os[1], ws[1], sy, 1)?;
    let (pl, _, _) = padding(o.padding, os[2], ws[2], sxx, 1)?;
    let full_h = ((xs[1] - 1) * sy + ws[1]) as i64;
    let full_w = ((xs[2] - 1) * sxx + ws[2]) as i64;
    let out_pad = [
        -(pt as i64),
        os[1] as i64 - full_h + pt as i64,
        -(pl as i64),
        os[2] as i64 - full_w + pl as i64,
    ];
    let w_scales = weight_scales(wt, oc)?;
    let x = cx.input(2)?;
    let w = cx.input(1)?;
    let b = bias(cx, 3, acc_t, oc)?;
    let acc = cx.emit(
        "tconv",
        Op::TransposeConv2d(TransposeConvAttrs {
            out_pad,
            stride: [sy, sxx],
            input_zp: input_zp(dt, zx)?,
            weight_zp: super::uint8::weight_zp(wt)?,
        }),
        &[x, w, b],
    )?;
    let y = requant(
        cx,
        acc,
        sx,
        &w_scales,
        ot,
        o.fused_activation_function,
        false,
    )?;
    cx.bind_output(0, y)
}

pub(crate) fn pool(cx: &mut OpCx<'_, '_>, max: bool) -> R<()> {
    let BuiltinOptionsT::Pool2DOptions(o) = cx.opts() else {
        return Err("missing Pool2DOptions".into());
    };
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    let xs = OpCx::shape(xt)?;
    if xs.len() != 4 {
        return Err("pooling needs a 4-D input".into());
    }
    let dt = OpCx::dtype(xt)?;
    if dt != DType::Int8 && dt != DType::Int16 {
        return Err(format!("input type {dt} is not supported"));
    }
    let k = [
        pos(o.filter_height, "filter_height")?,
        pos(o.filter_width, "filter_width")?,
    ];
    let s = [pos(o.stride_h, "stride_h")?, pos(o.stride_w, "stride_w")?];
    let (pt, pb, _) = padding(o.padding, xs[1], k[0], s[0], 1)?;
    let (pl, pr, _) = padding(o.padding, xs[2], k[1], s[1], 1)?;
    let pad = [pt, pb, pl, pr];
    let x = cx.input(0)?;
    let y = if max {
        cx.emit(
            "maxpool",
            Op::MaxPool2d(PoolAttrs {
                kernel: k,
                stride: s,
                pad,
            }),
            &[x],
        )?
    } else {
        cx.emit(
            "avgpool",
            Op::AvgPool2d(AvgPool2dAttrs {
                kernel: k,
                stride: s,
                pad,
                // TFLite's uint8 kernel averages the raw (non-negative) values, rounding
                // half up: the view's values plus 128 (decision F6).
                input_zp: -super::uint8::offset(xt),
                output_zp: -super::uint8::offset(xt),
                rounding: AvgPoolRounding::Tflite,
            }),
            &[x],
        )?
    };
    let (so, zo) = OpCx::qparams(ot)?;
    let y = cx.activation(y, o.fused_activation_function, so, zo)?;
    cx.bind_output(0, y)
}
