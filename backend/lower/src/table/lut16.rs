//! 16-bit lookup tables (TRM 3.6.7 `activation`, decision L15 in docs/decisions.md) and the
//! exhaustive check that a unary NPU operation computes what its IR operators compute.
//!
//! The four 16-bit LUT modes interpolate between 512 (base, slope) pairs of `int16` held in
//! the whole 2048-byte LUT RAM; for the value `acc` after the OFM zero point and the clamp,
//! with `F` fraction bits, `i = 256 + (acc >> F)`, `f = acc & (2^F - 1)`:
//!
//! | mode | F | result |
//! |---|---|---|
//! | `lut_s16_s16` | 7 | `(int16)(((b << 7) + f*m + 64) >> 7)` |
//! | `lut_s16_s32` | 7 | `(b << 7) + f*m` |
//! | `lut_tanh` | 8 | `((b << 8) + f*m + (acc >= 0 ? 0x80 : 0x7f)) >> 8`, acc clamped to `[-2^16, 2^16)` |
//! | `lut_sigmoid` | 9 | `((b << 9) + f*m + (acc >= 0 ? 0x1000200 : 0x10001ff)) >> 10`, acc clamped to `[-0x1f000, 0x1efff]` |
//!
//! TOSA's 513-entry `TABLE` (`i16` -> `i32`) is exactly `lut_s16_s32` with `b = table[i]`,
//! `m = table[i+1] - table[i]` ([`table513`]). For any other unary function of an 8- or
//! 16-bit input, [`fit`] derives (base, slope) pairs from the function's values; whatever
//! the construction, [`Ctx::verify_unary`] then compares the NPU operation (modelled with the
//! simulator's own arithmetic) against the reference interpreter for **every** input value
//! and the compiler refuses the operator if a single value differs.

use crate::table::activation_lut::Lut;
use crate::LowerError;
use crate::{unsupported, Ctx, InputScale, Kernel, NpuOp, Requant};
use npuc_backend::isa::{ActivationFunction, ElementwiseMode, PoolingMode};
use npuc_backend::sim::arith::Activation;
use npuc_backend::sim::Fault;
use npuc_codecs::arith::{ifm_round_mode, rounded_shift_right, truncate};
use npuc_ir::{DType, OpId, OpNode, TensorId};
use std::collections::BTreeMap;

/// Fraction bits of a 16-bit LUT mode.
fn frac_bits(f: ActivationFunction) -> u32 {
    match f {
        ActivationFunction::LutTanh => 8,
        ActivationFunction::LutSigmoid => 9,
        _ => 7,
    }
}

/// The LUT input range of a 16-bit mode (tanh and sigmoid clamp to fixed ranges, the others
/// use the 16-bit activation clamp the compiler programs).
pub(crate) fn input_range(f: ActivationFunction) -> (i64, i64) {
    match f {
        ActivationFunction::LutTanh => (-0x10000, 0xffff),
        ActivationFunction::LutSigmoid => (-0x1f000, 0x1efff),
        _ => (-32768, 32767),
    }
}

/// 512 (base, slope) pairs as the LUT RAM holds them (little-endian `int16`).
fn lut_bytes(pairs: &[(i64, i64)]) -> Vec<u8> {
    pairs
        .iter()
        .flat_map(|&(b, m)| {
            let (b, m) = (b as i16, m as i16);
            b.to_le_bytes().into_iter().chain(m.to_le_bytes())
        })
        .collect()
}

/// The `lut_s16_s32` table of a TOSA 513-entry TABLE; `Err(i)` if the slope between entries
/// `i` and `i + 1` does not fit `int16` (where the TABLE is undefined).
pub(crate) fn table513(t: &[i16]) -> Result<Vec<u8>, usize> {
    let pairs = (0..512)
        .map(|i| {
            let (b, n) = (i64::from(t[i]), i64::from(t[i + 1]));
            if DType::Int16.contains(n - b) {
                Ok((b, n - b))
            } else {
                Err(i)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(lut_bytes(&pairs))
}

/// One interpolation step of a 16-bit mode: the result for base `b`, slope `m`, fraction `f`
/// in a segment of negative (`neg`) or non-negative inputs.
fn step(function: ActivationFunction, b: i64, m: i64, f: i64, neg: bool) -> i64 {
    match function {
        ActivationFunction::LutS16S16 => i64::from((((b << 7) + f * m + 64) >> 7) as i16),
        ActivationFunction::LutTanh => ((b << 8) + f * m + if neg { 0x7f } else { 0x80 }) >> 8,
        ActivationFunction::LutSigmoid => {
            ((b << 9) + f * m + if neg { 0x100_01ff } else { 0x100_0200 }) >> 10
        }
        _ => (b << 7) + f * m,
    }
}

/// Output units per unit of slope and fraction (`d result / d f = m / G`).
fn slope_unit(function: ActivationFunction) -> i64 {
    match function {
        ActivationFunction::LutS16S16 => 128,
        ActivationFunction::LutTanh => 256,
        ActivationFunction::LutSigmoid => 1024,
        _ => 1,
    }
}

/// An `int16` (base, slope) reproducing every sample `(f, y)` of one segment (sorted by `f`,
/// distinct `f`).
fn fit_segment(function: ActivationFunction, s: &[(i64, i64)], neg: bool) -> Option<(i64, i64)> {
    let Some(&(f0, y0)) = s.first() else {
        return Some((0, 0));
    };
    let (f1, y1) = *s.last().expect("non-empty");
    let g = slope_unit(function);
    let mut slopes: Vec<i64> = if f1 > f0 {
        let mut dy = y1 - y0;
        if function == ActivationFunction::LutS16S16 {
            dy = i64::from(dy as i16);
        }
        let est = (dy * g) as f64 / (f1 - f0) as f64;
        let r = 2 * g / (f1 - f0) + 2;
        let est = est.round() as i64;
        (est - r..=est + r).collect()
    } else {
        vec![0]
    };
    slopes.retain(|&m| DType::Int16.contains(m));
    let est = slopes.get(slopes.len() / 2).copied().unwrap_or(0);
    slopes.sort_by_key(|&m| (m - est).abs());
    let wraps = function == ActivationFunction::LutS16S16;
    for m in slopes {
        // The base that reproduces the first sample (up to rounding), then its neighbours.
        let b0 = match function {
            ActivationFunction::LutS16S16 => y0 - ((f0 * m + 64) >> 7),
            ActivationFunction::LutTanh => y0 - ((f0 * m + if neg { 0x7f } else { 0x80 }) >> 8),
            ActivationFunction::LutSigmoid => (1024 * y0 - f0 * m - 0x100_0000).div_euclid(512),
            _ => (y0 - f0 * m).div_euclid(128),
        };
        for b in [b0, b0 + 1, b0 - 1] {
            let b = if wraps { i64::from(b as i16) } else { b };
            if DType::Int16.contains(b) && s.iter().all(|&(f, y)| step(function, b, m, f, neg) == y)
            {
                return Some((b, m));
            }
        }
    }
    None
}

/// A table for `function` reproducing the samples `(acc, y)` (`acc` inside the mode's input
/// range; equal `acc` must have equal `y`), or `None`.
pub(crate) fn fit(function: ActivationFunction, samples: &[(i64, i64)]) -> Option<Vec<u8>> {
    let fb = frac_bits(function);
    let mut segs: Vec<BTreeMap<i64, i64>> = vec![BTreeMap::new(); 512];
    for &(v, y) in samples {
        let i = usize::try_from(256 + (v >> fb)).ok().filter(|&i| i < 512)?;
        let f = v & ((1 << fb) - 1);
        if *segs[i].entry(f).or_insert(y) != y {
            return None;
        }
    }
    let pairs = segs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s: Vec<(i64, i64)> = s.iter().map(|(&f, &y)| (f, y)).collect();
            fit_segment(function, &s, i < 256)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(lut_bytes(&pairs))
}

/// What a unary NPU operation (a 1x1 POOL(SUM), or ELEMENTWISE abs / lrelu) with global
/// scaling writes for the IFM element `x`, per the TRM pseudocode (`read_ifm`, `scale_a`/
/// `scale_b`, `rescale`, `activation`, `write_ofm`), with the simulator's arithmetic.
pub(crate) fn simulate(op: &NpuOp, lut: Option<&Lut>, x: i64) -> Result<i64, Fault> {
    let a = x - op.ifm.zero_point;
    let Requant::Global { scale, shift } = op.requant else {
        return Err(Fault::Scales(
            "per-channel scaling in a unary operation".into(),
        ));
    };
    let in_scale = |s: Option<InputScale>, v: i64| -> Result<i64, Fault> {
        // scale_a/scale_b act on 8-bit and signed 16-bit inputs.
        match s {
            Some(s) if op.ifm.dtype.byte_size() <= 2 => Ok(rounded_shift_right(
                i128::from(v) * i128::from(s.scale),
                u32::from(s.shift),
                ifm_round_mode(s.round),
                u32::from(s.dbl_rnd),
            )? as i64),
            _ => Ok(v),
        }
    };
    let acc = match op.kernel {
        Kernel::Pool(PoolingMode::Sum) if op.kernel_size == (1, 1) => a,
        Kernel::Elementwise(ElementwiseMode::Abs) => {
            i64::from(in_scale(op.ifm_scale, a)?.abs() as i32)
        }
        Kernel::Elementwise(ElementwiseMode::Lrelu) => {
            let s = if a >= 0 { op.ifm_scale } else { op.ifm2_scale };
            i64::from(in_scale(s, a)? as i32)
        }
        _ => return Err(Fault::Scales("not a unary operation".into())),
    };
    let v = rounded_shift_right(
        i128::from(acc) * i128::from(scale),
        u32::from(shift),
        op.round,
        0,
    )?;
    let activation = Activation {
        b64: false,
        zero_point: op.ofm.zero_point,
        min: op.act.0,
        max: op.act.1,
        function: lut.map_or(ActivationFunction::LutNone, |l| l.function),
        table: 0,
        clip: npuc_backend::isa::ActivationClipRange::B16,
    };
    let r = activation.apply(v as i64, lut.map_or(&[][..], |l| &l.data))?;
    let bits = 8 * op.ofm.dtype.byte_size() as u32;
    Ok(truncate(r, bits, !op.ofm.dtype.is_unsigned()))
}

impl<'g> Ctx<'g> {
    /// Checks that `op` (with `lut`) writes, for every value of its IFM type, what the IR
    /// computes for `out` from `x` through `ops`; the error names the first input that differs.
    pub(crate) fn verify_unary(
        &self,
        node: &OpNode,
        x: TensorId,
        ops: &[OpId],
        out: TensorId,
        op: &NpuOp,
        lut: Option<&Lut>,
    ) -> Result<(), LowerError> {
        let (domain, want) = self
            .eval_unary(x, ops, out)
            .map_err(|e| unsupported(node, e))?;
        for (&x, &y) in domain.iter().zip(&want) {
            let got = simulate(op, lut, x);
            if got.as_ref() != Ok(&y) {
                let got = got.map_or_else(|e| e.to_string(), |v| v.to_string());
                return Err(unsupported(
                    node,
                    format!("no exact NPU form: input {x} gives {y}, the NPU {got}"),
                ));
            }
        }
        Ok(())
    }
}
