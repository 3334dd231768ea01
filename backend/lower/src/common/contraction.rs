//! A matrix product whose contraction is longer than one NPU operation accumulates (decision
//! L47).
//!
//! NPU_OP_CONV with `weights_ifm2` computes `OFM[0, r, n] = sum_k IFM[0, r, k] * IFM2[0, n, k]`
//! over the IFM depth, a 16-bit `_M1` field (TRM 3.10): at most 65536 terms per operation. A
//! longer contraction runs in parts of at most [`MAX_CONTRACTION`] channels: part `j` reads the
//! channels `k0..k1` of both operands in place (row strides of the whole matrices) and writes its
//! raw i32 accumulator (scale 1, shift 0, clip range none: decision L36); i32 ELEMENTWISE adds sum
//! the parts (TRM 3.6.6: `acc = scale_a(a) + scale_b(b)`, b32 operands unscaled, a 32-bit
//! accumulator that wraps as the convolution's does, so the sum of the parts is the accumulator
//! of the whole contraction bit for bit; TOSA makes an int32 accumulator overflow an error, so
//! none occurs); the last add writes the result with the operator's output stage (`Finish`: the
//! raw sum, or a per-tensor RESCALE, clamp and zero point through the same `rescale` as the
//! convolution's own).

use crate::elementwise::arith::NO_CLIP;
use crate::elementwise::logical::IDENTITY;
use crate::{Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::{AccFormat, ElementwiseMode, RoundModeOfm};
use npuc_ir::DType;

/// The most channels one NPU operation accumulates over (IFM_DEPTH_M1 is 16 bits).
pub(crate) const MAX_CONTRACTION: usize = 65536;

/// The output stage of the last add: the OFM scale, round mode and activation clamp.
#[derive(Debug, Clone)]
pub(crate) struct Finish {
    pub requant: Requant,
    pub round: RoundModeOfm,
    pub act: (i64, i64),
}

impl Finish {
    /// The raw i32 sum (scale 1, shift 0, clip range none).
    pub(crate) fn raw() -> Finish {
        Finish {
            requant: Requant::Global { scale: 1, shift: 0 },
            round: RoundModeOfm::Natural,
            act: NO_CLIP,
        }
    }
}

/// The parts `k0..k1` of a contraction of `k` channels, each at most `limit` long.
pub(crate) fn parts(k: usize, limit: usize) -> Vec<(usize, usize)> {
    (0..k)
        .step_by(limit.max(1))
        .map(|k0| (k0, (k0 + limit).min(k)))
        .collect()
}

/// Channels `k0..k1` of a dense `1 x rows x k` matrix `m`, read in place.
fn columns(m: &Fm, (k0, k1): (usize, usize)) -> Fm {
    let (_, rows, k) = m.shape;
    let e = m.dtype.byte_size() as u64;
    let row = u64::from(k) * e;
    Fm {
        shape: (1, rows, (k1 - k0) as u32),
        view: View {
            offset: m.view.offset + k0 as u64 * e,
            strides: Some((u64::from(rows) * row, row)),
            ..m.view
        },
        ..*m
    }
}

impl<'g> Ctx<'g> {
    /// `ofm = a x b^T` of the dense matrices `a` (`1 x rows x k`) and `b` (`1 x n x k`, read as
    /// IFM2 weights) in parts of at most `limit` channels, summed by i32 adds, the last one
    /// writing `ofm` (`1 x rows x n`) with `finish` (see the module documentation). `name`
    /// and `fused` name every operation pushed, as the operator's own.
    pub(crate) fn contraction_in_parts(
        &mut self,
        (name, fused): (&str, &[String]),
        a: Fm,
        b: Fm,
        ofm: Fm,
        finish: &Finish,
        limit: usize,
    ) {
        let (_, rows, k) = a.shape;
        let n = b.shape.1;
        let parts = parts(k as usize, limit);
        if let [_] = parts[..] {
            self.push(
                NpuOp::conv(name.to_string(), fused.to_vec(), a, ofm, finish.act)
                    .with_ifm2(b)
                    .with_requant(finish.requant.clone())
                    .with_round(finish.round),
            );
            return;
        }
        let mut sum: Option<Fm> = None;
        for (j, &part) in parts.iter().enumerate() {
            let acc = self.scratch_fm((1, rows, n), DType::Int32);
            self.push(
                NpuOp::conv(
                    format!("{name} (contraction part {j})"),
                    fused.to_vec(),
                    columns(&a, part),
                    acc,
                    NO_CLIP,
                )
                .with_ifm2(columns(&b, part)),
            );
            let Some(s) = sum else {
                sum = Some(acc);
                continue;
            };
            let last = j + 1 == parts.len();
            let (out, stage) = match last {
                true => (ofm, finish.clone()),
                false => (self.scratch_fm((1, rows, n), DType::Int32), Finish::raw()),
            };
            self.push(
                NpuOp::elementwise(
                    ElementwiseMode::Add,
                    format!("{name} (contraction sum {j})"),
                    fused.to_vec(),
                    s,
                    out,
                    stage.act,
                )
                .with_ifm2(acc)
                .with_requant(stage.requant)
                .with_round(stage.round)
                .with_ifm_scale(IDENTITY)
                .with_ifm2_scale(IDENTITY)
                .with_acc(AccFormat::I32),
            );
            sum = Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn parts_cover_the_contraction_once() {
        assert_eq!(parts(65538, 65536), vec![(0, 65536), (65536, 65538)]);
        assert_eq!(parts(131072, 65536), vec![(0, 65536), (65536, 131072)]);
        assert_eq!(parts(10, 4), vec![(0, 4), (4, 8), (8, 10)]);
        assert_eq!(parts(4, 4), vec![(0, 4)]);
    }
}
