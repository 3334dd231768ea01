//! Exact re-costing of a planned region under another index mapping
//! (TRM §3.9.6–§3.9.8): a mapping found cheaper by its single-parameter
//! estimate is adopted for the region's planned slices only if those
//! slices, with every weight index translated, cost fewer bits.

use super::cost::WParam;
use super::mapping::{Candidate, NO_INDEX};
use super::slices::RegionPlan;
use crate::swd::{SLICELEN_MAX, WEIGHT_INDEX_MAX, WQ_MAX, WQ_MAX_TRUNCATED, WUNARY0_BITS};

/// Exact bits of the weight indices of `plan`'s slices, as emitted (slices
/// longer than [`SLICELEN_MAX`] split), with every index `i` replaced by
/// `t[i]` and `ubits` uncompressed bits: Golomb-Rice bits plus the unused
/// positions of each slice's last `wunary0`. `None` if a slice's
/// parameter cannot code a translated index.
fn index_bits_exact(plan: &RegionPlan, t: &[u16; 512], ubits: u32) -> Option<u64> {
    let mut bits = 0u64;
    for s in &plan.slices {
        for part in plan.sym.idx[s.start..s.end].chunks(SLICELEN_MAX as usize) {
            let n = part.len() as u64;
            let mut max = 0u16;
            match s.wparam {
                WParam::Unc => {
                    for &i in part {
                        max = max.max(t[usize::from(i) & 511]);
                    }
                    if u32::from(max) >> ubits != 0 {
                        return None;
                    }
                    bits += n * u64::from(ubits);
                }
                WParam::Gr { wdiv, trunc } => {
                    let (mut q_sum, mut positions) = (0u64, 0u64);
                    for &i in part {
                        let x = t[usize::from(i) & 511];
                        max = max.max(x);
                        let q = u32::from(x) >> wdiv;
                        if trunc {
                            q_sum += u64::from(q.min(1));
                        } else {
                            q_sum += u64::from(q);
                            positions += u64::from(q >> 1);
                        }
                    }
                    let q_max = if trunc { WQ_MAX_TRUNCATED } else { WQ_MAX };
                    if max > WEIGHT_INDEX_MAX || u32::from(max) >> wdiv > q_max {
                        return None;
                    }
                    // One wunary0 position per index (+ one per pair of
                    // quotient bits without wtrunc).
                    positions += n;
                    let unused = positions.next_multiple_of(u64::from(WUNARY0_BITS)) - positions;
                    bits += n * (1 + u64::from(wdiv)) + q_sum + unused;
                }
            }
        }
    }
    Some(bits)
}

/// Replaces the index mapping of `plans` (regions sharing one mapping and
/// mode class, each repeating it in its `newpal`) by `cand`'s, keeping
/// their slices, if that makes them smaller in total. Returns whether it
/// did.
pub(super) fn remap_if_smaller(plans: &mut [&mut RegionPlan], cand: &Candidate) -> bool {
    let Some(first) = plans.first() else {
        return false;
    };
    debug_assert_eq!(cand.alternating, first.sym.alternating);
    let new = cand.mapping();
    let mut t = [NO_INDEX; 512];
    for (&old, &new) in first.mapping.index_of.iter().zip(new.index_of.iter()) {
        if old != NO_INDEX {
            t[usize::from(old) & 511] = new;
        }
    }
    let identity: [u16; 512] = std::array::from_fn(|i| i as u16);
    let (old_ubits, new_ubits) = (
        first.mapping.palette.uncompressed_bits(),
        new.palette.uncompressed_bits(),
    );
    let (old_header, new_header) = (first.mapping.header_bits(), new.header_bits());
    let mut saved = Vec::with_capacity(plans.len());
    for plan in plans.iter() {
        let Some(old_bits) = index_bits_exact(plan, &identity, old_ubits) else {
            return false;
        };
        let Some(new_bits) = index_bits_exact(plan, &t, new_ubits) else {
            return false;
        };
        saved.push(
            (old_bits + u64::from(old_header)) as i64 - (new_bits + u64::from(new_header)) as i64,
        );
    }
    if saved.iter().sum::<i64>() <= 0 {
        return false;
    }
    for (plan, s) in plans.iter_mut().zip(saved) {
        for i in &mut plan.sym.idx {
            *i = t[usize::from(*i) & 511];
        }
        plan.bits = plan.bits.saturating_add_signed(-s);
        plan.mapping = new.clone();
    }
    true
}
