//! TABLE as the NPU's lookup-table activation (TRM 2.6.2, 3.6.7 `activation`).
//!
//! The activation unit looks the final value of any operation up in a table held in the
//! internal LUT RAM, after the OFM zero point and the activation clamp:
//! `lut_s8_s8: out = lut[table*256 + ((acc + 128) & 0xff)]`, which is exactly the IR's
//! 8-bit `TABLE` (`out = table[in + 128]`). So a TABLE
//! * fuses into the NPU operation producing its input when that output feeds only the TABLE
//!   (the producer's clamp then acts before the lookup, as in the graph), otherwise
//! * becomes a pass-through 1x1 POOL(SUM) with unit scale and zero points 0 and the LUT.
//!
//! The table bytes go to the read-only region; emit loads them into the LUT RAM with a DMA
//! before the operation (see `emit::lut`).

use super::*;
use npuc_backend::isa::ActivationFunction;
use npuc_ir::TableData;

/// A lookup table applied by the activation unit of one NPU operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lut {
    /// The LUT mode (`lut_s8_s8` for the 8-bit TABLE).
    pub function: ActivationFunction,
    /// The table as it is copied into the LUT RAM (256 bytes for `lut_s8_s8`).
    pub data: Vec<u8>,
}

impl<'g> Ctx<'g> {
    pub(super) fn lower_table(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let Op::Table(attrs) = &node.op else {
            unreachable!("lower_table on another op")
        };
        let x = node.inputs()[0];
        let y = node.outputs()[0];
        let TableData::I8(table) = &attrs.table else {
            return Err(unsupported(node, "16-bit tables (only i8 so far)"));
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
        let ifm = self.fm(node, x, false, 0)?;
        let ofm = self.ofm(node, y, false, 0)?;
        if ifm.shape != ofm.shape {
            return Err(CompileError::Graph(format!(
                "{}: TABLE changes the shape",
                node.name
            )));
        }
        let idx = self.lowered.ops.len();
        self.push(NpuOp {
            name: node.name.clone(),
            fused: vec![node.name.clone()],
            kernel: Kernel::Pool(PoolingMode::Sum),
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (1, 1),
            stride: (1, 1),
            dilation: (1, 1),
            pad: [0; 4],
            weights: None,
            requant: Requant::Global { scale: 1, shift: 0 },
            round: RoundModeOfm::Natural,
            ifm_scale: None,
            ifm2_scale: None,
            act: (-128, 127),
            acc: AccFormat::I32,
            upscale: IfmUpscaleMode::None,
        });
        self.lowered.luts.insert(idx, lut);
        Ok(())
    }

    /// The NPU operation a LUT on `t` can be fused into: the operation writing `t` directly
    /// (not through an alias), with an i8 OFM, no LUT yet, and `t` read by nothing else.
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
            && op.ofm.dtype == DType::Int8
            && op.fused.contains(&p.name)
            && !self.lowered.luts.contains_key(&idx))
        .then_some(idx)
    }
}
