//! A 16x8 convolution (TFLite's per-channel int16 FULLY_CONNECTED) whose IR saturates its
//! 48-bit accumulator to i32 (an exact widening RESCALE) before a 32-bit-multiplier RESCALE,
//! when the accumulator can leave the i32 range (decision L27).
//!
//! The 32-bit accumulator would wrap, and the 48-bit one takes only 15-bit scales, so it runs
//! in three steps:
//! 1. the convolution on the 48-bit accumulator, bias added, written raw to a b64 buffer
//!    (per-channel records scale 1, shift 0);
//! 2. `v = sat32(acc)` from the b64 words read as two b32 feature maps (`lo` at byte 0,
//!    `hi` at byte 4 of each element; `|acc| < 2^47`, so `hi` is the sign-extended top):
//!    `acc` fits i32 iff `hi == lo >> 31`; otherwise the saturated value is
//!    `(hi >> 31) ^ i32::MAX`. Seven elementwise operations:
//!    `s = lo >> 31`, `t = hi >> 31` (SHR rounding towards minus infinity),
//!    `m = (hi == s)` (-1 / 0), `sat = t ^ MAX`, `v = sat ^ ((lo ^ sat) & m)`;
//! 3. a 1x1 DEPTHWISE with zero weights whose initial accumulator is `v` (IFM2 b32,
//!    ACC_FORMAT.acc_input = ifm2, the 32-bit accumulator) and the per-channel multipliers and
//!    shifts of the output RESCALE, its rounding, clamp and output type (as the single
//!    operation does when the accumulator provably fits).

use crate::common::window::Window;
use crate::elementwise::arith::NO_CLIP;
use crate::elementwise::logical::IDENTITY;
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, Requant, ScalarOperand, View};
use npuc_backend::isa::{AccFormat, ElementwiseMode, RoundModeOfm};
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{DType, OpNode};

impl<'g> Ctx<'g> {
    /// Pushes `op` (the convolution with its final per-channel records `channels`, whose
    /// bias is in `channels`) as the three steps above.
    pub(crate) fn push_conv_saturated(
        &mut self,
        node: &OpNode,
        op: NpuOp,
        window: Window,
    ) -> Result<(), LowerError> {
        let Requant::PerChannel(channels) = &op.requant else {
            unreachable!("a convolution has per-channel records")
        };
        let (h, w, c) = op.ofm.shape;
        let cols = w * c;
        if cols > 65536 {
            return Err(unsupported(
                node,
                "a saturating 16x8 accumulator of more than 65536 elements per row",
            ));
        }
        let elems = u64::from(h) * u64::from(cols);
        // 1. The raw accumulator plus bias.
        let raw = self.scratch(elems * 8);
        let mut conv = op.clone();
        conv.name = format!("{} (accumulator)", op.name);
        conv.fused = Vec::new();
        conv.ofm = Fm {
            buffer: raw,
            shape: op.ofm.shape,
            zero_point: 0,
            dtype: DType::Int64,
            broadcast: (false, false, false),
            view: View::default(),
        };
        conv.requant = Requant::PerChannel(
            channels
                .iter()
                .map(|ch| ChannelScale {
                    bias: ch.bias,
                    scale: 1,
                    shift: 0,
                })
                .collect(),
        );
        conv.round = RoundModeOfm::Natural;
        conv.act = NO_CLIP;
        conv.acc = AccFormat::I48;
        self.push_window(node, conv, window, 1)?;

        // 2. Saturation to i32 on the b32 words.
        let word = |offset: u64| Fm {
            buffer: raw,
            shape: (h, cols, 1),
            zero_point: 0,
            dtype: DType::Int32,
            broadcast: (false, false, false),
            view: View {
                offset,
                strides: Some((u64::from(cols) * 8, 8)),
                ..View::default()
            },
        };
        let (lo, hi) = (word(0), word(4));
        let name = format!("{} (saturation)", op.name);
        use ElementwiseMode as E;
        let s = self.word_op(&name, E::Shr, lo, Err(31), elems);
        let t = self.word_op(&name, E::Shr, hi, Err(31), elems);
        let m = self.word_op(&name, E::CmpEq, hi, Ok(s), elems);
        let sat = self.word_op(&name, E::Xor, t, Err(i32::MAX), elems);
        let d = self.word_op(&name, E::Xor, lo, Ok(sat), elems);
        let e = self.word_op(&name, E::And, d, Ok(m), elems);
        let v = self.word_op(&name, E::Xor, sat, Ok(e), elems);

        // 3. The output rescale with v as the initial accumulator.
        let v = Fm {
            shape: (h, w, c),
            ..v
        };
        let zeros = vec![0i16; c as usize];
        let weights = OhwiWeights::from_depthwise_hwc(1, 1, c as usize, &zeros)
            .map_err(|e| unsupported(node, e.to_string()))?;
        // The IFM is read but every weight is zero: any 8-bit view of the right shape.
        let ifm = Fm {
            dtype: DType::Int8,
            ..v
        };
        self.push(
            NpuOp::depthwise(op.name, op.fused, ifm, op.ofm, op.act)
                .with_ifm2(v)
                .with_weights(weights)
                .with_requant(Requant::PerChannel(
                    channels
                        .iter()
                        .map(|&ch| ChannelScale { bias: 0, ..ch })
                        .collect(),
                ))
                .with_round(op.round)
                .with_ifm_scale(op.ifm_scale)
                .with_ifm2_scale(op.ifm2_scale),
        );
        Ok(())
    }

    /// One elementwise operation on b32 words, `a` with `b` (a feature map, or `Err` a
    /// scalar), into a new dense b32 buffer of `elems` words. SHR rounds towards minus
    /// infinity (an arithmetic shift).
    fn word_op(
        &mut self,
        name: &str,
        mode: ElementwiseMode,
        a: Fm,
        b: Result<Fm, i32>,
        elems: u64,
    ) -> Fm {
        let idx = self.lowered.ops.len();
        let out = Fm {
            buffer: self.scratch(elems * 4),
            view: View::default(),
            ..a
        };
        let ifm2 = match b {
            Ok(fm) => fm,
            Err(value) => {
                self.lowered
                    .scalars
                    .insert(idx, ScalarOperand { ifm2: true, value });
                Fm {
                    shape: (1, 1, 1),
                    broadcast: (true, true, true),
                    view: View::default(),
                    ..a
                }
            }
        };
        self.push(
            NpuOp::elementwise(mode, name.to_string(), Vec::new(), a, out, NO_CLIP)
                .with_ifm2(ifm2)
                .with_round(RoundModeOfm::TruncateToLower)
                .with_ifm_scale(IDENTITY)
                .with_ifm2_scale(IDENTITY),
        );
        out
    }
}
