//! Type inference for reductions, data layout, scatter/gather and type conversion.

use super::infer::{bad, bad_attr, dtype_in, in_range, rank_is, R, SIGNED_8_16_32};
use super::MAX_ELEMENTS;
use crate::ops::{Op, RescaleAttrs};
use crate::quant::RescaleRounding;
use crate::types::{DType, Shape, TensorType};

fn axis_ok(shape: &Shape, axis: usize) -> R<()> {
    if axis >= shape.rank() {
        return Err(bad_attr(format!("axis {axis} out of range for {shape}")));
    }
    Ok(())
}

fn len_is(what: &str, len: usize, rank: usize) -> R<()> {
    if len != rank {
        return Err(bad_attr(format!(
            "{what} has {len} entries, input rank is {rank}"
        )));
    }
    Ok(())
}

fn checked_dim(v: Option<usize>) -> R<usize> {
    match v {
        Some(d) if d <= MAX_ELEMENTS => Ok(d),
        _ => Err(bad_attr("output extent too large")),
    }
}

pub(crate) fn infer(op: &Op, inputs: &[TensorType]) -> R<TensorType> {
    use DType::*;
    let t0 = &inputs[0];
    let s0 = &t0.shape;
    match op {
        Op::ReduceAll(a)
        | Op::ReduceAny(a)
        | Op::ReduceMax(a)
        | Op::ReduceMin(a)
        | Op::ReduceSum(a) => {
            let allowed: &[DType] = match op {
                Op::ReduceAll(_) | Op::ReduceAny(_) => &[Bool],
                Op::ReduceSum(_) => &[Int32],
                _ => SIGNED_8_16_32,
            };
            let dt = dtype_in(inputs, 0, allowed)?;
            axis_ok(s0, a.axis)?;
            let mut d = s0.0.clone();
            d[a.axis] = 1;
            Ok(TensorType::new(dt, d))
        }
        Op::Concat(a) => {
            axis_ok(s0, a.axis)?;
            let mut d = s0.0.clone();
            for (slot, t) in inputs.iter().enumerate().skip(1) {
                if t.dtype != t0.dtype {
                    return Err(bad(
                        slot,
                        format!("element type {} differs from {}", t.dtype, t0.dtype),
                    ));
                }
                let same_rank = t.shape.rank() == s0.rank();
                let others_match =
                    same_rank && (0..s0.rank()).all(|k| k == a.axis || t.shape[k] == s0[k]);
                if !others_match {
                    return Err(bad(
                        slot,
                        format!(
                            "shape {} incompatible with {s0} on axis {}",
                            t.shape, a.axis
                        ),
                    ));
                }
                d[a.axis] = checked_dim(d[a.axis].checked_add(t.shape[a.axis]))?;
            }
            Ok(TensorType::new(t0.dtype, d))
        }
        Op::Pad(a) => {
            len_is("padding", a.padding.len(), s0.rank())?;
            in_range("pad_const", a.pad_const, t0.dtype)?;
            let mut d = Vec::with_capacity(s0.rank());
            for (&x, p) in s0.iter().zip(&a.padding) {
                d.push(checked_dim(
                    x.checked_add(p[0]).and_then(|v| v.checked_add(p[1])),
                )?);
            }
            Ok(TensorType::new(t0.dtype, d))
        }
        Op::Reshape(a) => {
            if a.shape.num_elements() != s0.num_elements() {
                return Err(bad_attr(format!("cannot reshape {s0} to {}", a.shape)));
            }
            Ok(TensorType::new(t0.dtype, a.shape.clone()))
        }
        Op::Reverse(a) => {
            axis_ok(s0, a.axis)?;
            Ok(t0.clone())
        }
        Op::Slice(a) => {
            len_is("start", a.start.len(), s0.rank())?;
            len_is("size", a.size.len(), s0.rank())?;
            for k in 0..s0.rank() {
                let end = a.start[k].checked_add(a.size[k]);
                if a.size[k] == 0 || end.is_none_or(|e| e > s0[k]) {
                    return Err(bad_attr(format!(
                        "slice start {:?} size {:?} out of bounds of {s0}",
                        a.start, a.size
                    )));
                }
            }
            Ok(TensorType::new(t0.dtype, a.size.clone()))
        }
        Op::Tile(a) => {
            len_is("multiples", a.multiples.len(), s0.rank())?;
            let mut d = Vec::with_capacity(s0.rank());
            for (&x, &m) in s0.iter().zip(&a.multiples) {
                if m == 0 {
                    return Err(bad_attr("multiples must be >= 1"));
                }
                d.push(checked_dim(x.checked_mul(m))?);
            }
            Ok(TensorType::new(t0.dtype, d))
        }
        Op::Transpose(a) => {
            len_is("perms", a.perms.len(), s0.rank())?;
            let mut seen = vec![false; s0.rank()];
            for &p in &a.perms {
                if p >= s0.rank() || seen[p] {
                    return Err(bad_attr(format!(
                        "perms {:?} is not a permutation",
                        a.perms
                    )));
                }
                seen[p] = true;
            }
            let d: Vec<usize> = a.perms.iter().map(|&p| s0[p]).collect();
            Ok(TensorType::new(t0.dtype, d))
        }
        Op::Gather => {
            let v = rank_is(inputs, 0, 3)?;
            dtype_in(inputs, 1, &[Int32])?;
            let i = rank_is(inputs, 1, 2)?;
            if i[0] != v[0] {
                return Err(bad(
                    1,
                    format!("batch of indices {i} differs from values {v}"),
                ));
            }
            Ok(TensorType::new(t0.dtype, [v[0], i[1], v[2]]))
        }
        Op::Scatter => {
            let v = rank_is(inputs, 0, 3)?;
            dtype_in(inputs, 1, &[Int32])?;
            let i = rank_is(inputs, 1, 2)?;
            let x = rank_is(inputs, 2, 3)?;
            if inputs[2].dtype != t0.dtype {
                return Err(bad(2, format!("element type must be {}", t0.dtype)));
            }
            if i[0] != v[0] || x.dims() != [v[0], i[1], v[2]] {
                return Err(bad(
                    2,
                    format!("input {x} must be [{}, {}, {}]", v[0], i[1], v[2]),
                ));
            }
            Ok(t0.clone())
        }
        Op::Cast(a) => Ok(TensorType::new(a.to, s0.clone())),
        Op::Rescale(a) => rescale(inputs, a),
        _ => Err(bad_attr("internal: not a layout operator")),
    }
}

/// RESCALE checks, TOSA §2.13.4 `ERROR_IF`s, with `u8`/`u16` element types standing for
/// TOSA's `input_unsigned` / `output_unsigned` on `i8`/`i16` (either spelling is accepted).
fn rescale(inputs: &[TensorType], a: &RescaleAttrs) -> R<TensorType> {
    use DType::*;
    let din = dtype_in(inputs, 0, &[Int8, UInt8, Int16, UInt16, Int32, Int48])?;
    let dout = a.output_dtype;
    if ![Int8, UInt8, Int16, UInt16, Int32].contains(&dout) {
        return Err(bad_attr(format!("output type {dout} not supported")));
    }
    let in_unsigned = a.input_unsigned || din.is_unsigned();
    let out_unsigned = a.output_unsigned || dout.is_unsigned();
    if in_unsigned && din.bits() > 16 {
        return Err(bad_attr(format!("{din} input cannot be unsigned")));
    }
    if out_unsigned && dout.bits() > 16 {
        return Err(bad_attr(format!("{dout} output cannot be unsigned")));
    }
    if in_unsigned && out_unsigned {
        return Err(bad_attr("input and output cannot both be unsigned"));
    }
    if in_unsigned && dout == Int32 {
        return Err(bad_attr("unsigned input cannot produce i32"));
    }
    if out_unsigned && din.bits() > 16 {
        return Err(bad_attr("i32/i48 input cannot produce unsigned output"));
    }
    if a.scale32 && din == Int48 {
        return Err(bad_attr("scale32 is not allowed for i48 input"));
    }
    if !a.scale32 && a.rounding == RescaleRounding::DoubleRound {
        return Err(bad_attr("double_round needs scale32"));
    }
    check_zp("input_zp", a.input_zp, din, in_unsigned)?;
    check_zp("output_zp", a.output_zp, dout, out_unsigned)?;
    let s0 = &inputs[0].shape;
    let nc = if a.per_channel {
        if s0.rank() == 0 {
            return Err(bad_attr("per_channel needs rank >= 1"));
        }
        s0[s0.rank() - 1]
    } else {
        1
    };
    if a.multiplier.len() != nc || a.shift.len() != nc {
        return Err(bad_attr(format!(
            "needs {nc} multipliers and shifts, has {} and {}",
            a.multiplier.len(),
            a.shift.len()
        )));
    }
    for (&m, &s) in a.multiplier.iter().zip(&a.shift) {
        let limit = if a.scale32 {
            i64::from(i32::MAX)
        } else {
            i64::from(i16::MAX)
        };
        if m < 0 || i64::from(m) > limit {
            return Err(bad_attr(format!("multiplier {m} out of range")));
        }
        if !(2..=62).contains(&s) {
            return Err(bad_attr(format!("shift {s} outside 2..=62")));
        }
    }
    Ok(TensorType::new(dout, s0.clone()))
}

/// RESCALE zero points: 8-bit types may have any zero point in range (of the signed or
/// unsigned interpretation); unsigned 16-bit may have 0 or 32768; all others must be 0.
fn check_zp(what: &str, zp: i64, dt: DType, unsigned: bool) -> R<()> {
    let ok = match (dt.bits(), unsigned) {
        (8, false) => DType::Int8.contains(zp),
        (8, true) => DType::UInt8.contains(zp),
        (16, true) => zp == 0 || zp == 32768,
        _ => zp == 0,
    };
    if ok {
        Ok(())
    } else {
        Err(bad_attr(format!(
            "{what} {zp} not allowed for {}{dt}",
            if unsigned { "unsigned " } else { "" }
        )))
    }
}
