//! A standalone RESCALE to i8/i16 (TFLite's RELU/RELU6/RELU_N1_TO_1 requantization: an exact
//! widening RESCALE with the input zero point, then RESCALE(M, S) to the output type, then a
//! CLAMP) as one pass-through 1x1 POOL(SUM): IFM zero point = the input zero point, OFM_SCALE
//! (M, S) with the RESCALE's rounding, OFM zero point, the CLAMP as activation.

use super::*;

impl<'g> Ctx<'g> {
    pub(super) fn lower_rescale(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            unreachable!("lower_rescale on another op")
        };
        let mut names = Vec::new();
        let src = node.inputs()[0];
        let (x, izp, r) = match self.widen(src) {
            Some((p, x, zp)) if r.input_zp == 0 => {
                self.fused.insert(p);
                names.push(self.node(p).name.clone());
                let mut r = r.clone();
                r.input_zp = 0;
                (x, zp, r)
            }
            _ if matches!(self.dtype(src), DType::Int8 | DType::Int16) => {
                let mut r2 = r.clone();
                r2.input_zp = 0;
                (src, r.input_zp, r2)
            }
            _ => {
                return Err(unsupported(
                    node,
                    "a standalone RESCALE needs an i8/i16 input or an exact widening of one",
                ))
            }
        };
        names.push(node.name.clone());
        self.check_rescale_out(node, &r)?;
        if r.multiplier.len() != 1 {
            return Err(unsupported(node, "per-channel standalone RESCALE"));
        }
        if self.dtype(x) == DType::Int16 && izp != 0 {
            return Err(unsupported(node, "i16 input with a nonzero zero point"));
        }
        let (out_t, act) = self.fuse_clamp(node.outputs()[0], &mut names);
        let ifm = self.fm(node, x, false, izp)?;
        let ofm = self.ofm(node, out_t, false, r.output_zp)?;
        if ifm.shape != ofm.shape {
            return Err(CompileError::Graph(format!(
                "{}: RESCALE changes the shape",
                node.name
            )));
        }
        self.push(NpuOp {
            name: node.name.clone(),
            fused: names,
            kernel: Kernel::Pool(PoolingMode::Sum),
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (1, 1),
            stride: (1, 1),
            dilation: (1, 1),
            pad: [0; 4],
            weights: None,
            requant: Requant::Global {
                scale: r.multiplier[0] as u32,
                shift: r.shift[0] as u8,
            },
            round: rescale_round(&r),
            ifm_scale: None,
            ifm2_scale: None,
            act,
            acc: AccFormat::I32,
            upscale: IfmUpscaleMode::None,
        });
        Ok(())
    }
}
