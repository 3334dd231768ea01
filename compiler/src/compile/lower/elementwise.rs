//! ADD, SUB and MUL between RESCALEs as NPU elementwise operations.

use super::*;

impl<'g> Ctx<'g> {
    /// The producer of `t` if `t` only feeds one operator and is not a graph output.
    pub(super) fn fusable_producer(&self, t: TensorId) -> Option<(OpId, &'g OpNode)> {
        self.sole_consumer(t)?;
        let p = self.g.producer(t)?;
        Some((p, self.node(p)))
    }

    /// An exact per-tensor RESCALE of an i8 or i16 tensor to i32 (multiplier `2^shift`):
    /// returns the input and the zero point.
    pub(super) fn widen(&self, t: TensorId) -> Option<(OpId, TensorId, i64)> {
        let (p, pnode) = self.fusable_producer(t)?;
        let Op::Rescale(r) = &pnode.op else {
            return None;
        };
        let x = pnode.inputs()[0];
        let exact = r.multiplier.len() == 1
            && r.shift[0] < 31
            && i64::from(r.multiplier[0]) == 1i64 << r.shift[0];
        (exact
            && r.output_dtype == DType::Int32
            && matches!(self.dtype(x), DType::Int8 | DType::Int16)
            && !r.input_unsigned
            && r.output_zp == 0)
            .then_some((p, x, r.input_zp))
    }

    /// An elementwise operand; the forms accepted are
    /// * i8 -> RESCALE(i32, multiplier M, shift S) (any rounding),
    /// * i8 -> exact RESCALE(i32, zero point) -> LOGICAL_LEFT_SHIFT(k) -> RESCALE(M, S) (the
    ///   TFLite ADD/SUB scheme; the left shift becomes the IFM_SCALE dbl_rnd field),
    /// * (MUL only) i8 -> exact RESCALE(i32, zero point), or an i8 tensor directly.
    pub(super) fn operand(
        &mut self,
        node: &OpNode,
        t: TensorId,
        names: &mut Vec<String>,
    ) -> Result<(TensorId, i64, Option<InputScale>), CompileError> {
        let is_mul = matches!(node.op, Op::Mul(_));
        if is_mul {
            if let Some((p, x, zp)) = self.widen(t) {
                self.fused.insert(p);
                names.push(self.node(p).name.clone());
                return Ok((x, zp, None));
            }
            if matches!(self.dtype(t), DType::Int8 | DType::Int16) {
                return Ok((t, 0, None));
            }
        } else if let Some((p, pnode)) = self.fusable_producer(t) {
            if let Op::Rescale(r) = &pnode.op {
                let u = pnode.inputs()[0];
                let simple = r.output_dtype == DType::Int32
                    && r.multiplier.len() == 1
                    && !r.input_unsigned
                    && r.output_zp == 0
                    && (0..=63).contains(&r.shift[0])
                    && r.multiplier[0] >= 0;
                // Optional LOGICAL_LEFT_SHIFT by a constant after an exact widening.
                let mut chain = None;
                if simple && r.input_zp == 0 && self.dtype(u) == DType::Int32 {
                    if let Some((lp, lnode)) = self.fusable_producer(u) {
                        if matches!(lnode.op, Op::LogicalLeftShift) {
                            let k = self
                                .const_data(lnode.inputs()[1])
                                .map(|d| d.to_i64_vec())
                                .filter(|v| !v.is_empty() && v.iter().all(|&k| k == v[0]))
                                .map(|v| v[0]);
                            if let (Some(k), Some((wp, x, zp))) = (k, self.widen(lnode.inputs()[0]))
                            {
                                if (0..=30).contains(&k) && k <= i64::from(r.shift[0]) {
                                    chain = Some((vec![wp, lp], x, zp, k as u8));
                                }
                            }
                        }
                    }
                }
                let narrow = matches!(self.dtype(u), DType::Int8 | DType::Int16);
                let direct = (simple && narrow).then(|| (vec![], u, r.input_zp, 0u8));
                if let Some((extra, x, zp, k)) = chain.or(direct) {
                    let shift = r.shift[0] as u8 - k;
                    // The NPU does not saturate the scaled input; make sure the IR would not
                    // (neither in the left shift nor in the rescale).
                    let xt = self.dtype(x);
                    let span = i128::from((xt.max_value() - zp).max(zp - xt.min_value()) + 1);
                    let m = i128::from(r.multiplier[0]);
                    if (span * m) >> shift >= 1 << 31 || span << k >= 1 << 31 {
                        return Err(unsupported(pnode, "input rescale could saturate"));
                    }
                    let round = if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
                        RoundModeIfm::DoubleSymmetric
                    } else {
                        RoundModeIfm::Natural
                    };
                    for e in extra {
                        self.fused.insert(e);
                        names.push(self.node(e).name.clone());
                    }
                    self.fused.insert(p);
                    names.push(pnode.name.clone());
                    let s = InputScale {
                        scale: r.multiplier[0] as u32,
                        shift,
                        dbl_rnd: k,
                        round,
                    };
                    return Ok((x, zp, Some(s)));
                }
            }
        }
        Err(unsupported(
            node,
            "operands must be i8/i16 tensors rescaled to i32 by a per-tensor RESCALE",
        ))
    }

    pub(super) fn lower_elementwise(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let mode = match &node.op {
            Op::Add => ElementwiseMode::Add,
            Op::Sub => ElementwiseMode::Sub,
            Op::Mul(m) if m.shift == 0 => ElementwiseMode::Mul,
            Op::Mul(_) => return Err(unsupported(node, "MUL with a shift")),
            _ => unreachable!("lower_elementwise on another op"),
        };
        if self.dtype(node.outputs()[0]) != DType::Int32 {
            return Err(unsupported(
                node,
                "only the i32 form between RESCALEs is supported",
            ));
        }
        let mut names = Vec::new();
        let (a, azp, ascale) = self.operand(node, node.inputs()[0], &mut names)?;
        let (b, bzp, bscale) = self.operand(node, node.inputs()[1], &mut names)?;
        names.push(node.name.clone());
        let (ascale, bscale) = if mode == ElementwiseMode::Mul {
            let exact = |s: Option<InputScale>| {
                s.is_none_or(|s| s.shift < 32 && u64::from(s.scale) == 1u64 << s.shift)
            };
            if !exact(ascale) || !exact(bscale) {
                return Err(unsupported(
                    node,
                    "MUL operands with a non-identity input rescale",
                ));
            }
            let one = InputScale {
                dbl_rnd: 0,
                scale: 1,
                shift: 0,
                round: RoundModeIfm::DoubleSymmetric,
            };
            (Some(one), Some(one))
        } else {
            (ascale, bscale)
        };
        let acc_t = node.outputs()[0];
        let rescale_op = self
            .sole_consumer(acc_t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "the i32 result must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale_op);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        if r.multiplier.len() != 1 {
            return Err(unsupported(
                rnode,
                "per-channel rescale after an elementwise op",
            ));
        }
        self.fused.insert(rescale_op);
        names.push(rnode.name.clone());
        let (out_t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);
        let mut ifm = self.fm(node, a, false, azp)?;
        let mut ifm2 = self.fm(node, b, false, bzp)?;
        if ifm.dtype != ifm2.dtype {
            return Err(unsupported(node, "operands of different element types"));
        }
        // The scaling unit takes 16-bit operands (after the zero point).
        if ifm.dtype == DType::Int16 && (azp != 0 || bzp != 0) {
            return Err(unsupported(node, "i16 operands with a nonzero zero point"));
        }
        let ofm = self.ofm(node, out_t, false, r.output_zp)?;
        if self.dims(a).len() != self.dims(out_t).len() {
            return Err(unsupported(
                node,
                "operand rank differs from the output rank",
            ));
        }
        for fm in [&mut ifm, &mut ifm2] {
            let (h, w, c) = fm.shape;
            let (oh, ow, oc) = ofm.shape;
            fm.broadcast = (h != oh, w != ow, c != oc);
            if (fm.broadcast.0 && h != 1)
                || (fm.broadcast.1 && w != 1)
                || (fm.broadcast.2 && c != 1)
            {
                return Err(unsupported(node, "operand shape does not broadcast"));
            }
        }
        self.push(NpuOp {
            name: rnode.name.clone(),
            fused: names,
            kernel: Kernel::Elementwise(mode),
            ifm,
            ifm2: Some(ifm2),
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
            round: rescale_round(r),
            ifm_scale: ascale,
            ifm2_scale: bscale,
            act,
            acc: if ifm.dtype == DType::Int16 {
                AccFormat::I48
            } else {
                AccFormat::I32
            },
            upscale: IfmUpscaleMode::None,
        });
        Ok(())
    }
}
