//! Binary and unary elementwise operators as one NPU ELEMENTWISE operation each (TRM 3.10.6):
//! ADD, SUB, MUL, MAXIMUM/MINIMUM (i32), INTDIV, the shifts, the bitwise operators, ABS and
//! CLZ, on i8, i16 or i32 feature maps; and CLAMP of an i32 tensor.
//!
//! Operands (see [`crate::elementwise::operand`]): a constant with one value is an OP_SCALAR (on IFM2 for
//! commutative operators, otherwise on the side it is on); ADD/SUB/MAXIMUM/MINIMUM read
//! i8/i16 tensors rescaled to i32 through IFM/IFM2_SCALE; MUL reads exact widenings of i8/i16
//! tensors with their zero point; anything else is read as it is (i32 as b32; IFM and IFM2
//! must have the same precision, so a folded operand next to an i32 one is lowered on its
//! own first).
//!
//! The output stage (semantics.md §5-§7):
//! * add/sub/min/max/abs/clz/bitwise and 8/16-bit mul rescale with OFM_SCALE (`global`), so
//!   a following per-tensor RESCALE fuses as the OFM scale, zero point and saturation (and
//!   after an 8/16-bit mul, a rounding division by a power of two, [`crate::elementwise::rounding_divide`]);
//! * mul of b32 operands is `shift_only`: the TOSA shift is the OFM shift with natural
//!   rounding on the exact 64-bit product, which is TOSA's `(a*b + 2^(s-1)) >> s`;
//! * shr / shl / lshr skip the rescale (shr rounds with the OFM round mode: natural for
//!   `round`, truncate-to-lower otherwise) and div needs unit scales; only an identity
//!   RESCALE (multiplier `2^shift`) fuses into them, as zero point and saturation;
//! * without a fused RESCALE the clip range is `none` (the 16-bit ACTIVATION_MIN/MAX cannot
//!   bound an i32; write_ofm's truncation is the IR's wrap for narrow shifts); a following
//!   CLAMP fuses when its bounds fit 16 bits (clip range b16).
//!
//! CLAMP of an i32 tensor: one 1x1 max pool with the clamp as activation when both bounds
//! fit 16 bits, otherwise MAX with the lower bound and MIN with the upper bound as scalars
//! (decision L17).

use crate::elementwise::operand::Folded;
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, InputScale, NpuOp, Requant, ScalarOperand, View};
use npuc_backend::isa::{AccFormat, ElementwiseMode, RoundModeIfm, RoundModeOfm};
use npuc_ir::{DType, Op, OpId, OpNode, RescaleAttrs, TensorId};

/// The activation bounds meaning "no clamp" (clip range none).
pub(crate) const NO_CLIP: (i64, i64) = (i32::MIN as i64, i32::MAX as i64);

/// Whether `act` can be programmed: both bounds within 16 bits (clip range b16) or no clamp.
pub(crate) fn act_representable(act: (i64, i64)) -> bool {
    let b16 = |v: i64| (-32768..=32767).contains(&v);
    (b16(act.0) && b16(act.1)) || (act.0 <= NO_CLIP.0 && act.1 >= NO_CLIP.1)
}

/// The NPU output stage of an elementwise mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// OFM_SCALE scale and shift (`global`): a RESCALE after it fuses.
    Global,
    /// `shift_only` (b32 mul) or no rescale (shifts), or unit scales required (div): only an
    /// identity RESCALE fuses.
    Fixed,
}

struct Spec {
    mode: ElementwiseMode,
    unary: bool,
    commutative: bool,
    /// Operands may be rescale chains folded into IFM/IFM2_SCALE.
    scaled: bool,
    /// OFM shift of the operation itself (MUL's TOSA shift).
    shift: u8,
    round: RoundModeOfm,
}

impl Spec {
    fn of(op: &Op) -> Option<Spec> {
        use ElementwiseMode as M;
        let s = |mode, commutative, scaled| Spec {
            mode,
            unary: false,
            commutative,
            scaled,
            shift: 0,
            round: RoundModeOfm::Natural,
        };
        let u = |mode| Spec {
            unary: true,
            ..s(mode, false, false)
        };
        Some(match op {
            Op::Add => s(M::Add, true, true),
            Op::Sub => s(M::Sub, false, true),
            Op::Maximum => s(M::Max, true, true),
            Op::Minimum => s(M::Min, true, true),
            Op::Mul(m) => Spec {
                shift: m.shift,
                ..s(M::Mul, true, false)
            },
            Op::IntDiv => s(M::Div, false, false),
            Op::ArithmeticRightShift(a) => Spec {
                round: if a.round {
                    RoundModeOfm::Natural
                } else {
                    RoundModeOfm::TruncateToLower
                },
                ..s(M::Shr, false, false)
            },
            Op::LogicalLeftShift => s(M::Shl, false, false),
            Op::LogicalRightShift => s(M::Lshr, false, false),
            Op::BitwiseAnd => s(M::And, true, false),
            Op::BitwiseOr => s(M::Or, true, false),
            Op::BitwiseXor => s(M::Xor, true, false),
            Op::Abs => u(M::Abs),
            Op::Clz => u(M::Clz),
            Op::BitwiseNot => u(M::Not),
            _ => return None,
        })
    }
}

/// One operand as the operation reads it.
#[derive(Debug, Clone)]
enum Opnd {
    Scalar(i64),
    Fold(Folded),
    Tensor(TensorId),
    /// A constant (e.g. a RESCALE of one) stored in the narrow type of the other operand.
    Narrow(TensorId, DType),
}

const IDENTITY: InputScale = InputScale {
    scale: 1,
    shift: 0,
    dbl_rnd: 0,
    round: RoundModeIfm::DoubleSymmetric,
};

impl<'g> Ctx<'g> {
    fn opnd_dtype(&self, o: &Opnd) -> Option<DType> {
        match o {
            Opnd::Scalar(_) => None,
            Opnd::Fold(f) => Some(self.dtype(f.x)),
            Opnd::Tensor(t) => Some(self.dtype(*t)),
            Opnd::Narrow(_, d) => Some(*d),
        }
    }

    /// A constant operand `t` whose values all fit `d` (an i8/i16 type), read as `d`.
    fn narrow_constant(&self, t: TensorId, d: Option<DType>) -> Option<Opnd> {
        let d = d.filter(|d| matches!(d, DType::Int8 | DType::Int16))?;
        if self.lowered.tensor_buffer.contains_key(&t) || !self.is_constant(t) {
            return None;
        }
        let v = self.constant_values(t)?;
        v.iter()
            .all(|&x| d.contains(x))
            .then_some(Opnd::Narrow(t, d))
    }

    /// The operand `t` of an operation of kind `spec` (nothing fused yet).
    fn classify(&self, spec: &Spec, t: TensorId) -> Opnd {
        if let Some(v) = self.scalar_value(t).filter(|v| DType::Int32.contains(*v)) {
            return Opnd::Scalar(v);
        }
        if spec.scaled {
            if let Some(f) = self.fold_operand(t) {
                return Opnd::Fold(f);
            }
        } else if spec.mode == ElementwiseMode::Mul {
            // An exact widening with its zero point (16-bit zero points must be 0).
            if let Some((p, x, zp)) = self
                .widen(t)
                .filter(|w| self.dtype(w.1) == DType::Int8 || w.2 == 0)
            {
                return Opnd::Fold(Folded {
                    ops: vec![p],
                    x,
                    zp,
                    scale: IDENTITY,
                });
            }
        }
        Opnd::Tensor(t)
    }

    /// Undoes a fold: the operand is read as the i32 tensor it produces.
    fn unfold(o: &mut Opnd, t: TensorId) {
        if matches!(o, Opnd::Fold(_)) {
            *o = Opnd::Tensor(t);
        }
    }

    /// The feature map of an operand tensor, shape to be set by [`Ctx::broadcast_layout`]
    /// (lowering a deferred producer first; a computed constant is evaluated).
    fn operand_tensor_fm(&mut self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        self.materialize(t)?;
        if self.const_data(t).is_some() {
            self.constant_buffer(t);
        }
        if !self.lowered.tensor_buffer.contains_key(&t) && self.is_constant(t) {
            let mut fm = self.constant_fm(node, t, self.dtype(t))?;
            fm.zero_point = zp;
            return Ok(fm);
        }
        self.ew_fm(node, t, zp)
    }

    /// The feature map of a tensor read whole (its (H, W, C) view).
    fn tensor_fm(&mut self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        let mut fm = self.operand_tensor_fm(node, t, zp)?;
        fm.shape = self.flat_hwc(node, t)?;
        Ok(fm)
    }

    pub(crate) fn lower_elementwise(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let spec = Spec::of(&node.op)
            .ok_or_else(|| unsupported(node, "operator not in the NPU slice yet"))?;
        if matches!(node.op, Op::Mul(_)) && self.dtype(node.outputs()[0]) != DType::Int32 {
            return Err(unsupported(node, "MUL into a type other than i32"));
        }
        let mut inputs: Vec<TensorId> = node.inputs()[..if spec.unary { 1 } else { 2 }].to_vec();
        let mut ops: Vec<Opnd> = inputs.iter().map(|&t| self.classify(&spec, t)).collect();
        // `x + 32768` of a folded 16-bit operand (a table index) is `x - (-32768)`: the
        // scalar then fits the operand's 16 bits.
        let mut spec = spec;
        if spec.mode == ElementwiseMode::Add && !spec.unary {
            let big = ops.iter().position(|o| matches!(o, Opnd::Scalar(32768)));
            if let Some(i) = big.filter(|&i| matches!(ops[1 - i], Opnd::Fold(_))) {
                ops[i] = Opnd::Scalar(-32768);
                ops.swap(0, i ^ 1);
                inputs.swap(0, i ^ 1);
                spec = Spec {
                    mode: ElementwiseMode::Sub,
                    commutative: false,
                    ..spec
                };
            }
        }
        // Two scalars: the first one is read from memory.
        if ops.iter().all(|o| matches!(o, Opnd::Scalar(_))) {
            ops[0] = Opnd::Tensor(inputs[0]);
        }
        // IFM and IFM2 precisions must agree: read folded operands as i32 otherwise.
        if !spec.unary {
            let (a, b) = (self.opnd_dtype(&ops[0]), self.opnd_dtype(&ops[1]));
            // A constant next to a folded operand is stored in the folded operand's type if
            // it fits (read unscaled, exactly the IR's i32 value).
            for (i, other) in [(0, b), (1, a)] {
                if let (Opnd::Tensor(t), Some(Opnd::Fold(_))) = (&ops[i], ops.get(1 - i)) {
                    if let Some(n) = self.narrow_constant(*t, other) {
                        ops[i] = n;
                    }
                }
            }
            let (a, b) = (self.opnd_dtype(&ops[0]), self.opnd_dtype(&ops[1]));
            if a.is_some() && b.is_some() && a != b {
                for (o, &t) in ops.iter_mut().zip(&inputs) {
                    Self::unfold(o, t);
                }
            }
            // A scalar next to a folded operand passes scale_b unscaled: it must fit 16 bits.
            let small = |o: &Opnd| match o {
                Opnd::Scalar(v) => (-32768..=32767).contains(v),
                _ => true,
            };
            if !ops.iter().all(small) {
                for (o, &t) in ops.iter_mut().zip(&inputs) {
                    Self::unfold(o, t);
                }
            }
        }
        let dtypes: Vec<Option<DType>> = ops.iter().map(|o| self.opnd_dtype(o)).collect();
        if let [Some(a), Some(b)] = dtypes[..] {
            if a != b {
                return Err(unsupported(node, "operands of different element types"));
            }
        }
        let in_dtype = dtypes
            .iter()
            .flatten()
            .next()
            .copied()
            .unwrap_or(DType::Int32);
        let mut names = Vec::new();
        // Read every operand: fuse the folds, lower deferred producers.
        let mut fms: Vec<(Option<Fm>, InputScale, Option<i64>)> = Vec::new();
        for o in &ops {
            fms.push(match o {
                Opnd::Scalar(v) => (None, IDENTITY, Some(*v)),
                Opnd::Fold(f) => {
                    self.commit(f, &mut names);
                    (Some(self.ew_fm(node, f.x, f.zp)?), f.scale, None)
                }
                Opnd::Tensor(t) => (Some(self.operand_tensor_fm(node, *t, 0)?), IDENTITY, None),
                Opnd::Narrow(t, d) => (Some(self.constant_fm(node, *t, *d)?), IDENTITY, None),
            });
        }
        names.push(node.name.clone());
        // Mul of 8/16-bit operands rescales with OFM_SCALE; of b32 operands shift-only.
        let narrow = in_dtype != DType::Int32;
        let stage = match spec.mode {
            ElementwiseMode::Mul if narrow && spec.shift == 0 => Stage::Global,
            ElementwiseMode::Mul
            | ElementwiseMode::Div
            | ElementwiseMode::Shr
            | ElementwiseMode::Shl
            | ElementwiseMode::Lshr => Stage::Fixed,
            _ => Stage::Global,
        };
        let y = node.outputs()[0];
        let product = spec.mode == ElementwiseMode::Mul && narrow && spec.shift == 0;
        let out = match product.then(|| self.rounding_divide(y)).flatten() {
            Some((ops, e)) => self.fuse_rounding_divide(&ops, e, &mut names),
            None => self.output_stage(node, y, stage, &mut names)?,
        };
        if spec.mode == ElementwiseMode::Div && out.zp != 0 {
            return Err(unsupported(node, "INTDIV with an output zero point"));
        }
        let mut ofm = self.ew_ofm(node, out.t, out.zp)?;
        // Shapes and broadcasts of the operands read from memory, at any rank.
        let (read, mut read_fms): (Vec<TensorId>, Vec<Fm>) = fms
            .iter()
            .zip(&inputs)
            .filter_map(|((fm, _, _), &t)| fm.map(|fm| (t, fm)))
            .unzip();
        {
            let mut refs: Vec<&mut Fm> = read_fms.iter_mut().collect();
            self.broadcast_layout(node, y, &mut ofm, &read, &mut refs)?;
        }
        let mut laid_out = read_fms.into_iter();
        let mut sides = Vec::new();
        for (fm, scale, scalar) in fms {
            let fm = match fm {
                Some(_) => laid_out.next().expect("one layout per operand read"),
                // A scalar operand reads no memory: its feature map only carries the type.
                None => Fm {
                    buffer: ofm.buffer,
                    shape: (1, 1, 1),
                    zero_point: 0,
                    dtype: in_dtype,
                    broadcast: (true, true, true),
                    view: View::default(),
                },
            };
            sides.push((fm, scale, scalar));
        }
        if spec.commutative && sides.len() == 2 && sides[0].2.is_some() {
            sides.swap(0, 1);
        }
        let scalar = sides.iter().enumerate().find_map(|(i, s)| {
            s.2.map(|v| ScalarOperand {
                ifm2: i == 1,
                value: v as i32,
            })
        });
        let (ifm, ifm_scale, _) = sides[0];
        let ifm2 = sides.get(1).map(|s| (s.0, s.1));
        let requant = match out.requant {
            Some((scale, shift)) => Requant::Global { scale, shift },
            None => Requant::Global {
                scale: 1,
                shift: spec.shift,
            },
        };
        let idx = self.lowered.ops.len();
        if let Some(s) = scalar {
            self.lowered.scalars.insert(idx, s);
        }
        self.push(
            NpuOp::elementwise(spec.mode, out.name, names, ifm, ofm, out.act)
                .with_ifm2(ifm2.map(|s| s.0))
                .with_requant(requant)
                .with_round(out.round.unwrap_or(spec.round))
                .with_ifm_scale(ifm_scale)
                .with_ifm2_scale(ifm2.map(|s| s.1))
                .with_acc(if in_dtype == DType::Int16 {
                    AccFormat::I48
                } else {
                    AccFormat::I32
                }),
        );
        Ok(())
    }
}

/// The fused output stage of an operation.
pub(crate) struct OutStage {
    /// The tensor the operation writes.
    pub t: TensorId,
    /// Name of the last fused operator.
    pub name: String,
    /// OFM zero point.
    pub zp: i64,
    /// Activation bounds.
    pub act: (i64, i64),
    /// OFM_SCALE (scale, shift) of a fused RESCALE (`Stage::Global` only).
    pub requant: Option<(u32, u8)>,
    /// Round mode of a fused RESCALE.
    pub round: Option<RoundModeOfm>,
}

impl<'g> Ctx<'g> {
    /// A per-tensor RESCALE of an i32 value the NPU output stage can do: signed, input zero
    /// point 0, to i8/i16 (zero point -128..127) or i32 (zero point 0).
    pub(crate) fn output_rescale_ok(&self, r: &RescaleAttrs) -> bool {
        let zp_ok = match r.output_dtype {
            DType::Int8 | DType::Int16 => (-128..=127).contains(&r.output_zp),
            DType::Int32 => r.output_zp == 0,
            _ => false,
        };
        zp_ok
            && r.multiplier.len() == 1
            && !r.input_unsigned
            && !r.output_unsigned
            && r.input_zp == 0
            && (0..=63).contains(&r.shift[0])
            && r.multiplier[0] >= 0
    }

    /// The output stage of a rounding division by `2^e` fused into the operation (see
    /// [`crate::elementwise::rounding_divide`]): `ops` are its operators, the SELECT last.
    fn fuse_rounding_divide(&mut self, ops: &[OpId], e: u8, names: &mut Vec<String>) -> OutStage {
        for &p in ops {
            self.fused.insert(p);
            names.push(self.node(p).name.clone());
        }
        let last = self.node(*ops.last().expect("the SELECT"));
        OutStage {
            t: last.outputs()[0],
            name: last.name.clone(),
            zp: 0,
            act: NO_CLIP,
            requant: Some((1, e)),
            round: Some(RoundModeOfm::Symmetric),
        }
    }

    /// [`Ctx::output_stage`] of an operation that rescales with OFM_SCALE.
    pub(crate) fn output_stage_global(
        &mut self,
        node: &OpNode,
        y: TensorId,
        names: &mut Vec<String>,
    ) -> Result<OutStage, LowerError> {
        self.output_stage(node, y, Stage::Global, names)
    }

    /// The output of an operation producing `y` (an i32 result for i32 operators): a
    /// following RESCALE fused as the stage allows, then a following CLAMP if its bounds can
    /// be programmed.
    fn output_stage(
        &mut self,
        node: &OpNode,
        y: TensorId,
        stage: Stage,
        names: &mut Vec<String>,
    ) -> Result<OutStage, LowerError> {
        let mut out = OutStage {
            t: y,
            name: node.name.clone(),
            zp: 0,
            act: NO_CLIP,
            requant: None,
            round: None,
        };
        let rescale = self
            .sole_consumer(y)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)));
        if let Some(c) = rescale {
            let rnode = self.node(c);
            let Op::Rescale(r) = &rnode.op else {
                unreachable!()
            };
            let m = r.multiplier[0];
            let identity = m > 0 && m.count_ones() == 1 && m.trailing_zeros() as i8 == r.shift[0];
            if self.output_rescale_ok(r) && (stage == Stage::Global || identity) {
                self.fused.insert(c);
                names.push(rnode.name.clone());
                out.t = rnode.outputs()[0];
                out.name = rnode.name.clone();
                out.zp = r.output_zp;
                if stage == Stage::Global {
                    out.requant = Some((m as u32, r.shift[0] as u8));
                    out.round = Some(rescale_round(r));
                }
                out.act = match r.output_dtype {
                    DType::Int32 => NO_CLIP,
                    d => (d.min_value(), d.max_value()),
                };
            }
        }
        // A following CLAMP.
        if let Some(c) = self.sole_consumer(out.t) {
            if let Op::Clamp(a) = &self.node(c).op {
                let act = (a.min.max(out.act.0), a.max.min(out.act.1));
                if act_representable(act) {
                    self.fused.insert(c);
                    names.push(self.node(c).name.clone());
                    out.t = self.node(c).outputs()[0];
                    out.name = self.node(c).name.clone();
                    out.act = act;
                }
            }
        }
        // A following CAST of an i32 result to i8/i16 keeps the low bits: write_ofm's
        // truncation (after the clamp, as in the graph).
        if let Some(c) = self.sole_consumer(out.t) {
            let cnode = self.node(c);
            let narrow = matches!(self.dtype(cnode.outputs()[0]), DType::Int8 | DType::Int16);
            if matches!(cnode.op, Op::Cast(_)) && self.dtype(out.t) == DType::Int32 && narrow {
                self.fused.insert(c);
                names.push(cnode.name.clone());
                out.t = cnode.outputs()[0];
                out.name = cnode.name.clone();
            }
        }
        Ok(out)
    }

    /// CAST between i32 and i8/i16 on its own: a 1x1 max pool (b8, b16 or b32 in) with clip
    /// range none; the write sign-extends or keeps the low bits, as the IR's CAST does. A
    /// bool (bytes 0 / 1) is read as i8, which sign-extends to 0 / 1. CAST from i64 to i32
    /// copies the low words; from i32 to i64 see [`Ctx::lower_cast_i64`].
    pub(crate) fn lower_cast_i32(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        let ok = |d: DType| matches!(d, DType::Int8 | DType::Int16 | DType::Int32);
        if self.dtype(x) == DType::Int32 && self.dtype(y) == DType::Bool {
            return self.lower_cast(o);
        }
        if self.dtype(x) == DType::Bool && self.dtype(y) == DType::Int32 {
            let mut ifm = self.tensor_fm(node, x, 0)?;
            ifm.dtype = DType::Int8;
            return self.push_cast_i32(node, ifm, y);
        }
        if self.dtype(x) == DType::Int32 && self.dtype(y) == DType::Int64 {
            return self.lower_cast_i64(o);
        }
        if self.dtype(x) == DType::Int64 && self.dtype(y) == DType::Int32 {
            // The low word of each element (the IR's CAST keeps the low bits): one strided
            // copy.
            use crate::data_movement::copy::CopyAxis;
            let n = self
                .g
                .tensor(x)
                .and_then(|t| t.ty.shape.num_elements())
                .unwrap_or(0);
            let src = self.input_buffer(node, x)?;
            let idx = self.lowered.ops.len();
            let dst = self.new_buffer(y, Some(idx));
            let axes = [
                CopyAxis { n, src: 8, dst: 4 },
                CopyAxis {
                    n: 4,
                    src: 1,
                    dst: 1,
                },
            ];
            return self.strided_copy(node, (src, 0), (dst, 0), &axes);
        }
        if !ok(self.dtype(x)) || !ok(self.dtype(y)) {
            return Err(unsupported(
                node,
                format!("CAST from {} to {}", self.dtype(x), self.dtype(y)),
            ));
        }
        let ifm = self.tensor_fm(node, x, 0)?;
        self.push_cast_i32(node, ifm, y)
    }

    /// The 1x1 max pool of [`Ctx::lower_cast_i32`] from `ifm` into `y`.
    fn push_cast_i32(&mut self, node: &OpNode, ifm: Fm, y: TensorId) -> Result<(), LowerError> {
        let ofm = self.ofm_flat(node, y, 0)?;
        self.push(NpuOp::copy(
            node.name.clone(),
            vec![node.name.clone()],
            ifm,
            ofm,
            NO_CLIP,
        ));
        Ok(())
    }

    /// CAST of an i32 tensor to i64 (ARG_MAX's int64 output): the low words are the values,
    /// the high words their sign (`x >> 31`, one ELEMENTWISE shr by an OP_SCALAR; the zero
    /// constant when `x` is an ARGMAX index); both are interleaved by strided copies.
    fn lower_cast_i64(&mut self, o: OpId) -> Result<(), LowerError> {
        use crate::data_movement::copy::CopyAxis;
        let node = self.node(o);
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        self.materialize(x)?;
        let n = self
            .g
            .tensor(x)
            .and_then(|t| t.ty.shape.num_elements())
            .unwrap_or(0);
        let src = self.input_buffer(node, x)?;
        let non_negative = self
            .g
            .producer(x)
            .is_some_and(|p| matches!(self.node(p).op, Op::ArgMax(_)));
        let sign = if non_negative {
            (self.anonymous_constant(vec![0; 4]), 0)
        } else {
            let ifm = self.tensor_fm(node, x, 0)?;
            let ofm = self.scratch_fm(ifm.shape, DType::Int32);
            let idx = self.lowered.ops.len();
            self.lowered.scalars.insert(
                idx,
                ScalarOperand {
                    ifm2: true,
                    value: 31,
                },
            );
            self.push(
                NpuOp::elementwise(
                    ElementwiseMode::Shr,
                    node.name.clone(),
                    vec![node.name.clone()],
                    ifm,
                    ofm,
                    NO_CLIP,
                )
                .with_ifm2(Fm {
                    shape: (1, 1, 1),
                    broadcast: (true, true, true),
                    ..ofm
                })
                .with_round(RoundModeOfm::TruncateToLower)
                .with_ifm_scale(IDENTITY)
                .with_ifm2_scale(IDENTITY),
            );
            (ofm.buffer, 4)
        };
        let idx = self.lowered.ops.len();
        let dst = self.new_buffer(y, Some(idx));
        let word = CopyAxis {
            n: 4,
            src: 1,
            dst: 1,
        };
        let values = CopyAxis { n, src: 4, dst: 8 };
        self.strided_copy(node, (src, 0), (dst, 0), &[values, word])?;
        let highs = CopyAxis {
            src: sign.1,
            ..values
        };
        self.strided_copy(node, (sign.0, 0), (dst, 4), &[highs, word])?;
        Ok(())
    }

    /// CLAMP of an i32 tensor (see the module documentation).
    pub(crate) fn lower_clamp_i32(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Clamp(a) = &node.op else {
            unreachable!("lower_clamp_i32 on another op")
        };
        let x = node.inputs()[0];
        let y = node.outputs()[0];
        let (lo, hi) = (a.min.max(NO_CLIP.0), a.max.min(NO_CLIP.1));
        let ifm = self.tensor_fm(node, x, 0)?;
        let names = vec![node.name.clone()];
        let copy =
            |ifm: Fm, ofm: Fm, act| NpuOp::copy(node.name.clone(), names.clone(), ifm, ofm, act);
        let steps: Vec<(ElementwiseMode, i64)> = [
            (ElementwiseMode::Max, lo, lo > NO_CLIP.0),
            (ElementwiseMode::Min, hi, hi < NO_CLIP.1),
        ]
        .into_iter()
        .filter(|s| s.2)
        .map(|s| (s.0, s.1))
        .collect();
        if act_representable((lo, hi)) || steps.is_empty() {
            let ofm = self.ofm_flat(node, y, 0)?;
            self.push(copy(ifm, ofm, (lo, hi)));
            return Ok(());
        }
        // max(x, lo) then min(., hi), each with a scalar bound.
        let mut src = ifm;
        for (i, &(mode, bound)) in steps.iter().enumerate() {
            let idx = self.lowered.ops.len();
            let ofm = if i + 1 == steps.len() {
                self.ofm_flat(node, y, 0)?
            } else {
                let buffer = self.temp_buffer(y, idx);
                Fm { buffer, ..src }
            };
            let ofm = Fm {
                broadcast: (false, false, false),
                view: View::default(),
                ..ofm
            };
            self.lowered.scalars.insert(
                idx,
                ScalarOperand {
                    ifm2: true,
                    value: bound as i32,
                },
            );
            let scalar_fm = Fm {
                shape: (1, 1, 1),
                broadcast: (true, true, true),
                ..ofm
            };
            self.push(
                NpuOp::elementwise(mode, node.name.clone(), names.clone(), src, ofm, NO_CLIP)
                    .with_ifm2(scalar_fm)
                    .with_ifm_scale(IDENTITY)
                    .with_ifm2_scale(IDENTITY),
            );
            src = ofm;
        }
        Ok(())
    }
}
