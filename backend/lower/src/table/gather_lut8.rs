//! GATHER from a constant table of 256 entries with a computed index (TFLite's int8 SOFTMAX
//! reads `exp` this way) as the NPU's 8-bit-index lookup table (TRM 3.6.7: `lut_s8_s32`
//! `out = lut[(acc + 128) & 255]`, and `lut_s8_s16` / `lut_s8_s8` for narrower tables).
//!
//! The index must provably lie in 0..=255 ([`Ctx::value_range`]); then the activation unit of
//! the operation computing it can look the table up. The index is followed back through
//! RESHAPEs and through additions of a constant `c` (deferred until here): the base value `v`
//! comes out of the activation as `acc`, so LUT entry `(v + 128) & 255` must hold
//! `table[v + c]`, i.e. `lut[p] = table[(p + c - 128) mod 256]` (the map is one-to-one on
//! the 256 possible values). The LUT fuses into the operation writing `v` when nothing else
//! reads `v`; otherwise a 1x1 max pool copies `v` through the LUT. Any other GATHER with
//! computed indices is a DMA gather ([`crate::data_movement::gather_dma`]).

use crate::table::activation_lut::Lut;
use crate::LowerError;
use crate::{unsupported, Ctx, NpuOp, View};
use npuc_backend::isa::ActivationFunction;
use npuc_ir::{DType, Op, OpId, OpNode, TensorId};

impl<'g> Ctx<'g> {
    /// The LUT mode and the entries of a GATHER from a constant `[1, 256, 1]` table.
    fn gather_table(&self, node: &OpNode) -> Option<(ActivationFunction, Vec<i64>)> {
        let v = node.inputs()[0];
        if self.dims(v) != [1, 256, 1] || self.dims(node.inputs()[1]).first() != Some(&1) {
            return None;
        }
        let f = match self.dtype(v) {
            DType::Int8 => ActivationFunction::LutS8S8,
            DType::Int16 => ActivationFunction::LutS8S16,
            DType::Int32 => ActivationFunction::LutS8S32,
            _ => return None,
        };
        Some((f, self.const_data(v)?.to_i64_vec()))
    }

    /// Whether `t` only feeds (through RESHAPEs) the index of a table GATHER.
    pub(crate) fn feeds_table_gather(&self, t: TensorId) -> bool {
        let mut t = t;
        loop {
            let Some(c) = self.sole_consumer(t) else {
                return false;
            };
            let n = self.node(c);
            match n.op {
                Op::Reshape(_) | Op::Identity => t = n.outputs()[0],
                Op::Gather => return n.inputs()[1] == t && self.gather_table(n).is_some(),
                _ => return false,
            }
        }
    }

    /// The constant added by a deferred ADD/SUB of a scalar: (other operand, signed offset).
    fn index_offset(&self, node: &OpNode) -> Option<(TensorId, i64)> {
        let [a, b] = [node.inputs()[0], node.inputs()[1]];
        match node.op {
            Op::Add => match (self.scalar_value(a), self.scalar_value(b)) {
                (None, Some(c)) => Some((a, c)),
                (Some(c), None) => Some((b, c)),
                _ => None,
            },
            Op::Sub => Some((a, -self.scalar_value(b)?)),
            _ => None,
        }
    }

    pub(crate) fn lower_gather_table(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Some((function, table)) = self.gather_table(node) else {
            return self.lower_gather_dma(o, vec![node.name.clone()]);
        };
        let y = node.outputs()[0];
        // Back from the index through RESHAPEs and deferred constant additions.
        let mut t = node.inputs()[1];
        let mut offset = 0i64;
        let mut chain = Vec::new();
        while let Some(p) = self.g.producer(t) {
            let pn = self.node(p);
            if self.sole_consumer(t).is_none() {
                break;
            }
            match pn.op {
                Op::Reshape(_) | Op::Identity => t = pn.inputs()[0],
                Op::Add | Op::Sub if self.deferred.contains(&p) => {
                    let Some((base, c)) = self.index_offset(pn) else {
                        break;
                    };
                    offset += c;
                    t = base;
                }
                _ => break,
            }
            chain.push(p);
        }
        let (lo, hi) = self.value_range(t);
        if lo + offset < 0 || hi + offset > 255 {
            return Err(unsupported(
                node,
                format!(
                    "the index is not provably within 0..=255 (range {}..={})",
                    lo + offset,
                    hi + offset
                ),
            ));
        }
        let esize = self.dtype(y).byte_size();
        let data: Vec<u8> = (0..256i64)
            .flat_map(|p| {
                let v = table[(p + offset - 128).rem_euclid(256) as usize];
                v.to_le_bytes()[..esize].to_vec()
            })
            .collect();
        let lut = Lut { function, data };
        let mut names: Vec<String> = chain
            .iter()
            .rev()
            .map(|&p| self.node(p).name.clone())
            .collect();
        names.push(node.name.clone());
        for &p in &chain {
            self.fused.insert(p);
        }
        self.materialize(t)?;
        if let Some(idx) = self.table_fusion_target(t, self.dtype(y)) {
            let buf = self.lowered.ops[idx].ofm.buffer;
            self.lowered.ops[idx].fused.extend(names);
            self.lowered.luts.insert(idx, lut);
            self.lowered.tensor_buffer.insert(y, buf);
            return Ok(());
        }
        // A 1x1 max pool copies the index through the LUT.
        let ifm = self.fm(node, t, false, 0)?;
        let mut ofm = self.ofm(node, y, false, 0)?;
        ofm.shape = ifm.shape;
        let idx = self.lowered.ops.len();
        self.push(NpuOp::copy(
            node.name.clone(),
            names,
            ifm,
            ofm,
            crate::elementwise::arith::NO_CLIP,
        ));
        self.lowered.luts.insert(idx, lut);
        Ok(())
    }

    /// The NPU operation whose output `t` is, if the table lookup can be added to it: it
    /// writes `t` itself (dense, `out`-sized elements, zero point 0), has no LUT yet, and
    /// nothing else reads `t`.
    fn table_fusion_target(&self, t: TensorId, out: DType) -> Option<usize> {
        self.sole_consumer(t)?;
        let p = self.node(self.g.producer(t)?);
        let buf = *self.lowered.tensor_buffer.get(&t)?;
        let idx = self.lowered.buffers[buf].producer?;
        let op = &self.lowered.ops[idx];
        (op.ofm.buffer == buf
            && op.ofm.view == View::default()
            && op.ofm.dtype == out
            && op.ofm.zero_point == 0
            && op.fused.last() == Some(&p.name)
            && !self.lowered.luts.contains_key(&idx))
        .then_some(idx)
    }
}
