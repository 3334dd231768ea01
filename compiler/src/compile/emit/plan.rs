//! Per-operation choices by the target's cost model: microblock, OFM block and weight order.
//!
//! The target offers the valid candidates ([`Target::block_candidates`], preferred first); each
//! is written out as the operation's complete register state (feature maps where the
//! placement put them, weights read from region 0 with the lengths of the preferred
//! candidate's encoding) and estimated ([`Target::estimate`]); the cheapest wins, ties going
//! to the earlier candidate. The winner's streams are then encoded for real (falling back to
//! the preferred candidate if that encoding fails).

use super::weights::{encode, Encoded};
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

/// Estimated cycles of `op` with `block`, its streams `enc` in region 0.
pub(super) fn estimate(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
    enc: Option<&Encoded>,
    region: u8,
    at: &Locs,
) -> u64 {
    let mut w = Writer::default();
    let (cmd, _) = op_commands(
        &mut w,
        op,
        block,
        enc.map(|e| (e, region, 0)),
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
        let mut best = (u64::MAX, first);
        for c in &cands {
            let cycles = estimate(target, op, c, enc0.as_ref(), REGION_READ_ONLY, &at);
            if cycles < best.0 {
                best = (cycles, *c);
            }
        }
        let (block, enc) = if best.1 == first {
            (first, enc0)
        } else {
            match encode(target, op, &geom, &best.1) {
                Ok(e) => (best.1, e),
                Err(_) => (first, enc0),
            }
        };
        let cycles = estimate(target, op, &block, enc.as_ref(), REGION_READ_ONLY, &at);
        plans.push(OpPlan { block, enc, cycles });
    }
    Ok(plans)
}
