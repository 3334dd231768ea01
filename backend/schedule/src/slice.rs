//! OFM-depth slices of an operation, so that its weight and scale streams can be staged in
//! small double-buffered pieces: slice `j` is the same operation on OFM channels
//! `c0..c0 + depth` (a window of the OFM buffer, the original strides), with those channels'
//! weights and scale records; a DEPTHWISE also reads only those IFM channels, and an initial
//! accumulator (IFM2 of a window part) only those channels. Every output channel depends on
//! its own weights and scale record only, so the slices together compute exactly what the
//! whole operation computes.

use super::geometry;
use super::plan::par_map;
use super::weights::{counted, encode_counted, estimated, Encoded};
use npuc_backend_lower::{Fm, Kernel, NpuOp, Requant};
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_target::arch_interface::TargetError;
use npuc_target::arch_interface::{BlockConfig, Target, WeightStreams};

/// One slice: the operation restricted to its channels and its streams. A candidate
/// ([`slices`]) keeps its weights and knows only its streams' lengths; [`encode_streams`]
/// makes the streams of the chosen ones and drops the weights.
#[derive(Clone)]
pub(super) struct Slice {
    pub op: NpuOp,
    pub enc: Encoded,
}

/// Whether `op` can be sliced along the OFM depth.
pub(super) fn sliceable(op: &NpuOp) -> bool {
    match op.kernel {
        Kernel::Conv => op.weights.is_some(),
        Kernel::Depthwise => op.weights.is_some() && op.ifm.shape.2 == op.ofm.shape.2,
        _ => false,
    }
}

/// The weights of one OFM channel of `op` (`None` without weights).
fn per_channel(op: &NpuOp) -> Option<usize> {
    let shape = op.weights.as_ref()?.shape();
    Some(shape.kernel_height * shape.kernel_width * shape.ifm_depth)
}

/// `op` restricted to OFM channels `c0..c0 + depth`, with those channels' weights (`None`:
/// without weights, only `op` must have them).
fn restrict(op: &NpuOp, c0: u32, depth: u32, with_weights: bool) -> Option<NpuOp> {
    let weights = op.weights.as_ref()?;
    let shape = weights.shape();
    let per = per_channel(op)?;
    let (a, b) = (c0 as usize, (c0 + depth) as usize);
    let sub = if with_weights {
        Some(
            OhwiWeights::new(
                WeightShape {
                    ofm_depth: b - a,
                    ..shape
                },
                weights.values()[a * per..b * per].to_vec(),
            )
            .ok()?,
        )
    } else {
        None
    };
    let Requant::PerChannel(ch) = &op.requant else {
        return None;
    };
    let window = |fm: &Fm| {
        let mut f = *fm;
        f.view.strides = Some(fm.strides());
        f.view.offset += u64::from(c0) * u64::from(fm.elem_bytes());
        f.shape.2 = depth;
        f
    };
    let ifm = if op.kernel == Kernel::Depthwise {
        window(&op.ifm)
    } else {
        op.ifm
    };
    // An initial accumulator (IFM2) is laid out like the OFM.
    let ifm2 = op.ifm2.as_ref().map(window);
    let piece = op
        .piece(ifm, ifm2, window(&op.ofm))
        .with_requant(Requant::PerChannel(ch[a..b].to_vec()));
    Some(match sub {
        Some(sub) => piece.with_weights(sub),
        None => piece,
    })
}

/// How [`slices`] knows its slices' stream lengths.
#[derive(Clone, Copy)]
pub(super) enum Lengths<'a> {
    /// Counted exactly (the encoder's plan, without making the streams).
    Counted,
    /// Estimated from the whole operation's streams, these ([`estimated`]).
    Estimated(&'a Encoded),
}

/// Splits `op` into slices of `depth` channels (the last one shorter) with the lengths of
/// their streams for `block` (its OFM block depth clamped to the slice), counted or estimated
/// as `lengths` says, without encoding them; `None` if any cannot be encoded.
pub(super) fn slices(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
    depth: u32,
    lengths: Lengths<'_>,
) -> Option<Vec<Slice>> {
    let od = op.ofm.shape.2;
    // SWD streams are estimated from the whole operation's, without the slices' weights; FWD
    // streams, which need no planning, are counted.
    let estimate = match lengths {
        Lengths::Estimated(whole)
            if block.weight_streams == WeightStreams::PerDecoder && whole.weight_count > 0 =>
        {
            Some(whole)
        }
        _ => None,
    };
    let mut ops = Vec::new();
    let mut c0 = 0;
    while c0 < od {
        let d = depth.min(od - c0);
        ops.push(restrict(op, c0, d, estimate.is_none())?);
        c0 += d;
    }
    let Some(first) = ops.first() else {
        return Some(Vec::new());
    };
    let encs = match estimate {
        None => counted(target, &ops, &geometry(first), block).ok()??,
        Some(whole) => estimated(target, &ops, block, whole, per_channel(op)? as u64).ok()?,
    };
    Some(
        ops.into_iter()
            .zip(encs)
            .map(|(op, enc)| Slice { op, enc })
            .collect(),
    )
}

/// Encodes the streams of chosen slices (from [`slices`]), exactly as long as counted, and
/// drops their weights. On every thread available: the slices are independent.
pub(super) fn encode_streams(target: &dyn Target, slices: &mut [Slice]) -> Result<(), TargetError> {
    let made = par_map(slices, |_, s| -> Result<Option<Encoded>, TargetError> {
        if s.op.weights.is_none() {
            return Ok(None);
        }
        let mut enc = s.enc.clone();
        encode_counted(target, &s.op, &mut enc)?;
        Ok(Some(enc))
    });
    for (s, enc) in slices.iter_mut().zip(made) {
        if let Some(enc) = enc? {
            s.enc = enc;
            s.op.weights = None;
        }
    }
    Ok(())
}
