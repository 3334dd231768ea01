//! TRANSPOSE_CONV2D as an NPU CONV over the zero-inserted IFM.
//!
//! The IR defines `out[oy][ox][o] = sum x[(oy - pt - ky) / sy][(ox - pl - kx) / sx][i] *
//! w[o][ky][kx][i]` over the taps where the division is exact and in range. With `U` the IFM
//! with `s - 1` zeros inserted after every pixel (`U[y * s] = x[y]`), that is a stride-1
//! correlation of `U` with the spatially flipped kernel and top/left padding `kh - 1 + pt`,
//! `kw - 1 + pl`. The NPU builds `U` itself for `s == 2` (IFM_UPSCALE zeros: odd rows and
//! columns read as zero after the zero point) and needs no upscale for `s == 1`; other strides
//! are rejected.

use super::*;

impl<'g> Ctx<'g> {
    pub(super) fn lower_tconv(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let Op::TransposeConv2d(a) = &node.op else {
            unreachable!("lower_tconv on another op")
        };
        let ins = node.inputs();
        let (x, w, b) = (ins[0], ins[1], ins[2]);
        let in_dtype = self.dtype(x);
        if !matches!(in_dtype, DType::Int8 | DType::Int16) {
            return Err(unsupported(node, format!("{in_dtype} inputs")));
        }
        let (s, upscale) = match a.stride {
            [1, 1] => (1, IfmUpscaleMode::None),
            [2, 2] => (2, IfmUpscaleMode::Zeros),
            [sy, sx] => {
                return Err(unsupported(
                    node,
                    format!("stride {sy}x{sx} (the NPU inserts zeros for stride 2x2 only)"),
                ))
            }
        };
        let (Some(wd), Some(bd)) = (self.folded_const(w), self.folded_const(b)) else {
            return Err(unsupported(node, "weights and bias must be constants"));
        };
        let rq = self.conv_rescale(node, node.outputs()[0])?;
        for &f in &rq.ops {
            self.fused.insert(f);
        }
        let mut names = vec![node.name.clone()];
        names.extend(rq.ops.iter().map(|&f| self.node(f).name.clone()));
        let (out_t, act) = self.fuse_clamp(rq.out_node.outputs()[0], &mut names);

        let wdims = self.dims(w).to_vec();
        let vals = conv::weight_values(node, wd, a.weight_zp)?;
        let shape = WeightShape {
            ofm_depth: wdims[0],
            kernel_height: wdims[1],
            kernel_width: wdims[2],
            ifm_depth: wdims[3],
        };
        let (kh, kw) = (shape.kernel_height, shape.kernel_width);
        let mut flipped = vec![0i16; vals.len()];
        for oc in 0..shape.ofm_depth {
            for ky in 0..kh {
                for kx in 0..kw {
                    for i in 0..shape.ifm_depth {
                        flipped[shape.index(oc, kh - 1 - ky, kw - 1 - kx, i)] =
                            vals[shape.index(oc, ky, kx, i)];
                    }
                }
            }
        }
        let weights =
            OhwiWeights::new(shape, flipped).map_err(|e| unsupported(node, e.to_string()))?;
        let ifm = self.fm(node, x, true, a.input_zp)?;
        let ofm = self.ofm(node, out_t, true, rq.out.output_zp)?;
        let oc = ofm.shape.2 as usize;
        if shape.ofm_depth != oc {
            return Err(unsupported(node, "weight and output depths differ"));
        }
        let channels = self.channel_scales(&rq, &weights, bd, in_dtype, a.input_zp, oc)?;
        let top = kh as i64 - 1 + a.out_pad[0];
        let left = kw as i64 - 1 + a.out_pad[2];
        if top < 0 || left < 0 {
            return Err(unsupported(
                node,
                "output padding crops more than the kernel",
            ));
        }
        // The window geometry over the zero-inserted IFM of s * height by s * width.
        let mut virt = ifm;
        virt.shape = (ifm.shape.0 * s, ifm.shape.1 * s, ifm.shape.2);
        let pad = [top as usize, 0, left as usize, 0];
        let geometry = Geometry::new(
            node,
            &virt,
            &ofm,
            (kh as u32, kw as u32),
            [1, 1],
            [1, 1],
            pad,
        )?;
        self.push(NpuOp {
            name: node.name.clone(),
            fused: names,
            kernel: Kernel::Conv,
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (kh as u32, kw as u32),
            stride: (1, 1),
            dilation: (1, 1),
            pad: geometry.pad,
            weights: Some(weights),
            requant: Requant::PerChannel(channels),
            round: rescale_round(rq.out),
            ifm_scale: None,
            ifm2_scale: None,
            act,
            acc: rq.acc,
            upscale,
        });
        Ok(())
    }
}
