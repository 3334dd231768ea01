//! MATMUL with a constant B (TFLite's BATCH_MATMUL with a constant right-hand side, often a
//! converted dense layer):
//!
//! * int8: `A x B` is a 1x1 CONV of A (`1 x M x K`) with the weights `B^T - b_zp`
//!   (`N x 1 x 1 x K`) and the MATMUL's RESCALE as per-channel records with bias 0; batches
//!   with one B and an unbroadcast A fold into the rows of one CONV.
//! * int16 (values do not fit the 8-bit weights): B is stored transposed in read-only data, so
//!   the IFM2 of `matmul` needs no transposing copies.

use crate::LowerError;
use crate::{rescale_round, unsupported, Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::AccFormat;
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, OpNode, RescaleAttrs, TensorData, TensorId};

/// What `lower_matmul` has worked out about a MATMUL with a constant B.
pub(crate) struct ConstMatMul {
    pub names: Vec<String>,
    pub act: (i64, i64),
    pub out_t: TensorId,
    pub acc: AccFormat,
    /// Dimensions of A, B and the output.
    pub dims: [Vec<usize>; 3],
    pub abuf: usize,
    pub a_zp: i64,
    pub b_zp: i64,
}

/// Batch index `k` of the output batch dimensions `batch` -> matrix index of an operand of
/// dimensions `dims` (broadcast where its dimension is 1).
pub(crate) fn matrix_index(batch: &[usize], dims: &[usize], mut k: usize) -> usize {
    let (mut m, mut stride) = (0, 1);
    for (i, &n) in batch.iter().enumerate().rev() {
        let j = k % n;
        k /= n;
        let d = dims[i];
        if d != 1 {
            m += j * stride;
        }
        stride *= d;
    }
    m
}

impl<'g> Ctx<'g> {
    /// A read-only buffer holding the constant B (`[..., K, N]`) as `[..., N, K]` in `dtype`.
    pub(crate) fn transposed_constant(
        &mut self,
        node: &OpNode,
        t: TensorId,
        dims: &[usize],
        dtype: DType,
    ) -> Result<usize, LowerError> {
        let values = self
            .constant_values(t)
            .ok_or_else(|| unsupported(node, "a constant operand has no defined value"))?;
        let rank = dims.len();
        let (k, n) = (dims[rank - 2], dims[rank - 1]);
        let mut out = Vec::with_capacity(values.len());
        for m in values.chunks(k * n) {
            for j in 0..n {
                for i in 0..k {
                    out.push(m[i * n + j]);
                }
            }
        }
        let data = TensorData::from_i64(dtype, &out)
            .map_err(|e| unsupported(node, format!("constant operand: {e}")))?;
        Ok(self.anonymous_constant(data.to_le_bytes()))
    }

    pub(crate) fn lower_matmul_const_weights(
        &mut self,
        node: &OpNode,
        tb: TensorId,
        r: &RescaleAttrs,
        mm: ConstMatMul,
    ) -> Result<(), LowerError> {
        let values = self
            .constant_values(tb)
            .ok_or_else(|| unsupported(node, "a constant operand has no defined value"))?;
        let [da, db, dm] = &mm.dims;
        let rank = dm.len();
        let (h, c, w) = (da[rank - 2], da[rank - 1], db[rank - 1]);
        let batch = &dm[..rank - 2];
        let batches: usize = batch.iter().product();
        if batches == 0 {
            return Err(unsupported(node, "an empty batch"));
        }
        let oe = r.output_dtype.byte_size() as u64;
        let obuf = self.new_buffer(mm.out_t, Some(self.lowered.ops.len()));
        let weights_of = |mb: usize| -> Result<OhwiWeights, LowerError> {
            let b = &values[mb * c * w..(mb + 1) * c * w];
            let shape = WeightShape {
                ofm_depth: w,
                kernel_height: 1,
                kernel_width: 1,
                ifm_depth: c,
            };
            let mut vals = vec![0i16; shape.len()];
            for (i, row) in b.chunks(w).enumerate() {
                for (j, &v) in row.iter().enumerate() {
                    vals[shape.index(j, 0, 0, i)] = (v - mm.b_zp) as i16;
                }
            }
            OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))
        };
        let record = ChannelScale {
            bias: 0,
            scale: r.multiplier[0] as u32,
            shift: r.shift[0] as u8,
        };
        let fm = |buffer: usize, offset: u64, rows: usize, depth: usize, zp: i64, dtype| Fm {
            buffer,
            shape: (1, rows as u32, depth as u32),
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View {
                offset,
                ..View::default()
            },
        };
        let ma = |k| matrix_index(batch, da, k);
        let mb = |k| matrix_index(batch, db, k);
        // One B for every batch and A's batches in order: all rows in one CONV.
        let folded = (0..batches).all(|k| mb(k) == mb(0) && ma(k) == k) && batches * h <= 65536;
        let groups: Vec<(usize, usize)> = if folded {
            vec![(0, batches)]
        } else {
            (0..batches).map(|k| (k, 1)).collect()
        };
        let in_dtype = self.dtype(node.inputs()[0]);
        for (k, n) in groups {
            self.push(
                NpuOp::conv(
                    node.name.clone(),
                    mm.names.clone(),
                    fm(mm.abuf, (ma(k) * h * c) as u64, n * h, c, mm.a_zp, in_dtype),
                    fm(
                        obuf,
                        (k * h * w) as u64 * oe,
                        n * h,
                        w,
                        r.output_zp,
                        r.output_dtype,
                    ),
                    mm.act,
                )
                .with_weights(weights_of(mb(k))?)
                .with_requant(Requant::PerChannel(vec![record; w]))
                .with_round(rescale_round(r))
                .with_acc(mm.acc),
            );
        }
        Ok(())
    }
}
