//! MATMUL (batched, with broadcast batch dimensions) as NPU CONVs with weights from IFM2.
//!
//! NPU_OP_CONV with `weights_ifm2` computes `OFM = A x B^T` with IFM2 read at
//! `(0, x = output channel, c = input channel)` (docs/decisions.md, simulator #25). For every
//! output batch, B `[C, W]` is first copied transposed into a scratch buffer `[W, C]` (one copy
//! with the OFM transpose when `C` and `W` are at most 128, else strided byte copies; skipped
//! when `C == 1` or `W == 1`, where the bytes are already in place), then
//! one CONV reads A `[H, C]` as an IFM of `1 x H x C` and the scratch as IFM2 of `1 x W x C`
//! and writes `1 x H x W` of the output. The RESCALE after the MATMUL (possibly behind
//! RESHAPEs) is the OFM scale: per-tensor only, no bias; 16-bit inputs use the 48-bit
//! accumulator with the 16-bit multiplier, like convolutions (decision L1); a 16-bit
//! accumulator not read by exactly one per-tensor RESCALE is written raw as 8-byte words
//! for its readers (decision L33). A constant B is
//! handled in `matmul_const`.

use crate::common::contraction::{Finish, MAX_CONTRACTION};
use crate::data_movement::copy::CopyAxis;
use crate::elementwise::arith::NO_CLIP;
use crate::matmul::const_weights::{matrix_index, ConstMatMul};
use crate::LowerError;
use crate::{rescale_round, unsupported, Buffer, Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::{AccFormat, ActivationTranspose, RoundModeOfm};
use npuc_ir::{DType, Op, OpId};

impl<'g> Ctx<'g> {
    pub(crate) fn lower_matmul(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::MatMul(a) = &node.op else {
            unreachable!("lower_matmul on another op")
        };
        let (ta, tb) = (node.inputs()[0], node.inputs()[1]);
        let dtype = self.dtype(ta);
        if !matches!(dtype, DType::Int8 | DType::Int16) || self.dtype(tb) != dtype {
            return Err(unsupported(node, "only i8 x i8 and i16 x i16 matrices"));
        }
        // The accumulator, through RESHAPEs, into exactly one RESCALE.
        let mut names = vec![node.name.clone()];
        let mut acc_t = node.outputs()[0];
        let mut reshapes = Vec::new();
        while let Some(c) = self.sole_consumer(acc_t) {
            let cn = self.node(c);
            if !matches!(cn.op, Op::Reshape(_)) {
                break;
            }
            reshapes.push(c);
            names.push(cn.name.clone());
            acc_t = cn.outputs()[0];
        }
        // A 16-bit MATMUL whose i48 accumulator is not the input of exactly one per-tensor
        // RESCALE writes it raw as b64 words (decision L33); its RESCALEs read it back.
        let fused_rq = match self.conv_rescale(node, acc_t) {
            Ok(rq)
                if dtype == DType::Int16
                    && (rq.out.multiplier.len() != 1
                        || (rq.ops.is_empty() && rq.out.output_dtype == DType::Int48)) =>
            {
                None
            }
            Err(_) if dtype == DType::Int16 && self.dtype(node.outputs()[0]) == DType::Int48 => {
                None
            }
            rq => Some(rq?),
        };
        let (out_t, out_dtype, out_zp, act, requant, round, acc) = match &fused_rq {
            Some(rq) => {
                let r = rq.out;
                if r.multiplier.len() != 1 {
                    return Err(unsupported(
                        rq.out_node,
                        "per-channel rescale after a MATMUL",
                    ));
                }
                if rq.ops.len() > 1 {
                    return Err(unsupported(
                        rq.out_node,
                        "a widening RESCALE after a MATMUL",
                    ));
                }
                if rq.acc == AccFormat::I32 && dtype != DType::Int8 {
                    return Err(unsupported(
                        rq.out_node,
                        "a 32-bit multiplier on a 16-bit MATMUL accumulator",
                    ));
                }
                for &f in reshapes.iter().chain(&rq.ops) {
                    self.fused.insert(f);
                }
                names.extend(rq.ops.iter().map(|&f| self.node(f).name.clone()));
                let (out_t, act) = self.fuse_clamp(rq.out_node.outputs()[0], &mut names);
                let requant = Requant::Global {
                    scale: r.multiplier[0] as u32,
                    shift: r.shift[0] as u8,
                };
                // No RESCALE: the raw i32 accumulator is the result (decision L36).
                let out_dtype = if rq.ops.is_empty() {
                    r.output_dtype
                } else {
                    dtype
                };
                (
                    out_t,
                    out_dtype,
                    r.output_zp,
                    act,
                    requant,
                    rescale_round(r),
                    rq.acc,
                )
            }
            None => {
                names.truncate(1);
                let requant = Requant::Global { scale: 1, shift: 0 };
                let t = node.outputs()[0];
                (
                    t,
                    DType::Int64,
                    0,
                    NO_CLIP,
                    requant,
                    RoundModeOfm::Natural,
                    AccFormat::I48,
                )
            }
        };

        let (da, db, dm) = (
            self.dims(ta).to_vec(),
            self.dims(tb).to_vec(),
            self.dims(node.outputs()[0]).to_vec(),
        );
        let rank = dm.len();
        if da.len() != rank || db.len() != rank || rank < 2 {
            return Err(unsupported(node, "operands of different ranks"));
        }
        let (h, c, w) = (da[rank - 2], da[rank - 1], db[rank - 1]);
        // A contraction above 65536 runs in parts on the 32-bit accumulator (decision L47).
        if [h, w].iter().any(|&v| v > 65536) || (c > MAX_CONTRACTION && acc != AccFormat::I32) {
            return Err(unsupported(node, "a matrix dimension above 65536"));
        }
        let e = dtype.byte_size() as i64;
        let oe = match &fused_rq {
            Some(rq) => rq.out.output_dtype.byte_size() as i64,
            None => 8,
        };
        let abuf = self.input_buffer(node, ta)?;
        let zp_ok = |z: i64| (-128..=127).contains(&z) && (dtype == DType::Int8 || z == 0);
        if !zp_ok(a.a_zp) || !zp_ok(a.b_zp) || !(-128..=127).contains(&out_zp) {
            return Err(unsupported(node, "zero points out of range"));
        }
        // A constant B: int8 as the weights of a 1x1 CONV (whose IFM depth is the contraction:
        // at most 65536), int16 or a longer contraction stored transposed and read as IFM2.
        let const_b = !self.lowered.tensor_buffer.contains_key(&tb) && self.is_constant(tb);
        let as_weights = const_b && c <= MAX_CONTRACTION;
        if let (true, DType::Int8, Some(rq)) = (as_weights, dtype, &fused_rq) {
            let r = rq.out;
            let mm = ConstMatMul {
                names,
                act,
                out_t,
                acc: rq.acc,
                dims: [da, db, dm],
                abuf,
                a_zp: a.a_zp,
                b_zp: a.b_zp,
            };
            return self.lower_matmul_const_weights(node, tb, r, mm);
        }
        let bbuf = match const_b {
            true => self.transposed_constant(node, tb, &db, dtype)?,
            false => self.input_buffer(node, tb)?,
        };
        let obuf = match fused_rq {
            Some(_) => self.new_buffer(out_t, Some(self.lowered.ops.len())),
            None => {
                // The i48 values as 8-byte words (the NPU writes b64 OFMs).
                let elems = self
                    .g
                    .tensor(out_t)
                    .expect("tensor")
                    .ty
                    .shape
                    .num_elements();
                let b = self.scratch(elems.unwrap_or(0) as u64 * 8);
                self.lowered.tensor_buffer.insert(out_t, b);
                b
            }
        };
        // The scratch buffer for B^T (one, reused by every batch).
        let transpose = c > 1 && w > 1 && !const_b;
        let scratch = transpose.then(|| {
            let idx = self.lowered.buffers.len();
            self.lowered.buffers.push(Buffer {
                size: (w * c) as u64 * e as u64,
                producer: Some(self.lowered.ops.len()),
                last_use: None,
                is_input: false,
                is_output: false,
            });
            idx
        });
        let batch = &dm[..rank - 2];
        let batches: usize = batch.iter().product();
        let matrix = |dims: &[usize], k: usize| matrix_index(batch, dims, k);
        let fm = |buffer: usize, offset: i64, shape: (usize, usize), zp: i64| Fm {
            buffer,
            shape: (1, shape.0 as u32, shape.1 as u32),
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View {
                offset: offset as u64,
                ..View::default()
            },
        };
        let mut last_b = None;
        for k in 0..batches {
            let (ma, mb) = (matrix(&da, k), matrix(&db, k));
            let b_off = (mb * c * w) as i64 * e;
            let (ifm2_buf, ifm2_off) = match scratch {
                Some(s) => {
                    if last_b != Some(mb) && c <= 128 && w <= 128 {
                        // One copy with the OFM transpose: B [C, W] read as 1 x C x W,
                        // written as 1 x W x C.
                        let b = fm(bbuf, b_off, (c, w), 0);
                        self.transposed_copy(&node.name, b, s, ActivationTranspose::Hcw);
                        last_b = Some(mb);
                    } else if last_b != Some(mb) {
                        let axes = [
                            CopyAxis {
                                n: w,
                                src: e,
                                dst: c as i64 * e,
                            },
                            CopyAxis {
                                n: c,
                                src: w as i64 * e,
                                dst: e,
                            },
                            CopyAxis {
                                n: e as usize,
                                src: 1,
                                dst: 1,
                            },
                        ];
                        self.strided_copy(node, (bbuf, b_off), (s, 0), &axes)?;
                        last_b = Some(mb);
                    }
                    (s, 0)
                }
                None => (bbuf, b_off),
            };
            let ifm = fm(abuf, (ma * h * c) as i64 * e, (h, c), a.a_zp);
            let ofm = Fm {
                dtype: out_dtype,
                ..fm(obuf, (k * h * w) as i64 * oe, (h, w), out_zp)
            };
            let ifm2 = fm(ifm2_buf, ifm2_off, (w, c), a.b_zp);
            if c > MAX_CONTRACTION {
                let finish = Finish {
                    requant: requant.clone(),
                    round,
                    act,
                };
                let name = (node.name.as_str(), &names[..]);
                self.contraction_in_parts(name, ifm, ifm2, ofm, &finish, MAX_CONTRACTION);
                continue;
            }
            self.push(
                NpuOp::conv(node.name.clone(), names.clone(), ifm, ofm, act)
                    .with_ifm2(ifm2)
                    .with_requant(requant.clone())
                    .with_round(round)
                    .with_acc(acc),
            );
        }
        if batches == 0 {
            return Err(unsupported(node, "an empty batch"));
        }
        Ok(())
    }
}
