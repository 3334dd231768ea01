//! How an input of an elementwise operation reaches the NPU.
//!
//! * A constant holding one value (any shape that broadcasts to the output) is an OP_SCALAR
//!   operand ([`Ctx::scalar_value`]).
//! * An i8/i16 tensor rescaled to i32 by a per-tensor RESCALE chain is read as the i8/i16
//!   tensor with the rescale in IFM_SCALE / IFM2_SCALE ([`Ctx::fold_operand`]); the forms are
//!   - x -> RESCALE(i32, M, S) (any rounding, input zero point),
//!   - x -> exact RESCALE(i32, zero point) -> LOGICAL_LEFT_SHIFT(k) -> RESCALE(M, S) (TFLite's
//!     ADD/SUB scheme),
//!   - x -> exact RESCALE(i32, zero point, multiplier 2^(S+k)) -> RESCALE(M, S) (the same in
//!     TOSA's form, the left shift k in the first multiplier).
//!
//!   The left shift becomes the dbl_rnd field, which moves the doubling-rounding position
//!   with it (`rounded_shift_right(a*M, S-k, mode, k)` = `(a*2^k*M + round) >> S`).
//! * Any other tensor is its feature map (i32 as b32); a producer that was deferred in case
//!   this consumer fused it is lowered first ([`Ctx::materialize`]).

use crate::LowerError;
use crate::{unsupported, Ctx, InputScale};
use npuc_backend::isa::RoundModeIfm;
use npuc_ir::{DType, Graph, Op, OpId, OpNode, RescaleRounding, TensorId};

/// An operand folded into the input scale: read `x` (zero point `zp`) through `scale`; the
/// IR operators `ops` are fused away.
#[derive(Debug, Clone)]
pub(crate) struct Folded {
    pub ops: Vec<OpId>,
    pub x: TensorId,
    pub zp: i64,
    pub scale: InputScale,
}

/// `t` as an exact per-tensor RESCALE of an i8 or i16 tensor to i32 with multiplier
/// `2^(shift + k)`, `k >= 0` (`t = (x - zp) << k`): the operator, `x`, `zp`, `k`. `None` for a
/// graph output.
pub(crate) fn exact_widening(g: &Graph, t: TensorId) -> Option<(OpId, TensorId, i64, u8)> {
    if g.outputs().contains(&t) {
        return None;
    }
    let p = g.producer(t)?;
    let pnode = g.op(p)?;
    let Op::Rescale(r) = &pnode.op else {
        return None;
    };
    let x = pnode.inputs()[0];
    if r.multiplier.len() != 1 || r.multiplier[0] <= 0 {
        return None;
    }
    let m = r.multiplier[0] as u32;
    let j = m.trailing_zeros() as i8;
    let exact = m.is_power_of_two() && j >= r.shift[0];
    let dtype = g.tensor(x)?.ty.dtype;
    (exact
        && r.output_dtype == DType::Int32
        && matches!(dtype, DType::Int8 | DType::Int16)
        && !r.input_unsigned
        && r.output_zp == 0)
        .then(|| (p, x, r.input_zp, (j - r.shift[0]) as u8))
}

impl<'g> Ctx<'g> {
    /// The producer of `t` if `t` only feeds one operator and is not a graph output.
    pub(crate) fn fusable_producer(&self, t: TensorId) -> Option<(OpId, &'g OpNode)> {
        self.sole_consumer(t)?;
        let p = self.g.producer(t)?;
        Some((p, self.node(p)))
    }

    /// An exact per-tensor RESCALE of an i8 or i16 tensor to i32 with multiplier
    /// `2^(shift + k)`, `k >= 0`: `t = (x - zp) << k`. Returns the operator, `x`, `zp`, `k`.
    /// The widening may have other readers (each one that folds it reads `x` itself; one
    /// that does not materializes it); a graph output is not folded.
    pub(crate) fn widen_shift(&self, t: TensorId) -> Option<(OpId, TensorId, i64, u8)> {
        exact_widening(self.g, t)
    }

    /// An exact per-tensor RESCALE of an i8 or i16 tensor to i32 (multiplier `2^shift`):
    /// returns the operator, the input and the zero point.
    pub(crate) fn widen(&self, t: TensorId) -> Option<(OpId, TensorId, i64)> {
        self.widen_shift(t)
            .filter(|w| w.3 == 0)
            .map(|(p, x, zp, _)| (p, x, zp))
    }

    /// `t = (x - zp) << k` through a widening RESCALE, optionally followed by a
    /// LOGICAL_LEFT_SHIFT by a constant (all fusable): the operators, `x`, `zp`, `k`.
    fn shifted_widening(&self, t: TensorId) -> Option<(Vec<OpId>, TensorId, i64, u8)> {
        if let Some((wp, x, zp, k)) = self.widen_shift(t) {
            return Some((vec![wp], x, zp, k));
        }
        let (lp, lnode) = self.fusable_producer(t)?;
        if !matches!(lnode.op, Op::LogicalLeftShift) {
            return None;
        }
        let k = self.scalar_value(lnode.inputs()[1])?;
        let (wp, x, zp, k0) = self.widen_shift(lnode.inputs()[0])?;
        let k = k + i64::from(k0);
        (0..=30)
            .contains(&k)
            .then(|| (vec![wp, lp], x, zp, k as u8))
    }

    /// The operand `t` as an i8/i16 tensor read through an input scale (see the module
    /// documentation), without fusing anything yet.
    pub(crate) fn fold_operand(&self, t: TensorId) -> Option<Folded> {
        let (p, pnode) = self.fusable_producer(t)?;
        let Op::Rescale(r) = &pnode.op else {
            return None;
        };
        let u = pnode.inputs()[0];
        let simple = r.output_dtype == DType::Int32
            && r.multiplier.len() == 1
            && !r.input_unsigned
            && r.output_zp == 0
            && (0..=63).contains(&r.shift[0])
            && r.multiplier[0] >= 0;
        if !simple {
            return None;
        }
        let chain = (r.input_zp == 0 && self.dtype(u) == DType::Int32)
            .then(|| self.shifted_widening(u))
            .flatten()
            .filter(|c| i64::from(c.3) <= i64::from(r.shift[0]));
        let narrow = matches!(self.dtype(u), DType::Int8 | DType::Int16);
        let direct = narrow.then(|| (vec![], u, r.input_zp, 0u8));
        let (mut ops, x, zp, k) = chain.or(direct)?;
        let shift = r.shift[0] as u8 - k;
        // The NPU does not saturate the scaled input; make sure the IR would not (neither in
        // the left shift nor in the rescale).
        let xt = self.dtype(x);
        let span = i128::from((xt.max_value() - zp).max(zp - xt.min_value()) + 1);
        let m = i128::from(r.multiplier[0]);
        if (span * m) >> shift >= 1 << 31 || span << k >= 1 << 31 {
            return None;
        }
        // The scaling unit takes 16-bit operands after the zero point.
        if xt == DType::Int16 && zp != 0 {
            return None;
        }
        let round = if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
            RoundModeIfm::DoubleSymmetric
        } else {
            RoundModeIfm::Natural
        };
        ops.push(p);
        Some(Folded {
            ops,
            x,
            zp,
            scale: InputScale {
                scale: r.multiplier[0] as u32,
                shift,
                dbl_rnd: k,
                round,
            },
        })
    }

    /// Marks the operators of a folded operand fused and records their names.
    pub(crate) fn commit(&mut self, f: &Folded, names: &mut Vec<String>) {
        for &o in &f.ops {
            self.fused.insert(o);
            names.push(self.node(o).name.clone());
        }
    }

    /// An elementwise operand in the form ADD/SUB/comparisons take (see the module
    /// documentation), fused; or (MUL only) an exact widening, or an i8/i16 tensor directly.
    pub(crate) fn operand(
        &mut self,
        node: &OpNode,
        t: TensorId,
        names: &mut Vec<String>,
    ) -> Result<(TensorId, i64, Option<InputScale>), LowerError> {
        if matches!(node.op, Op::Mul(_)) {
            if let Some((p, x, zp)) = self.widen(t) {
                self.fused.insert(p);
                names.push(self.node(p).name.clone());
                return Ok((x, zp, None));
            }
            if matches!(self.dtype(t), DType::Int8 | DType::Int16) {
                return Ok((t, 0, None));
            }
        } else if let Some(f) = self.fold_operand(t) {
            self.commit(&f, names);
            return Ok((f.x, f.zp, Some(f.scale)));
        }
        Err(unsupported(
            node,
            "operands must be i8/i16 tensors rescaled to i32 by a per-tensor RESCALE",
        ))
    }

    /// The one value of a constant (also a computed one) whose elements are all equal.
    pub(crate) fn scalar_value(&self, t: TensorId) -> Option<i64> {
        let v = match self.folded_const(t) {
            Some(d) => d.to_i64_vec(),
            None => self.constant_values(t)?,
        };
        let first = *v.first()?;
        v.iter().all(|&x| x == first).then_some(first)
    }

    /// Whether `o` computes a constant that its consumers evaluate (see `constant`): it is
    /// never lowered.
    pub(crate) fn evaluated_by_consumers(&self, o: OpId) -> bool {
        let node = self.node(o);
        let out = node.outputs()[0];
        let listed = matches!(
            node.op,
            Op::Greater
                | Op::GreaterEqual
                | Op::Equal
                | Op::LogicalAnd
                | Op::LogicalOr
                | Op::LogicalXor
                | Op::LogicalNot
                | Op::BitwiseAnd
                | Op::BitwiseOr
                | Op::BitwiseXor
                | Op::BitwiseNot
                | Op::Select
                | Op::Scatter
                | Op::Cast(_)
                | Op::Add
                | Op::Sub
                | Op::Mul(_)
                | Op::Maximum
                | Op::Minimum
                | Op::IntDiv
                | Op::ArithmeticRightShift(_)
                | Op::LogicalLeftShift
                | Op::LogicalRightShift
                | Op::Abs
                | Op::Clz
                | Op::Rescale(_)
                | Op::FullyConnected(_)
        );
        listed && !self.g.outputs().contains(&out) && self.is_constant(out)
    }

    /// Lowers the deferred producer of `t` if `t` has no buffer yet (its consumer did not
    /// fuse it).
    pub(crate) fn materialize(&mut self, t: TensorId) -> Result<(), LowerError> {
        if self.lowered.tensor_buffer.contains_key(&t) {
            return Ok(());
        }
        let Some(p) = self.g.producer(t) else {
            return Ok(());
        };
        // (A widening folded into one reader, e.g. a comparison, may still be read as a
        // tensor by another.)
        if !self.deferred.remove(&p) {
            return Ok(());
        }
        let node = self.node(p);
        match node.op {
            Op::Rescale(_) => self.lower_rescale(p),
            Op::Reshape(_) | Op::Identity => {
                let x = node.inputs()[0];
                self.materialize(x)?;
                let buf = self.input_buffer(node, x)?;
                self.lowered.tensor_buffer.insert(t, buf);
                Ok(())
            }
            _ => self.lower_elementwise(p),
        }
    }

    /// Whether `o` waits for its consumers: an i32 RESCALE or LOGICAL_LEFT_SHIFT (operand
    /// rescale chains, folded by the readers that can), or an ADD/SUB of a scalar whose
    /// result only feeds a table GATHER (the offset moves into the table). Graph outputs
    /// never wait.
    pub(crate) fn defers(&self, o: OpId) -> bool {
        let node = self.node(o);
        let out = node.outputs()[0];
        if self.g.outputs().contains(&out) {
            return false;
        }
        match node.op {
            Op::Rescale(_) | Op::LogicalLeftShift => self.dtype(out) == DType::Int32,
            Op::Add | Op::Sub => {
                self.sole_consumer(out).is_some()
                    && self.scalar_value(node.inputs()[1]).is_some()
                    && self.feeds_table_gather(out)
            }
            // A RESHAPE between deferred operators waits with them.
            Op::Reshape(_) | Op::Identity => {
                let x = node.inputs()[0];
                self.sole_consumer(out).is_some()
                    && !self.lowered.tensor_buffer.contains_key(&x)
                    && self
                        .g
                        .producer(x)
                        .is_some_and(|p| self.deferred.contains(&p))
            }
            _ => false,
        }
    }
}
