//! SELECT(cond, a, b) of i8 / i16 / i32 tensors as three bitwise NPU elementwise operations.
//!
//! The condition is a bool (bytes 0 / 1) read with the zero point 1, so the operations see
//! `n = cond - 1`: 0 where the condition holds, -1 (all bits set) where it does not. Then
//! * `t1 = b & n` (`and`): `b` where the condition is false, 0 elsewhere;
//! * `t2 = a & !n` (`and_not`): `a` where it is true, 0 elsewhere;
//! * `out = t1 | t2` (`or`).
//!
//! The raw values pass unchanged (SELECT does not requantize; the operands and the result
//! share their quantization). The hardware wants both inputs of an operation at the same
//! precision, so for i16 / i32 operands the mask is first written as `n` of that type by a
//! 1x1 POOL(SUM) (zero point 1 on the condition). Any of the three inputs may broadcast, and constant
//! operands are read from read-only buffers (decision L13).

use crate::LowerError;
use crate::{unsupported, Buffer, Ctx, Fm, NpuOp, View};
use npuc_backend::isa::{ElementwiseMode, PoolingMode};
use npuc_ir::{DType, OpId};

impl<'g> Ctx<'g> {
    /// A scratch arena buffer of `size` bytes written by the next operation.
    pub(crate) fn scratch(&mut self, size: u64) -> usize {
        let idx = self.lowered.buffers.len();
        self.lowered.buffers.push(Buffer {
            size,
            producer: Some(self.lowered.ops.len()),
            last_use: None,
            is_input: false,
            is_output: false,
        });
        idx
    }

    /// A scratch feature map of `shape` and `dtype` written by the next operation.
    pub(crate) fn scratch_fm(&mut self, shape: (u32, u32, u32), dtype: DType) -> Fm {
        let (h, w, c) = shape;
        let size = u64::from(h) * u64::from(w) * u64::from(c) * dtype.byte_size() as u64;
        Fm {
            buffer: self.scratch(size),
            shape,
            zero_point: 0,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        }
    }

    pub(crate) fn lower_select(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let [c, x, y] = [node.inputs()[0], node.inputs()[1], node.inputs()[2]];
        let out = node.outputs()[0];
        let dtype = self.dtype(out);
        if !matches!(
            dtype,
            DType::Bool | DType::Int8 | DType::Int16 | DType::Int32
        ) {
            return Err(unsupported(
                node,
                format!("SELECT of {dtype} (bool, i8, i16 and i32 only)"),
            ));
        }
        if self.dtype(c) != DType::Bool {
            return Err(unsupported(node, "a condition that is not bool"));
        }
        let mut cond = self.operand_fm(node, c, DType::Bool, 1)?;
        let mut a = self.operand_fm(node, x, dtype, 0)?;
        let mut b = self.operand_fm(node, y, dtype, 0)?;
        if a.dtype != dtype || b.dtype != dtype {
            return Err(unsupported(node, "operands of another element type"));
        }
        let mut ofm = self.ew_ofm(node, out, 0)?;
        // The output buffer is written by the last of the operations.
        let out_buf = ofm.buffer;
        self.broadcast_layout(
            node,
            out,
            &mut ofm,
            &[c, x, y],
            &mut [&mut cond, &mut a, &mut b],
        )?;
        let name = node.name.clone();
        let act = self.type_range(out);
        if !matches!(dtype, DType::Int8 | DType::Bool) {
            // n = cond - 1 as i16 / i32 (the condition's own broadcast shape).
            let mut n = self.scratch_fm(cond.shape, dtype);
            n.broadcast = cond.broadcast;
            let ifm = Fm {
                broadcast: (false, false, false),
                ..cond
            };
            let mask = Fm {
                broadcast: (false, false, false),
                ..n
            };
            self.push(NpuOp::pool(
                PoolingMode::Sum,
                format!("{name}/mask"),
                vec![format!("{name}/mask")],
                ifm,
                mask,
                (-1, 0),
            ));
            cond = n;
        }
        let t1 = Fm {
            broadcast: (false, false, false),
            ..self.scratch_fm(ofm.shape, dtype)
        };
        // The intermediate operations carry names of no IR operator (nothing to compare them
        // with when a divergence is localised).
        let part = |s: &str| format!("{name}/{s}");
        self.push_unit_elementwise(&part("and"), ElementwiseMode::And, b, Some(cond), t1, act);
        let t2 = self.scratch_fm(ofm.shape, dtype);
        self.push_unit_elementwise(
            &part("and_not"),
            ElementwiseMode::AndNot,
            a,
            Some(cond),
            t2,
            act,
        );
        // The output buffer was created before the scratch buffers; it is written now.
        self.lowered.buffers[out_buf].producer = Some(self.lowered.ops.len());
        self.push_unit_elementwise(&name, ElementwiseMode::Or, t1, Some(t2), ofm, act);
        Ok(())
    }
}
