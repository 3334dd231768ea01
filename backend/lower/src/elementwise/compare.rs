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

use crate::elementwise::logical::IDENTITY;
use crate::LowerError;
use crate::{unsupported, Ctx, InputScale, NpuOp};
use npuc_backend::isa::{AccFormat, ElementwiseMode, RoundModeOfm};
use npuc_ir::{DType, Op, OpId, OpNode, TensorId};

impl<'g> Ctx<'g> {
    /// An operand of MAXIMUM/MINIMUM/comparisons: a raw i8/i16 tensor with an identity input
    /// scale, an ADD-style rescaled i32 operand, an exact widening read by other operators
    /// too, or (`Err(Some(t))`) a constant to be stored like the other operand.
    fn compare_operand(
        &mut self,
        node: &OpNode,
        t: TensorId,
        names: &mut Vec<String>,
    ) -> Result<(TensorId, i64, InputScale), Option<LowerError>> {
        let narrow = matches!(self.dtype(t), DType::Int8 | DType::Int16);
        let has_buffer = self.lowered.tensor_buffer.contains_key(&t);
        if narrow && (has_buffer || !self.is_constant(t)) {
            return Ok((t, 0, IDENTITY));
        }
        if !narrow {
            match self.operand(node, t, names) {
                Ok((x, zp, s)) => return Ok((x, zp, s.unwrap_or(IDENTITY))),
                Err(e) => {
                    if let Some((p, x, zp)) = self.widen(t) {
                        self.fused.insert(p);
                        names.push(self.node(p).name.clone());
                        return Ok((x, zp, IDENTITY));
                    }
                    if self.dtype(t) == DType::Int32 && !self.is_constant(t) {
                        // Any other i32 tensor is read as b32.
                        self.materialize(t).map_err(Some)?;
                        return Ok((t, 0, IDENTITY));
                    }
                    if !self.is_constant(t) {
                        return Err(Some(e));
                    }
                }
            }
        }
        Err(None)
    }

    pub(crate) fn lower_compare(&mut self, o: OpId) -> Result<(), LowerError> {
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
        let ra = self.compare_operand(node, x, &mut names);
        let rb = self.compare_operand(node, y, &mut names);
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
        // Constant operands are stored in the other operand's element type.
        let (ifm, ascale, ifm2, bscale) = match (ra, rb) {
            (Err(Some(e)), _) | (_, Err(Some(e))) => return Err(e),
            (Ok((a, azp, ascale)), Ok((b, bzp, bscale))) => (
                self.ew_fm(node, a, azp)?,
                ascale,
                self.ew_fm(node, b, bzp)?,
                bscale,
            ),
            (Ok((a, azp, ascale)), Err(None)) => {
                let ifm = self.ew_fm(node, a, azp)?;
                let ifm2 = self.constant_fm(node, y, ifm.dtype)?;
                (ifm, ascale, ifm2, IDENTITY)
            }
            (Err(None), Ok((b, bzp, bscale))) => {
                let ifm2 = self.ew_fm(node, b, bzp)?;
                let ifm = self.constant_fm(node, x, ifm2.dtype)?;
                (ifm, IDENTITY, ifm2, bscale)
            }
            (Err(None), Err(None)) => {
                return Err(unsupported(node, "both operands are constants"));
            }
        };
        let (mut ifm, mut ifm2) = (ifm, ifm2);
        if ifm.dtype != ifm2.dtype || ifm.dtype == DType::Bool {
            return Err(unsupported(node, "operands of different element types"));
        }
        if ifm.dtype == DType::Int16 && (ifm.zero_point != 0 || ifm2.zero_point != 0) {
            return Err(unsupported(node, "i16 operands with a nonzero zero point"));
        }
        if is_cmp && self.dtype(out_t) != DType::Bool {
            return Err(unsupported(node, "a comparison result that is not bool"));
        }
        let mut ofm = self.ew_ofm(node, out_t, zp)?;
        self.broadcast_layout(node, out_t, &mut ofm, &[x, y], &mut [&mut ifm, &mut ifm2])?;
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
        self.push(
            NpuOp::elementwise(mode, node.name.clone(), names, ifm, ofm, act)
                .with_ifm2(ifm2)
                .with_round(RoundModeOfm::DoubleSymmetric)
                .with_ifm_scale(ascale)
                .with_ifm2_scale(bscale)
                .with_acc(acc),
        );
        Ok(())
    }
}
