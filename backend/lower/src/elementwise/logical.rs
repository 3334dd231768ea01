//! LOGICAL_AND / OR / XOR / NOT, the bitwise AND / OR / XOR / NOT of i8 and i16 tensors, and
//! CAST between bool, i8 and i16, as single NPU operations.
//!
//! Booleans are bytes 0 and 1 (decision L12). The elementwise `and`, `or` and `xor` modes work
//! on the (unit-scaled) operand values, which for bytes 0 / 1 are the boolean operations and
//! for sign-extended i8 / i16 values the bitwise ones; the write truncates to the OFM type.
//! `not` gives `!v = -1 - v`: with the OFM zero point 2 that is `1 - v`, the boolean NOT.
//! CAST from bool to i8 only reinterprets the bytes (an alias, no operation); the other casts
//! are one operation each (see [`Ctx::lower_cast`]).

use crate::LowerError;
use crate::{unsupported, Ctx, Fm, InputScale, NpuOp, View};
use npuc_backend::isa::{AccFormat, ElementwiseMode, PoolingMode, RoundModeIfm, RoundModeOfm};
use npuc_ir::{DType, Op, OpId};

/// Unit input scale.
pub(crate) const IDENTITY: InputScale = InputScale {
    scale: 1,
    shift: 0,
    dbl_rnd: 0,
    round: RoundModeIfm::DoubleSymmetric,
};

impl<'g> Ctx<'g> {
    /// Pushes an elementwise operation with unit input and output scales (fusing only the
    /// IR operator `name`).
    pub(crate) fn push_unit_elementwise(
        &mut self,
        name: &str,
        mode: ElementwiseMode,
        ifm: Fm,
        ifm2: Option<Fm>,
        ofm: Fm,
        act: (i64, i64),
    ) {
        self.push(
            NpuOp::elementwise(
                mode,
                name.to_string(),
                vec![name.to_string()],
                ifm,
                ofm,
                act,
            )
            .with_ifm2(ifm2)
            .with_round(RoundModeOfm::DoubleSymmetric)
            .with_ifm_scale(IDENTITY)
            .with_ifm2_scale(ifm2.map(|_| IDENTITY))
            .with_acc(if ifm.dtype == DType::Int16 {
                AccFormat::I48
            } else {
                AccFormat::I32
            }),
        );
    }

    /// LOGICAL_AND / OR / XOR and BITWISE_AND / OR / XOR: one elementwise operation; constant
    /// operands are read from read-only buffers.
    pub(crate) fn lower_bitwise(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let mode = match node.op {
            Op::LogicalAnd | Op::BitwiseAnd => ElementwiseMode::And,
            Op::LogicalOr | Op::BitwiseOr => ElementwiseMode::Or,
            Op::LogicalXor | Op::BitwiseXor => ElementwiseMode::Xor,
            _ => unreachable!("lower_bitwise on another op"),
        };
        let out = node.outputs()[0];
        let dtype = self.dtype(out);
        let [x, y] = [node.inputs()[0], node.inputs()[1]];
        let mut a = self.operand_fm(node, x, dtype, 0)?;
        let mut b = self.operand_fm(node, y, dtype, 0)?;
        if a.dtype != dtype || b.dtype != dtype {
            return Err(unsupported(node, "operands of another element type"));
        }
        let mut ofm = self.ew_ofm(node, out, 0)?;
        self.broadcast_layout(node, out, &mut ofm, &[x, y], &mut [&mut a, &mut b])?;
        let act = if dtype == DType::Bool {
            (0, 1)
        } else {
            self.type_range(out)
        };
        let name = node.name.clone();
        self.push_unit_elementwise(&name, mode, a, Some(b), ofm, act);
        Ok(())
    }

    /// LOGICAL_NOT (`not` + OFM zero point 2) and BITWISE_NOT (`not`).
    pub(crate) fn lower_not(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let (x, out) = (node.inputs()[0], node.outputs()[0]);
        let dtype = self.dtype(out);
        let mut a = self.operand_fm(node, x, dtype, 0)?;
        if a.dtype != dtype {
            return Err(unsupported(node, "an operand of another element type"));
        }
        let (zp, act) = if dtype == DType::Bool {
            (2, (0, 1))
        } else {
            (0, self.type_range(out))
        };
        let mut ofm = self.ew_ofm(node, out, zp)?;
        self.broadcast_layout(node, out, &mut ofm, &[x], &mut [&mut a])?;
        let name = node.name.clone();
        self.push_unit_elementwise(&name, ElementwiseMode::Not, a, None, ofm, act);
        Ok(())
    }

    /// CAST between bool, i8 and i16:
    /// * bool -> i8: the same bytes (the output aliases the input);
    /// * bool / i8 / i16 -> i8 / i16: a 1x1 POOL(SUM) with unit scale; the activation clamp
    ///   is the 16-bit range and the write keeps the low bits, which is the IR's wrap;
    /// * i8 / i16 / i32 -> bool: `v != 0` as the complement `cmp_eq(v, 0)` plus the OFM zero
    ///   point 1 (decision L11).
    pub(crate) fn lower_cast(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let (x, out) = (node.inputs()[0], node.outputs()[0]);
        let (from, to) = (self.dtype(x), self.dtype(out));
        let ok = |d: DType| matches!(d, DType::Bool | DType::Int8 | DType::Int16);
        if !(ok(from) || (from == DType::Int32 && to == DType::Bool)) || !ok(to) {
            return Err(unsupported(
                node,
                format!("CAST from {from} to {to} (bool, i8 and i16 only)"),
            ));
        }
        if from == to || (from == DType::Bool && to == DType::Int8) {
            let buf = self.input_buffer(node, x)?;
            self.lowered.tensor_buffer.insert(out, buf);
            return Ok(());
        }
        let name = node.name.clone();
        let mut a = self.operand_fm(node, x, from, 0)?;
        if to == DType::Bool {
            let zero = self.anonymous_constant(vec![0; from.byte_size()]);
            let mut z = Fm { buffer: zero, ..a };
            let mut ofm = self.ew_ofm(node, out, 1)?;
            self.broadcast_layout(node, out, &mut ofm, &[x], &mut [&mut a])?;
            z.shape = (1, 1, 1);
            z.broadcast = (true, true, true);
            z.view = View::default();
            self.push_unit_elementwise(&name, ElementwiseMode::CmpEq, a, Some(z), ofm, (0, 1));
            return Ok(());
        }
        let mut ofm = self.ew_ofm(node, out, 0)?;
        self.broadcast_layout(node, out, &mut ofm, &[x], &mut [&mut a])?;
        self.push(NpuOp::pool(
            PoolingMode::Sum,
            name.clone(),
            vec![name],
            a,
            ofm,
            (-32768, 32767),
        ));
        Ok(())
    }
}
