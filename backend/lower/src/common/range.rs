//! Value ranges of integer tensors, for lowerings whose correctness needs a bound (a table
//! GATHER needs its index in 0..=255).
//!
//! Interval arithmetic over the IR graph: constants give their extremes, exact widenings
//! shift the input range, ADD/SUB add and subtract intervals, CLAMP/MAXIMUM/MINIMUM and
//! reductions bound as they compute, RESHAPE/IDENTITY pass through; anything else has the
//! range of its element type. One relation is known beyond intervals (and matched explicitly,
//! as TFLite's and TOSA's softmax compute it): `a - b` where `b` is the maximum of `a` over
//! one axis, broadcast back along that axis, is at most 0 (and at least `lo(a) - hi(a)`);
//! `a` and `b` may each be the same exact widening of the reduced tensor and of its maximum.

use crate::Ctx;
use npuc_ir::{DType, Op, OpId, TensorId};

/// Deepest producer chain followed (beyond it: the type's range).
const DEPTH: u32 = 24;

impl<'g> Ctx<'g> {
    /// The values `t` can hold, inclusive.
    pub(crate) fn value_range(&self, t: TensorId) -> (i64, i64) {
        self.range_at(t, DEPTH)
    }

    fn range_at(&self, t: TensorId, depth: u32) -> (i64, i64) {
        let dt = self.dtype(t);
        let full = (dt.min_value(), dt.max_value());
        let clip = |(lo, hi): (i64, i64)| (lo.max(full.0), hi.min(full.1));
        if let Some(d) = self.const_data(t) {
            let v = d.to_i64_vec();
            return match (v.iter().min(), v.iter().max()) {
                (Some(&lo), Some(&hi)) => (lo, hi),
                _ => full,
            };
        }
        let Some(p) = self.g.producer(t) else {
            return full;
        };
        if depth == 0 {
            return full;
        }
        let node = self.node(p);
        let ins = node.inputs();
        let r = |i: usize| self.range_at(ins[i], depth - 1);
        match &node.op {
            Op::Reshape(_) | Op::Identity => r(0),
            Op::Rescale(_) => match self.exact_widening(p) {
                Some((zp, k)) => {
                    let (lo, hi) = r(0);
                    clip(((lo - zp) << k, (hi - zp) << k))
                }
                None => full,
            },
            Op::Add => {
                let (a, b) = (r(0), r(1));
                clip((a.0 + b.0, a.1 + b.1))
            }
            Op::Sub => {
                let a = r(0);
                if self.is_max_of(ins[1], ins[0], t) {
                    return clip((a.0 - a.1, 0));
                }
                let b = r(1);
                clip((a.0 - b.1, a.1 - b.0))
            }
            Op::Clamp(c) => {
                let a = r(0);
                clip((a.0.max(c.min), a.1.min(c.max)))
            }
            Op::Maximum => {
                let (a, b) = (r(0), r(1));
                (a.0.max(b.0), a.1.max(b.1))
            }
            Op::Minimum => {
                let (a, b) = (r(0), r(1));
                (a.0.min(b.0), a.1.min(b.1))
            }
            Op::ReduceMax(_) | Op::ReduceMin(_) => r(0),
            // Data movement keeps the values.
            Op::Tile(_) | Op::Transpose(_) | Op::Reverse(_) | Op::Slice(_) | Op::Concat(_) => {
                (0..ins.len()).map(r).fold((i64::MAX, i64::MIN), |acc, x| {
                    (acc.0.min(x.0), acc.1.max(x.1))
                })
            }
            _ => full,
        }
    }

    /// `(zp, k)` if RESCALE `o` computes `(x - zp) << k` of an i8/i16 `x` exactly.
    fn exact_widening(&self, o: OpId) -> Option<(i64, u8)> {
        let node = self.node(o);
        let Op::Rescale(r) = &node.op else {
            return None;
        };
        let m = *r.multiplier.first()?;
        let j = m.trailing_zeros() as i8;
        let exact = r.multiplier.len() == 1
            && m > 0
            && m.count_ones() == 1
            && j >= r.shift[0]
            && r.output_zp == 0
            && !r.input_unsigned
            && matches!(self.dtype(node.inputs()[0]), DType::Int8 | DType::Int16);
        exact.then(|| (r.input_zp, (j - r.shift[0]) as u8))
    }

    /// Whether `b` is the maximum of `a` over one axis, broadcast back along it in `out`:
    /// `b = REDUCE_MAX(x)` and `a = x`, or `b = W(REDUCE_MAX(x))` and `a = W(x)` for the same
    /// exact widening `W`.
    fn is_max_of(&self, b: TensorId, a: TensorId, out: TensorId) -> bool {
        let producer = |t: TensorId| self.g.producer(t).map(|p| (p, self.node(p)));
        let (mut b0, mut a0) = (b, a);
        if let (Some((pb, nb)), Some((pa, na))) = (producer(b), producer(a)) {
            if let (Op::Rescale(rb), Op::Rescale(ra)) = (&nb.op, &na.op) {
                if rb != ra
                    || self.exact_widening(pb).is_none()
                    || self.exact_widening(pa).is_none()
                {
                    return false;
                }
                b0 = nb.inputs()[0];
                a0 = na.inputs()[0];
            }
        }
        let Some((_, nm)) = producer(b0) else {
            return false;
        };
        let Op::ReduceMax(ax) = &nm.op else {
            return false;
        };
        if nm.inputs()[0] != a0 {
            return false;
        }
        // a has the output's shape; b only differs from it along the reduced axis.
        let (da, db, dout) = (self.dims(a), self.dims(b), self.dims(out));
        da == dout
            && db.len() == da.len()
            && (0..da.len()).all(|i| {
                if i == ax.axis {
                    db[i] == 1
                } else {
                    db[i] == da[i]
                }
            })
    }
}
