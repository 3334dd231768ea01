//! CONV2D, DEPTHWISE_CONV2D, CONV3D, TRANSPOSE_CONV2D (TOSA §2.3.4, §2.3.7, §2.3.5, §2.3.15),
//! FULLY_CONNECTED and MATMUL (§2.3.9).
//!
//! All accumulate `(input - input_zp) * (weight - weight_zp)` in the accumulator type (the
//! output type, `i32` or `i48`); every partial sum must stay in range (TOSA `apply_add_s`
//! REQUIRE), as must the final bias addition.

use super::array::{broadcast_strides, for_each_index, numel, Arr, Undef};
use crate::ops::{Conv3dAttrs, Op};
use crate::types::TensorType;

/// An accumulator of type `[min, max]` with checked addition.
#[derive(Clone, Copy)]
struct Acc {
    min: i64,
    max: i64,
}

impl Acc {
    fn add(self, acc: i64, v: i64) -> Result<i64, Undef> {
        let r = acc + v; // |acc| < 2^47 and |v| < 2^32, so no i64 overflow
        if r < self.min || r > self.max {
            return Err(format!(
                "accumulator overflow: {acc} + {v} leaves [{}, {}]",
                self.min, self.max
            ));
        }
        Ok(r)
    }

    /// `sum + Σ x[i] * w[i]`, checking every partial sum (the operands are at most 16 bits
    /// after zero-point subtraction, so nothing overflows `i64`).
    fn dot(self, mut sum: i64, x: &[i64], w: &[i64]) -> Result<i64, Undef> {
        for (&a, &b) in x.iter().zip(w) {
            let prev = sum;
            sum += a * b;
            if sum < self.min || sum > self.max {
                return self.add(prev, a * b);
            }
        }
        Ok(sum)
    }
}

fn sub_zp(a: &Arr, zp: i64) -> Vec<i64> {
    a.data.iter().map(|&v| v - zp).collect()
}

fn bias_at(bias: &Arr, c: usize) -> i64 {
    if bias.data.len() == 1 {
        bias.data[0]
    } else {
        bias.data[c]
    }
}

pub(crate) fn eval(op: &Op, ins: &[&Arr], out: &TensorType) -> Result<Vec<i64>, Undef> {
    let acc = Acc {
        min: out.dtype.min_value(),
        max: out.dtype.max_value(),
    };
    let os = &out.shape.0;
    match op {
        Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
            let depthwise = matches!(op, Op::DepthwiseConv2d(_));
            let (input, weight, bias) = (ins[0], ins[1], ins[2]);
            let x = sub_zp(input, a.input_zp);
            let w = sub_zp(weight, a.weight_zp);
            let [_, ih, iw, ic] = dims4(&input.shape);
            let ws = &weight.shape;
            let (kh, kw, m) = if depthwise {
                (ws[0], ws[1], ws[3])
            } else {
                (ws[1], ws[2], 1)
            };
            let [n, oh, ow, oc] = dims4(os);
            let mut res = Vec::with_capacity(numel(os));
            // (input offset of the pixel, kernel tap index ky * KW + kx) of the valid taps
            let mut taps: Vec<(usize, usize)> = Vec::with_capacity(kh * kw);
            for b in 0..n {
                for oy in 0..oh {
                    for ox in 0..ow {
                        taps.clear();
                        for ky in 0..kh {
                            let y =
                                (oy * a.stride[0] + ky * a.dilation[0]) as i64 - a.pad[0] as i64;
                            if y < 0 || y >= ih as i64 {
                                continue;
                            }
                            for kx in 0..kw {
                                let xx = (ox * a.stride[1] + kx * a.dilation[1]) as i64
                                    - a.pad[2] as i64;
                                if xx >= 0 && xx < iw as i64 {
                                    taps.push((
                                        ((b * ih + y as usize) * iw + xx as usize) * ic,
                                        ky * kw + kx,
                                    ));
                                }
                            }
                        }
                        for o in 0..oc {
                            let mut sum = 0i64;
                            for &(base, k) in &taps {
                                if depthwise {
                                    // weight [KH,KW,C,M]; output channel o = c * M + m
                                    let (c, mm) = (o / m, o % m);
                                    sum = acc.add(sum, x[base + c] * w[(k * ic + c) * m + mm])?;
                                } else {
                                    // weight [OC,KH,KW,IC]
                                    let wb = (o * kh * kw + k) * ic;
                                    sum = acc.dot(sum, &x[base..base + ic], &w[wb..wb + ic])?;
                                }
                            }
                            res.push(acc.add(sum, bias_at(bias, o))?);
                        }
                    }
                }
            }
            Ok(res)
        }
        Op::Conv3d(a) => conv3d(a, ins, os, acc),
        Op::TransposeConv2d(a) => {
            let (input, weight, bias) = (ins[0], ins[1], ins[2]);
            let x = sub_zp(input, a.input_zp);
            let w = sub_zp(weight, a.weight_zp);
            let [_, ih, iw, ic] = dims4(&input.shape);
            let [_, kh, kw, _] = dims4(&weight.shape);
            let [n, oh, ow, oc] = dims4(os);
            let (sy, sx) = (a.stride[0] as i64, a.stride[1] as i64);
            let mut res = Vec::with_capacity(numel(os));
            for b in 0..n {
                for oy in 0..oh {
                    for ox in 0..ow {
                        for o in 0..oc {
                            let mut sum = 0i64;
                            let iy = oy as i64 - a.out_pad[0];
                            let ix = ox as i64 - a.out_pad[2];
                            for ky in 0..kh {
                                let y = iy - ky as i64;
                                if y < 0 || y >= ih as i64 * sy || y % sy != 0 {
                                    continue;
                                }
                                for kx in 0..kw {
                                    let xx = ix - kx as i64;
                                    if xx < 0 || xx >= iw as i64 * sx || xx % sx != 0 {
                                        continue;
                                    }
                                    let base = ((b * ih + (y / sy) as usize) * iw
                                        + (xx / sx) as usize)
                                        * ic;
                                    let wb = ((o * kh + ky) * kw + kx) * ic;
                                    sum = acc.dot(sum, &x[base..base + ic], &w[wb..wb + ic])?;
                                }
                            }
                            res.push(acc.add(sum, bias_at(bias, o))?);
                        }
                    }
                }
            }
            Ok(res)
        }
        Op::FullyConnected(a) => {
            let (input, weight, bias) = (ins[0], ins[1], ins[2]);
            let x = sub_zp(input, a.input_zp);
            let w = sub_zp(weight, a.weight_zp);
            let (n, ic) = (input.shape[0], input.shape[1]);
            let oc = weight.shape[0];
            let mut res = Vec::with_capacity(n * oc);
            for b in 0..n {
                for o in 0..oc {
                    let sum = acc.dot(0, &x[b * ic..(b + 1) * ic], &w[o * ic..(o + 1) * ic])?;
                    res.push(acc.add(sum, bias_at(bias, o))?);
                }
            }
            Ok(res)
        }
        Op::MatMul(a) => matmul(ins[0], ins[1], a.a_zp, a.b_zp, os, acc),
        _ => Err("internal: not a convolution".into()),
    }
}

/// CONV3D: input `[N,ID,IH,IW,IC]`, weight `[OC,KD,KH,KW,IC]`, output `[N,OD,OH,OW,OC]`.
fn conv3d(a: &Conv3dAttrs, ins: &[&Arr], os: &[usize], acc: Acc) -> Result<Vec<i64>, Undef> {
    let (input, weight, bias) = (ins[0], ins[1], ins[2]);
    let x = sub_zp(input, a.input_zp);
    let w = sub_zp(weight, a.weight_zp);
    let is = &input.shape;
    let (id, ih, iw, ic) = (is[1], is[2], is[3], is[4]);
    let ws = &weight.shape;
    let (kd, kh, kw) = (ws[1], ws[2], ws[3]);
    let (n, od, oh, ow, oc) = (os[0], os[1], os[2], os[3], os[4]);
    // the input coordinate of output `o`, tap `k` along axis `ax`, if inside the input
    let at = |ax: usize, o: usize, k: usize, len: usize| -> Option<usize> {
        let v = (o * a.stride[ax] + k * a.dilation[ax]) as i64 - a.pad[2 * ax] as i64;
        (0..len as i64).contains(&v).then_some(v as usize)
    };
    let mut res = Vec::with_capacity(numel(os));
    let mut taps: Vec<(usize, usize)> = Vec::new();
    for b in 0..n {
        for z in 0..od {
            for y in 0..oh {
                for xx in 0..ow {
                    taps.clear();
                    for tz in 0..kd {
                        let Some(d) = at(0, z, tz, id) else { continue };
                        for ty in 0..kh {
                            let Some(r) = at(1, y, ty, ih) else { continue };
                            for tx in 0..kw {
                                let Some(c) = at(2, xx, tx, iw) else { continue };
                                let base = (((b * id + d) * ih + r) * iw + c) * ic;
                                taps.push((base, (tz * kh + ty) * kw + tx));
                            }
                        }
                    }
                    for o in 0..oc {
                        let mut sum = 0i64;
                        for &(base, k) in &taps {
                            let wb = (o * kd * kh * kw + k) * ic;
                            sum = acc.dot(sum, &x[base..base + ic], &w[wb..wb + ic])?;
                        }
                        res.push(acc.add(sum, bias_at(bias, o))?);
                    }
                }
            }
        }
    }
    Ok(res)
}

/// Batched `[..., H, C] x [..., C, W]`, batch dimensions broadcast.
fn matmul(
    a: &Arr,
    b: &Arr,
    a_zp: i64,
    b_zp: i64,
    os: &[usize],
    acc: Acc,
) -> Result<Vec<i64>, Undef> {
    let r = os.len();
    let (h, w) = (os[r - 2], os[r - 1]);
    let c = a.shape[r - 1];
    let batch = &os[..r - 2];
    let sa = broadcast_strides(&a.shape[..r - 2], batch);
    let sb = broadcast_strides(&b.shape[..r - 2], batch);
    // Batch strides count whole matrices.
    let (ma, mb) = (h * c, c * w);
    let mut res = Vec::with_capacity(numel(os));
    for_each_index::<Undef>(batch, |idx, _| {
        let oa: usize = idx.iter().zip(&sa).map(|(i, s)| i * s).sum::<usize>() * ma;
        let ob: usize = idx.iter().zip(&sb).map(|(i, s)| i * s).sum::<usize>() * mb;
        for y in 0..h {
            for x in 0..w {
                let mut sum = 0i64;
                for k in 0..c {
                    let va = a.data[oa + y * c + k] - a_zp;
                    let vb = b.data[ob + k * w + x] - b_zp;
                    sum = acc.add(sum, va * vb)?;
                }
                res.push(sum);
            }
        }
        Ok(())
    })?;
    Ok(res)
}

fn dims4(s: &[usize]) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
}
