//! A standalone RESCALE (one not fused into the operation before or after it):
//! * of an i8/i16 tensor (TFLite's RELU/RELU6/RELU_N1_TO_1 requantization: an exact widening
//!   RESCALE with the input zero point, then RESCALE(M, S) to the output type, then a CLAMP;
//!   or a widening to i32 on its own), per tensor: one pass-through 1x1 POOL(SUM) with IFM
//!   zero point = the input zero point, OFM_SCALE (M, S) with the RESCALE's rounding, the
//!   OFM zero point and the CLAMP as activation (clip range none for an i32 output);
//! * of an i8 tensor per channel: a 1x1 DEPTHWISE with unit weights, bias 0 and the
//!   per-channel multipliers and shifts in the scale stream (the round mode, from OFM_SCALE,
//!   is common to all channels, as the RESCALE's rounding is);
//! * of an i32 tensor, per tensor: ELEMENTWISE MUL by the multiplier as an OP_SCALAR; a b32
//!   multiply rescales `shift_only`, so the OFM shift S with the RESCALE's rounding acts on
//!   the exact 64-bit product, which is TOSA's `apply_scale_32` / `apply_scale_16`
//!   (`(v*M + round) >> S`; double rounding adds `±2^30` for S > 31, as double_symmetric
//!   does with dbl_rnd 0).

use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{
    rescale_round, unsupported, Ctx, Fm, InputScale, Kernel, NpuOp, Requant, ScalarOperand, View,
};
use npuc_backend::isa::{ElementwiseMode, PoolingMode, RoundModeIfm};
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, Op, OpId, RescaleAttrs};

impl<'g> Ctx<'g> {
    pub(crate) fn lower_rescale(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            unreachable!("lower_rescale on another op")
        };
        if self.rescale_needs_modes(o) {
            return self.lower_rescale_modes(o);
        }
        let mut names = Vec::new();
        let src = node.inputs()[0];
        let (x, izp, r) =
            match self.widen(src) {
                Some((p, x, zp)) if r.input_zp == 0 => {
                    self.fused.insert(p);
                    names.push(self.node(p).name.clone());
                    let mut r = r.clone();
                    r.input_zp = 0;
                    (x, zp, r)
                }
                _ if matches!(self.dtype(src), DType::Int8 | DType::UInt8 | DType::Int16) => {
                    let mut r2 = r.clone();
                    r2.input_zp = 0;
                    (src, r.input_zp, r2)
                }
                _ if self.dtype(src) == DType::Int32 => return self.lower_rescale_i32(o),
                _ => return Err(unsupported(
                    node,
                    "a standalone RESCALE needs an i8/i16/i32 input or an exact widening of one",
                )),
            };
        names.push(node.name.clone());
        let per_tensor = RescaleAttrs {
            multiplier: vec![r.multiplier[0]],
            shift: vec![r.shift[0]],
            ..r.clone()
        };
        if !self.output_rescale_ok(&per_tensor) && !Self::unsigned_output_ok(&per_tensor) {
            return Err(unsupported(
                node,
                "only rescales to i8/i16 (zero point -128..127), u8 (0..255) or i32 (zero point 0)",
            ));
        }
        if self.dtype(x) == DType::UInt8 && r.output_dtype == DType::Int32 {
            return Err(unsupported(node, "u8 input rescaled to i32"));
        }
        if r.multiplier.iter().any(|&m| m < 0) || r.shift.iter().any(|&s| !(0..=63).contains(&s)) {
            return Err(unsupported(node, "multiplier/shift out of range"));
        }
        if r.multiplier.len() != 1 && self.dtype(x) != DType::Int8 {
            return Err(unsupported(
                node,
                "per-channel standalone RESCALE of a type other than i8",
            ));
        }
        if self.dtype(x) == DType::Int16 && izp != 0 {
            return Err(unsupported(node, "i16 input with a nonzero zero point"));
        }
        let (out_t, act) = if r.output_dtype == DType::Int32 {
            (node.outputs()[0], NO_CLIP)
        } else {
            self.fuse_clamp(node.outputs()[0], &mut names)
        };
        let ifm = self.fm_flat(node, x, izp)?;
        let ofm = self.ofm_flat(node, out_t, r.output_zp)?;
        if ifm.shape != ofm.shape {
            return Err(LowerError::Graph(format!(
                "{}: RESCALE changes the shape",
                node.name
            )));
        }
        let (kernel, weights, requant) = if r.multiplier.len() == 1 {
            let requant = Requant::Global {
                scale: r.multiplier[0] as u32,
                shift: r.shift[0] as u8,
            };
            (Kernel::Pool(PoolingMode::Sum), None, requant)
        } else {
            let c = ifm.shape.2 as usize;
            if r.multiplier.len() != c {
                return Err(LowerError::Graph(format!(
                    "{}: {} multipliers for {c} channels",
                    node.name,
                    r.multiplier.len()
                )));
            }
            let ones = vec![1i16; c];
            let w = OhwiWeights::from_depthwise_hwc(1, 1, c, &ones)
                .map_err(|e| unsupported(node, e.to_string()))?;
            let scales = r
                .multiplier
                .iter()
                .zip(&r.shift)
                .map(|(&m, &s)| ChannelScale {
                    bias: 0,
                    scale: m as u32,
                    shift: s as u8,
                })
                .collect();
            (Kernel::Depthwise, Some(w), Requant::PerChannel(scales))
        };
        self.push(
            NpuOp::new(kernel, node.name.clone(), names, ifm, ofm, act)
                .with_weights(weights)
                .with_requant(requant)
                .with_round(rescale_round(&r)),
        );
        Ok(())
    }

    /// A per-tensor RESCALE to u8 (an unsigned 8-bit OFM, TRM 3.10.46: zero point 0..255),
    /// from a signed input with its zero point folded into the IFM.
    fn unsigned_output_ok(r: &RescaleAttrs) -> bool {
        r.output_dtype == DType::UInt8
            && (0..=255).contains(&r.output_zp)
            && r.multiplier.len() == 1
            && !r.input_unsigned
            && r.input_zp == 0
            && (0..=63).contains(&r.shift[0])
            && r.multiplier[0] >= 0
    }

    /// RESCALE of an i32 tensor as a multiplication by the scalar multiplier.
    fn lower_rescale_i32(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            unreachable!("lower_rescale_i32 on another op")
        };
        if !self.output_rescale_ok(r) {
            return Err(unsupported(
                node,
                "an i32 RESCALE must be per tensor, signed, with input zero point 0",
            ));
        }
        let x = node.inputs()[0];
        self.materialize(x)?;
        let mut names = vec![node.name.clone()];
        let (out_t, act) = if r.output_dtype == DType::Int32 {
            (node.outputs()[0], NO_CLIP)
        } else {
            self.fuse_clamp(node.outputs()[0], &mut names)
        };
        let ifm = self.fm_flat(node, x, 0)?;
        let ofm = self.ofm_flat(node, out_t, r.output_zp)?;
        if ifm.shape != ofm.shape {
            return Err(LowerError::Graph(format!(
                "{}: RESCALE changes the shape",
                node.name
            )));
        }
        let idx = self.lowered.ops.len();
        self.lowered.scalars.insert(
            idx,
            ScalarOperand {
                ifm2: true,
                value: r.multiplier[0],
            },
        );
        let unit = InputScale {
            scale: 1,
            shift: 0,
            dbl_rnd: 0,
            round: RoundModeIfm::DoubleSymmetric,
        };
        self.push(
            NpuOp::elementwise(
                ElementwiseMode::Mul,
                node.name.clone(),
                names,
                ifm,
                ofm,
                act,
            )
            .with_ifm2(Fm {
                buffer: ofm.buffer,
                shape: (1, 1, 1),
                broadcast: (true, true, true),
                view: View::default(),
                ..ifm
            })
            .with_requant(Requant::Global {
                scale: 1,
                shift: r.shift[0] as u8,
            })
            .with_round(rescale_round(r))
            .with_ifm_scale(unit)
            .with_ifm2_scale(unit),
        );
        Ok(())
    }
}
