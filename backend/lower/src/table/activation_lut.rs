//! TABLE as the NPU's lookup-table activation (TRM 2.6.2, 3.6.7 `activation`).
//!
//! The activation unit looks the final value of any operation up in a table held in the
//! internal LUT RAM, after the OFM zero point and the activation clamp:
//! `lut_s8_s8: out = lut[table*256 + ((acc + 128) & 0xff)]`, which is exactly the IR's
//! 8-bit `TABLE` (`out = table[in + 128]`). The IR's 16-bit TABLE (TOSA's 513 entries,
//! `i16` -> `i32`, 7 bits of interpolation) is `lut_s16_s32` (see [`crate::table::lut16`]); followed
//! by a RESCALE that rounds the 7 fraction bits away (TFLite's int16 `LUTLookup`), the pair
//! is `lut_s16_s16`, whenever that reproduces the RESCALE for every input. So a TABLE
//! * fuses into the NPU operation producing its input when that output feeds only the TABLE
//!   (the producer's clamp then acts before the lookup, as in the graph), otherwise
//! * becomes a pass-through 1x1 POOL(SUM) with unit scale and zero points 0 and the LUT.
//!
//! The table bytes go to the read-only region; emit loads them into the LUT RAM with a DMA
//! before the operation (see `emit::lut`).

use crate::table::lut16::table513;
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, View};
use npuc_backend::isa::{ActivationFunction, PoolingMode};
use npuc_ir::{DType, Op, OpId, OpNode, TableData, TensorId};

/// A pass-through 1x1 POOL(SUM) from `ifm` to `ofm`: unit scale, zero points as given, the
/// activation clamp `act` (the LUT input range).
pub(crate) fn pass_through(node: &OpNode, ifm: Fm, ofm: Fm, act: (i64, i64)) -> NpuOp {
    NpuOp::pool(
        PoolingMode::Sum,
        node.name.clone(),
        vec![node.name.clone()],
        ifm,
        ofm,
        act,
    )
}

/// A lookup table applied by the activation unit of one NPU operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lut {
    /// The LUT mode (`lut_s8_s8` for the 8-bit TABLE, a 16-bit mode otherwise).
    pub function: ActivationFunction,
    /// The table as it is copied into the LUT RAM (256 bytes for `lut_s8_s8`, 2048 bytes
    /// of base/slope pairs for the 16-bit modes).
    pub data: Vec<u8>,
}

impl<'g> Ctx<'g> {
    pub(crate) fn lower_table(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Table(attrs) = &node.op else {
            unreachable!("lower_table on another op")
        };
        let x = node.inputs()[0];
        let y = node.outputs()[0];
        let table = match &attrs.table {
            TableData::I8(table) => table,
            TableData::I16(table) => return self.lower_table16(o, table),
        };
        if table.len() != 256 || self.dtype(x) != DType::Int8 || self.dtype(y) != DType::Int8 {
            return Err(unsupported(node, "only i8 -> i8 tables of 256 entries"));
        }
        let lut = Lut {
            function: ActivationFunction::LutS8S8,
            data: table.iter().map(|&v| v as u8).collect(),
        };
        if let Some(idx) = self.lut_fusion_target(x) {
            let buf = self.lowered.ops[idx].ofm.buffer;
            self.lowered.ops[idx].fused.push(node.name.clone());
            self.lowered.luts.insert(idx, lut);
            self.lowered.tensor_buffer.insert(y, buf);
            return Ok(());
        }
        let ifm = self.fm_flat(node, x, 0)?;
        let ofm = self.ofm_flat(node, y, 0)?;
        if ifm.shape != ofm.shape {
            return Err(LowerError::Graph(format!(
                "{}: TABLE changes the shape",
                node.name
            )));
        }
        let idx = self.lowered.ops.len();
        self.push(pass_through(node, ifm, ofm, (-128, 127)));
        self.lowered.luts.insert(idx, lut);
        Ok(())
    }

    /// A 16-bit TABLE (with the RESCALE after it when that makes it `lut_s16_s16`).
    fn lower_table16(&mut self, o: OpId, table: &[i16]) -> Result<(), LowerError> {
        let node = self.node(o);
        let (x, y) = (node.inputs()[0], node.outputs()[0]);
        if table.len() != 513 || self.dtype(x) != DType::Int16 || self.dtype(y) != DType::Int32 {
            return Err(unsupported(node, "only i16 -> i32 tables of 513 entries"));
        }
        let data = table513(table).map_err(|i| {
            unsupported(
                node,
                format!(
                    "the slope between entries {i} and {} does not fit i16 (TABLE is undefined there)",
                    i + 1
                ),
            )
        })?;
        let ifm = self.fm_flat(node, x, 0)?;
        let template = |dtype| pass_through(node, ifm, Fm { dtype, ..ifm }, (-32768, 32767));
        let mut chosen = None;
        if let Some(c) = self.sole_consumer(y) {
            let cn = self.node(c);
            let out = cn.outputs()[0];
            let dt = self.dtype(out);
            if matches!(cn.op, Op::Rescale(_)) && matches!(dt, DType::Int16 | DType::Int32) {
                let lut = Lut {
                    function: ActivationFunction::LutS16S16,
                    data: data.clone(),
                };
                let op = template(dt);
                if self
                    .verify_unary(node, x, &[o, c], out, &op, Some(&lut))
                    .is_ok()
                {
                    chosen = Some((lut, out, vec![node.name.clone(), cn.name.clone()], Some(c)));
                }
            }
        }
        let (lut, out, names, rescale) = match chosen {
            Some(c) => c,
            None => {
                let lut = Lut {
                    function: ActivationFunction::LutS16S32,
                    data,
                };
                self.verify_unary(node, x, &[o], y, &template(DType::Int32), Some(&lut))?;
                (lut, y, vec![node.name.clone()], None)
            }
        };
        if let Some(c) = rescale {
            self.fused.insert(c);
        }
        let dt = self.dtype(out);
        // The 16-bit LUT indexes with the accumulator after the activation clamp, before the
        // OFM write (TRM 3.6.7): fused, it sees the producer's value only where that clamp
        // keeps it inside i16. A producer that narrows by truncation (a fused CAST, clip range
        // none) would index with the unwrapped 32-bit value.
        let within_i16 = |idx: &usize| {
            let act = self.lowered.ops[*idx].act;
            act.0 >= -32768 && act.1 <= 32767
        };
        if let Some(idx) = self.lut_fusion_target(x).filter(within_i16) {
            let buf = self.lowered.ops[idx].ofm.buffer;
            let op = &mut self.lowered.ops[idx];
            op.fused.extend(names);
            op.ofm.dtype = dt;
            let elements = self.lowered.buffers[buf].size / 2;
            self.lowered.buffers[buf].size = elements * dt.byte_size() as u64;
            self.lowered.luts.insert(idx, lut);
            self.lowered.tensor_buffer.insert(out, buf);
            return Ok(());
        }
        let shape = self.flat_hwc(node, out)?;
        if shape != ifm.shape {
            return Err(LowerError::Graph(format!(
                "{}: TABLE changes the shape",
                node.name
            )));
        }
        let idx = self.lowered.ops.len();
        let buffer = self.new_buffer(out, Some(idx));
        let mut op = template(dt);
        op.ofm.buffer = buffer;
        op.fused = names;
        self.push(op);
        self.lowered.luts.insert(idx, lut);
        Ok(())
    }

    /// The NPU operation a LUT on `t` can be fused into: the operation writing `t` directly
    /// (not through an alias, not into a window of another buffer), no LUT yet, and `t` read
    /// by nothing else.
    fn lut_fusion_target(&self, t: TensorId) -> Option<usize> {
        self.sole_consumer(t)?;
        let p = self.node(self.g.producer(t)?);
        if matches!(p.op, Op::Reshape(_) | Op::Identity) {
            return None;
        }
        let buf = *self.lowered.tensor_buffer.get(&t)?;
        let idx = self.lowered.buffers[buf].producer?;
        let op = &self.lowered.ops[idx];
        (op.ofm.buffer == buf
            && op.ofm.dtype == self.dtype(t)
            && op.ofm.view == View::default()
            && op.fused.contains(&p.name)
            && !self.lowered.luts.contains_key(&idx))
        .then_some(idx)
    }
}
