//! MAX_POOL2D, AVG_POOL2D and standalone CLAMP as NPU pooling operations; an unpadded
//! AVG_POOL2D above 8x8 as a POOL in `sum` mode whose OFM_SCALE divides by the window size
//! (`avg_as_depthwise`, decision L52).

use crate::common::window::Window;
use crate::LowerError;
use crate::{Ctx, NpuOp, Requant};
use npuc_backend::isa::PoolingMode;
use npuc_ir::{Op, OpId};

impl<'g> Ctx<'g> {
    pub(crate) fn lower_pool(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let x = node.inputs()[0];
        let mut names = vec![node.name.clone()];
        let unit = (1, 0);
        let (mode, kernel, stride, pad, izp, ozp, (scale, shift)) = match &node.op {
            Op::MaxPool2d(a) => (PoolingMode::Max, a.kernel, a.stride, a.pad, 0, 0, unit),
            Op::AvgPool2d(a) if a.kernel[0] > 8 || a.kernel[1] > 8 => {
                if a.pad.iter().any(|&p| p != 0) {
                    return self.lower_avgpool_padded(o);
                }
                // Beyond the built-in reciprocals: the window sums, divided by OFM_SCALE
                // (decision L52).
                let division = self.avgpool_division(node, a)?;
                let (k, s) = (a.kernel, a.stride);
                (
                    PoolingMode::Sum,
                    k,
                    s,
                    a.pad,
                    a.input_zp,
                    a.output_zp,
                    division,
                )
            }
            Op::AvgPool2d(a) => (
                PoolingMode::Average,
                a.kernel,
                a.stride,
                a.pad,
                a.input_zp,
                a.output_zp,
                unit,
            ),
            // CLAMP on its own: a 1x1 max pool with the clamp as activation.
            Op::Clamp(_) => (PoolingMode::Max, [1, 1], [1, 1], [0; 4], 0, 0, unit),
            _ => unreachable!("lower_pool on a non-pool op"),
        };
        let (out_t, mut act) = self.fuse_clamp(node.outputs()[0], &mut names);
        if let Op::Clamp(a) = &node.op {
            let range = self.type_range(out_t);
            act = (a.min.max(range.0), a.max.min(range.1));
        }
        let spatial = !matches!(node.op, Op::Clamp(_));
        let (ifm, ofm, images) = if spatial {
            let (ifm, images) = self.image_fm(node, x, true, izp)?;
            let (ofm, _) = self.image_ofm(node, out_t, true, ozp)?;
            (ifm, ofm, images)
        } else {
            let ifm = self.fm_flat(node, x, izp)?;
            (ifm, self.ofm_flat(node, out_t, ozp)?, 1)
        };
        let stride = crate::pool::avg_as_depthwise::unit_stride_if_single(stride, &ofm);
        let op = NpuOp::pool(mode, node.name.clone(), names, ifm, ofm, act)
            .with_kernel_size((kernel[0] as u32, kernel[1] as u32))
            .with_requant(Requant::Global { scale, shift });
        let window = Window {
            kernel: (kernel[0], kernel[1]),
            stride,
            dilation: [1, 1],
            pad,
        };
        if mode == PoolingMode::Average && stride.iter().any(|&s| s > 3) {
            return self.push_avgpool_strided(node, op, window, images);
        }
        self.push_window(node, op, window, images)
    }
}
