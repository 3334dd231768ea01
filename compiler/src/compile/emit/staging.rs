//! Weight and scale staging: copying an operation's stream block from region 0 into the
//! staging memory ([`Target::staging`]) by DMA while the previous operation runs.
//!
//! The DMA for operation `k` is issued right after the kernel command of operation `k - 1`,
//! when operation `k - 2` may still be running, so its buffer must not overlap anything live
//! from `k - 2` to `k` ([`Item`] `k-2..=k`); at most two staging buffers are live at a time
//! (double buffering). Operation by operation, in order, the block is staged when the cost
//! model says it pays: the operation's cycles with its streams in the staging memory, plus the
//! part of the DMA's cycles the previous operation does not hide, must be below its cycles
//! reading region 0; and when a buffer fits ([`alloc::fit`]) beside the feature maps of that
//! region, below their high-water mark (staging never raises the peak memory use) and within
//! the region's capacity.

use super::plan::{estimate, OpPlan};
use super::*;
use crate::compile::alloc::{self, Item};

/// Where each operation's stream block is staged: `(region, address)`, or `None`.
pub(super) fn stage(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
) -> Vec<Option<(u8, u64)>> {
    let mut out = vec![None; l.ops.len()];
    let Some((region, capacity)) = target.staging() else {
        return out;
    };
    let mut occupied: Vec<(Item, u64)> = (0..l.buffers.len())
        .filter(|&i| p.regions[i] == region)
        .map(|i| (alloc::buffer_item(l, i), p.offsets[i]))
        .collect();
    // Staging never raises the memory's high-water mark: buffers go only where the feature
    // maps leave room below it.
    let fm_size = if region == crate::compile::REGION_FAST {
        p.fast_size
    } else {
        p.arena_size
    };
    let capacity = capacity.min(fm_size);
    let none = BTreeMap::new();
    let mut prev_cycles = 0u64;
    for (k, (op, plan)) in l.ops.iter().zip(plans).enumerate() {
        let Some(enc) = &plan.enc else {
            prev_cycles = plan.cycles;
            continue;
        };
        let at = locs(op, p, l, &none);
        let staged = estimate(target, op, &plan.block, Some(&enc.layout()), region, &at);
        let mut w = Writer::default();
        weights::dma_commands(&mut w, 0, region, 0, enc.size());
        let dma = target.estimate(&w.commands);
        let cost = staged + dma.saturating_sub(prev_cycles);
        let item = Item {
            size: enc.size(),
            start: k.saturating_sub(2),
            end: k,
        };
        let slot = (cost < plan.cycles)
            .then(|| alloc::fit(&occupied, item, capacity))
            .flatten();
        match slot {
            Some(off) => {
                occupied.push((item, off));
                out[k] = Some((region, off));
                prev_cycles = staged;
            }
            None => prev_cycles = plan.cycles,
        }
    }
    out
}
