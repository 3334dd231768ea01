//! TRANSPOSE_CONV2D as an NPU CONV over the zero-inserted IFM.
//!
//! The IR defines `out[oy][ox][o] = sum x[(oy - pt - ky) / sy][(ox - pl - kx) / sx][i] *
//! w[o][ky][kx][i]` over the taps where the division is exact and in range. With `U` the IFM
//! with `s - 1` zeros inserted after every pixel (`U[y * s] = x[y]`), that is a stride-1
//! correlation of `U` with the spatially flipped kernel and top/left padding `kh - 1 + pt`,
//! `kw - 1 + pl`. The NPU builds `U` itself for `s == 2` (IFM_UPSCALE zeros: odd rows and
//! columns read as zero after the zero point) and needs no upscale for `s == 1`.
//!
//! Other strides split the output into its `sy * sx` phases instead (decision L24): the outputs
//! `oy = py + sy * j` (and likewise in x) are reached by the taps `ky = r + sy * q` with
//! `r = (py - pt) mod sy` only, reading `x[j + c - q]` with `c = floor((py - pt) / sy)`. So a
//! phase is a stride-1 CONV over the IFM with the kernel rows `r, r + sy, ...` in reverse order,
//! padding `Q - 1 - c` before (`Q` rows; a negative padding starts the IFM window later), writing
//! every `sy`-th OFM row from `py` (an OFM window with strides). A phase without taps (kernel
//! smaller than the stride) or without IFM rows writes the bias alone (zero weights).

use crate::common::window::part_kernel;
use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, Geometry, NpuOp, Requant};
use npuc_backend::isa::IfmUpscaleMode;
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_ir::{DType, Op, OpId, OpNode, TransposeConvAttrs};

impl<'g> Ctx<'g> {
    pub(crate) fn lower_tconv(&mut self, o: OpId) -> Result<(), LowerError> {
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
            _ => (0, IfmUpscaleMode::None),
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
        // The raw i48 accumulator (no RESCALE, decision L36): a b64 OFM, unclamped.
        let raw48 = rq.ops.is_empty() && rq.out.output_dtype == DType::Int48;
        let (out_t, act) = if raw48 {
            (node.outputs()[0], NO_CLIP)
        } else {
            self.fuse_clamp(rq.out_node.outputs()[0], &mut names)
        };

        let wdims = self.dims(w).to_vec();
        let vals = crate::conv::conv2d::weight_values(node, wd, a.weight_zp)?;
        let shape = WeightShape {
            ofm_depth: wdims[0],
            kernel_height: wdims[1],
            kernel_width: wdims[2],
            ifm_depth: wdims[3],
        };
        let (kh, kw) = (shape.kernel_height, shape.kernel_width);
        let (ifm, images) = self.image_fm(node, x, true, a.input_zp)?;
        let ofm = if raw48 {
            self.raw48_ofm(node, out_t, true, images)?
        } else {
            self.image_ofm(node, out_t, true, rq.out.output_zp)?.0
        };
        let oc = ofm.shape.2 as usize;
        if shape.ofm_depth != oc {
            return Err(unsupported(node, "weight and output depths differ"));
        }
        let original =
            OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))?;
        let channels = self.channel_scales(&rq, &original, bd, in_dtype, a.input_zp, oc)?;
        let op = NpuOp::conv(node.name.clone(), names, ifm, ofm, act)
            .with_kernel_size((kh as u32, kw as u32))
            .with_requant(Requant::PerChannel(channels))
            .with_round(rescale_round(rq.out))
            .with_acc(rq.acc)
            .with_upscale(upscale);
        let image_bytes = |f: &Fm| {
            let (h, wd, c) = f.shape;
            u64::from(h) * u64::from(wd) * u64::from(c) * u64::from(f.elem_bytes())
        };
        let (ib, ob) = (image_bytes(&op.ifm), image_bytes(&op.ofm));
        for b in 0..images as u64 {
            let mut one = op.clone();
            one.ifm.view.offset += b * ib;
            one.ofm.view.offset += b * ob;
            if s == 0 {
                self.push_tconv_phases(node, one, &original, a)?;
            } else {
                self.push_tconv_upscaled(node, one, &original, a, s)?;
            }
        }
        Ok(())
    }

    /// Strides 1x1 and 2x2: one CONV over the (zero-inserted) IFM.
    fn push_tconv_upscaled(
        &mut self,
        node: &OpNode,
        mut op: NpuOp,
        w: &OhwiWeights,
        a: &TransposeConvAttrs,
        s: u32,
    ) -> Result<(), LowerError> {
        let shape = w.shape();
        let (kh, kw) = (shape.kernel_height, shape.kernel_width);
        let mut flipped = vec![0i16; shape.len()];
        for oc in 0..shape.ofm_depth {
            for ky in 0..kh {
                for kx in 0..kw {
                    for i in 0..shape.ifm_depth {
                        flipped[shape.index(oc, kh - 1 - ky, kw - 1 - kx, i)] =
                            w.get(oc, ky, kx, i);
                    }
                }
            }
        }
        let weights =
            OhwiWeights::new(shape, flipped).map_err(|e| unsupported(node, e.to_string()))?;
        let top = kh as i64 - 1 + a.out_pad[0];
        let left = kw as i64 - 1 + a.out_pad[2];
        if top < 0 || left < 0 {
            return Err(unsupported(
                node,
                "output padding crops more than the kernel",
            ));
        }
        // The window geometry over the zero-inserted IFM of s * height by s * width.
        let mut virt = op.ifm;
        virt.shape = (op.ifm.shape.0 * s, op.ifm.shape.1 * s, op.ifm.shape.2);
        let pad = [top as usize, 0, left as usize, 0];
        let geometry = Geometry::new(
            node,
            &virt,
            &op.ofm,
            (kh as u32, kw as u32),
            [1, 1],
            [1, 1],
            pad,
        )?;
        (op.pad, op.stride, op.dilation) = (geometry.pad, geometry.stride, geometry.dilation);
        op.weights = Some(weights);
        self.push(op);
        Ok(())
    }
}

/// One output phase along an axis: the outputs `first, first + s, ...` (`count` of them), the
/// first IFM element read, the phase kernel (its taps as (original, phase) indices, in
/// reverse order) and the padding before.
struct Phase {
    first: usize,
    count: usize,
    start: usize,
    kernel: usize,
    pad: usize,
    taps: Vec<(usize, usize)>,
}

/// The output phases of one axis of a transposed convolution (IFM length `input`, OFM length
/// `output`, kernel `kernel`, stride `s`, output padding before `out_pad`).
fn phases(input: usize, output: usize, kernel: usize, s: usize, out_pad: i64) -> Vec<Phase> {
    let si = s as i64;
    (0..s.min(output))
        .map(|first| {
            let count = (output - first).div_ceil(s);
            let t = first as i64 - out_pad;
            let (r, c) = (t.rem_euclid(si), t.div_euclid(si));
            let q = if r < kernel as i64 {
                (kernel as i64 - 1 - r) / si + 1
            } else {
                0
            };
            let a0 = c - q + 1;
            if q == 0 || a0 >= input as i64 {
                // No tap reaches these outputs: the bias alone (a zero 1x1 kernel).
                return Phase {
                    first,
                    count,
                    start: 0,
                    kernel: 1,
                    pad: 0,
                    taps: Vec::new(),
                };
            }
            Phase {
                first,
                count,
                start: a0.max(0) as usize,
                kernel: q as usize,
                pad: (-a0).max(0) as usize,
                taps: (0..q)
                    .map(|p| ((r + si * (q - 1 - p)) as usize, p as usize))
                    .collect(),
            }
        })
        .collect()
}

impl<'g> Ctx<'g> {
    /// Any other stride: one stride-1 CONV per output phase (see the module documentation).
    fn push_tconv_phases(
        &mut self,
        node: &OpNode,
        op: NpuOp,
        w: &OhwiWeights,
        a: &TransposeConvAttrs,
    ) -> Result<(), LowerError> {
        let shape = w.shape();
        let (sy, sx) = (a.stride[0], a.stride[1]);
        let (h, wd, ic) = op.ifm.shape;
        let (oh, ow, oc) = op.ofm.shape;
        let ys = phases(
            h as usize,
            oh as usize,
            shape.kernel_height,
            sy,
            a.out_pad[0],
        );
        let xs = phases(
            wd as usize,
            ow as usize,
            shape.kernel_width,
            sx,
            a.out_pad[2],
        );
        let (isy, isx) = op.ifm.strides();
        let (osy, osx) = op.ofm.strides();
        for py in &ys {
            for px in &xs {
                let mut p = op.clone();
                p.ofm.view.offset += py.first as u64 * osy + px.first as u64 * osx;
                p.ofm.view.strides = Some((osy * sy as u64, osx * sx as u64));
                p.ofm.shape = (py.count as u32, px.count as u32, oc);
                p.ifm.view.offset += py.start as u64 * isy + px.start as u64 * isx;
                p.ifm.view.strides = Some((isy, isx));
                p.ifm.shape = (h - py.start as u32, wd - px.start as u32, ic);
                let part = part_kernel(w, (py.kernel, &py.taps), (px.kernel, &px.taps));
                p.weights = Some(part.map_err(|e| unsupported(node, e.to_string()))?);
                p.kernel_size = (py.kernel as u32, px.kernel as u32);
                let geometry = Geometry::new(
                    node,
                    &p.ifm,
                    &p.ofm,
                    p.kernel_size,
                    [1, 1],
                    [1, 1],
                    [py.pad, 0, px.pad, 0],
                )?;
                (p.pad, p.stride, p.dilation) = (geometry.pad, geometry.stride, geometry.dilation);
                self.push(p);
            }
        }
        Ok(())
    }
}
