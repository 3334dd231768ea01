//! SCATTER as DMA copies (TRM 3.10.4 NPU_OP_DMA_START, destination index mode).
//!
//! `out = values_in` with row `indices[b][j]` of batch `b` replaced by row `j` of `input`
//! (rows of `C` elements): one DMA copies `values_in` into the output (skipped when constant
//! indices replace every row), a second one copies the `N x W` input rows with the
//! destination index mode: element `x` of row `y` of the transfer goes to
//! `dst + y * K*C*esize + indices[y][x] * C*esize`, and an index outside `0..=K-1` is skipped
//! by the hardware (the IR leaves such an index, like a repeated one, undefined; constant
//! indices are checked at compile time). The indices may be constants (region 0) or a
//! feature map; any element type moves as bytes (decision L14).

use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, View};
use npuc_ir::{DType, OpId, OpNode, TensorData, TensorId};

/// One NPU_OP_DMA_START: `size1` rows of `size0` transfers of `len` bytes each, source and
/// destination stepping by `stride.0` per transfer and `stride.1` per row (decision #13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaCopy {
    /// Bytes per transfer (DMA0_LEN).
    pub len: u64,
    /// Transfers per row (DMA0_SIZE0) and rows (DMA0_SIZE1).
    pub size0: u32,
    pub size1: u32,
    /// Source byte steps per transfer and per row.
    pub src_stride: (i64, i64),
    /// Destination byte steps per transfer and per row.
    pub dst_stride: (i64, i64),
    /// Index mode (destination: SCATTER, source: GATHER) with the largest valid index
    /// (IDX_MAX); the i32 indices are the operation's IFM2, one per transfer, rows contiguous.
    pub index: Option<DmaIndex>,
}

/// Which end of a DMA the indices address, and the largest valid index (IDX_MAX): an index
/// outside `0..=max` skips its transfer (TRM 3.10.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaIndex {
    /// Destination index mode: transfer `x` goes to `dst + idx[x] * dst_stride.0`.
    Scatter(u32),
    /// Source index mode: transfer `x` comes from `src + idx[x] * src_stride.0`.
    Gather(u32),
}

impl DmaCopy {
    /// Bytes moved (at most).
    pub fn bytes(&self) -> u64 {
        self.len * u64::from(self.size0) * u64::from(self.size1)
    }
}

/// A byte window of a buffer for a DMA operation.
pub(crate) fn bytes_fm(buffer: usize, size: u64) -> Fm {
    Fm {
        buffer,
        shape: (1, 1, size.clamp(1, u64::from(u32::MAX)) as u32),
        zero_point: 0,
        dtype: DType::Int8,
        broadcast: (false, false, false),
        view: View::default(),
    }
}

impl<'g> Ctx<'g> {
    pub(crate) fn push_dma(
        &mut self,
        name: String,
        src: Fm,
        dst: Fm,
        idx: Option<Fm>,
        copy: DmaCopy,
    ) {
        self.push(NpuOp::dma(copy, name.clone(), vec![name], src, dst, (-128, 127)).with_ifm2(idx));
    }

    /// The buffer of a DMA source: its own, or its constant values stored as `dtype`.
    pub(crate) fn dma_source(
        &mut self,
        node: &OpNode,
        t: TensorId,
        dtype: DType,
    ) -> Result<usize, LowerError> {
        if let Some(&b) = self.lowered.tensor_buffer.get(&t) {
            return Ok(b);
        }
        if self.is_constant(t) {
            let values = self
                .constant_values(t)
                .ok_or_else(|| unsupported(node, "a constant operand has no defined value"))?;
            let data = TensorData::from_i64(dtype, &values)
                .map_err(|e| unsupported(node, format!("constant operand: {e}")))?;
            return Ok(self.anonymous_constant(data.to_le_bytes()));
        }
        self.input_buffer(node, t)
    }

    pub(crate) fn lower_scatter(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let [v, idx, upd] = [node.inputs()[0], node.inputs()[1], node.inputs()[2]];
        let out = node.outputs()[0];
        let (vd, id) = (self.dims(v), self.dims(idx));
        let (n, k, c, w) = (vd[0], vd[1], vd[2], id[1]);
        let dtype = self.dtype(out);
        if self.dtype(idx) != DType::Int32 {
            return Err(unsupported(node, "indices that are not i32"));
        }
        let row = (c * dtype.byte_size()) as u64;
        let (Ok(k32), Ok(w32), Ok(n32)) = (
            u32::try_from(k),
            u16::try_from(w).map(u32::from),
            u16::try_from(n).map(u32::from),
        ) else {
            return Err(unsupported(node, "more than 65535 rows or batches"));
        };
        // Constant indices: checked, and if they replace every row the initial copy goes.
        let mut covers_all = false;
        if let Some(ix) = self.constant_values(idx) {
            let mut written = vec![false; n * k];
            for (i, &j) in ix.iter().enumerate() {
                let b = i / w.max(1);
                if j < 0 || j >= k as i64 {
                    return Err(unsupported(
                        node,
                        format!("index {j} (element {i}) outside [0, {k})"),
                    ));
                }
                if std::mem::replace(&mut written[b * k + j as usize], true) {
                    return Err(unsupported(
                        node,
                        format!("index {j} repeated in batch {b} (the result is undefined)"),
                    ));
                }
            }
            covers_all = written.iter().all(|&x| x);
        }
        if n * w * c == 0 || k == 0 {
            return Err(unsupported(node, "an empty SCATTER"));
        }
        let idx_buf = self.dma_source(node, idx, DType::Int32)?;
        let upd_buf = self.dma_source(node, upd, dtype)?;
        let total = row * (n * k) as u64;
        // Live from the first of the (one or two) DMAs.
        let out_buf = {
            let i = self.lowered.ops.len();
            self.new_buffer(out, Some(i))
        };
        let name = node.name.clone();
        if !covers_all {
            let v_buf = self.dma_source(node, v, dtype)?;
            self.push_dma(
                format!("{name}/values"),
                bytes_fm(v_buf, total),
                bytes_fm(out_buf, total),
                None,
                DmaCopy {
                    len: total,
                    size0: 1,
                    size1: 1,
                    src_stride: (0, 0),
                    dst_stride: (0, 0),
                    index: None,
                },
            );
        }
        self.push_dma(
            name,
            bytes_fm(upd_buf, row * (n * w) as u64),
            bytes_fm(out_buf, total),
            Some(bytes_fm(idx_buf, 4 * (n * w) as u64)),
            DmaCopy {
                len: row,
                size0: w32,
                size1: n32,
                src_stride: (row as i64, (row * w as u64) as i64),
                dst_stride: (row as i64, (row * k as u64) as i64),
                index: Some(DmaIndex::Scatter(k32 - 1)),
            },
        );
        Ok(())
    }
}
