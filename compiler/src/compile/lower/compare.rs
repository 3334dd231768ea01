//! MAXIMUM, MINIMUM and the comparisons GREATER, GREATER_EQUAL, EQUAL as single NPU
//! elementwise operations.
//!
//! * MAXIMUM / MINIMUM of two i8 (or i16) tensors: `max` / `min` with unit input and output
//!   scales and zero points 0, so the raw values pass through exactly (TFLite requires equal
//!   quantization of operands and result); a following CLAMP is fused.
//! * Comparisons take their operands as the elementwise ADD/SUB do (i8 -> RESCALE chains to
//!   i32, folded into IFM/IFM2_SCALE) or as raw i8/i16 tensors. The NPU's `cmp_*` modes give
//!   -1 (true) or 0 (false); adding an OFM zero point of 1 turns that into the IR's bool only
//!   for the complement, so each comparison runs as its complement with 1 added:
//!   `a > b = (b >= a) + 1`, `a >= b = (b > a) + 1`, `a == b = (a != b) + 1`, clamped to 0..1
//!   (see decision L11).

use super::*;

impl<'g> Ctx<'g> {
    /// An operand of MAXIMUM/MINIMUM/comparisons: a raw i8/i16 tensor with an identity input
    /// scale, or (comparisons) an ADD-style rescaled i32 operand.
    fn compare_operand(
        &mut self,
        node: &OpNode,
        t: TensorId,
        names: &mut Vec<String>,
    ) -> Result<(TensorId, i64, InputScale), CompileError> {
        let identity = InputScale {
            scale: 1,
            shift: 0,
            dbl_rnd: 0,
            round: RoundModeIfm::DoubleSymmetric,
        };
        if matches!(self.dtype(t), DType::Int8 | DType::Int16) {
            return Ok((t, 0, identity));
        }
        let (x, zp, s) = self.operand(node, t, names)?;
        Ok((x, zp, s.unwrap_or(identity)))
    }

    pub(super) fn lower_compare(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let [x, y] = [node.inputs()[0], node.inputs()[1]];
        // (mode, swap operands, output zero point)
        let (mode, swap, zp) = match &node.op {
            Op::Maximum => (ElementwiseMode::Max, false, 0),
            Op::Minimum => (ElementwiseMode::Min, false, 0),
            Op::Greater => (ElementwiseMode::CmpGe, true, 1),
            Op::GreaterEqual => (ElementwiseMode::CmpGt, true, 1),
            Op::Equal => (ElementwiseMode::CmpNe, false, 1),
            _ => unreachable!("lower_compare on another op"),
        };
        let is_cmp = zp == 1;
        // A LOGICAL_NOT reading only the comparison fuses: the comparison itself (not its
        // complement) plus 1 is the negated bool (decision L11).
        let negation = self
            .sole_consumer(node.outputs()[0])
            .filter(|&c| is_cmp && matches!(self.node(c).op, Op::LogicalNot));
        let (mode, swap) = match (negation, mode) {
            (None, _) => (mode, swap),
            (Some(_), ElementwiseMode::CmpGe) => (ElementwiseMode::CmpGt, false),
            (Some(_), ElementwiseMode::CmpGt) => (ElementwiseMode::CmpGe, false),
            (Some(_), _) => (ElementwiseMode::CmpEq, false),
        };
        if !is_cmp && self.dtype(x) == DType::Int32 {
            return Err(unsupported(node, "i32 MAXIMUM/MINIMUM"));
        }
        let mut names = Vec::new();
        let (a, azp, ascale) = self.compare_operand(node, x, &mut names)?;
        let (b, bzp, bscale) = self.compare_operand(node, y, &mut names)?;
        names.push(node.name.clone());
        let (out_t, act) = if let Some(c) = negation {
            self.fused.insert(c);
            names.push(self.node(c).name.clone());
            (self.node(c).outputs()[0], (0, 1))
        } else if is_cmp {
            (node.outputs()[0], (0, 1))
        } else {
            self.fuse_clamp(node.outputs()[0], &mut names)
        };
        let mut ifm = self.fm(node, a, false, azp)?;
        let mut ifm2 = self.fm(node, b, false, bzp)?;
        if ifm.dtype != ifm2.dtype {
            return Err(unsupported(node, "operands of different element types"));
        }
        if ifm.dtype == DType::Int16 && (azp != 0 || bzp != 0) {
            return Err(unsupported(node, "i16 operands with a nonzero zero point"));
        }
        if self.dims(a).len() != self.dims(out_t).len() || self.dims(b).len() != self.dims(a).len()
        {
            return Err(unsupported(
                node,
                "operand rank differs from the output rank",
            ));
        }
        let ofm = if is_cmp {
            self.bool_ofm(node, out_t, zp)?
        } else {
            self.ofm(node, out_t, false, zp)?
        };
        for fm in [&mut ifm, &mut ifm2] {
            let (h, w, c) = fm.shape;
            let (oh, ow, oc) = ofm.shape;
            fm.broadcast = (h != oh, w != ow, c != oc);
            if (fm.broadcast.0 && h != 1)
                || (fm.broadcast.1 && w != 1)
                || (fm.broadcast.2 && c != 1)
            {
                return Err(unsupported(node, "operand shape does not broadcast"));
            }
        }
        let ((ifm, ascale), (ifm2, bscale)) = if swap {
            ((ifm2, bscale), (ifm, ascale))
        } else {
            ((ifm, ascale), (ifm2, bscale))
        };
        let acc = if ifm.dtype == DType::Int16 {
            AccFormat::I48
        } else {
            AccFormat::I32
        };
        self.push(NpuOp {
            name: node.name.clone(),
            fused: names,
            kernel: Kernel::Elementwise(mode),
            ifm,
            ifm2: Some(ifm2),
            ofm,
            kernel_size: (1, 1),
            stride: (1, 1),
            dilation: (1, 1),
            pad: [0; 4],
            weights: None,
            requant: Requant::Global { scale: 1, shift: 0 },
            round: RoundModeOfm::DoubleSymmetric,
            ifm_scale: Some(ascale),
            ifm2_scale: Some(bscale),
            act,
            acc,
            upscale: IfmUpscaleMode::None,
        });
        Ok(())
    }

    /// The OFM of a bool result (one byte per element, 0 or 1).
    fn bool_ofm(&mut self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, CompileError> {
        if self.dtype(t) != DType::Bool {
            return Err(unsupported(node, "a comparison result that is not bool"));
        }
        let shape = self.hwc(node, t, false)?;
        let idx = self.lowered.ops.len();
        let buffer = self.new_buffer(t, Some(idx));
        Ok(Fm {
            buffer,
            shape,
            zero_point: zp,
            dtype: DType::Bool,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }
}
