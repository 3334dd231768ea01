//! A GATHER from a constant table indexed by a rescaled 8/16-bit tensor as one NPU operation
//! with a 16-bit LUT (decision L15).
//!
//! The frontends lower 16-bit unary functions that no TOSA operator expresses exactly
//! (TFLite's int16 TANH/LOGISTIC, and 513-entry tables whose slopes leave `i16`) to
//! ```text
//! v = RESCALE(x -> i32, M, S) [-> CLAMP(lo, hi)] -> ADD(-lo) [-> RESHAPE]* -> GATHER(T)
//! ```
//! i.e. `y = T[clamp(v) - lo]` with an `i16` table `T`. The NPU computes `v` in the OFM
//! rescale of a 1x1 POOL(SUM) (same multiplier, shift and rounding), and looks the result up
//! in one of the 16-bit LUT modes (`lut_s16_s16`, `lut_tanh`, `lut_sigmoid`), whose
//! interpolating tables are fitted to the function `v -> y` ([`crate::table::lut16::fit`]). The
//! first mode whose table reproduces the graph for every value of `x` is used (checked
//! against the reference interpreter, [`Ctx::verify_unary`]); if none does, the operators
//! before the GATHER are lowered as they are (the index computed as an i32 feature map) and
//! the GATHER becomes a DMA gather from the table ([`crate::data_movement::gather_dma`]).

use crate::table::activation_lut::{pass_through, Lut};
use crate::table::lut16::{fit, input_range, simulate};
use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, Requant};
use npuc_backend::isa::ActivationFunction;
use npuc_codecs::arith::rounded_shift_right;
use npuc_ir::{DType, Op, OpId, TensorId};

/// The operators of a table lookup, input to GATHER.
pub(crate) struct Lookup {
    /// The 8/16-bit input.
    x: TensorId,
    /// The RESCALE of `x`.
    rescale: OpId,
    /// All operators after `x` up to the GATHER, in order (the GATHER last).
    ops: Vec<OpId>,
}

impl<'g> Ctx<'g> {
    /// The lookup whose GATHER is `o`, if `o` is one.
    pub(crate) fn lookup(&self, o: OpId) -> Option<Lookup> {
        let node = self.node(o);
        if !matches!(node.op, Op::Gather) {
            return None;
        }
        let values = node.inputs()[0];
        let table = self.folded_const(values)?;
        if table.dtype() != DType::Int16 || self.dims(values) != [1, table.len(), 1] {
            return None;
        }
        let mut ops = vec![o];
        let mut t = node.inputs()[1];
        // The index: RESHAPEs of ADD(v, constant) (either order).
        let (p, pn) = loop {
            let (p, pn) = self.fusable_producer(t)?;
            if !matches!(pn.op, Op::Reshape(_) | Op::Identity) {
                break (p, pn);
            }
            ops.push(p);
            t = pn.inputs()[0];
        };
        if !matches!(pn.op, Op::Add) {
            return None;
        }
        ops.push(p);
        let [a, b] = [pn.inputs()[0], pn.inputs()[1]];
        let scalar = |t: TensorId| self.folded_const(t).is_some_and(|d| d.len() == 1);
        t = match (scalar(a), scalar(b)) {
            (false, true) => a,
            (true, false) => b,
            _ => return None,
        };
        let (mut p, mut pn) = self.fusable_producer(t)?;
        if matches!(pn.op, Op::Clamp(_)) {
            ops.push(p);
            (p, pn) = self.fusable_producer(pn.inputs()[0])?;
        }
        let Op::Rescale(r) = &pn.op else {
            return None;
        };
        let x = pn.inputs()[0];
        if r.multiplier.len() != 1
            || self.is_constant(x)
            || !matches!(self.dtype(x), DType::Int8 | DType::Int16)
        {
            return None;
        }
        ops.push(p);
        ops.reverse();
        Some(Lookup { x, rescale: p, ops })
    }

    /// Marks the operators before every lookup's GATHER as fused (they are lowered with it).
    pub(crate) fn prefuse_lookups(&mut self, order: &[OpId]) {
        for &o in order {
            if let Some(l) = self.lookup(o) {
                self.fused.extend(&l.ops[..l.ops.len() - 1]);
            }
        }
    }

    pub(crate) fn lower_lookup(&mut self, o: OpId) -> Result<(), LowerError> {
        let l = self.lookup(o).expect("a lookup");
        let node = self.node(o);
        let rnode = self.node(l.rescale);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!("lookup without RESCALE")
        };
        if r.multiplier[0] < 0 || !(0..=63).contains(&r.shift[0]) || r.input_unsigned {
            return Err(unsupported(rnode, "multiplier/shift out of range"));
        }
        let y = node.outputs()[0];
        let ifm = self.fm_flat(rnode, l.x, r.input_zp)?;
        if self.dtype(l.x) == DType::Int16 && r.input_zp != 0 {
            return Err(unsupported(rnode, "i16 input with a nonzero zero point"));
        }
        let elements = self.g.tensor(y).and_then(|t| t.ty.shape.num_elements());
        let (h, w, c) = ifm.shape;
        if elements != Some(h as usize * w as usize * c as usize) {
            return Err(unsupported(
                node,
                "a table lookup that changes the element count",
            ));
        }
        let mut op = pass_through(
            node,
            ifm,
            Fm {
                dtype: DType::Int16,
                ..ifm
            },
            (-32768, 32767),
        );
        op.requant = Requant::Global {
            scale: r.multiplier[0] as u32,
            shift: r.shift[0] as u8,
        };
        op.round = rescale_round(r);
        op.ofm.zero_point = r.output_zp;
        op.fused = l.ops.iter().map(|&o| self.node(o).name.clone()).collect();
        let (domain, want) = self
            .eval_unary(l.x, &l.ops, y)
            .map_err(|e| unsupported(node, e))?;
        let mut found = None;
        for function in [
            ActivationFunction::LutS16S16,
            ActivationFunction::LutTanh,
            ActivationFunction::LutSigmoid,
        ] {
            // The LUT input for each x: the rescaled value plus the OFM zero point (as int32),
            // clamped to the mode's range.
            let (lo, hi) = input_range(function);
            let samples = domain
                .iter()
                .zip(&want)
                .map(|(&x, &y)| {
                    let v = rounded_shift_right(
                        i128::from(x - ifm.zero_point) * i128::from(r.multiplier[0]),
                        r.shift[0] as u32,
                        op.round,
                        0,
                    )
                    .ok()?;
                    let v = i64::from((v as i64).wrapping_add(op.ofm.zero_point) as i32);
                    Some((v.clamp(lo, hi), y))
                })
                .collect::<Option<Vec<_>>>();
            let Some(data) = samples.and_then(|s| fit(function, &s)) else {
                continue;
            };
            let lut = Lut { function, data };
            let exact = domain
                .iter()
                .zip(&want)
                .all(|(&x, &y)| simulate(&op, Some(&lut), x) == Ok(y));
            if exact {
                found = Some(lut);
                break;
            }
        }
        let Some(lut) = found else {
            return self.lower_lookup_dma(o, &l);
        };
        let idx = self.lowered.ops.len();
        op.ofm.buffer = self.new_buffer(y, Some(idx));
        self.push(op);
        self.lowered.luts.insert(idx, lut);
        Ok(())
    }
}

impl<'g> Ctx<'g> {
    /// A lookup no LUT mode reproduces: its index operators on their own, then a DMA gather.
    fn lower_lookup_dma(&mut self, o: OpId, l: &Lookup) -> Result<(), LowerError> {
        let (gather, index) = l.ops.split_last().expect("the GATHER");
        for &p in index {
            self.fused.remove(&p);
            let pn = self.node(p);
            match pn.op {
                // Folded by its reader (the index ADD) where it can.
                Op::Rescale(_) if self.dtype(pn.outputs()[0]) == DType::Int32 => {
                    self.deferred.insert(p);
                }
                Op::Rescale(_) => self.lower_rescale(p)?,
                Op::Clamp(_) => {
                    self.materialize(pn.inputs()[0])?;
                    self.lower_clamp_i32(p)?;
                }
                Op::Add => self.lower_elementwise(p)?,
                _ => {
                    // RESHAPE / IDENTITY: an alias.
                    let x = pn.inputs()[0];
                    self.materialize(x)?;
                    let buf = self.input_buffer(pn, x)?;
                    self.lowered.tensor_buffer.insert(pn.outputs()[0], buf);
                }
            }
        }
        let name = self.node(*gather).name.clone();
        self.lower_gather_dma(o, vec![name])
    }
}
