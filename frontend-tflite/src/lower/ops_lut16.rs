//! Unary int16 ("16x8") operators with TFLite's exact integer semantics.
//!
//! TFLite evaluates these with one of three schemes, each reproduced here value by value:
//!
//! * **513-entry interpolated table** (EXP, LOG, RSQRT): at prepare time TFLite samples the
//!   real function on 512 equal steps of the input range (in `f32`), biases every entry by
//!   half the interpolation error at the step's midpoint, and at run time reads
//!   `lut[256 + (x >> 7)]` and adds `round(slope * (x & 0x7f) / 128)`. That lookup is
//!   exactly TOSA's `TABLE` (`i16` → `i32`, `base * 128 + slope * fraction`) followed by a
//!   rounding division by 128, so it lowers to [`Op::Table`] + [`Op::Rescale`] whenever every
//!   slope fits `i16` (TOSA's requirement); otherwise to a GATHER from a 65536-entry table
//!   holding the kernel's output for every `i16` input.
//! * **sigmoid table** (LOGISTIC, TANH): the input is first scaled to `3 * 4096` units per 1.0
//!   (an `i16` multiplier and a rounding right shift, or `3 << shift` for power-of-two input
//!   scales), then the magnitude indexes TFLite's 256-entry table of `sigmoid(i / 24)` in Q0.16 with
//!   9 (LOGISTIC) or 8 (TANH, `tanh(x) = 2 sigmoid(2x) - 1`) fraction bits of linear
//!   interpolation; the sign is folded back with fixed rounding offsets. No TOSA operator
//!   interpolates with 8 or 9 fraction bits, so the scaling is a RESCALE to `i32`, clamped
//!   where the kernel saturates, and the rest a GATHER from the kernel's value for each scaled
//!   input (computed here with the kernel's arithmetic).
//! * **requantization** (ABS, LEAKY_RELU): `MultiplyByQuantizedMultiplier` per sign, i.e. a
//!   double-rounding RESCALE: ABS is `RESCALE(ABS(widened x))`, LEAKY_RELU is
//!   `SELECT(x >= 0, RESCALE(x, identity), RESCALE(x, alpha))` (a GATHER table if a multiplier
//!   does not fit the RESCALE's value window).

use super::arith::quantize_multiplier;
use super::ctx::{IrT, OpCx, R};
use super::ops_table::mbqm;
use crate::schema::BuiltinOptionsT;
use crate::BuiltinOperator;
use npuc_ir::{DType, Op, RescaleRounding, TableAttrs, TableData, TensorData};

/// TFLite's `sigmoid_table_uint16`: `sigmoid(i / 24)` in Q0.16 for `i` in `0..256`, the
/// published constant (data, not derivable: a plain `round(65536 * sigmoid(i / 24))` differs
/// from it by one at about 40 entries, and the kernels' results depend on every entry).
pub(crate) const SIGMOID_TABLE: [u32; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
];

/// TFLite's `CheckedLog2` (in `f32`): the rounded base-2 logarithm and whether `x` is a power
/// of two to within 1e-3 in the exponent.
pub(crate) fn checked_log2(x: f32) -> (i32, bool) {
    let l = x.ln() * (1.0f32 / 2.0f32.ln());
    let r = l.round();
    (r as i32, (l - r).abs() < 1e-3)
}

/// The input scaling TFLite's int16 LOGISTIC / TANH prepare step derives:
/// `(multiplier, left_shift)`, with multiplier 0 meaning the power-of-two case.
fn sigmoid_input_scaling(input_scale: f32, tanh: bool) -> (i32, i32) {
    let (log2, pot) = checked_log2(input_scale);
    let ls = 12 + log2;
    let pot = pot && (ls == 0 || (tanh && ls == 1));
    if pot {
        return (0, ls);
    }
    let mut m = f64::from(input_scale) * 4096.0 * 3.0;
    let mut ls = 0;
    while m <= 32767.0 / 2.0 && ls <= 30 {
        ls += 1;
        m *= 2.0;
    }
    (m as i32, ls)
}

/// The scaled input `v` of TFLite's int16 LOGISTIC / TANH: `(x * m + 2^(s-1)) >> s` as
/// `(multiplier, shift)` of the equivalent single-rounding RESCALE (shift at least 16, so
/// that every `i16` input is inside TOSA's value window `|x| < 2^(shift-1)`).
fn sigmoid_rescale(multiplier: i32, left_shift: i32) -> (i32, i32) {
    let (m, s) = if multiplier == 0 {
        (3 << left_shift, 0)
    } else {
        (multiplier, left_shift)
    };
    // (x * m + 2^(s-1)) >> s == (x * m * 2^k + 2^(s+k-1)) >> (s + k); for s == 0 the added
    // 2^(k-1) is below the kept bits.
    let k = (16 - s).max(0);
    (m << k, s + k)
}

/// TFLite's int16 LOGISTIC (`tanh == false`) or TANH of the scaled input `v`: the magnitude
/// indexes the sigmoid table with 9 (LOGISTIC) or 8 (TANH) fraction bits; the sign is folded
/// back with fixed rounding offsets. Constant for `|v| >= 255 << fraction bits`.
fn sigmoid_of(v: i32, tanh: bool) -> i16 {
    let a = v.unsigned_abs();
    let frac_bits = if tanh { 8 } else { 9 };
    let uh = a >> frac_bits;
    let interp = |sat: u32| {
        if uh >= 255 {
            sat
        } else {
            let (ua, ub) = (SIGMOID_TABLE[uh as usize], SIGMOID_TABLE[uh as usize + 1]);
            (ua << frac_bits) + (a & ((1 << frac_bits) - 1)) * (ub - ua)
        }
    };
    if tanh {
        let r = interp(0xFFFF << 8) as i32;
        let r = if v >= 0 {
            r - (1 << 23) + (1 << 7)
        } else {
            -r + (1 << 23) + (1 << 7) - 1
        };
        (r >> 8) as i16
    } else {
        let r = interp(0x7FFF << 10);
        let r = if v >= 0 {
            r + (1 << 9)
        } else {
            (1 << 25) - r + (1 << 9) - 1
        };
        (r >> 10) as i16
    }
}

/// TFLite's int16 LOGISTIC (`tanh == false`) or TANH for one input value.
#[cfg(test)]
fn sigmoid16(x: i32, multiplier: i32, left_shift: i32, tanh: bool) -> i16 {
    let (m, s) = if multiplier == 0 {
        (3 << left_shift, 0)
    } else {
        (multiplier, left_shift)
    };
    let round = if s > 0 { 1 << (s - 1) } else { 0 };
    sigmoid_of((x * m + round) >> s, tanh)
}

/// TFLite's `LUTPopulate<int16_t>`: 513 entries over the whole input range, computed in the
/// float type TFLite uses for the operator (`f32`, or `f64` for SOFTMAX).
macro_rules! lut_populate {
    ($name:ident, $f:ty) => {
        pub(crate) fn $name(si: $f, zi: i64, so: $f, zo: i64, f: impl Fn($f) -> $f) -> Vec<i16> {
            let input_min = si * (-32768 - zi) as $f;
            let input_max = si * (32767 - zi) as $f;
            let output_min = so * (-32768 - zo) as $f;
            let output_max = so * (32767 - zo) as $f;
            let steps = 512;
            let step = (input_max - input_min) / steps as $f;
            let half = step / 2.0;
            let inv = 65536.0 / (output_max - output_min);
            let clamp = |v: $f| v.clamp(-32768.0, 32767.0) as i16;
            let mut lut = Vec::with_capacity(513);
            for i in 0..steps {
                let x = input_min + i as $f * step;
                let val = f(x);
                let mid = f(x + half);
                let next = f(input_min + (i + 1) as $f * step);
                let sample = (val * inv).round();
                let mid_interp = ((next * inv + (val * inv).round()) / 2.0).round();
                let mid_val = (mid * inv).round();
                let bias = ((mid_interp - mid_val) / 2.0).round();
                lut.push(clamp(sample - bias));
            }
            lut.push(clamp((f(input_max) * inv).round()));
            lut
        }
    };
}

lut_populate!(lut_populate_i16, f32);
lut_populate!(lut_populate_i16_f64, f64);

/// TFLite's `LUTLookup` for `i16`: base plus the rounded interpolation over 7 fraction bits.
pub(crate) fn lut_lookup_i16(lut: &[i16], x: i16) -> i16 {
    let index = (256 + (i32::from(x) >> 7)) as usize;
    let offset = i32::from(x) & 0x7f;
    let base = lut[index];
    let slope = lut[index + 1].wrapping_sub(base);
    let delta = (i32::from(slope) * offset + 64) >> 7;
    (i32::from(base) + delta) as i16
}

/// True if TOSA's TABLE can hold `lut` (every slope fits `i16`).
fn tosa_table_ok(lut: &[i16]) -> bool {
    lut.windows(2)
        .all(|w| DType::Int16.contains(i64::from(w[1]) - i64::from(w[0])))
}

/// `LUTLookup(x, lut)` on the `i16` IR tensor `x` as TABLE + rounding RESCALE by 1/128 to
/// `out`; `None` if a slope does not fit `i16`.
pub(crate) fn lut_lookup_ir(
    cx: &mut OpCx<'_, '_>,
    x: IrT,
    lut: Vec<i16>,
    out: DType,
) -> R<Option<IrT>> {
    if !tosa_table_ok(&lut) {
        return Ok(None);
    }
    let t = cx.emit(
        "table",
        Op::Table(TableAttrs {
            table: TableData::I16(lut),
        }),
        &[x],
    )?;
    // (v + 64) >> 7 == (v * 2^30 + 2^36) >> 37.
    let y = cx.rescale(
        t,
        out,
        vec![1 << 30],
        vec![37],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    Ok(Some(y))
}

/// Emits `LUTLookup(x, lut)` for input 0 (a GATHER table if a slope does not fit `i16`).
fn emit_lut513(cx: &mut OpCx<'_, '_>, lut: Vec<i16>) -> R<()> {
    let x = cx.input(0)?;
    match lut_lookup_ir(cx, x, lut.clone(), DType::Int16)? {
        Some(y) => cx.bind_output(0, y),
        None => {
            let full = (i16::MIN..=i16::MAX)
                .map(|x| lut_lookup_i16(&lut, x))
                .collect();
            emit_gather16(cx, full)
        }
    }
}

/// Emits `y = table[x + 32768]` for the `i16` input 0 as a GATHER from a 65536-entry table.
pub(crate) fn emit_gather16(cx: &mut OpCx<'_, '_>, table: Vec<i16>) -> R<()> {
    debug_assert_eq!(table.len(), 65536);
    let x = cx.input(0)?;
    let w = cx.widen_i32(x, 0)?;
    let y = gather_i16(cx, w, -32768, table)?;
    cx.bind_output(0, y)
}

/// `table[v - lo]` for the `i32` tensor `v` (whose values are in `lo..lo + table.len()`) as a
/// GATHER from a constant `[1, K, 1]` table, in `v`'s shape.
fn gather_i16(cx: &mut OpCx<'_, '_>, v: IrT, lo: i64, table: Vec<i16>) -> R<IrT> {
    let vs = cx.ty(v).shape.0;
    let n: usize = vs.iter().product();
    let v = if vs.is_empty() {
        cx.reshape(v, vec![1])?
    } else {
        v
    };
    let rank = vs.len().max(1);
    let off = cx.constant("offset", vec![1; rank], TensorData::I32(vec![-lo as i32]))?;
    let idx = cx.emit("index", Op::Add, &[v, off])?;
    let idx = cx.reshape(idx, vec![1, n])?;
    let k = table.len();
    let tab = cx.constant(&format!("lut{k}"), vec![1, k, 1], TensorData::I16(table))?;
    let y = cx.emit("lookup", Op::Gather, &[tab, idx])?;
    cx.reshape(y, vs)
}

/// TFLite's int16 LOGISTIC / TANH for input 0: the input scaling as a RESCALE to `i32`, clamped
/// where the kernel saturates, then a GATHER from the kernel's value for each scaled input
/// (a function of the scaled value only, so the NPU's tanh/sigmoid LUT modes can take it).
fn emit_sigmoid(cx: &mut OpCx<'_, '_>, multiplier: i32, left_shift: i32, tanh: bool) -> R<()> {
    let x = cx.input(0)?;
    let (m, s) = sigmoid_rescale(multiplier, left_shift);
    let v = cx.rescale(
        x,
        DType::Int32,
        vec![m],
        vec![s],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )?;
    let limit = 255i64 << if tanh { 8 } else { 9 };
    let v = cx.clamp(v, -limit, limit)?;
    let table = (-limit..=limit)
        .map(|v| sigmoid_of(v as i32, tanh))
        .collect();
    let y = gather_i16(cx, v, -limit, table)?;
    cx.bind_output(0, y)
}

/// TFLite's int16 ABS with requantization `real` (`None`: the scales are equal, a clamp): the
/// magnitude of the widened input, then `MultiplyByQuantizedMultiplier` (a double-rounding
/// RESCALE, saturating to `i16`). `None` if the RESCALE cannot hold `real` for every input.
fn emit_abs(cx: &mut OpCx<'_, '_>, real: Option<f64>) -> R<Option<()>> {
    let (m, shift) = match real {
        None => (1 << 30, 30),
        Some(r) => {
            let (m, s) = quantize_multiplier(r).ok_or("abs multiplier out of range")?;
            (m, 31 - s)
        }
    };
    // |x| <= 32768 must lie inside the RESCALE's value window |v| < 2^(shift-1).
    if !(17..=62).contains(&shift) {
        return Ok(None);
    }
    let x = cx.input(0)?;
    let w = cx.widen_i32(x, 0)?;
    let a = cx.emit("abs", Op::Abs, &[w])?;
    let y = cx.rescale(
        a,
        DType::Int16,
        vec![m],
        vec![shift],
        true,
        RescaleRounding::DoubleRound,
        0,
        0,
    )?;
    cx.bind_output(0, y)?;
    Ok(Some(()))
}

/// TFLite's int16 LEAKY_RELU: `x >= 0 ? MBQM(x, identity) : MBQM(x, alpha)` as
/// `SELECT(x >= 0, RESCALE(x), RESCALE(x))` (double rounding, saturating to `i16`). `None` if
/// a RESCALE cannot hold its multiplier for every input.
fn emit_leaky_relu(cx: &mut OpCx<'_, '_>, r_id: f64, r_alpha: f64) -> R<Option<()>> {
    let mut params = Vec::new();
    for r in [r_id, r_alpha] {
        let (m, s) = quantize_multiplier(r).ok_or("leaky relu multiplier out of range")?;
        // Every i16 value must lie inside the RESCALE's value window |v| < 2^(shift-1).
        if !(16..=62).contains(&(31 - s)) {
            return Ok(None);
        }
        params.push((m, 31 - s));
    }
    let x = cx.input(0)?;
    let rank = cx.ty(x).shape.0.len();
    let zero = cx.constant("zero", vec![1; rank], TensorData::I16(vec![0]))?;
    let c = cx.emit("non_negative", Op::GreaterEqual, &[x, zero])?;
    let mut branch = Vec::new();
    for (m, s) in params {
        branch.push(cx.rescale(
            x,
            DType::Int16,
            vec![m],
            vec![s],
            true,
            RescaleRounding::DoubleRound,
            0,
            0,
        )?);
    }
    let y = cx.emit("select", Op::Select, &[c, branch[0], branch[1]])?;
    cx.bind_output(0, y)?;
    Ok(Some(()))
}

/// Lowers the int16 unary operators (input and output `i16`, zero points 0).
pub(crate) fn unary16(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    use BuiltinOperator as B;
    let (xt, ot) = (cx.tin(0)?, cx.tout(0)?);
    if OpCx::dtype(ot)? != DType::Int16 {
        return Err("int16 input needs an int16 output".into());
    }
    if code == B::NEG {
        // TFLite's int16 NEG negates the raw values, wrapping -(-32768) to -32768 (like the
        // int8 kernel): 0 - x in i32, then its low 16 bits.
        let x = cx.input(0)?;
        let rank = cx.ty(x).shape.0.len();
        let v = cx.widen_i32(x, 0)?;
        let zero = cx.constant("zero", vec![1; rank], TensorData::I32(vec![0]))?;
        let n = cx.emit("neg", Op::Sub, &[zero, v])?;
        let y = cx.emit(
            "wrap",
            Op::Cast(npuc_ir::CastAttrs { to: DType::Int16 }),
            &[n],
        )?;
        return cx.bind_output(0, y);
    }
    let (si, zi) = OpCx::qparams(xt)?;
    let (so, zo) = OpCx::qparams(ot)?;
    if zi != 0 || zo != 0 {
        return Err("int16 operands must have zero point 0".into());
    }
    let per_value = |f: &dyn Fn(i32) -> R<i64>| -> R<Vec<i16>> {
        (-32768..=32767)
            .map(|x| Ok(f(x)?.clamp(-32768, 32767) as i16))
            .collect()
    };
    match code {
        B::LOGISTIC | B::TANH => {
            let tanh = code == B::TANH;
            let (log2o, pot_o) = checked_log2(so);
            if !pot_o || log2o != -15 {
                return Err("int16 output scale must be 2^-15".into());
            }
            let (m, s) = sigmoid_input_scaling(si, tanh);
            if m > 32767 {
                return Err("int16 input scale too large".into());
            }
            emit_sigmoid(cx, m, s, tanh)
        }
        B::EXP => emit_lut513(cx, lut_populate_i16(si, zi, so, zo, f32::exp)),
        B::LOG => {
            let out_min = (-32768 - zo) as f32 * so;
            let f = move |v: f32| if v <= 0.0 { out_min } else { v.ln() };
            emit_lut513(cx, lut_populate_i16(si, zi, so, zo, f))
        }
        B::RSQRT => {
            let f = move |v: f32| {
                if v <= 0.0 {
                    32767.0 * so
                } else {
                    1.0 / v.sqrt()
                }
            };
            emit_lut513(cx, lut_populate_i16(si, zi, so, zo, f))
        }
        B::ABS => {
            let rescale = si != so;
            let real = f64::from(si / so);
            if emit_abs(cx, rescale.then_some(real))?.is_some() {
                return Ok(());
            }
            let full = per_value(&|x| {
                let v = i64::from(x.abs());
                if rescale {
                    mbqm(v, real)
                } else {
                    Ok(v)
                }
            })?;
            emit_gather16(cx, full)
        }
        B::LEAKY_RELU => {
            let BuiltinOptionsT::LeakyReluOptions(o) = cx.opts() else {
                return Err("missing LeakyReluOptions".into());
            };
            let r_alpha = f64::from(si * o.alpha / so);
            let r_id = f64::from(si / so);
            quantize_multiplier(r_alpha).ok_or("alpha multiplier out of range")?;
            if emit_leaky_relu(cx, r_id, r_alpha)?.is_some() {
                return Ok(());
            }
            let full = per_value(&|x| {
                if x >= 0 {
                    mbqm(i64::from(x), r_id)
                } else {
                    mbqm(i64::from(x), r_alpha)
                }
            })?;
            emit_gather16(cx, full)
        }
        _ => Err(format!("{} is lowered for int8 only", cx.op.opcode.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_table_is_sigmoid_of_i_over_24_to_two_lsb() {
        for (i, &v) in SIGMOID_TABLE.iter().enumerate() {
            let exact = 65536.0 / (1.0 + (-(i as f64) / 24.0).exp());
            assert!((f64::from(v) - exact).abs() < 2.0, "entry {i}");
        }
        assert!(SIGMOID_TABLE.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn lut_lookup_interpolates_with_rounding() {
        // A linear table: lut[i] = 64 * (i - 256) reproduces x / 2 rounded half up.
        let lut: Vec<i16> = (0..513)
            .map(|i| (64 * (i - 256)).min(32767) as i16)
            .collect();
        for x in [-32768i16, -3, -1, 0, 1, 3, 1000, 32767] {
            let want = (i32::from(x) + 1).div_euclid(2);
            assert_eq!(i32::from(lut_lookup_i16(&lut, x)), want, "x = {x}");
        }
    }

    #[test]
    fn logistic_and_tanh_are_odd_around_half_and_zero() {
        // Power-of-two input scale 2^-12: multiplier 0, shift 0.
        assert_eq!(sigmoid16(0, 0, 0, false), 16384);
        assert_eq!(sigmoid16(0, 0, 0, true), 0);
        // 32767 * 2^-12 ~ 8.0: sigmoid(8) * 2^15 = 32757.0.
        assert_eq!(sigmoid16(32767, 0, 0, false), 32757);
        assert!(sigmoid16(-32768, 0, 0, true) <= -32767);
    }
}
