//! Standalone RESCALEs in every TOSA 1.0 mode the plain forms of [`crate::rescale::plain`] do not
//! take (TOSA §2.13.4): unsigned inputs or outputs (`input_unsigned` / `output_unsigned` on
//! i8 / i16 data), per-channel scales on i16 / u16 / i32 data, i32 inputs rescaled to an
//! unsigned type.
//!
//! One 1x1 DEPTHWISE per RESCALE, its per-channel records holding the multipliers and shifts
//! (one record per channel; a per-tensor scale is repeated), bias 0, the 32-bit accumulator,
//! the RESCALE's rounding (`rescale_round`: double rounding as double_symmetric):
//! * an 8/16-bit input is the IFM with unit weights, read signed or unsigned (ACTIVATION_TYPE)
//!   with the input zero point (TRM 3.10.29: signed b8 -128..127, unsigned b8 0..255,
//!   unsigned b16 0 or 32768, which are exactly TOSA's allowed zero points), so the
//!   accumulator is `value - input_zp`;
//! * a u16 input (which convolutions do not read, TRM 3.10.3) is first widened to i32,
//!   `value - input_zp`, by an ELEMENTWISE ADD of the scalar 0 (unsigned b16 IFM, not scaled; b32 OFM; a
//!   u16 MUL would need both zero points 32768, TRM 3.10.6);
//! * an i32 input is the initial accumulator (IFM2 b32, ACC_FORMAT.acc_input = ifm2) under
//!   zero weights (the IFM is any 8-bit view of the same buffer), as decision L27's last step;
//! * an i48 input (kept in memory as 8-byte words) likewise on the 48-bit accumulator (IFM2
//!   b64; TOSA's 16-bit multipliers fit its 15-bit scale; decision L33).
//!
//! The rescale is `(acc * M + round) >> S` on the exact 64-bit product, which is
//! `apply_scale_32` / `apply_scale_16` (a 16-bit multiplier is a 32-bit one that fits). The
//! output is written signed or unsigned with the output zero point and clamped to the type's
//! range as TOSA reads it (an unsigned OFM's ACTIVATION_MIN/MAX are read as u16), no clamp
//! for an i32 output.

use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, NpuOp, Requant, ScalarOperand, View};
use npuc_backend::isa::AccFormat;
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, Op, OpId, OpNode, TensorId};

/// The signed or unsigned type of `bits` bits.
fn reinterpret(dtype: DType, unsigned: bool) -> DType {
    match (dtype.bits(), unsigned) {
        (8, true) => DType::UInt8,
        (8, false) => DType::Int8,
        (16, true) => DType::UInt16,
        (16, false) => DType::Int16,
        _ => dtype,
    }
}

/// Whether `zp` is a zero point the NPU reads or writes for `dtype` (TRM 3.10.29/42/46).
fn zero_point_ok(dtype: DType, zp: i64, ofm: bool) -> bool {
    match dtype {
        DType::Int8 => (-128..=127).contains(&zp),
        DType::UInt8 => (0..=255).contains(&zp),
        DType::UInt16 => zp == 0 || zp == 32768,
        DType::Int16 if ofm => (-128..=127).contains(&zp),
        _ => zp == 0,
    }
}

impl<'g> Ctx<'g> {
    /// Whether RESCALE `o` needs this module (the plain forms refuse it).
    pub(crate) fn rescale_needs_modes(&self, o: OpId) -> bool {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            return false;
        };
        let din = self.dtype(node.inputs()[0]);
        let per_channel = r.multiplier.len() != 1;
        r.input_unsigned
            || din == DType::Int48
            || r.output_unsigned
            || r.output_dtype == DType::UInt16
            || (per_channel && !matches!(din, DType::Int8 | DType::UInt8))
            || (din == DType::Int32 && !self.output_rescale_ok(r))
    }

    /// A new buffer for the i48 tensor `t` written as `shape`: one 8-byte word per element
    /// (an OFM of b64, the raw accumulator; decision L33).
    pub(crate) fn i48_ofm(&mut self, t: TensorId, shape: (u32, u32, u32)) -> Fm {
        let elems = self.g.tensor(t).expect("tensor").ty.shape.num_elements();
        let buffer = self.scratch(elems.unwrap_or(0) as u64 * 8);
        self.lowered.tensor_buffer.insert(t, buffer);
        Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: DType::Int64,
            broadcast: (false, false, false),
            view: View::default(),
        }
    }

    /// `input - zp` of a u16 feature map as a new i32 feature map.
    fn widen_u16(&mut self, node: &OpNode, input: Fm, zp: i64) -> Fm {
        let ifm = Fm {
            dtype: DType::UInt16,
            zero_point: zp,
            ..input
        };
        let wide = self.scratch_fm(input.shape, DType::Int32);
        let idx = self.lowered.ops.len();
        self.lowered.scalars.insert(
            idx,
            ScalarOperand {
                ifm2: true,
                value: 0,
            },
        );
        let name = format!("{}/widen", node.name);
        self.push(NpuOp::add_zero(name, ifm, wide, NO_CLIP, AccFormat::I48));
        wide
    }

    /// RESCALE `o` as one 1x1 DEPTHWISE (see the module documentation).
    pub(crate) fn lower_rescale_modes(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            unreachable!("lower_rescale_modes on another op")
        };
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        self.materialize(x)?;
        if r.multiplier.iter().any(|&m| m < 0) || r.shift.iter().any(|&s| !(0..=63).contains(&s)) {
            return Err(unsupported(node, "multiplier/shift out of range"));
        }
        let din = self.dtype(x);
        let in_type = reinterpret(din, r.input_unsigned || din.is_unsigned());
        let out_type = reinterpret(
            r.output_dtype,
            r.output_unsigned || r.output_dtype.is_unsigned(),
        );
        if !zero_point_ok(in_type, r.input_zp, false) {
            return Err(unsupported(
                node,
                format!("input zero point {} of {in_type} data", r.input_zp),
            ));
        }
        if !zero_point_ok(out_type, r.output_zp, true) {
            return Err(unsupported(
                node,
                format!("output zero point {} of {out_type} data", r.output_zp),
            ));
        }
        let mut input = if din == DType::Int48 {
            // i48 values live in memory as 8-byte words (b64, decision L33).
            if r.input_zp != 0 {
                return Err(unsupported(node, "an i48 input with a zero point"));
            }
            if r.multiplier.iter().any(|&m| m > 0x7fff) {
                return Err(unsupported(
                    node,
                    "a multiplier above 32767 on an i48 input (15-bit scales of the 48-bit accumulator)",
                ));
            }
            Fm {
                buffer: self.input_buffer(node, x)?,
                shape: self.flat_hwc(node, x)?,
                zero_point: 0,
                dtype: DType::Int64,
                broadcast: (false, false, false),
                view: View::default(),
            }
        } else {
            self.fm_flat(node, x, 0)?
        };
        let c = input.shape.2 as usize;
        if r.multiplier.len() != 1 && r.multiplier.len() != c {
            return Err(LowerError::Graph(format!(
                "{}: {} multipliers for {c} channels",
                node.name,
                r.multiplier.len()
            )));
        }
        if in_type == DType::UInt16 {
            // Convolutions read 16-bit data signed only (TRM 3.10.3): `value - input_zp`
            // is first widened to i32 by an ELEMENTWISE ADD of the scalar 0.
            input = self.widen_u16(node, input, r.input_zp);
        }
        let (ifm, ifm2, weight) = match input.dtype.bits() {
            8 | 16 => {
                input.dtype = in_type;
                input.zero_point = r.input_zp;
                (input, None, 1)
            }
            32 | 64 => {
                // The initial accumulator from IFM2 (b32: i32, b64: i48) under zero
                // weights; the IFM is an 8-bit view of the same buffer (16-bit under the
                // 48-bit accumulator, its usual 16x8 form).
                let view = Fm {
                    dtype: if din == DType::Int48 {
                        DType::Int16
                    } else {
                        DType::Int8
                    },
                    ..input
                };
                (view, Some(input), 0)
            }
            _ => {
                return Err(unsupported(
                    node,
                    format!("a standalone RESCALE of {din} data"),
                ))
            }
        };
        let mut ofm = self.ofm_flat(node, y, 0)?;
        if ofm.shape != input.shape {
            return Err(LowerError::Graph(format!(
                "{}: RESCALE changes the shape",
                node.name
            )));
        }
        ofm.dtype = out_type;
        ofm.zero_point = r.output_zp;
        let act = match out_type {
            DType::Int32 => NO_CLIP,
            t if t.is_unsigned() => (0, (1i64 << t.bits()) - 1),
            t => (t.min_value(), t.max_value()),
        };
        let w = OhwiWeights::from_depthwise_hwc(1, 1, c, &vec![weight; c])
            .map_err(|e| unsupported(node, e.to_string()))?;
        let record = |k: usize| {
            let k = if r.multiplier.len() == 1 { 0 } else { k };
            ChannelScale {
                bias: 0,
                scale: r.multiplier[k] as u32,
                shift: r.shift[k] as u8,
            }
        };
        self.push(
            NpuOp::depthwise(node.name.clone(), vec![node.name.clone()], ifm, ofm, act)
                .with_ifm2(ifm2)
                .with_weights(w)
                .with_requant(Requant::PerChannel((0..c).map(record).collect()))
                .with_round(rescale_round(r))
                .with_acc(if din == DType::Int48 {
                    AccFormat::I48
                } else {
                    AccFormat::I32
                }),
        );
        Ok(())
    }
}
