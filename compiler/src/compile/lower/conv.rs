//! CONV2D, DEPTHWISE_CONV2D and FULLY_CONNECTED with their RESCALE and CLAMP.

use super::*;

impl<'g> Ctx<'g> {
    pub(super) fn lower_conv(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let ins = node.inputs();
        let acc_t = node.outputs()[0];
        let (x, w, b) = (ins[0], ins[1], ins[2]);
        let (input_zp, weight_zp, stride, dilation, pad) = match &node.op {
            Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
                (a.input_zp, a.weight_zp, a.stride, a.dilation, a.pad)
            }
            Op::FullyConnected(a) => (a.input_zp, a.weight_zp, [1, 1], [1, 1], [0; 4]),
            _ => unreachable!("lower_conv on a non-conv op"),
        };
        if self.dtype(x) != DType::Int8 {
            return Err(unsupported(node, "only i8 inputs so far"));
        }
        let (Some(wd), Some(bd)) = (self.const_data(w), self.const_data(b)) else {
            return Err(unsupported(node, "weights and bias must be constants"));
        };
        let rescale_op = self
            .sole_consumer(acc_t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "the accumulator must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale_op);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        self.fused.insert(rescale_op);
        let mut names = vec![node.name.clone(), rnode.name.clone()];
        let (out_t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);

        let wdims = self.dims(w).to_vec();
        let wvals: Vec<i64> = wd.to_i64_vec();
        let to_w = |v: i64| -> Result<i16, CompileError> {
            let d = v - weight_zp;
            if (-255..=255).contains(&d) {
                Ok(d as i16)
            } else {
                Err(unsupported(
                    node,
                    "weight minus zero point outside -255..=255",
                ))
            }
        };
        let (kernel, weights, ifm, ofm_spatial) = match &node.op {
            Op::Conv2d(_) => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: wdims[1],
                    kernel_width: wdims[2],
                    ifm_depth: wdims[3],
                };
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi =
                    OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))?;
                (Kernel::Conv, ohwi, self.fm(node, x, true, input_zp)?, true)
            }
            Op::DepthwiseConv2d(_) => {
                if wdims[3] != 1 {
                    return Err(unsupported(node, "depth multiplier other than 1"));
                }
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi = OhwiWeights::from_depthwise_hwc(wdims[0], wdims[1], wdims[2], &vals)
                    .map_err(|e| unsupported(node, e.to_string()))?;
                (
                    Kernel::Depthwise,
                    ohwi,
                    self.fm(node, x, true, input_zp)?,
                    true,
                )
            }
            _ => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: 1,
                    kernel_width: 1,
                    ifm_depth: wdims[1],
                };
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi =
                    OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))?;
                (
                    Kernel::Conv,
                    ohwi,
                    self.fm(node, x, false, input_zp)?,
                    false,
                )
            }
        };
        let ofm = self.ofm(node, out_t, ofm_spatial, r.output_zp)?;
        let oc = ofm.shape.2 as usize;
        let biases = bd.to_i64_vec();
        let mut channels = Vec::with_capacity(oc);
        for c in 0..oc {
            let bias = if biases.len() == 1 {
                biases[0]
            } else {
                biases[c]
            };
            let k = if r.multiplier.len() == 1 { 0 } else { c };
            channels.push(ChannelScale {
                bias,
                scale: r.multiplier[k] as u32,
                shift: r.shift[k] as u8,
            });
        }
        let ws = weights.shape();
        let (kh, kw) = (ws.kernel_height as u32, ws.kernel_width as u32);
        let geometry = Geometry::new(node, &ifm, &ofm, (kh, kw), stride, dilation, pad)?;
        self.push(NpuOp {
            name: self.node(o).name.clone(),
            fused: names,
            kernel,
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (kh, kw),
            stride: geometry.stride,
            dilation: geometry.dilation,
            pad: geometry.pad,
            weights: Some(weights),
            requant: Requant::PerChannel(channels),
            round: rescale_round(r),
            ifm_scale: None,
            ifm2_scale: None,
            act,
            acc: AccFormat::I32,
        });
        Ok(())
    }
}
