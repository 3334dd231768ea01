//! PRELU (int8) and SCATTER_ND.
//!
//! **PRELU** follows TFLite's quantized kernel: with `v = x - zp_x`,
//! `out = zp_out + MultiplyByQuantizedMultiplier(v, s_x / s_out)` where `v >= 0`, else
//! `zp_out + MultiplyByQuantizedMultiplier(v * (alpha - zp_alpha), s_x * s_alpha / s_out)`,
//! saturated. The real multipliers are formed in `f32` (as TFLite does) and then widened.
//! Lowered as two RESCALEs (double rounding) and a SELECT on `v >= 0`.
//!
//! **SCATTER_ND** (constant indices): TFLite starts from an all-zero output (raw zeros, not
//! the zero point) and adds every update slice at its index. Without duplicate indices that
//! is TOSA SCATTER into a zero tensor; duplicates (which TFLite sums) are refused.

use super::arith::quantize_multiplier;
use super::ctx::{OpCx, R};
use npuc_ir::{DType, Op, TensorData};

pub(crate) fn prelu(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (xt, at, ot) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let dt = OpCx::dtype(xt)?;
    if dt != DType::Int8 || OpCx::dtype(at)? != DType::Int8 || OpCx::dtype(ot)? != DType::Int8 {
        return Err("PRELU is lowered for int8 input, alpha and output only".into());
    }
    let (sx, zx) = OpCx::qparams(xt)?;
    let (sa, za) = OpCx::qparams(at)?;
    let (so, zo) = OpCx::qparams(ot)?;
    let xs = OpCx::shape(xt)?;
    let as_ = OpCx::shape(at)?;
    if as_.len() > xs.len() {
        return Err("alpha has a higher rank than the input".into());
    }
    let mut alpha_shape = vec![1; xs.len() - as_.len()];
    alpha_shape.extend_from_slice(&as_);
    if alpha_shape.iter().zip(&xs).any(|(&a, &x)| a != 1 && a != x) {
        return Err(format!("alpha shape {as_:?} does not broadcast to {xs:?}"));
    }
    let r1 = f64::from(sx / so);
    let r2 = f64::from(sx * sa / so);
    for r in [r1, r2] {
        quantize_multiplier(r).ok_or_else(|| format!("multiplier {r} out of range"))?;
    }
    let x = cx.input(0)?;
    let a = cx.input(1)?;
    let a = cx.reshape(a, alpha_shape)?;
    let v = cx.widen_i32(x, zx)?;
    let av = cx.widen_i32(a, za)?;
    let pos = cx.requant_double(v, DType::Int8, &[r1], zo)?;
    let prod = cx.emit(
        "times_alpha",
        Op::Mul(npuc_ir::MulAttrs { shift: 0 }),
        &[v, av],
    )?;
    let neg = cx.requant_double(prod, DType::Int8, &[r2], zo)?;
    let zero = cx.constant("zero", vec![1; xs.len()], TensorData::I32(vec![0]))?;
    let ge = cx.emit("non_negative", Op::GreaterEqual, &[v, zero])?;
    let y = cx.emit("select", Op::Select, &[ge, pos, neg])?;
    cx.bind_output(0, y)
}

pub(crate) fn scatter_nd(cx: &mut OpCx<'_, '_>) -> R<()> {
    let (it, ut, ot) = (cx.tin(0)?, cx.tin(1)?, cx.tout(0)?);
    let is = OpCx::shape(it)?;
    let us = OpCx::shape(ut)?;
    let os = OpCx::shape(ot)?;
    let dt = OpCx::dtype(ut)?;
    if OpCx::dtype(ot)? != dt {
        return Err("updates and output types differ".into());
    }
    let ind = cx.const_input(0)?;
    let depth = *is.last().ok_or("scalar indices")?;
    if depth == 0 || depth > os.len() {
        return Err(format!(
            "index depth {depth} for a rank-{} output",
            os.len()
        ));
    }
    let w: usize = is[..is.len() - 1].iter().product();
    let k: usize = os[..depth].iter().product();
    let c: usize = os[depth..].iter().product();
    if us.iter().product::<usize>() != w * c {
        return Err(format!(
            "updates {us:?} do not match indices {is:?} and shape {os:?}"
        ));
    }
    let mut flat = Vec::with_capacity(w);
    for row in ind.chunks(depth) {
        let mut pos = 0i64;
        for (&v, &extent) in row.iter().zip(&os[..depth]) {
            if v < 0 || v >= extent as i64 {
                return Err(format!("index {row:?} out of range for shape {os:?}"));
            }
            pos = pos * extent as i64 + v;
        }
        if flat.contains(&(pos as i32)) {
            return Err(format!(
                "duplicate index {row:?} (TFLite sums duplicates; TOSA SCATTER does not)"
            ));
        }
        flat.push(pos as i32);
    }
    // TFLite fills the positions no update writes with byte 0: -128 on a uint8 int8 view.
    let zeros = if super::uint8::is_u8(ot) {
        TensorData::I8(vec![-128; k * c])
    } else {
        TensorData::zeros(dt, k * c)
    };
    let base = cx.constant("zeros", vec![1, k, c], zeros)?;
    let idx = cx.constant("indices", vec![1, w], TensorData::I32(flat))?;
    let u = cx.input(1)?;
    let u = cx.reshape(u, vec![1, w, c])?;
    let y = cx.emit("scatter", Op::Scatter, &[base, idx, u])?;
    let y = cx.reshape(y, os)?;
    cx.bind_output(0, y)
}
