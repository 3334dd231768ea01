//! OFM-depth slices of an operation, so that its weight and scale streams can be staged in
//! small double-buffered pieces: slice `j` is the same operation on OFM channels
//! `c0..c0 + depth` (a window of the OFM buffer, the original strides), with those channels'
//! weights and scale records; a DEPTHWISE also reads only those IFM channels, and an initial
//! accumulator (IFM2 of a window part) only those channels. Every output channel depends on
//! its own weights and scale record only, so the slices together compute exactly what the
//! whole operation computes.

use super::geometry;
use super::plan::estimate_traffic;
use super::regs::Locs;
use super::weights::{counted, estimated, Encoded, Layout};
use npuc_backend_lower::{Fm, Kernel, NpuOp, Requant};
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_target::arch_interface::{BlockConfig, Target, WeightStreams};
use std::sync::OnceLock;

/// One slice: the operation restricted to its channels and its streams. A candidate
/// ([`slices`]) keeps its weights and knows only its streams' lengths; `decide::encode_chosen`
/// makes the streams of the chosen ones and drops the weights.
#[derive(Clone)]
pub(super) struct Slice {
    pub op: NpuOp,
    pub enc: Encoded,
    /// [`Slice::staged_traffic`]'s figures and what they were costed with.
    staged: OnceLock<(StagedKey, (u64, u64))>,
}

/// What a slice's staged cost depends on besides the slice: its block, the staging region,
/// its feature maps' locations and its streams' layout.
type StagedKey = (BlockConfig, u8, Locs, Layout);

impl Slice {
    /// The slice's cycles and off-chip bytes run with `block`, its streams in the staging
    /// `region` and its feature maps at `at` ([`estimate_traffic`]). The global program's
    /// options and the greedy staging both cost every slice candidate so, where the IFM is
    /// not copied: the first asks, the other finds the figures (a call with other arguments
    /// is costed afresh).
    pub(super) fn staged_traffic(
        &self,
        target: &dyn Target,
        block: &BlockConfig,
        region: u8,
        at: &Locs,
    ) -> (u64, u64) {
        let layout = self.enc.layout();
        if let Some(((b, r, a, l), cost)) = self.staged.get() {
            if b == block && *r == region && a == at && *l == layout {
                return *cost;
            }
        }
        let cost = estimate_traffic(target, &self.op, block, Some(&layout), region, at);
        let _ = self
            .staged
            .set(((*block, region, at.clone(), layout), cost));
        cost
    }
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
            .map(|(op, enc)| Slice {
                op,
                enc,
                staged: OnceLock::new(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{slices, Lengths};
    use crate::plan::estimate_traffic;
    use crate::regs::locs;
    use npuc_backend::arch::Accelerator;
    use npuc_target::alloc;
    use std::collections::BTreeMap;

    #[test]
    fn a_slice_staged_cost_is_found_once_for_the_same_arguments_and_afresh_for_others() {
        let l = crate::test_models::lowered("tflite/resnet8");
        let target = crate::test_models::target(Accelerator::U85_256);
        let target = target.as_ref();
        let p = alloc::allocate(&l, target.fast_storage(), &[]);
        let cands = |op| target.block_candidates(&crate::geometry(op));
        let mut compared = 0;
        for op in l.ops.iter().filter(|op| super::sliceable(op)) {
            let blocks = cands(op);
            let Some(s) = slices(target, op, &blocks[0], 8, Lengths::Counted) else {
                continue;
            };
            for slice in &s {
                let at = locs(&slice.op, &p, &l, &BTreeMap::new());
                let full = |block, region| {
                    let layout = slice.enc.layout();
                    estimate_traffic(target, &slice.op, block, Some(&layout), region, &at)
                };
                // Asked again, with another block and in another region: each what the
                // cost model gives for those arguments.
                for (block, region) in [(0, 2), (0, 2), (1, 2), (0, 1), (0, 2)] {
                    let block = &blocks[block.min(blocks.len() - 1)];
                    assert_eq!(
                        slice.staged_traffic(target, block, region, &at),
                        full(block, region)
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 20, "{compared} figures compared");
    }
}
