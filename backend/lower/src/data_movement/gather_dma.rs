//! GATHER with computed indices as one DMA in the source index mode (TRM 3.10.4
//! NPU_OP_DMA_START, decision L21): the general fallback when no activation LUT does the
//! lookup (a table of other than 256 entries, or a 16-bit function no LUT mode reproduces,
//! such as gemmlowp's fixed-point logistic and tanh in TFLite's LSTM).
//!
//! `out[b][x] = values[b][indices[b][x]]` (rows of `C` elements): transfer `x` of row `b`
//! copies one row of `C * esize` bytes from `values + b * K*C*esize + idx * C*esize`, where
//! `idx` is the i32 the NPU computed. The DMA skips a transfer whose index lies outside
//! `0..=IDX_MAX` and leaves the output bytes as they were, which would be a silently wrong
//! result; so the index must provably lie in `0..=K-1` ([`Ctx::value_range`]), or the GATHER
//! is refused. The values are read where they are: a constant table in the read-only region
//! 0, or a feature map; the TRM requires an "external" source, i.e. `region_mode ==
//! external` (an AXI region, whatever memory is behind it), not the internal LUT RAM.

use crate::data_movement::scatter::{bytes_fm, DmaCopy, DmaIndex};
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, View};
use npuc_ir::{DType, OpId};

/// Most DMAs one GATHER may become.
const MAX_DMAS: usize = 4096;
/// Largest DMA0_SIZE0 / DMA0_SIZE1 (16-bit fields).
const MAX_SIZE: usize = 65535;

/// One DMA of a gather: `size1` rows of `size0` consecutive indices, starting at index
/// `start` of batch `batch`; the source steps by `src_step` table rows per DMA row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Transfers {
    batch: usize,
    start: usize,
    size0: u32,
    size1: u32,
    src_step: i64,
}

/// The DMAs gathering `n` batches of `w` indices from tables of `k` rows: one DMA whose
/// rows are the batches when both fit the 16-bit sizes; otherwise per batch, rows of a
/// divisor of `w` (the same table each row), or runs of at most 65535 indices. `None`
/// beyond [`MAX_DMAS`].
fn transfers(n: usize, w: usize, k: usize) -> Option<Vec<Transfers>> {
    if n <= MAX_SIZE && w <= MAX_SIZE {
        return Some(vec![Transfers {
            batch: 0,
            start: 0,
            size0: w as u32,
            size1: n as u32,
            src_step: k as i64,
        }]);
    }
    let cols = (1..=MAX_SIZE.min(w)).rev().find(|c| w % c == 0)?;
    let per_batch = if w / cols <= MAX_SIZE && cols >= 1024 {
        1
    } else {
        w.div_ceil(MAX_SIZE)
    };
    if n.checked_mul(per_batch)? > MAX_DMAS {
        return None;
    }
    let mut out = Vec::new();
    for batch in 0..n {
        if per_batch == 1 {
            out.push(Transfers {
                batch,
                start: 0,
                size0: cols as u32,
                size1: (w / cols) as u32,
                src_step: 0,
            });
            continue;
        }
        for start in (0..w).step_by(MAX_SIZE) {
            out.push(Transfers {
                batch,
                start,
                size0: (w - start).min(MAX_SIZE) as u32,
                size1: 1,
                src_step: 0,
            });
        }
    }
    Some(out)
}

/// Whether `n` batches of `w` indices fit the DMAs of one GATHER.
pub(crate) fn fits(n: usize, w: usize, k: usize) -> bool {
    transfers(n, w, k).is_some()
}

impl<'g> Ctx<'g> {
    /// Lowers GATHER `o` (`[values [N, K, C], indices [N, W]] -> [N, W, C]`) as one DMA
    /// gather; `fused` names the IR operators it implements (the GATHER last).
    pub(crate) fn lower_gather_dma(
        &mut self,
        o: OpId,
        fused: Vec<String>,
    ) -> Result<(), LowerError> {
        let node = self.node(o);
        let (v, ix) = (node.inputs()[0], node.inputs()[1]);
        let out = node.outputs()[0];
        let (vd, id) = (self.dims(v), self.dims(ix));
        if vd.len() != 3 || id.len() != 2 || vd[0] != id[0] {
            return Err(unsupported(
                node,
                "GATHER shapes other than [N,K,C] x [N,W]",
            ));
        }
        let (n, k, c, w) = (vd[0], vd[1], vd[2], id[1]);
        if self.dtype(ix) != DType::Int32 {
            return Err(unsupported(node, "computed indices that are not i32"));
        }
        if n * w * c == 0 || k == 0 {
            return Err(unsupported(node, "an empty GATHER"));
        }
        let Ok(max) = i32::try_from(k - 1) else {
            return Err(unsupported(node, "a table of more than 2^31 rows"));
        };
        let plan = transfers(n, w, k).ok_or_else(|| {
            unsupported(
                node,
                format!("{n} x {w} indices need more than {MAX_DMAS} DMAs"),
            )
        })?;
        let (lo, hi) = self.value_range(ix);
        let dtype = self.dtype(out);
        let row = (c * dtype.byte_size()) as u64;
        self.materialize(ix)?;
        let mut idx_buf = self.input_buffer(node, ix)?;
        if lo < 0 || hi > max as i64 {
            // TOSA REQUIREs every index in 0..K (unpredictable otherwise); a skipped DMA
            // transfer would leave output bytes unwritten, so the indices are clamped first
            // (decision L31).
            idx_buf = self.clamp_indices(node, idx_buf, (n * w) as u32, max)?;
        }
        // A constant table (also one reshaped) is stored once, however many GATHERs read it.
        let values = match self.folded_const(v) {
            Some(d) if !self.lowered.tensor_buffer.contains_key(&v) => {
                let b = self.anonymous_constant(d.to_le_bytes());
                self.lowered.tensor_buffer.insert(v, b);
                b
            }
            _ => {
                self.materialize(v)?;
                self.dma_source(node, v, dtype)?
            }
        };
        let out_buf = {
            let i = self.lowered.ops.len();
            self.new_buffer(out, Some(i))
        };
        let at = |buffer: usize, size: u64, offset: u64| Fm {
            view: View {
                offset,
                ..View::default()
            },
            ..bytes_fm(buffer, size)
        };
        let first = self.lowered.ops.len();
        for t in plan {
            // Transfer j of this DMA is index `start + j` of batch `batch`.
            let e = (t.batch * w + t.start) as u64;
            self.push_dma(
                node.name.clone(),
                at(values, row * (n * k) as u64, row * (t.batch * k) as u64),
                at(out_buf, row * (n * w) as u64, row * e),
                Some(at(idx_buf, 4 * (n * w) as u64, 4 * e)),
                DmaCopy {
                    len: row,
                    size0: t.size0,
                    size1: t.size1,
                    src_stride: (row as i64, t.src_step * row as i64),
                    dst_stride: (row as i64, (row * u64::from(t.size0)) as i64),
                    index: Some(DmaIndex::Gather(max as u32)),
                },
            );
        }
        for op in &mut self.lowered.ops[first..] {
            op.fused = fused.clone();
        }
        Ok(())
    }
}
