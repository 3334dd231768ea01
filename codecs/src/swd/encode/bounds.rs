//! Lower bounds of planned region sizes, to skip planning codings that
//! cannot win (the planner's result never depends on them).

use super::cost::{IndexSums, WParam, GR_BITS, MIN_GR_BITS, SLICE_HEADER_BITS};
use super::mapping::{for_each_slot, present_slots, Mapping};
use super::slices::ALT_WPARAMS;
use super::stats::slot;

/// A lower bound of the weight index bits of values with histogram `hist`
/// coded with `mapping` by the slice planner: every index at its fewest
/// bits under any weight parameter of the planner's lanes (in alternating
/// mode the best [`ALT_WPARAMS`] for these indices and zero is not
/// indexed, else all parameters). `None` for alternating mode without
/// nonzero values.
pub(super) fn index_lower_bound(mapping: &Mapping, alternating: bool, hist: &[u32]) -> Option<u64> {
    let ubits = mapping.palette.uncompressed_bits();
    let mut mask = present_slots(hist);
    if alternating {
        mask[slot(0) / 64] &= !(1 << (slot(0) % 64));
        if mask.iter().all(|&m| m == 0) {
            return None;
        }
    }
    let mut idx_hist = [0u32; 512];
    for_each_slot(&mask, |s| {
        idx_hist[usize::from(mapping.index_of[s]) & 511] += hist[s];
    });
    // The fewest bits of every index over the lanes' parameters.
    let mut fewest = [255u8; 512];
    let unc_limit = (1usize << ubits).min(512);
    fewest[..unc_limit].fill(ubits as u8);
    if alternating {
        let params = IndexSums::from_dense(&idx_hist).best(ubits, ALT_WPARAMS);
        if !params.iter().any(|(p, _)| *p == WParam::Unc) {
            fewest = [255u8; 512];
        }
        for (p, _) in params.iter().filter(|(p, _)| *p != WParam::Unc) {
            for (f, &g) in fewest.iter_mut().zip(&GR_BITS[p.ordinal()]) {
                *f = (*f).min(g);
            }
        }
    } else {
        for (f, &g) in fewest.iter_mut().zip(&MIN_GR_BITS) {
            *f = (*f).min(g);
        }
    }
    Some(
        idx_hist
            .iter()
            .zip(&fewest)
            .map(|(&c, &f)| u64::from(c) * u64::from(f))
            .sum(),
    )
}

/// A lower bound of the bits `slices::plan_with` reports for one region
/// with value histogram `hist` coded with `mapping`: the first slice
/// header, the palette, the [`index_lower_bound`] and (alternating mode)
/// `zbits_min`, the zero-run bits with every run at its best `zdiv`.
pub(super) fn region_lower_bound(
    mapping: &Mapping,
    alternating: bool,
    hist: &[u32],
    zbits_min: u64,
) -> Option<u64> {
    let header = u64::from(SLICE_HEADER_BITS + mapping.header_bits());
    let runs = if alternating { zbits_min } else { 0 };
    Some(header + runs + index_lower_bound(mapping, alternating, hist)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swd::encode::mapping::all_candidates;
    use crate::swd::encode::slices::plan_with;
    use crate::swd::encode::stats::Stats;

    /// xorshift32 for deterministic test data.
    fn rng(seed: u32) -> impl FnMut() -> u32 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    #[test]
    fn the_lower_bound_never_exceeds_the_planned_bits() {
        // Sparse and dense, narrow and wide distributions, with zero
        // stretches: every candidate of both mode classes.
        let mut next = rng(0x5eed_1234);
        for case in 0..40u32 {
            let n = 64 + (next() % 3000) as usize;
            let zeros = next() % 100;
            let spread = 1 + next() % 255;
            let w: Vec<i16> = (0..n)
                .map(|k| {
                    if next() % 100 < zeros || (case % 3 == 0 && k % 500 < 80) {
                        0
                    } else {
                        ((next() % (2 * spread + 1)) as i32 - spread as i32) as i16
                    }
                })
                .collect();
            let stats = Stats::new(&w);
            let best_z = stats.zbits.iter().copied().min().unwrap_or(0);
            for c in all_candidates(&stats.hist, best_z) {
                let m = c.mapping();
                let Some(lb) = region_lower_bound(&m, c.alternating, &stats.hist, stats.zbits_min)
                else {
                    continue;
                };
                let plan = plan_with(&w, m, c.alternating);
                assert!(lb <= plan.bits, "case {case}: {lb} > {}", plan.bits);
            }
        }
    }
}
