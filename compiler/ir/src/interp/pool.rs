//! AVG_POOL2D (TOSA §2.3.2, plus TFLite rounding) and MAX_POOL2D (§2.3.12).
//!
//! Padding taps never contribute: the average divides by the number of valid taps, and the
//! maximum ignores them.

use super::array::{require_range, Arr, Undef};
use crate::ops::{AvgPoolRounding, Op};
use crate::quant::{apply_scale_32, reciprocal_scale};
use crate::types::{DType, TensorType};

/// TFLite reference rounding of `sum / count`: half away from zero (truncating division of
/// `sum ± count / 2`).
pub fn divide_half_away_from_zero(sum: i64, count: i64) -> i64 {
    if sum >= 0 {
        (sum + count / 2) / count
    } else {
        (sum - count / 2) / count
    }
}

pub(crate) fn eval(
    op: &Op,
    ins: &[&Arr],
    dts: &[DType],
    out: &TensorType,
) -> Result<Vec<i64>, Undef> {
    let input = ins[0];
    let dt = dts[0];
    let (ih, iw, c) = (input.shape[1], input.shape[2], input.shape[3]);
    let os = &out.shape.0;
    let (n, oh, ow) = (os[0], os[1], os[2]);
    let (kernel, stride, pad, avg) = match op {
        Op::AvgPool2d(a) => (a.kernel, a.stride, a.pad, Some(a)),
        Op::MaxPool2d(a) => (a.kernel, a.stride, a.pad, None),
        _ => return Err("internal: not a pool".into()),
    };
    let mut res = Vec::with_capacity(n * oh * ow * c);
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                let y0 = (oy * stride[0]) as i64 - pad[0] as i64;
                let x0 = (ox * stride[1]) as i64 - pad[2] as i64;
                // The valid part of the window (non-empty: pads are smaller than the kernel).
                let ys = y0.max(0) as usize..(y0 + kernel[0] as i64).min(ih as i64) as usize;
                let xs = x0.max(0) as usize..(x0 + kernel[1] as i64).min(iw as i64) as usize;
                for ch in 0..c {
                    let taps = ys
                        .clone()
                        .flat_map(|y| xs.clone().map(move |x| ((b * ih + y) * iw + x) * c + ch));
                    let v = match avg {
                        None => taps.map(|i| input.data[i]).fold(dt.min_value(), i64::max),
                        Some(a) => {
                            let mut sum = 0i64;
                            let mut count = 0i64;
                            for i in taps {
                                count += 1;
                                let v = input.data[i] - a.input_zp;
                                sum = require_range(
                                    sum + v,
                                    i32::MIN.into(),
                                    i32::MAX.into(),
                                    "AVG_POOL2D sum",
                                )?;
                            }
                            let avg = match a.rounding {
                                AvgPoolRounding::Tosa => {
                                    let (m, s) = reciprocal_scale(count as u32)
                                        .ok_or_else(|| "empty pooling window".to_string())?;
                                    i64::from(
                                        apply_scale_32(sum, m, s, false)
                                            .map_err(|e| e.to_string())?,
                                    )
                                }
                                AvgPoolRounding::Tflite => divide_half_away_from_zero(sum, count),
                            };
                            let v = require_range(
                                avg + a.output_zp,
                                i32::MIN.into(),
                                i32::MAX.into(),
                                "AVG_POOL2D",
                            )?;
                            v.clamp(dt.min_value(), dt.max_value())
                        }
                    };
                    res.push(v);
                }
            }
        }
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::divide_half_away_from_zero as d;

    #[test]
    fn tflite_rounding() {
        assert_eq!(d(5, 2), 3); // 2.5 -> 3
        assert_eq!(d(-5, 2), -3); // -2.5 -> -3
        assert_eq!(d(4, 3), 1); // 1.33 -> 1
        assert_eq!(d(5, 3), 2); // 1.67 -> 2
        assert_eq!(d(-5, 3), -2);
        assert_eq!(d(0, 9), 0);
    }
}
