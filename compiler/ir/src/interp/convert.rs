//! CAST (TOSA §2.13.1) and RESCALE (§2.13.4).

use super::array::{Arr, Undef};
use crate::ops::{Op, RescaleAttrs};
use crate::quant::{apply_scale_16, apply_scale_32, RescaleRounding};
use crate::types::{DType, TensorType};

pub(crate) fn eval(
    op: &Op,
    ins: &[&Arr],
    dts: &[DType],
    out: &TensorType,
) -> Result<Vec<i64>, Undef> {
    let input = ins[0];
    match op {
        // Integer CAST: to bool is `!= 0`; from bool is 0/1; otherwise sign- (or, for unsigned
        // types, zero-) extend to the wider type or keep the low bits of the narrower one.
        // With values held as their numeric value, all of these are `wrap` to the output type.
        Op::Cast(a) => Ok(input.data.iter().map(|&v| a.to.wrap(v)).collect()),
        Op::Rescale(a) => rescale(a, input, dts[0], out.dtype),
        _ => Err("internal: not a conversion".into()),
    }
}

/// Reads `v` (a value of type `dt`) as unsigned of the same width, or as signed.
fn reinterpret(v: i64, dt: DType, unsigned: bool) -> i64 {
    match (dt.bits(), unsigned) {
        (8, true) => DType::UInt8.wrap(v),
        (16, true) => DType::UInt16.wrap(v),
        (8, false) => DType::Int8.wrap(v),
        (16, false) => DType::Int16.wrap(v),
        _ => v,
    }
}

fn rescale(a: &RescaleAttrs, input: &Arr, din: DType, dout: DType) -> Result<Vec<i64>, Undef> {
    let in_unsigned = a.input_unsigned || din.is_unsigned();
    let out_unsigned = a.output_unsigned || dout.is_unsigned();
    let (lo, hi) = if out_unsigned {
        (0, (1i64 << dout.bits()) - 1)
    } else {
        (dout.to_signed().min_value(), dout.to_signed().max_value())
    };
    let channels = if a.per_channel {
        input.shape.last().copied().unwrap_or(1)
    } else {
        1
    };
    let double = a.rounding == RescaleRounding::DoubleRound;
    let mut res = Vec::with_capacity(input.data.len());
    for (i, &raw) in input.data.iter().enumerate() {
        let value = reinterpret(raw, din, in_unsigned) - a.input_zp;
        let c = if a.per_channel { i % channels } else { 0 };
        let (m, s) = (a.multiplier[c], i32::from(a.shift[c]));
        let scaled = if a.scale32 {
            apply_scale_32(value, m, s, double)
        } else {
            let m16 = i16::try_from(m).map_err(|_| format!("multiplier {m} does not fit i16"))?;
            apply_scale_16(value, m16, s)
        }
        .map_err(|e| format!("element {i}: {e}"))?;
        let with_zp = i64::from(scaled) + a.output_zp;
        if i32::try_from(with_zp).is_err() {
            return Err(format!("element {i}: {scaled} + output_zp overflows i32"));
        }
        // Saturate to the output range of the (un)signed interpretation, then store the bits.
        res.push(dout.wrap(with_zp.clamp(lo, hi)));
    }
    Ok(res)
}
