//! Data layout (TOSA §2.10: CONCAT, PAD, RESHAPE, REVERSE, SLICE, TILE, TRANSPOSE),
//! GATHER / SCATTER (§2.11) and IDENTITY (§2.14.2). Pure data movement.

use super::array::{for_each_index, numel, strides, Arr, Undef};
use crate::ops::Op;
use crate::types::TensorType;

/// Builds the output by reading input 0 at the offset `src(out_index)` gives.
fn gather_by_index(
    input: &Arr,
    out_shape: &[usize],
    mut src: impl FnMut(&[usize]) -> Option<usize>,
    fill: i64,
) -> Vec<i64> {
    let mut res = Vec::with_capacity(numel(out_shape));
    let _ = for_each_index::<()>(out_shape, |idx, _| {
        res.push(src(idx).map_or(fill, |o| input.data[o]));
        Ok(())
    });
    res
}

pub(crate) fn eval(op: &Op, ins: &[&Arr], out: &TensorType) -> Result<Vec<i64>, Undef> {
    let input = ins[0];
    let os = &out.shape.0;
    let ist = strides(&input.shape);
    match op {
        Op::Identity | Op::Reshape(_) => Ok(input.data.clone()),
        Op::Concat(a) => {
            let outer = numel(&os[..a.axis]);
            let inner = numel(&os[a.axis + 1..]);
            let mut res = Vec::with_capacity(numel(os));
            for o in 0..outer {
                for x in ins {
                    let chunk = x.shape[a.axis] * inner;
                    res.extend_from_slice(&x.data[o * chunk..(o + 1) * chunk]);
                }
            }
            Ok(res)
        }
        Op::Pad(a) => Ok(gather_by_index(
            input,
            os,
            |idx| {
                let mut off = 0;
                for (d, &i) in idx.iter().enumerate() {
                    let j = i.checked_sub(a.padding[d][0])?;
                    if j >= input.shape[d] {
                        return None;
                    }
                    off += j * ist[d];
                }
                Some(off)
            },
            a.pad_const,
        )),
        Op::Reverse(a) => Ok(gather_by_index(
            input,
            os,
            |idx| {
                Some(
                    idx.iter()
                        .enumerate()
                        .map(|(d, &i)| if d == a.axis { input.shape[d] - 1 - i } else { i } * ist[d])
                        .sum(),
                )
            },
            0,
        )),
        Op::Slice(a) => Ok(gather_by_index(
            input,
            os,
            |idx| {
                Some(
                    idx.iter()
                        .enumerate()
                        .map(|(d, &i)| (i + a.start[d]) * ist[d])
                        .sum(),
                )
            },
            0,
        )),
        Op::Tile(_) => Ok(gather_by_index(
            input,
            os,
            |idx| {
                Some(
                    idx.iter()
                        .enumerate()
                        .map(|(d, &i)| (i % input.shape[d]) * ist[d])
                        .sum(),
                )
            },
            0,
        )),
        Op::Transpose(a) => Ok(gather_by_index(
            input,
            os,
            // Output dimension d is input dimension perms[d].
            |idx| {
                Some(
                    idx.iter()
                        .enumerate()
                        .map(|(d, &i)| i * ist[a.perms[d]])
                        .sum(),
                )
            },
            0,
        )),
        Op::Gather => {
            let (values, indices) = (ins[0], ins[1]);
            let (n, k, c) = (values.shape[0], values.shape[1], values.shape[2]);
            let w = indices.shape[1];
            let mut res = Vec::with_capacity(n * w * c);
            for b in 0..n {
                for j in 0..w {
                    let idx = index_in(indices.data[b * w + j], k)?;
                    res.extend_from_slice(&values.data[(b * k + idx) * c..(b * k + idx + 1) * c]);
                }
            }
            Ok(res)
        }
        Op::Scatter => {
            let (values, indices, upd) = (ins[0], ins[1], ins[2]);
            let (n, k, c) = (values.shape[0], values.shape[1], values.shape[2]);
            let w = indices.shape[1];
            let mut res = values.data.clone();
            let mut written = vec![false; n * k];
            for b in 0..n {
                for j in 0..w {
                    let idx = index_in(indices.data[b * w + j], k)?;
                    // TOSA REQUIREs each output position to be written at most once.
                    if std::mem::replace(&mut written[b * k + idx], true) {
                        return Err(format!("index {idx} written twice in batch {b}"));
                    }
                    let dst = (b * k + idx) * c;
                    let src = (b * w + j) * c;
                    res[dst..dst + c].copy_from_slice(&upd.data[src..src + c]);
                }
            }
            Ok(res)
        }
        _ => Err("internal: not a layout operator".into()),
    }
}

/// GATHER/SCATTER index check: `0 <= k < K` (TOSA REQUIRE).
fn index_in(k: i64, extent: usize) -> Result<usize, Undef> {
    if k < 0 || k >= extent as i64 {
        return Err(format!("index {k} outside [0, {extent})"));
    }
    Ok(k as usize)
}
