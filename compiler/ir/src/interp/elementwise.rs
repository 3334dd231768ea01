//! Elementwise operators: CLAMP (TOSA §2.4.1), the binary operators (§2.5), TABLE (§2.5.17),
//! the unary operators (§2.6), SELECT (§2.7.1) and comparisons (§2.8).

use super::array::{broadcast_map, Arr, Undef};
use crate::ops::{Op, TableData};
use crate::types::{DType, TensorType};

/// REQUIRE that `v` fits `dt` (TOSA `apply_add_s` / `apply_sub_s` overflow checks).
fn fits(v: i64, dt: DType, what: &str) -> Result<i64, Undef> {
    if dt.contains(v) {
        Ok(v)
    } else {
        Err(format!("{what} result {v} overflows {dt}"))
    }
}

/// REQUIRE `0 <= shift < bits(dt)` for the shift operators.
fn shift_amount(b: i64, dt: DType) -> Result<u32, Undef> {
    if b < 0 || b >= i64::from(dt.bits()) {
        return Err(format!("shift {b} outside 0..={} for {dt}", dt.bits() - 1));
    }
    Ok(b as u32)
}

/// TOSA `apply_lookup_s` (§1.12.5): 513-entry table, 7-bit interpolation, 23-bit result.
pub fn apply_lookup_s(table: &[i16], value: i64) -> Result<i64, Undef> {
    let clipped = value.clamp(-32768, 32767);
    let index = ((clipped + 32768) >> 7) as usize;
    let fraction = clipped & 0x7f;
    let base = i64::from(table[index]);
    let next = i64::from(table[index + 1]);
    let slope = next - base;
    if !DType::Int16.contains(slope) {
        return Err(format!(
            "table slope {slope} at entry {index} overflows i16"
        ));
    }
    Ok((base << 7) + slope * fraction)
}

pub(crate) fn eval(
    op: &Op,
    ins: &[&Arr],
    dts: &[DType],
    out: &TensorType,
) -> Result<Vec<i64>, Undef> {
    let dt = dts[0];
    let os = &out.shape.0;
    let unary = |f: &dyn Fn(i64) -> Result<i64, Undef>| -> Result<Vec<i64>, Undef> {
        ins[0].data.iter().map(|&v| f(v)).collect()
    };
    let binary = |f: &dyn Fn(i64, i64) -> Result<i64, Undef>| {
        broadcast_map(os, &ins[..2], |v| f(v[0], v[1]))
    };
    match op {
        Op::Clamp(a) => unary(&|v| Ok(v.clamp(a.min, a.max))),
        Op::Add => binary(&|a, b| fits(a + b, dt, "ADD")),
        Op::Sub => binary(&|a, b| fits(a - b, dt, "SUB")),
        Op::Mul(m) => binary(&|a, b| {
            // Inputs are at most 32 bits, so the product fits i64 exactly.
            let product = a * b;
            if dt == DType::Int32 && m.shift > 0 {
                let round = 1i128 << (m.shift - 1);
                let r = (i128::from(product) + round) >> m.shift;
                i64::try_from(r)
                    .ok()
                    .filter(|&r| DType::Int32.contains(r))
                    .ok_or_else(|| format!("MUL result {r} overflows i32"))
            } else {
                // Low 32 bits of the product (TOSA apply_mul_s into i32).
                Ok(DType::Int32.wrap(product))
            }
        }),
        Op::Maximum => binary(&|a, b| Ok(a.max(b))),
        Op::Minimum => binary(&|a, b| Ok(a.min(b))),
        Op::IntDiv => binary(&|a, b| {
            if b == 0 {
                return Err("INTDIV by zero".into());
            }
            fits(a / b, dt, "INTDIV") // truncates towards zero
        }),
        Op::ArithmeticRightShift(s) => binary(&|a, b| {
            let b = shift_amount(b, dt)?;
            let mut r = a >> b;
            if s.round && b > 0 && (a >> (b - 1)) & 1 != 0 {
                r += 1;
            }
            Ok(r)
        }),
        Op::LogicalLeftShift => binary(&|a, b| Ok(dt.wrap(a << shift_amount(b, dt)?))),
        Op::LogicalRightShift => binary(&|a, b| {
            let b = shift_amount(b, dt)?;
            let mask = (1i64 << dt.bits()) - 1;
            Ok(dt.wrap((a & mask) >> b))
        }),
        Op::BitwiseAnd | Op::LogicalAnd => binary(&|a, b| Ok(a & b)),
        Op::BitwiseOr | Op::LogicalOr => binary(&|a, b| Ok(a | b)),
        Op::BitwiseXor | Op::LogicalXor => binary(&|a, b| Ok(a ^ b)),
        Op::Equal => binary(&|a, b| Ok(i64::from(a == b))),
        Op::Greater => binary(&|a, b| Ok(i64::from(a > b))),
        Op::GreaterEqual => binary(&|a, b| Ok(i64::from(a >= b))),
        Op::Table(t) => match &t.table {
            TableData::I8(tab) => unary(&|v| Ok(i64::from(tab[(v + 128) as usize]))),
            TableData::I16(tab) => unary(&|v| apply_lookup_s(tab, v)),
        },
        Op::Abs => unary(&|v| fits(v.abs(), dt, "ABS")),
        Op::BitwiseNot => unary(&|v| Ok(!v)),
        Op::Clz => unary(&|v| Ok(i64::from((v as i32 as u32).leading_zeros()))),
        Op::LogicalNot => unary(&|v| Ok(1 - v)),
        Op::Negate(a) => unary(&|v| {
            let acc = DType::Int32;
            let x = fits(v - a.input_zp, acc, "NEGATE")?;
            let x = fits(-x, acc, "NEGATE")?;
            let x = fits(x + a.output_zp, acc, "NEGATE")?;
            Ok(x.clamp(dt.min_value(), dt.max_value()))
        }),
        Op::Select => broadcast_map(os, &ins[..3], |v| Ok(if v[0] != 0 { v[1] } else { v[2] })),
        _ => Err(format!("internal: {} is not elementwise", op.kind())),
    }
}
