//! CONV2D of i8 data whose weights are not a constant (a graph input or a computed tensor):
//! the weight decoder takes constants only, so the convolution runs as a matrix product with
//! the weights from IFM2 (decision L34):
//! 1. im2col: every output position's receptive field (`KH x KW x IC` bytes, in the weights'
//!    OHWI order) copied into one row of a scratch matrix `[OH * OW, KH * KW * IC]`;
//! 2. NPU_OP_CONV with `weights_ifm2` (as MATMUL): the matrix as IFM `1 x rows x K` (input
//!    zero point), the weights `[OC, KH, KW, IC]` read in place as IFM2 `1 x OC x K` (weight
//!    zero point), the raw i32 accumulators written as b32 (scale 1, shift 0, no clamp); a
//!    contraction `K` above 65536 in parts summed by i32 adds (`contraction`, decision L47);
//! 3. a 1x1 DEPTHWISE with zero weights whose initial accumulator is that b32 map
//!    (`acc_input = ifm2`, as decision L27's last step), per-channel records holding the
//!    bias and the output RESCALE's multipliers and shifts, its rounding, clamp and zero point.
//!
//! Batch 1: `conv_dynamic_prep` pads the input and splits batches before, except a padding
//! too large to materialise, which the im2col copy applies (`padded_im2col`, decision L45).

use crate::common::contraction::{Finish, MAX_CONTRACTION};
use crate::conv::padded_im2col::ConvAxis;
use crate::data_movement::copy::CopyAxis;
use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::AccFormat;
use npuc_codecs::ordering::OhwiWeights;
use npuc_ir::{DType, Op, OpId};

impl<'g> Ctx<'g> {
    /// CONV2D `o` whose weights are not a constant (see the module documentation).
    pub(crate) fn lower_conv_dynamic(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Conv2d(a) = &node.op else {
            return Err(unsupported(node, "weights and bias must be constants"));
        };
        let ins = node.inputs();
        let (x, w, b) = (ins[0], ins[1], ins[2]);
        // i16 data with i8 weights (16x8): the weights are widened to i16 first, as IFM2
        // must have the IFM's precision (decision L51, `runtime_weights16`).
        let wide = match (self.dtype(x), self.dtype(w)) {
            (DType::Int8, DType::Int8) => false,
            (DType::Int16, DType::Int8) => true,
            _ => {
                return Err(unsupported(
                    node,
                    "non-constant weights on i8 x i8 and i16 x i8 convolutions only",
                ))
            }
        };
        let Some(bd) = self.folded_const(b) else {
            return Err(unsupported(node, "a non-constant bias"));
        };
        let zp_ok = |z: i64| (-128..=127).contains(&z);
        if !zp_ok(a.input_zp) || !zp_ok(a.weight_zp) || (wide && a.input_zp != 0) {
            return Err(unsupported(node, "zero points out of range"));
        }
        let (xd, wd, od) = (
            self.dims(x).to_vec(),
            self.dims(w).to_vec(),
            self.dims(node.outputs()[0]).to_vec(),
        );
        let ([1, ih, iw, ic], [oc, kh, kw, wic], [1, oh, ow, occ]) = (&xd[..], &wd[..], &od[..])
        else {
            return Err(unsupported(node, "batch sizes other than 1"));
        };
        let (ih, iw, ic, oc, kh, kw, oh, ow) = (*ih, *iw, *ic, *oc, *kh, *kw, *oh, *ow);
        if *wic != ic || *occ != oc {
            return Err(LowerError::Graph(format!("{}: CONV2D shapes", node.name)));
        }
        let [sy, sx] = a.stride;
        let [dy, dx] = a.dilation;
        let rows = oh * ow;
        let k = kh * kw * ic;
        if rows == 0 || k == 0 || oc == 0 {
            return Err(unsupported(node, "an empty convolution"));
        }
        let (ph, pw) = (ih + a.pad[0] + a.pad[1], iw + a.pad[2] + a.pad[3]);
        let fits = (oh - 1) * sy + (kh - 1) * dy < ph && (ow - 1) * sx + (kw - 1) * dx < pw;
        // More than 65536 rows run as several matrix products of at most 65536 rows each; an
        // OFM side above 65536 is split after lowering (`split`).
        // A contraction `k` above 65536 runs in parts (decision L47).
        if !fits || oc > 65536 {
            return Err(unsupported(node, "a matrix dimension above 65536"));
        }
        let rq = self.conv_rescale(node, node.outputs()[0])?;
        // One 32-bit-multiplier RESCALE, or none (the raw accumulator, decision L36); for
        // 16x8, one 16-bit-multiplier RESCALE of the 48-bit accumulator, or none.
        let acc_format = if wide { AccFormat::I48 } else { AccFormat::I32 };
        let scales_fit = !wide || rq.out.multiplier.iter().all(|&m| m <= 0x7fff);
        if rq.acc != acc_format || rq.ops.len() > 1 || !scales_fit {
            return Err(unsupported(
                rq.out_node,
                if wide {
                    "a 16-bit multiplier RESCALE of the 48-bit accumulator"
                } else {
                    "a 32-bit multiplier RESCALE of the accumulator"
                },
            ));
        }
        let r = rq.out;
        for &f in &rq.ops {
            self.fused.insert(f);
        }
        let mut names = vec![node.name.clone()];
        names.extend(rq.ops.iter().map(|&f| self.node(f).name.clone()));
        let raw48 = wide && rq.ops.is_empty();
        let (out_t, act) = if raw48 {
            (node.outputs()[0], NO_CLIP)
        } else {
            self.fuse_clamp(rq.out_node.outputs()[0], &mut names)
        };
        // Bytes per element of the data (and of the widened weights).
        let e = if wide { 2 } else { 1 };
        let in_dtype = if wide { DType::Int16 } else { DType::Int8 };
        let records = self.channel_records(&rq, bd, oc);
        let (xbuf, wbuf) = (self.input_buffer(node, x)?, self.input_buffer(node, w)?);
        // The weights minus their zero point as i16 (IFM2 zero point 0).
        let (wbuf, weight_zp) = if wide {
            (self.widen_weights(node, wbuf, oc, k, a.weight_zp)?, 0)
        } else {
            (wbuf, a.weight_zp)
        };

        // 1. im2col.
        let col = self.scratch((rows * k * e) as u64);
        if a.pad.iter().any(|&p| p != 0) {
            let axis = |input, output, kernel, stride, dilation, pad| ConvAxis {
                input,
                output,
                kernel,
                stride,
                dilation,
                pad,
            };
            let axes = (
                axis(ih, oh, kh, sy, dy, a.pad[0]),
                axis(iw, ow, kw, sx, dx, a.pad[2]),
            );
            // (i16: each element as `e` bytes, the zero point 0 as zero bytes.)
            self.padded_im2col(node, xbuf, col, axes, ic * e, a.input_zp)?;
        } else {
            // Byte steps: an element is `e` bytes.
            let (icb, kb) = (ic * e, k * e);
            let row = (iw * icb) as i64;
            let axes = [
                CopyAxis {
                    n: oh,
                    src: sy as i64 * row,
                    dst: (ow * kb) as i64,
                },
                CopyAxis {
                    n: ow,
                    src: (sx * icb) as i64,
                    dst: kb as i64,
                },
                CopyAxis {
                    n: kh,
                    src: dy as i64 * row,
                    dst: (kw * icb) as i64,
                },
                CopyAxis {
                    n: kw,
                    src: (dx * icb) as i64,
                    dst: icb as i64,
                },
                CopyAxis {
                    n: icb,
                    src: 1,
                    dst: 1,
                },
            ];
            self.strided_copy(node, (xbuf, 0), (col, 0), &axes)?;
        }

        // 2. The raw accumulators.
        let fm = |buffer: usize, shape: (u32, u32, u32), dtype: DType, zp: i64| Fm {
            buffer,
            shape,
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        };
        // Raw accumulators: b32 words (i32), b64 words (i48).
        let (acc_dtype, ae) = if wide {
            (DType::Int64, 8)
        } else {
            (DType::Int32, 4)
        };
        let acc = self.scratch((rows * oc * ae) as u64);
        for first in (0..rows).step_by(65536) {
            let n = (rows - first).min(65536) as u32;
            let at = |f: Fm, bytes: usize| Fm {
                view: View {
                    offset: (first * bytes) as u64,
                    ..View::default()
                },
                ..f
            };
            if wide {
                // The i48 accumulator of a 16x8 product: no ELEMENTWISE adds partial
                // contractions on 48 bits (L47), so the contraction is one operation.
                if k > MAX_CONTRACTION {
                    return Err(unsupported(node, "a 16-bit contraction above 65536"));
                }
                self.push(
                    NpuOp::conv(
                        format!("{} (accumulator)", node.name),
                        Vec::new(),
                        at(fm(col, (1, n, k as u32), in_dtype, a.input_zp), k * e),
                        at(fm(acc, (1, n, oc as u32), acc_dtype, 0), oc * ae),
                        NO_CLIP,
                    )
                    .with_ifm2(fm(wbuf, (1, oc as u32, k as u32), in_dtype, weight_zp))
                    .with_acc(acc_format),
                );
            } else {
                let name = format!("{} (accumulator)", node.name);
                self.contraction_in_parts(
                    (&name, &[]),
                    at(fm(col, (1, n, k as u32), DType::Int8, a.input_zp), k),
                    fm(wbuf, (1, oc as u32, k as u32), DType::Int8, a.weight_zp),
                    at(fm(acc, (1, n, oc as u32), DType::Int32, 0), oc * 4),
                    &Finish::raw(),
                    MAX_CONTRACTION,
                );
            }
        }

        // 3. Bias and output rescale on the accumulators.
        let shape = (oh as u32, ow as u32, oc as u32);
        let v = fm(acc, shape, acc_dtype, 0);
        let ofm = if raw48 {
            self.i48_ofm(out_t, shape)
        } else {
            self.ofm(node, out_t, true, r.output_zp)?
        };
        let zeros = vec![0i16; oc];
        let weights = OhwiWeights::from_depthwise_hwc(1, 1, oc, &zeros)
            .map_err(|e| unsupported(node, e.to_string()))?;
        self.push(
            NpuOp::depthwise(
                node.name.clone(),
                names,
                Fm {
                    dtype: in_dtype,
                    ..v
                },
                ofm,
                act,
            )
            .with_ifm2(v)
            .with_acc(acc_format)
            .with_weights(weights)
            .with_requant(Requant::PerChannel(records))
            .with_round(rescale_round(r)),
        );
        Ok(())
    }
}
