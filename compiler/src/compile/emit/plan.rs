//! Per-operation choices by the target's cost model: microblock, OFM block and weight order.
//!
//! The target offers the valid candidates ([`Target::block_candidates`], preferred first); each
//! is written out as the operation's complete register state (feature maps where the
//! placement put them, weights read from region 0 with the lengths of the preferred
//! candidate's encoding; for FWD candidates the target's FWD length estimate) and estimated
//! ([`Target::estimate`]); the cheapest wins, ties going to the earlier candidate. The
//! winner's streams are then encoded for real: an FWD winner is kept only if, encoded, it
//! still beats the cheapest SWD candidate; an encoding that fails falls back to the preferred
//! candidate.

use super::weights::{encode, Encoded, Layout};
use super::*;

/// What is decided about one operation before emission.
pub(super) struct OpPlan {
    /// Microblock, OFM block, weight order.
    pub block: BlockConfig,
    /// Its weight and scale streams (`None`: the operation has no weight stream).
    pub enc: Option<Encoded>,
    /// Estimated cycles with the streams read from region 0.
    pub cycles: u64,
}

/// Estimated cycles of `op` with `block`, its streams laid out as `layout` in `region`.
pub(super) fn estimate(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
    layout: Option<&Layout>,
    region: u8,
    at: &Locs,
) -> u64 {
    let mut w = Writer::default();
    let (cmd, _) = op_commands(
        &mut w,
        op,
        block,
        layout.map(|e| (e, region, 0)),
        at,
        (ActivationFunction::LutNone, 0),
    );
    w.op(cmd);
    target.estimate(&w.commands)
}

/// Plans every operation of `l` with the feature maps at `p`.
pub(super) fn plan(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
) -> Result<Vec<OpPlan>, CompileError> {
    let none = BTreeMap::new();
    let mut plans = Vec::with_capacity(l.ops.len());
    for op in &l.ops {
        let geom = geometry(op);
        let at = locs(op, p, l, &none);
        let cands = target.block_candidates(&geom);
        let first = cands[0];
        if matches!(op.kernel, Kernel::Dma(_)) {
            // A memory-to-memory copy: no block, no streams.
            plans.push(OpPlan {
                block: first,
                enc: None,
                cycles: 0,
            });
            continue;
        }
        let enc0 = encode(target, op, &geom, &first)?;
        let swd = enc0.as_ref().map(Encoded::layout);
        // FWD candidates: the scale stream and one FWD stream of the estimated length.
        let fwd = match (&enc0, &op.weights) {
            (Some(e), Some(wt)) => target.fwd_length_estimate(wt).map(|len| {
                Layout::new(
                    WeightFormat::Fwd,
                    WeightSparsity::None,
                    [e.scales.len() as u64, len],
                )
            }),
            _ => None,
        };
        // The cheapest candidate, and the cheapest SWD one (the fallback when the FWD
        // stream turns out longer than estimated).
        let mut best = (u64::MAX, first);
        let mut best_swd = (u64::MAX, first);
        for c in &cands {
            let layout = match c.weight_format {
                WeightFormat::Fwd => match &fwd {
                    Some(l) => Some(l),
                    None => continue,
                },
                _ => swd.as_ref(),
            };
            // (The preferred candidate is dense; a sparse one reads the same lengths, FWD ones
            // the FWD estimate.)
            let layout = layout.map(|l| Layout {
                sparsity: c.weight_sparsity,
                ..l.clone()
            });
            let cycles = estimate(target, op, c, layout.as_ref(), REGION_READ_ONLY, &at);
            if cycles < best.0 {
                best = (cycles, *c);
            }
            if c.weight_format != WeightFormat::Fwd && cycles < best_swd.0 {
                best_swd = (cycles, *c);
            }
        }
        let mut chosen = None;
        if best.1 != best_swd.1 {
            if let Ok(e) = encode(target, op, &geom, &best.1) {
                let layout = e.as_ref().map(Encoded::layout);
                let cycles = estimate(target, op, &best.1, layout.as_ref(), REGION_READ_ONLY, &at);
                if cycles < best_swd.0 {
                    chosen = Some((best.1, e, cycles));
                }
            }
        }
        let (block, enc, cycles) = match chosen {
            Some(c) => c,
            None => {
                let (block, enc) = if best_swd.1 == first {
                    (first, enc0)
                } else {
                    match encode(target, op, &geom, &best_swd.1) {
                        Ok(e) => (best_swd.1, e),
                        Err(_) => (first, enc0),
                    }
                };
                let layout = enc.as_ref().map(Encoded::layout);
                let cycles = estimate(target, op, &block, layout.as_ref(), REGION_READ_ONLY, &at);
                (block, enc, cycles)
            }
        };
        plans.push(OpPlan { block, enc, cycles });
    }
    Ok(plans)
}
