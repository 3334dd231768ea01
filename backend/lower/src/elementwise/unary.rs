//! ABS and leaky ReLU as the NPU's unary ELEMENTWISE modes (TRM 3.10.6 `abs`, `lrelu`).
//!
//! * `[RESCALE to i32 (exact widening)] -> ABS -> RESCALE(M, S) [-> CLAMP]`: `abs` computes
//!   `|scale_a(a)|` on the IFM element `a` (zero point subtracted), so IFM_SCALE is the
//!   identity and the RESCALE is OFM_SCALE (TFLite's int16 ABS; Vela programs the same).
//! * `SELECT(GREATER_EQUAL(x, c), RESCALE_a(x), RESCALE_b(x))`: `lrelu` computes
//!   `a >= 0 ? scale_a(a) : scale_b(a)`, so RESCALE_a is IFM_SCALE, RESCALE_b IFM2_SCALE
//!   (with IFM2_PRECISION programmed like the IFM's, as `scale_b` reads it), OFM_SCALE the
//!   identity (TFLite's int16 LEAKY_RELU).
//!
//! Both are checked against the reference interpreter for every input value
//! ([`Ctx::verify_unary`]); an operator whose values differ anywhere is refused.

use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, InputScale, NpuOp, Requant};
use npuc_backend::isa::{AccFormat, ElementwiseMode, RoundModeIfm};
use npuc_ir::{DType, Op, OpId, RescaleAttrs, RescaleRounding, TensorId};

/// An input scale from a per-tensor RESCALE's multiplier and shift.
fn input_scale(r: &RescaleAttrs) -> InputScale {
    InputScale {
        scale: r.multiplier[0] as u32,
        shift: r.shift[0] as u8,
        dbl_rnd: 0,
        round: if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
            RoundModeIfm::DoubleSymmetric
        } else {
            RoundModeIfm::Natural
        },
    }
}

/// A RESCALE the scaling unit can take: one multiplier, shift 0..=63, signed.
fn simple_rescale(r: &RescaleAttrs) -> bool {
    r.multiplier.len() == 1
        && r.multiplier[0] >= 0
        && (0..=63).contains(&r.shift[0])
        && !r.input_unsigned
        && !r.output_unsigned
}

/// The operators of a leaky ReLU whose SELECT is `o`.
struct Lrelu {
    x: TensorId,
    cmp: OpId,
    pos: OpId,
    neg: OpId,
}

impl<'g> Ctx<'g> {
    fn lrelu(&self, o: OpId) -> Option<Lrelu> {
        let node = self.node(o);
        if !matches!(node.op, Op::Select) {
            return None;
        }
        let [c, a, b] = [node.inputs()[0], node.inputs()[1], node.inputs()[2]];
        let (cmp, cn) = self.fusable_producer(c)?;
        let (pos, an) = self.fusable_producer(a)?;
        let (neg, bn) = self.fusable_producer(b)?;
        let x = an.inputs()[0];
        let (Op::Rescale(ra), Op::Rescale(rb)) = (&an.op, &bn.op) else {
            return None;
        };
        let same = bn.inputs()[0] == x
            && simple_rescale(ra)
            && simple_rescale(rb)
            && ra.input_zp == rb.input_zp
            && ra.output_zp == rb.output_zp
            && ra.output_dtype == rb.output_dtype;
        let compares_x = matches!(cn.op, Op::GreaterEqual)
            && cn.inputs()[0] == x
            && self
                .folded_const(cn.inputs()[1])
                .is_some_and(|d| d.len() == 1);
        let input = matches!(self.dtype(x), DType::Int8 | DType::Int16) && !self.is_constant(x);
        (same && compares_x && input).then_some(Lrelu { x, cmp, pos, neg })
    }

    /// Marks the comparison and the RESCALEs of every leaky ReLU as fused (lowered with its
    /// SELECT).
    pub(crate) fn prefuse_lrelu(&mut self, order: &[OpId]) {
        for &o in order {
            if let Some(l) = self.lrelu(o) {
                self.fused.extend([l.cmp, l.pos, l.neg]);
            }
        }
    }

    /// True if the SELECT `o` is a leaky ReLU.
    pub(crate) fn is_lrelu(&self, o: OpId) -> bool {
        self.lrelu(o).is_some()
    }

    pub(crate) fn lower_lrelu(&mut self, o: OpId) -> Result<(), LowerError> {
        let l = self.lrelu(o).expect("a leaky ReLU");
        let node = self.node(o);
        let (Op::Rescale(ra), Op::Rescale(rb)) = (&self.node(l.pos).op, &self.node(l.neg).op)
        else {
            unreachable!("leaky ReLU without RESCALEs")
        };
        let mut names: Vec<String> = [l.cmp, l.pos, l.neg, o]
            .iter()
            .map(|&p| self.node(p).name.clone())
            .collect();
        let (out, act) = self.fuse_clamp(node.outputs()[0], &mut names);
        let mut ops = vec![l.cmp, l.pos, l.neg, o];
        if out != node.outputs()[0] {
            ops.push(self.g.producer(out).expect("CLAMP"));
        }
        let ifm = self.fm_flat(node, l.x, ra.input_zp)?;
        if ifm.dtype == DType::Int16 && ra.input_zp != 0 {
            return Err(unsupported(node, "i16 input with a nonzero zero point"));
        }
        let ofm = self.ofm_flat(node, out, ra.output_zp)?;
        let op = NpuOp::elementwise(
            ElementwiseMode::Lrelu,
            node.name.clone(),
            names,
            ifm,
            ofm,
            act,
        )
        .with_ifm_scale(input_scale(ra))
        .with_ifm2_scale(input_scale(rb))
        .with_acc(unary_acc(&ifm));
        let verified = self.verify_unary(node, l.x, &ops, out, &op, None);
        if let Err(e) = verified {
            self.discard_ofm(out);
            return Err(e);
        }
        self.push(op);
        Ok(())
    }

    /// Whether ABS `o` has the form [`Ctx::lower_abs`] takes: an i8/i16 tensor (or an exact
    /// widening of one) in, one RESCALE out; any other ABS is a general elementwise one.
    pub(crate) fn is_narrow_abs(&self, o: OpId) -> bool {
        let node = self.node(o);
        let w = node.inputs()[0];
        let narrow = self.widen(w).is_some() || matches!(self.dtype(w), DType::Int8 | DType::Int16);
        let rescale = self
            .sole_consumer(node.outputs()[0])
            .is_some_and(|c| matches!(self.node(c).op, Op::Rescale(_)));
        narrow && rescale
    }

    pub(crate) fn lower_abs(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let w = node.inputs()[0];
        let mut names = Vec::new();
        let mut ops = Vec::new();
        let (x, zp) = match self.widen(w) {
            Some((p, x, zp)) => {
                self.fused.insert(p);
                names.push(self.node(p).name.clone());
                ops.push(p);
                (x, zp)
            }
            None if matches!(self.dtype(w), DType::Int8 | DType::Int16) => (w, 0),
            None => {
                return Err(unsupported(
                    node,
                    "ABS of an i8/i16 tensor or of an exact widening of one",
                ))
            }
        };
        names.push(node.name.clone());
        ops.push(o);
        let rescale = self
            .sole_consumer(node.outputs()[0])
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "ABS must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        if !simple_rescale(r) {
            return Err(unsupported(rnode, "a per-channel RESCALE after ABS"));
        }
        self.fused.insert(rescale);
        names.push(rnode.name.clone());
        ops.push(rescale);
        let (out, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);
        if out != rnode.outputs()[0] {
            ops.push(self.g.producer(out).expect("CLAMP"));
        }
        let ifm = self.fm_flat(node, x, zp)?;
        if ifm.dtype == DType::Int16 && zp != 0 {
            return Err(unsupported(node, "i16 input with a nonzero zero point"));
        }
        let ofm = self.ofm_flat(node, out, r.output_zp)?;
        let op = NpuOp::elementwise(
            ElementwiseMode::Abs,
            rnode.name.clone(),
            names,
            ifm,
            ofm,
            act,
        )
        .with_requant(Requant::Global {
            scale: r.multiplier[0] as u32,
            shift: r.shift[0] as u8,
        })
        .with_round(rescale_round(r))
        .with_ifm_scale(InputScale {
            scale: 1,
            shift: 0,
            dbl_rnd: 0,
            round: RoundModeIfm::DoubleSymmetric,
        })
        .with_acc(unary_acc(&ifm));
        let verified = self.verify_unary(node, x, &ops, out, &op, None);
        if let Err(e) = verified {
            self.discard_ofm(out);
            return Err(e);
        }
        self.push(op);
        Ok(())
    }

    /// Forgets the OFM buffer of an operation that is not pushed after all.
    fn discard_ofm(&mut self, t: TensorId) {
        if let Some(b) = self.lowered.tensor_buffer.remove(&t) {
            if b + 1 == self.lowered.buffers.len() {
                self.lowered.buffers.pop();
            }
        }
    }
}

/// The accumulator format of a unary elementwise operation (`i48` for 16-bit inputs, as
/// Vela programs; the elementwise result does not depend on it).
fn unary_acc(ifm: &Fm) -> AccFormat {
    if ifm.dtype == DType::Int16 {
        AccFormat::I48
    } else {
        AccFormat::I32
    }
}
