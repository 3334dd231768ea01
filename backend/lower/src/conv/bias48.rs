//! The runtime bias of a 16x8 convolution: `ADD(acc, bias)` on i48 tensors, the form the
//! `conv-bias-as-add` rewrite gives a convolution whose 48-bit bias is a graph input or a
//! computed tensor (decision L50).
//!
//! The NPU has no 48-bit elementwise addition (ELEMENTWISE computes on 32 bits, TRM 3.10.6),
//! but its 48-bit accumulator adds anything read as an initial accumulator (IFM2 b64,
//! `acc_input = ifm2`, TRM 3.6.5 read_accumulator) to the taps of a DEPTHWISE, and the output
//! scale multiplies the sum (3.6.6, `acc * scale` with shift 0 is exact). Both operands live
//! in memory as 8-byte words (decision L33); their low six bytes are the value modulo 2^48.
//! So, with `a_k` and `b_k` the unsigned bytes of the accumulator and the bias:
//!
//! 1. one ELEMENTWISE ADD of the bytes, read as u8 (`rows x OC x 6` views of the words, the
//!    bias broadcast over the rows), writes the digits `d_k = a_k + b_k` (0..510) as i16;
//! 2. six 1x1 DEPTHWISEs with weight 1 run Horner's scheme from the top digit:
//!    `g_5 = d_5 * 256`, `g_k = (g_{k+1} + d_k) * 256` for `k = 4..1`, `g_0 = g_1 + d_0`, each
//!    `g` a b64 word read by the next as its initial accumulator.
//!
//! `g_0 = Σ d_k 2^{8k} = acc + bias` modulo 2^48, and the accumulator is 48 bits wide
//! (`write_accumulator` keeps 48 bits), so the b64 result is the exact sum sign-extended
//! whenever it fits i48 (TOSA's result type).

use crate::elementwise::arith::NO_CLIP;
use crate::elementwise::logical::IDENTITY;
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, Requant, View};
use npuc_backend::isa::{AccFormat, ElementwiseMode};
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, OpId};

/// Bytes of a 48-bit value in its 8-byte word.
const DIGITS: u32 = 6;

impl<'g> Ctx<'g> {
    /// ADD `o` of two i48 tensors: the accumulator and a bias broadcast over all but the
    /// last axis (see the module documentation).
    pub(crate) fn lower_add48(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let (a, b, y) = (node.inputs()[0], node.inputs()[1], node.outputs()[0]);
        self.materialize(a)?;
        self.materialize(b)?;
        let (ad, bd, yd) = (
            self.dims(a).to_vec(),
            self.dims(b).to_vec(),
            self.dims(y).to_vec(),
        );
        let oc = yd.last().copied().unwrap_or(1);
        let rows: usize = yd.iter().rev().skip(1).product();
        let bias_ok = bd.len() == yd.len()
            && bd.iter().rev().skip(1).all(|&d| d == 1)
            && matches!(bd.last(), Some(&d) if d == oc || d == 1);
        if ad != yd || !bias_ok {
            return Err(unsupported(
                node,
                "an i48 ADD other than an accumulator plus a per-channel bias",
            ));
        }
        if rows == 0 || oc == 0 || rows > 65536 || oc > 65536 {
            return Err(unsupported(node, "an i48 ADD with a side above 65536"));
        }
        let (abuf, bbuf) = (self.input_buffer(node, a)?, self.input_buffer(node, b)?);
        let (rows32, oc32) = (rows as u32, oc as u32);
        let word = 8u64;
        let bytes = |buffer: usize, shape: (u32, u32, u32), strides: (u64, u64)| Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: DType::UInt8,
            broadcast: (false, false, false),
            view: View {
                strides: Some(strides),
                ..View::default()
            },
        };

        // 1. The digits d_k = a_k + b_k, rows x OC x 6 of i16.
        let ifm = bytes(abuf, (rows32, oc32, DIGITS), (u64::from(oc32) * word, word));
        // The bias re-read for every row (and every channel when it is one value): zero
        // strides (TRM 3.6.5 element_address_in_region has no assert on them).
        let bias_step = if bd.last() == Some(&1) { 0 } else { word };
        let ifm2 = bytes(bbuf, (rows32, oc32, DIGITS), (0, bias_step));
        let digits = self.scratch_fm((rows32, oc32, DIGITS), DType::Int16);
        self.push(
            NpuOp::elementwise(
                ElementwiseMode::Add,
                format!("{} (digits)", node.name),
                Vec::new(),
                ifm,
                digits,
                (i64::from(i16::MIN), i64::from(i16::MAX)),
            )
            .with_ifm2(ifm2)
            .with_ifm_scale(IDENTITY)
            .with_ifm2_scale(IDENTITY),
        );

        // 2. Horner's scheme on the 48-bit accumulator, top digit first.
        let ones = OhwiWeights::from_depthwise_hwc(1, 1, 1, &[1])
            .map_err(|e| unsupported(node, e.to_string()))?;
        let digit_row = u64::from(DIGITS) * 2;
        let mut prev: Option<Fm> = None;
        for k in (0..DIGITS).rev() {
            let ifm = Fm {
                view: View {
                    offset: u64::from(k) * 2,
                    strides: Some((u64::from(oc32) * digit_row, digit_row)),
                    ..View::default()
                },
                shape: (rows32, oc32, 1),
                ..digits
            };
            let last = k == 0;
            let ofm = if last {
                self.i48_ofm(y, (rows32, oc32, 1))
            } else {
                self.scratch_fm((rows32, oc32, 1), DType::Int64)
            };
            let record = ChannelScale {
                bias: 0,
                scale: if last { 1 } else { 256 },
                shift: 0,
            };
            let name = if last {
                node.name.clone()
            } else {
                format!("{} (digit {k})", node.name)
            };
            self.push(
                NpuOp::depthwise(name, Vec::new(), ifm, ofm, NO_CLIP)
                    .with_ifm2(prev)
                    .with_weights(ones.clone())
                    .with_requant(Requant::PerChannel(vec![record]))
                    .with_acc(AccFormat::I48),
            );
            prev = Some(ofm);
        }
        Ok(())
    }
}
