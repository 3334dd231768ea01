//! CONCATENATION of uint8 inputs whose quantization differs from the output's.
//!
//! TFLite's uint8 kernel (`reference_ops::ConcatenationWithScaling`) copies an input whose
//! zero point and scale equal the output's and maps every other one in `f32`:
//! `clamp(round(x * scale + bias) + zp_out, 0, 255)` with `scale = s_in * (1 / s_out)` and
//! `bias = -zp_in * scale` (`round` half away from zero). The result depends on the byte
//! `x` only, so each such input goes through one 256-entry TABLE on its int8 view (entry
//! `x - 128` holds the result's view `y - 128`), evaluated here with the kernel's `f32`
//! operations in its order; the tables' outputs and the copied inputs then share the output
//! quantization and are concatenated as bytes (docs/decisions.md F6).

use super::ctx::{OpCx, R};
use super::ops_layout::axis;
use super::uint8::is_u8;
use crate::schema::{ActivationFunctionType, BuiltinOptionsT};
use npuc_ir::{AxisAttrs, Op, TableAttrs, TableData};

/// True for a CONCATENATION with a uint8 output and an input quantized otherwise.
pub(crate) fn applies(cx: &OpCx<'_, '_>) -> R<bool> {
    let ot = cx.tout(0)?;
    if !is_u8(ot) {
        return Ok(false);
    }
    let q = OpCx::raw_qparams(ot)?;
    for i in 0..cx.op.inputs.len() {
        if OpCx::raw_qparams(cx.tin(i)?)? != q {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The kernel's map of byte `x` for input `(si, zi)` and output `(so, zo)`, in `f32`.
fn rescaled(x: u8, si: f32, zi: i64, so: f32, zo: i64) -> i64 {
    let inverse = 1.0f32 / so;
    let scale = si * inverse;
    let bias = (-zi) as f32 * scale;
    let v = (f32::from(x) * scale + bias).round() as i64 + zo;
    v.clamp(0, 255)
}

pub(crate) fn concat(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::ConcatenationOptions(o) = cx.opts() else {
        return Err("missing ConcatenationOptions".into());
    };
    if o.fused_activation_function != ActivationFunctionType::NONE {
        return Err("uint8 CONCATENATION with rescaled inputs and a fused activation".into());
    }
    let ot = cx.tout(0)?;
    let ax = axis(i64::from(o.axis), OpCx::shape(ot)?.len())?;
    let (so, zo) = OpCx::raw_qparams(ot)?;
    let mut ins = vec![];
    for i in 0..cx.op.inputs.len() {
        let t = cx.tin(i)?;
        if !is_u8(t) {
            return Err(format!("input {i} {:?} is not uint8", t.name));
        }
        let (si, zi) = OpCx::raw_qparams(t)?;
        let x = cx.input(i)?;
        if (si, zi) == (so, zo) {
            ins.push(x);
            continue;
        }
        // Entry k of the table is indexed by the view value k - 128, i.e. byte x = k.
        let table = (0..=255u8)
            .map(|x| (rescaled(x, si, zi, so, zo) - 128) as i8)
            .collect();
        let y = cx.emit(
            "rescale_table",
            Op::Table(TableAttrs {
                table: TableData::I8(table),
            }),
            &[x],
        )?;
        ins.push(y);
    }
    let y = cx.emit("concat", Op::Concat(AxisAttrs { axis: ax }), &ins)?;
    cx.bind_output(0, y)
}

#[cfg(test)]
mod tests {
    use super::rescaled;

    #[test]
    fn bytes_map_through_the_kernels_float_arithmetic() {
        // Equal parameters map every byte to itself.
        assert!((0..=255u8).all(|x| rescaled(x, 0.05, 128, 0.05, 128) == i64::from(x)));
        // Half the scale: (x - 10) / 2 + 3, halves away from zero, clamped below.
        assert_eq!(rescaled(15, 0.5, 10, 1.0, 3), 6); // 2.5 -> 3
        assert_eq!(rescaled(5, 0.5, 10, 1.0, 3), 0); // -2.5 -> -3, + 3
        assert_eq!(rescaled(0, 0.5, 10, 1.0, 3), 0); // -5 + 3 clamps to 0
        assert_eq!(rescaled(255, 4.0, 0, 1.0, 0), 255);
    }
}
