//! Type inference for the tensor operators (convolutions, pooling, matmul, argmax) and RESIZE.

use super::infer::{bad, bad_attr, dtype_in, rank_is, zero_point, R};
use super::MAX_ELEMENTS;
use crate::ops::{Op, ResizeMode};
use crate::types::{DType, Shape, TensorType};

/// Accumulator type of a convolution-like operator for the given input type (TOSA §2.3.4:
/// `i8` → `i32`, `i16` → `i48`).
pub fn accumulator_dtype(input: DType) -> Option<DType> {
    match input {
        DType::Int8 => Some(DType::Int32),
        DType::Int16 => Some(DType::Int48),
        _ => None,
    }
}

/// Output extent of a strided window: `floor((in - 1 + pad_a + pad_b - (k - 1) * dil) / stride) + 1`.
///
/// TOSA (§2.3.4 etc.) requires the division to be exact (`idiv_check`); this IR accepts any
/// geometry and ignores the trailing input rows/columns no window reaches, which is what a
/// TFLite VALID convolution needs. The results agree wherever TOSA's condition holds.
pub fn window_out(
    input: usize,
    pad_a: usize,
    pad_b: usize,
    kernel: usize,
    dilation: usize,
    stride: usize,
) -> Option<usize> {
    let span = (kernel.checked_sub(1)?).checked_mul(dilation)?;
    let avail = (input.checked_sub(1)?)
        .checked_add(pad_a)?
        .checked_add(pad_b)?;
    let free = avail.checked_sub(span)?;
    Some(free / stride + 1)
}

/// Strides, dilations and kernels must be in `1..=MAX_ELEMENTS`.
fn positive(what: &str, v: &[usize]) -> R<()> {
    if v.contains(&0) {
        return Err(bad_attr(format!("{what} {v:?} must be >= 1")));
    }
    bounded(what, v)
}

/// Geometry attributes are at most [`MAX_ELEMENTS`], keeping index arithmetic small.
fn bounded(what: &str, v: &[usize]) -> R<()> {
    if v.iter().any(|&x| x > MAX_ELEMENTS) {
        return Err(bad_attr(format!("{what} {v:?} is too large")));
    }
    Ok(())
}

fn bias_check(inputs: &[TensorType], acc: DType, channels: usize) -> R<()> {
    let b = rank_is(inputs, 2, 1)?;
    if inputs[2].dtype != acc {
        return Err(bad(
            2,
            format!(
                "bias must be {acc} (the accumulator type), is {}",
                inputs[2].dtype
            ),
        ));
    }
    if b[0] != channels && b[0] != 1 {
        return Err(bad(
            2,
            format!("bias {b} must have {channels} or 1 elements"),
        ));
    }
    Ok(())
}

fn conv_io(inputs: &[TensorType], input_zp: i64, weight_zp: i64) -> R<DType> {
    let dt = dtype_in(inputs, 0, &[DType::Int8, DType::Int16])?;
    dtype_in(inputs, 1, &[DType::Int8])?;
    zero_point("input_zp", input_zp, dt)?;
    zero_point("weight_zp", weight_zp, DType::Int8)?;
    Ok(accumulator_dtype(dt).unwrap_or(DType::Int32))
}

fn window_err(what: &str) -> crate::validate::InferError {
    bad_attr(format!("{what} window does not fit the padded input"))
}

pub(crate) fn infer(op: &Op, inputs: &[TensorType]) -> R<TensorType> {
    match op {
        Op::ArgMax(a) => {
            dtype_in(inputs, 0, &[DType::Int8, DType::Int16, DType::Int32])?;
            let s = &inputs[0].shape;
            if a.axis >= s.rank() {
                return Err(bad_attr(format!("axis {} out of range for {s}", a.axis)));
            }
            let mut d = s.0.clone();
            d.remove(a.axis);
            Ok(TensorType::new(DType::Int32, d))
        }
        Op::AvgPool2d(a) => {
            let dt = dtype_in(inputs, 0, &[DType::Int8, DType::Int16])?;
            zero_point("input_zp", a.input_zp, dt)?;
            zero_point("output_zp", a.output_zp, dt)?;
            pool_shape(inputs, a.kernel, a.stride, a.pad).map(|s| TensorType::new(dt, s))
        }
        Op::MaxPool2d(a) => {
            let dt = dtype_in(inputs, 0, &[DType::Int8, DType::Int16])?;
            pool_shape(inputs, a.kernel, a.stride, a.pad).map(|s| TensorType::new(dt, s))
        }
        Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
            let acc = conv_io(inputs, a.input_zp, a.weight_zp)?;
            positive("stride", &a.stride)?;
            positive("dilation", &a.dilation)?;
            bounded("pad", &a.pad)?;
            let i = rank_is(inputs, 0, 4)?;
            let w = rank_is(inputs, 1, 4)?;
            let depthwise = matches!(op, Op::DepthwiseConv2d(_));
            // CONV2D weights are [OC,KH,KW,IC]; DEPTHWISE_CONV2D weights are [KH,KW,C,M].
            let (kh, kw, wc, oc) = if depthwise {
                (w[0], w[1], w[2], w[2] * w[3])
            } else {
                (w[1], w[2], w[3], w[0])
            };
            if wc != i[3] {
                return Err(bad(
                    1,
                    format!(
                        "weight {w} expects {wc} input channels, input {i} has {}",
                        i[3]
                    ),
                ));
            }
            bias_check(inputs, acc, oc)?;
            let oh = window_out(i[1], a.pad[0], a.pad[1], kh, a.dilation[0], a.stride[0])
                .ok_or_else(|| window_err("kernel"))?;
            let ow = window_out(i[2], a.pad[2], a.pad[3], kw, a.dilation[1], a.stride[1])
                .ok_or_else(|| window_err("kernel"))?;
            Ok(TensorType::new(acc, [i[0], oh, ow, oc]))
        }
        Op::Conv3d(a) => {
            let acc = conv_io(inputs, a.input_zp, a.weight_zp)?;
            positive("stride", &a.stride)?;
            positive("dilation", &a.dilation)?;
            bounded("pad", &a.pad)?;
            let i = rank_is(inputs, 0, 5)?;
            let w = rank_is(inputs, 1, 5)?;
            if w[4] != i[4] {
                return Err(bad(
                    1,
                    format!(
                        "weight {w} expects {} input channels, input {i} has {}",
                        w[4], i[4]
                    ),
                ));
            }
            bias_check(inputs, acc, w[0])?;
            let mut out = vec![i[0]];
            for k in 0..3 {
                let o = window_out(
                    i[1 + k],
                    a.pad[2 * k],
                    a.pad[2 * k + 1],
                    w[1 + k],
                    a.dilation[k],
                    a.stride[k],
                )
                .ok_or_else(|| window_err("kernel"))?;
                out.push(o);
            }
            out.push(w[0]);
            Ok(TensorType::new(acc, out))
        }
        Op::TransposeConv2d(a) => {
            let acc = conv_io(inputs, a.input_zp, a.weight_zp)?;
            positive("stride", &a.stride)?;
            let i = rank_is(inputs, 0, 4)?;
            let w = rank_is(inputs, 1, 4)?;
            if w[3] != i[3] {
                return Err(bad(
                    1,
                    format!(
                        "weight {w} expects {} input channels, input {i} has {}",
                        w[3], i[3]
                    ),
                ));
            }
            bias_check(inputs, acc, w[0])?;
            let (kh, kw) = (w[1] as i128, w[2] as i128);
            let p = a.out_pad.map(i128::from);
            if p[0] <= -kh || p[1] <= -kh || p[2] <= -kw || p[3] <= -kw {
                return Err(bad_attr(format!(
                    "out_pad {:?} must be > -kernel ({kh}x{kw})",
                    a.out_pad
                )));
            }
            let oh = (i[1] as i128 - 1) * a.stride[0] as i128 + p[0] + p[1] + kh;
            let ow = (i[2] as i128 - 1) * a.stride[1] as i128 + p[2] + p[3] + kw;
            let limit = MAX_ELEMENTS as i128;
            if oh < 1 || ow < 1 || oh > limit || ow > limit {
                return Err(bad_attr(format!(
                    "output size {oh}x{ow} is empty or too large"
                )));
            }
            Ok(TensorType::new(acc, [i[0], oh as usize, ow as usize, w[0]]))
        }
        Op::FullyConnected(a) => {
            let acc = conv_io(inputs, a.input_zp, a.weight_zp)?;
            let i = rank_is(inputs, 0, 2)?;
            let w = rank_is(inputs, 1, 2)?;
            if w[1] != i[1] {
                return Err(bad(
                    1,
                    format!(
                        "weight {w} expects {} input channels, input {i} has {}",
                        w[1], i[1]
                    ),
                ));
            }
            bias_check(inputs, acc, w[0])?;
            Ok(TensorType::new(acc, [i[0], w[0]]))
        }
        Op::MatMul(a) => {
            let dt = dtype_in(inputs, 0, &[DType::Int8, DType::Int16])?;
            if inputs[1].dtype != dt {
                return Err(bad(1, format!("element type must be {dt}")));
            }
            zero_point("a_zp", a.a_zp, dt)?;
            zero_point("b_zp", a.b_zp, dt)?;
            let (sa, sb) = (&inputs[0].shape, &inputs[1].shape);
            let r = sa.rank();
            if r < 2 {
                return Err(bad(0, format!("expected rank >= 2, got {sa}")));
            }
            if sb.rank() != r {
                return Err(bad(1, format!("rank of {sb} differs from {sa}")));
            }
            if sa[r - 1] != sb[r - 2] {
                return Err(bad(1, format!("inner dimensions of {sa} and {sb} differ")));
            }
            let mut out = Vec::with_capacity(r);
            for k in 0..r - 2 {
                let (x, y) = (sa[k], sb[k]);
                if x != y && x != 1 && y != 1 {
                    return Err(bad(
                        1,
                        format!("batch dims of {sa} and {sb} do not broadcast"),
                    ));
                }
                out.push(x.max(y));
            }
            out.push(sa[r - 2]);
            out.push(sb[r - 1]);
            let acc = accumulator_dtype(dt).unwrap_or(DType::Int32);
            Ok(TensorType::new(acc, out))
        }
        Op::Resize(a) => resize(inputs, a),
        _ => Err(bad_attr("internal: not a tensor operator")),
    }
}

fn pool_shape(inputs: &[TensorType], k: [usize; 2], s: [usize; 2], p: [usize; 4]) -> R<Shape> {
    positive("kernel", &k)?;
    positive("stride", &s)?;
    bounded("pad", &p)?;
    if p[0] >= k[0] || p[1] >= k[0] || p[2] >= k[1] || p[3] >= k[1] {
        return Err(bad_attr(format!(
            "pad {p:?} must be smaller than kernel {k:?}"
        )));
    }
    let i = rank_is(inputs, 0, 4)?;
    let oh = window_out(i[1], p[0], p[1], k[0], 1, s[0]).ok_or_else(|| window_err("pool"))?;
    let ow = window_out(i[2], p[2], p[3], k[1], 1, s[1]).ok_or_else(|| window_err("pool"))?;
    Ok(Shape::from([i[0], oh, ow, i[3]]))
}

/// RESIZE checks (TOSA §2.12.1 `ERROR_IF`s) and output size
/// `OH = floor(((IH - 1) * scale_y_n - offset_y + border_y) / scale_y_d) + 1` (floor instead of
/// TOSA's exact division, as for [`window_out`]).
fn resize(inputs: &[TensorType], a: &crate::ops::ResizeAttrs) -> R<TensorType> {
    let dt = dtype_in(inputs, 0, &[DType::Int8, DType::Int16])?;
    let i = rank_is(inputs, 0, 4)?;
    let [yn, yd, xn, xd] = a.scale;
    let [oy, ox] = a.offset;
    let [by, bx] = a.border;
    if yn <= 0 || yd <= 0 || xn <= 0 || xd <= 0 {
        return Err(bad_attr(format!("scale {:?} must be positive", a.scale)));
    }
    if yn > 1 << 11 || xn > 1 << 11 {
        return Err(bad_attr("scale numerators must be <= 2048"));
    }
    if yd >= 16 * yn || xd >= 16 * xn {
        return Err(bad_attr("downscale must be less than 16x"));
    }
    if oy < -yn || oy >= 16 * yn || ox < -xn || ox >= 16 * xn {
        return Err(bad_attr(format!("offset {:?} out of range", a.offset)));
    }
    if by < -16 * yn || by >= yn || bx < -16 * xn || bx >= xn {
        return Err(bad_attr(format!("border {:?} out of range", a.border)));
    }
    let (ih, iw) = (i[1] as i64, i[2] as i64);
    let num_h = (ih - 1) * yn - oy + by;
    let num_w = (iw - 1) * xn - ox + bx;
    if num_h < 0 || num_w < 0 {
        return Err(bad_attr("output size is empty"));
    }
    let (oh, ow) = (num_h / yd + 1, num_w / xd + 1);
    if ih.max(iw).max(oh).max(ow) >= 16384 {
        return Err(bad_attr("image dimensions must be < 16384"));
    }
    let out = match (a.mode, dt) {
        (ResizeMode::NearestNeighbor, _) => dt,
        (ResizeMode::Bilinear, DType::Int8) => DType::Int32,
        (ResizeMode::Bilinear, _) => DType::Int48,
    };
    Ok(TensorType::new(out, [i[0], oh as usize, ow as usize, i[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sizes() {
        // SAME 3x3 stride 1 on 5: (5 - 1 + 1 + 1 - 2) / 1 + 1 = 5
        assert_eq!(window_out(5, 1, 1, 3, 1, 1), Some(5));
        // VALID 3x3 stride 2 on 6: floor((6 - 1 - 2) / 2) + 1 = 2
        assert_eq!(window_out(6, 0, 0, 3, 1, 2), Some(2));
        // dilation 2, kernel 3 spans 5 inputs: (5 - 1 - 4) / 1 + 1 = 1
        assert_eq!(window_out(5, 0, 0, 3, 2, 1), Some(1));
        assert_eq!(window_out(2, 0, 0, 3, 1, 1), None);
    }
}
