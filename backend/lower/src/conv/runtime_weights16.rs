//! The runtime weights of a 16x8 convolution (i16 data, i8 weights that are a graph input or
//! a computed tensor) widened for the matrix product of `dynamic_weights` (decision L51).
//!
//! With `weights_ifm2` the IFM2 precision must equal the IFM's (TRM 3.10.2), so i16 data
//! need i16 weights; and a signed b16 IFM2 takes zero point 0 only (3.6.5 read_ifm2), while
//! TOSA allows any i8 `weight_zp` on i8 weights (CONV2D: zero points only for i8 operands).
//! One ELEMENTWISE ADD of the scalar 0 does both: it reads the i8 weights with `weight_zp`
//! as their zero point (`w - weight_zp`, -255..=255) and writes them as i16, exact with unit
//! input and output scales. The product then runs on i16 x i16 into the 48-bit accumulator.

use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, ScalarOperand, View};
use npuc_backend::isa::AccFormat;
use npuc_ir::{DType, OpNode};

impl<'g> Ctx<'g> {
    /// A new buffer holding the `oc x k` i8 weights in `wbuf` minus `weight_zp`, as i16.
    pub(crate) fn widen_weights(
        &mut self,
        node: &OpNode,
        wbuf: usize,
        oc: usize,
        k: usize,
        weight_zp: i64,
    ) -> Result<usize, LowerError> {
        let (Ok(h), Ok(c)) = (u32::try_from(oc), u32::try_from(k)) else {
            return Err(unsupported(node, "a matrix dimension above 65536"));
        };
        let ifm = Fm {
            buffer: wbuf,
            shape: (1, h, c),
            zero_point: weight_zp,
            dtype: DType::Int8,
            broadcast: (false, false, false),
            view: View::default(),
        };
        let wide = self.scratch_fm((1, h, c), DType::Int16);
        let idx = self.lowered.ops.len();
        self.lowered.scalars.insert(
            idx,
            ScalarOperand {
                ifm2: true,
                value: 0,
            },
        );
        self.push(NpuOp::add_zero(
            format!("{} (weights as i16)", node.name),
            ifm,
            wide,
            (i64::from(i16::MIN), i64::from(i16::MAX)),
            AccFormat::I32,
        ));
        Ok(wide.buffer)
    }
}
