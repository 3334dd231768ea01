//! gemmlowp's `RoundingDivideByPOT(x, e)` (division by `2^e`, round half away from zero) as
//! the OFM rounding of the operation computing `x` (decision L22).
//!
//! The frontends express it in IR operators (no TOSA rounding mode is symmetric):
//! ```text
//! y = SELECT(GREATER(0, x), SUB(0, r), r)   with   r = ARITHMETIC_RIGHT_SHIFT(ABS(x), e, round)
//! ```
//! i.e. `sign(x) * ((|x| + 2^(e-1)) >> e)`. The NPU's OFM rescale has this rounding: OFM_SCALE
//! (1, e) with `round_mode = symmetric` adds `2^(e-1)` (`2^(e-1) - 1` below zero) before the
//! arithmetic shift (TRM 3.6.6), which is the same value for every `x` whose `|x|` the IR can
//! form (`x != i32::MIN`). So when `x` is the exact product of a MUL of 8/16-bit operands
//! (never `i32::MIN`, never wrapped) and nothing else reads the intermediates, the five
//! operators fuse into the MUL.

use crate::Ctx;
use npuc_ir::{DType, Op, OpId, TensorId};

impl<'g> Ctx<'g> {
    /// The operator reading `t` as input `i`, if it is `t`'s only consumer.
    fn only_reader(&self, t: TensorId, i: usize) -> Option<OpId> {
        let c = self.sole_consumer(t)?;
        (self.node(c).inputs().get(i) == Some(&t)).then_some(c)
    }

    /// The rounding division after `x` (see the module documentation): its operators (the
    /// SELECT last) and `e`.
    pub(crate) fn rounding_divide(&self, x: TensorId) -> Option<(Vec<OpId>, u8)> {
        if self.g.outputs().contains(&x) || self.dtype(x) != DType::Int32 {
            return None;
        }
        let readers = self.g.consumers(x);
        if readers.len() != 2 {
            return None;
        }
        let zero = |t: TensorId| self.scalar_value(t) == Some(0);
        let (mut abs, mut neg) = (None, None);
        for &(c, _) in &readers {
            let n = self.node(c);
            match n.op {
                Op::Abs => abs = Some(c),
                Op::Greater if n.inputs()[1] == x && zero(n.inputs()[0]) => neg = Some(c),
                _ => return None,
            }
        }
        let (abs, neg) = (abs?, neg?);
        let a = self.node(abs).outputs()[0];
        let shr = self.only_reader(a, 0)?;
        let Op::ArithmeticRightShift(attrs) = &self.node(shr).op else {
            return None;
        };
        let e = self.scalar_value(self.node(shr).inputs()[1])?;
        if !attrs.round || !(1..=31).contains(&e) {
            return None;
        }
        let r = self.node(shr).outputs()[0];
        let r_readers = self.g.consumers(r);
        if r_readers.len() != 2 || self.g.outputs().contains(&r) {
            return None;
        }
        let sub = r_readers
            .iter()
            .map(|&(c, _)| c)
            .find(|&c| matches!(self.node(c).op, Op::Sub))?;
        let sn = self.node(sub);
        if sn.inputs()[1] != r || !zero(sn.inputs()[0]) {
            return None;
        }
        let select = self.only_reader(self.node(neg).outputs()[0], 0)?;
        let s = self.node(select);
        let ok = matches!(s.op, Op::Select)
            && s.inputs()[1] == sn.outputs()[0]
            && s.inputs()[2] == r
            && self.only_reader(sn.outputs()[0], 1) == Some(select)
            && r_readers.iter().all(|&(c, _)| c == sub || c == select)
            && self.dtype(s.outputs()[0]) == DType::Int32;
        ok.then(|| (vec![abs, shr, neg, sub, select], e as u8))
    }
}
