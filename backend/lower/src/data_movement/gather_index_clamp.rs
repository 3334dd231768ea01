//! The indices of a DMA gather clamped into the table (decision L31): TOSA §2.9.1 GATHER
//! REQUIREs `0 <= k < K` and leaves any other index unpredictable; the DMA's index mode skips
//! the transfer of an index outside `0..=IDX_MAX`, which would leave output bytes unwritten
//! (whatever the buffer held). Clamping makes every output row a row of the table, and the
//! result equals TOSA's wherever TOSA defines it.

use crate::elementwise::arith::{act_representable, NO_CLIP};
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, InputScale, NpuOp, ScalarOperand, View};
use npuc_backend::isa::{ElementwiseMode, RoundModeIfm};
use npuc_ir::{DType, OpNode};

impl<'g> Ctx<'g> {
    /// `clamp(indices, 0, max)` of the `count` i32 indices in buffer `idx`, into a new
    /// buffer: one 1x1 max pool with the clamp as activation when `max` fits 16 bits, else
    /// an ELEMENTWISE MAX with the scalar 0 and MIN with the scalar `max`.
    pub(crate) fn clamp_indices(
        &mut self,
        node: &OpNode,
        idx: usize,
        count: u32,
        max: i32,
    ) -> Result<usize, LowerError> {
        if count > 65536 {
            return Err(unsupported(
                node,
                "more than 65536 indices not provably inside the table",
            ));
        }
        let fm = |buffer: usize| Fm {
            buffer,
            shape: (1, 1, count),
            zero_point: 0,
            dtype: DType::Int32,
            broadcast: (false, false, false),
            view: View::default(),
        };
        let name = format!("{}/clamp_indices", node.name);
        let pool = |ifm: Fm, ofm: Fm, act| NpuOp::copy(name.clone(), Vec::new(), ifm, ofm, act);
        let bytes = u64::from(count) * 4;
        if act_representable((0, i64::from(max))) {
            let out = self.scratch(bytes);
            self.push(pool(fm(idx), fm(out), (0, i64::from(max))));
            return Ok(out);
        }
        let mut src = idx;
        for (mode, value) in [(ElementwiseMode::Max, 0), (ElementwiseMode::Min, max)] {
            let out = self.scratch(bytes);
            let i = self.lowered.ops.len();
            self.lowered
                .scalars
                .insert(i, ScalarOperand { ifm2: true, value });
            let unit = InputScale {
                scale: 1,
                shift: 0,
                dbl_rnd: 0,
                round: RoundModeIfm::DoubleSymmetric,
            };
            let scalar = Fm {
                shape: (1, 1, 1),
                broadcast: (true, true, true),
                ..fm(src)
            };
            self.push(
                NpuOp::elementwise(mode, name.clone(), Vec::new(), fm(src), fm(out), NO_CLIP)
                    .with_ifm2(scalar)
                    .with_ifm_scale(unit)
                    .with_ifm2_scale(unit),
            );
            src = out;
        }
        Ok(src)
    }
}
