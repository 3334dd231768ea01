//! REDUCE_ALL/ANY/MAX/MIN/SUM (TOSA §2.9) and ARGMAX (§2.3.1).

use super::array::{numel, require_range, Arr, Undef};
use crate::ops::Op;
use crate::types::{DType, TensorType};

/// Splits `shape` around `axis` into (outer, extent, inner) element counts.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        numel(&shape[..axis]),
        shape[axis],
        numel(&shape[axis + 1..]),
    )
}

pub(crate) fn eval(
    op: &Op,
    ins: &[&Arr],
    dts: &[DType],
    _out: &TensorType,
) -> Result<Vec<i64>, Undef> {
    let input = ins[0];
    let dt = dts[0];
    let axis = match op {
        Op::ArgMax(a)
        | Op::ReduceAll(a)
        | Op::ReduceAny(a)
        | Op::ReduceMax(a)
        | Op::ReduceMin(a)
        | Op::ReduceSum(a) => a.axis,
        _ => return Err("internal: not a reduction".into()),
    };
    let (outer, extent, inner) = split(&input.shape, axis);
    let mut res = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let vals = (0..extent).map(|k| input.data[(o * extent + k) * inner + i]);
            let v = match op {
                // ARGMAX: the first index of the maximum (a later value must be strictly
                // greater to replace it).
                Op::ArgMax(_) => {
                    let mut best = dt.min_value();
                    let mut best_k = 0i64;
                    for (k, v) in vals.enumerate() {
                        if v > best {
                            best = v;
                            best_k = k as i64;
                        }
                    }
                    best_k
                }
                Op::ReduceAll(_) => i64::from(vals.into_iter().all(|v| v != 0)),
                Op::ReduceAny(_) => i64::from(vals.into_iter().any(|v| v != 0)),
                Op::ReduceMax(_) => vals.fold(dt.min_value(), i64::max),
                Op::ReduceMin(_) => vals.fold(dt.max_value(), i64::min),
                _ => {
                    let mut acc = 0i64;
                    for v in vals {
                        acc =
                            require_range(acc + v, i32::MIN.into(), i32::MAX.into(), "REDUCE_SUM")?;
                    }
                    acc
                }
            };
            res.push(v);
        }
    }
    Ok(res)
}
