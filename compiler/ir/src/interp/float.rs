//! The float operators ([`FloatOp`]): `f32` values travel as bit patterns in the `i64`s of
//! [`Arr`]; each operator decodes, computes in `f32` (or `f64` where TFLite does) exactly as
//! TFLite's reference kernel, and encodes.

use super::array::{broadcast_map, for_each_index, numel, strides, Arr, Undef};
use crate::ops::float::{dequantize, quantize};
use crate::ops::FloatOp;
use crate::types::TensorType;

fn f(bits: i64) -> f32 {
    f32::from_bits(bits as u32)
}

fn b(v: f32) -> i64 {
    i64::from(v.to_bits())
}

pub(crate) fn eval(op: &FloatOp, ins: &[&Arr], out: &TensorType) -> Result<Vec<i64>, Undef> {
    let x = ins[0];
    Ok(match op {
        FloatOp::Dequantize { scale, zero_point } => x
            .data
            .iter()
            .map(|&v| b(dequantize(v, scale.get(), *zero_point)))
            .collect(),
        FloatOp::Quantize {
            scale,
            zero_point,
            output,
        } => x
            .data
            .iter()
            .map(|&v| quantize(f(v), scale.get(), *zero_point, *output))
            .collect(),
        FloatOp::Unary(u) => x.data.iter().map(|&v| b(u.apply(f(v)))).collect(),
        FloatOp::Binary(op) => broadcast_map(&out.shape.0, &ins[..2], |v| {
            Ok(b(op.apply(f(v[0]), f(v[1]))))
        })?,
        FloatOp::Clamp { min, max } => x
            .data
            .iter()
            .map(|&v| {
                // std::min(std::max(v, min), max): std::max(a, b) is (a < b) ? b : a.
                let v = f(v);
                let lo = if v < min.get() { min.get() } else { v };
                b(if max.get() < lo { max.get() } else { lo })
            })
            .collect(),
        FloatOp::Reduce { axes, mean } => reduce(x, axes, *mean, &out.shape.0),
        FloatOp::Softmax { beta } => softmax(x, beta.get()),
        FloatOp::FullyConnected => fully_connected(ins),
    })
}

/// Sums over `axes` in the input's row-major order, starting from 0.
fn reduce(x: &Arr, axes: &[usize], mean: bool, out_shape: &[usize]) -> Vec<i64> {
    let os = strides(out_shape);
    let mut acc = vec![0f32; numel(out_shape)];
    let _ = for_each_index::<()>(&x.shape, |idx, off| {
        let o: usize = idx
            .iter()
            .enumerate()
            .map(|(d, &i)| if axes.contains(&d) { 0 } else { i * os[d] })
            .sum();
        acc[o] += f(x.data[off]);
        Ok(())
    });
    let count: usize = axes.iter().map(|&a| x.shape[a]).product();
    acc.into_iter()
        .map(|s| b(if mean { s / count as f32 } else { s }))
        .collect()
}

fn softmax(x: &Arr, beta: f32) -> Vec<i64> {
    let depth = x.shape.last().copied().unwrap_or(1).max(1);
    let mut out = Vec::with_capacity(x.data.len());
    for row in x.data.chunks(depth) {
        let v: Vec<f32> = row.iter().map(|&e| f(e)).collect();
        let max = v.iter().fold(f32::MIN, |m, &e| if m < e { e } else { m });
        let mut sum = 0f32;
        let exps: Vec<f32> = v
            .iter()
            .map(|&e| {
                let ex = ((e - max) * beta).exp();
                sum += ex;
                ex
            })
            .collect();
        out.extend(exps.into_iter().map(|e| b(e / sum)));
    }
    out
}

fn fully_connected(ins: &[&Arr]) -> Vec<i64> {
    let (x, w, bias) = (ins[0], ins[1], ins[2]);
    let (n, ic) = (x.shape[0], x.shape[1]);
    let oc = w.shape[0];
    let mut out = Vec::with_capacity(n * oc);
    for r in 0..n {
        for c in 0..oc {
            let mut total = 0f32;
            for d in 0..ic {
                total += f(x.data[r * ic + d]) * f(w.data[c * ic + d]);
            }
            out.push(b(total + f(bias.data[c])));
        }
    }
    out
}
