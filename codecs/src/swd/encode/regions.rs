//! Regions: stretches of the stream that each start with a `newpal` slice
//! (TRM §3.9.5, §3.9.9) and have one index mapping and mode class.

use super::bounds::{index_lower_bound, region_lower_bound};
use super::cost::{
    best_wparams, zdiv_costs, WParam, EXPECTED_W_PADDING, EXPECTED_Z_PADDING, SLICE_HEADER_BITS,
};
use super::mapping::{
    all_candidates, best_hole_candidate, non_alternating_candidates, Candidate, Mapping,
};
use super::remap::remap_if_smaller;
use super::slices::{plan_slices_with, plan_with, symbols, Lanes, RegionPlan, SlicePlan, Symbols};
use super::stats::{slot, Stats, REGION_BLOCK};
use crate::swd::{ZeroRunMode, WUNARY0_BITS};

/// A planned region: weights `start..end`.
pub(super) struct Region {
    pub start: usize,
    pub end: usize,
    pub plan: RegionPlan,
}

pub(super) fn total_bits(regions: &[Region]) -> u64 {
    regions.iter().map(|r| r.plan.bits).sum()
}

/// Splits the stream into regions and plans each: the plan without gap
/// regions ([`plan_mode_regions`]) or, when the stream has long zero runs,
/// the plan with gap regions ([`plan_gapped`]), whichever is smaller.
pub(super) fn plan_regions(weights: &[i16]) -> Vec<Region> {
    if weights.is_empty() {
        return Vec::new();
    }
    let stats = Stats::new(weights);
    let best_z = stats.zbits.iter().copied().min().unwrap_or(0);
    let cands = all_candidates(&stats.hist, best_z);
    let whole = plan_mode_regions(weights, &stats, &cands);
    match plan_gapped(weights, &stats, &cands, total_bits(&whole)) {
        Some(g) if total_bits(&g) < total_bits(&whole) => g,
        _ => whole,
    }
}

fn best_of(cands: &[Candidate], alternating: bool) -> Option<&Candidate> {
    cands
        .iter()
        .filter(|c| c.alternating == alternating)
        .min_by_key(|c| c.estimate)
}

/// Plans one region from its candidates: the best candidate by estimate
/// is planned exactly; the best of the other mode class too if its
/// estimate is within 2 % and its lower bound does not already exceed the
/// first plan, and the smaller plan wins. `zbits_min` are the region's
/// zero-run bits with every run at its best `zdiv`.
fn plan_region_from(
    weights: &[i16],
    hist: &[u32],
    zbits_min: u64,
    cands: &[Candidate],
) -> RegionPlan {
    let (alt, non) = (best_of(cands, true), best_of(cands, false));
    let mut order: Vec<&Candidate> = alt.into_iter().chain(non).collect();
    order.sort_by_key(|c| c.estimate);
    let Some(first) = order.first() else {
        return plan_with(weights, Mapping::fallback(), false);
    };
    let limit = first.estimate + first.estimate / 50;
    let mut best: Option<RegionPlan> = None;
    for c in order.into_iter().filter(|c| c.estimate <= limit) {
        let mapping = c.mapping();
        if let Some(b) = &best {
            // A plan can only tie or lose to an earlier one: skip it if
            // even its lower bound does not beat that.
            if region_lower_bound(&mapping, c.alternating, hist, zbits_min)
                .is_some_and(|lb| lb >= b.bits)
            {
                continue;
            }
        }
        let plan = plan_with(weights, mapping, c.alternating);
        if best.as_ref().is_none_or(|b| plan.bits < b.bits) {
            best = Some(plan);
        }
    }
    let mut plan = best.unwrap_or_else(|| plan_with(weights, Mapping::fallback(), false));
    try_hole_mapping(&mut plan, hist, cands);
    plan
}

/// Remaps `plan` to the best hole-closing mapping of its mode class (see
/// `mapping::hole_candidates`) if that candidate's estimate beats the
/// class's best and the planned slices cost less with it.
fn try_hole_mapping(plan: &mut RegionPlan, hist: &[u32], cands: &[Candidate]) {
    let alternating = plan.sym.alternating;
    let Some(best) = best_of(cands, alternating) else {
        return;
    };
    if let Some(hole) = best_hole_candidate(hist, best.zero_run_bits(), alternating) {
        if hole.estimate < best.estimate {
            remap_if_smaller(&mut [plan], &hole);
        }
    }
}

/// Plans one region of `weights` on its own.
pub(super) fn plan_region(weights: &[i16]) -> RegionPlan {
    let stats = Stats::new(weights);
    let best_z = stats.zbits.iter().copied().min().unwrap_or(0);
    let cands = all_candidates(&stats.hist, best_z);
    plan_region_from(weights, &stats.hist, stats.zbits_min, &cands)
}

/// The coding of the data between gaps chosen by [`plan_gapped`].
struct GappedSetup {
    /// (start, end, is a gap) of every segment, in order.
    segments: Vec<(usize, usize, bool)>,
    /// Value histogram of the data (gap zeros removed).
    hist: Vec<u32>,
    /// The data's candidate and its mapping.
    cand: Candidate,
    mapping: Mapping,
    /// Best zero-run bits of the data.
    best_z: u64,
}

impl GappedSetup {
    /// Segments and data mapping; `None` if the stream has no gap.
    ///
    /// `whole` are the candidates of the whole stream: their alternating
    /// ones serve the data too (zero is not indexed in alternating mode),
    /// with the zero-run bits of the data.
    fn new(weights: &[i16], stats: &Stats, whole: &[Candidate]) -> Option<Self> {
        if stats.gaps.is_empty() {
            return None;
        }
        let mut segments = Vec::with_capacity(2 * stats.gaps.len() + 1);
        let mut at = 0;
        for &(a, b) in &stats.gaps {
            if a > at {
                segments.push((at, a, false));
            }
            segments.push((a, b, true));
            at = b;
        }
        if at < weights.len() {
            segments.push((at, weights.len(), false));
        }
        let mut hist = stats.hist.clone();
        hist[slot(0)] -= stats.gap_zeros as u32;
        let best_z = stats.zbits_data.iter().copied().min().unwrap_or(0);
        let mut cands = non_alternating_candidates(&hist);
        cands.extend(
            whole
                .iter()
                .filter(|c| c.alternating)
                .map(|c| c.with_zero_run_bits(best_z)),
        );
        let cand = cands.into_iter().min_by_key(|c| c.estimate)?;
        let mapping = cand.mapping();
        Some(Self {
            segments,
            hist,
            cand,
            mapping,
            best_z,
        })
    }

    /// A lower bound of the planned bits: the gap regions, a header and
    /// palette per data region, every data index and zero run at its
    /// fewest bits.
    fn lower_bound(&self, stats: &Stats) -> u64 {
        let zero = Mapping::zero();
        let gaps: u64 = stats
            .gaps
            .iter()
            .map(|&(a, b)| zero_region_plan(&zero, b - a).bits)
            .sum();
        let data_regions = self.segments.iter().filter(|s| !s.2).count() as u64;
        let headers = data_regions * u64::from(SLICE_HEADER_BITS + self.mapping.header_bits());
        let alternating = self.cand.alternating;
        let runs = if alternating { stats.zbits_min_data } else { 0 };
        let indices = index_lower_bound(&self.mapping, alternating, &self.hist).unwrap_or(0);
        gaps + headers + runs + indices
    }
}

/// Regions around long zero runs ("gaps", e.g. the zero padding the
/// weight ordering inserts): every gap is a region of its own (an all-zero
/// alternating slice in direct mode, whose `newpal` costs 13 bits), and the
/// weights between gaps are coded with one index mapping chosen for them
/// alone (so zero, if it only occurs in the gaps, takes no palette entry;
/// see [`GappedSetup`]). `None` if there is no gap, or when the plan can
/// only tie or lose to `bound` (the plan without gap regions, which wins
/// ties): its lower bound is not below it and no hole-closing palette can
/// lower it.
fn plan_gapped(
    weights: &[i16],
    stats: &Stats,
    whole: &[Candidate],
    bound: u64,
) -> Option<Vec<Region>> {
    let setup = GappedSetup::new(weights, stats, whole)?;
    let alternating = setup.cand.alternating;
    let hole = best_hole_candidate(&setup.hist, setup.best_z, alternating)
        .filter(|h| h.estimate < setup.cand.estimate);
    if hole.is_none() && setup.lower_bound(stats) >= bound {
        return None;
    }
    let mut regions = plan_gapped_from(weights, &setup);
    if let Some(hole) = hole {
        let mut data: Vec<&mut RegionPlan> = regions
            .iter_mut()
            .zip(&setup.segments)
            .filter(|(_, s)| !s.2)
            .map(|(r, _)| &mut r.plan)
            .collect();
        remap_if_smaller(&mut data, &hole);
    }
    Some(regions)
}

/// The regions of a gapped plan: gap regions and data regions sharing the
/// setup's mapping and one set of slice-planner lanes.
fn plan_gapped_from(weights: &[i16], setup: &GappedSetup) -> Vec<Region> {
    let (mapping, alternating) = (&setup.mapping, setup.cand.alternating);
    let syms: Vec<Option<Symbols>> = setup
        .segments
        .iter()
        .map(|&(a, b, gap)| (!gap).then(|| symbols(&weights[a..b], mapping, alternating)))
        .collect();
    let mut idx_hist = [0u32; 512];
    let mut max_run = 0;
    for sym in syms.iter().flatten() {
        for &i in &sym.idx {
            idx_hist[usize::from(i) & 511] += 1;
        }
        max_run = max_run.max(sym.zruns.iter().copied().max().unwrap_or(0));
    }
    let ubits = mapping.palette.uncompressed_bits();
    let lanes = Lanes::new(&idx_hist, ubits, alternating, max_run);
    let zero = Mapping::zero();
    let mut regions = Vec::with_capacity(setup.segments.len());
    for (&(a, b, _), sym) in setup.segments.iter().zip(syms) {
        let plan = match sym {
            None => zero_region_plan(&zero, b - a),
            Some(sym) => {
                let (slices, bits) = plan_slices_with(&sym, &lanes);
                RegionPlan {
                    bits: bits + u64::from(mapping.header_bits()),
                    mapping: mapping.clone(),
                    sym,
                    slices,
                }
            }
        };
        regions.push(Region {
            start: a,
            end: b,
            plan,
        });
    }
    regions
}

/// An all-zero region of `len` zeros: one alternating `newpal` slice whose
/// only index is a zero (§3.9.9), with the zero runs around it.
fn zero_region_plan(mapping: &Mapping, len: usize) -> RegionPlan {
    let len = len as u32;
    let zruns = vec![0, len.saturating_sub(1)];
    let (zdiv, zbits) = zdiv_costs(&zruns)
        .into_iter()
        .enumerate()
        .min_by_key(|&(_, c)| c)
        .unwrap_or((0, 0));
    let zlen = ZeroRunMode::Alternating { zdiv: zdiv as u8 }.zunary_len();
    let unary = zbits - 2 * zdiv as u64;
    let bits = u64::from(SLICE_HEADER_BITS + mapping.header_bits() + WUNARY0_BITS)
        + unary.next_multiple_of(u64::from(zlen))
        + 2 * zdiv as u64;
    RegionPlan {
        mapping: mapping.clone(),
        sym: Symbols {
            alternating: true,
            idx: vec![0],
            zruns,
        },
        slices: vec![SlicePlan {
            start: 0,
            end: 1,
            wparam: WParam::Gr {
                wdiv: 0,
                trunc: false,
            },
            zdiv: zdiv as u8,
        }],
        bits,
    }
}

/// Average bits of a nonzero weight and bits of a zero weight under a
/// candidate with its best single weight parameter (zero: 0 in
/// alternating mode, where zeros are coded as runs).
fn class_bits(c: &Candidate, hist: &[u32]) -> Option<(f64, f64)> {
    let mapping = c.mapping();
    let ubits = mapping.palette.uncompressed_bits();
    let ih: Vec<(u16, u32)> = (0..511)
        .filter(|&s| hist[s] > 0 && !(c.alternating && s == slot(0)))
        .map(|s| (mapping.index_of[s], hist[s]))
        .collect();
    let (p, _) = *best_wparams(&ih, ubits, 1).first()?;
    let (mut bits, mut count) = (0u64, 0u64);
    for &(i, h) in ih.iter().filter(|&&(i, _)| i != mapping.index_of[slot(0)]) {
        bits += u64::from(h) * u64::from(p.cost(i, ubits));
        count += u64::from(h);
    }
    // (A stream without zeros has no index for zero: its cost never counts.)
    let zero = if c.alternating || hist[slot(0)] == 0 {
        0.0
    } else {
        f64::from(p.cost(mapping.index_of[slot(0)], ubits).min(1 << 16))
    };
    Some((bits as f64 / count.max(1) as f64, zero))
}

/// The plan without gap regions: one region, or regions that switch
/// between alternating and non-alternating mode.
///
/// A dynamic programme over blocks of [`REGION_BLOCK`] weights with two
/// states, alternating and non-alternating mode (each with the index
/// mapping and weight parameter that are best for the whole stream),
/// decides where switching mode pays for a new slice header and palette.
/// Block costs come from each block's number of zeros (nonzero weights at
/// the stream's average bits, zero runs at the best `zdiv` of the block).
/// If it proposes more than one region, each region is planned on its own
/// (with its own palette) and the split is kept only if its planned size
/// beats the single-region plan.
pub(super) fn plan_mode_regions(
    weights: &[i16],
    stats: &Stats,
    cands: &[Candidate],
) -> Vec<Region> {
    let hist = &stats.hist;
    let single = plan_region_from(weights, hist, stats.zbits_min, cands);
    let whole = |plan| {
        vec![Region {
            start: 0,
            end: weights.len(),
            plan,
        }]
    };
    let nb = stats.block_zeros.len();
    // A split of fewer than four blocks rarely pays for the extra header
    // and palette; skip the costing.
    if nb < 4 {
        return whole(single);
    }
    let (Some(alt), Some(non)) = (best_of(cands, true), best_of(cands, false)) else {
        return whole(single);
    };
    let (Some((alt_nz, _)), Some((non_nz, non_zero))) =
        (class_bits(alt, hist), class_bits(non, hist))
    else {
        return whole(single);
    };
    // Per-block costs: [alternating, non-alternating].
    let block: Vec<[u64; 2]> = stats
        .block_zeros
        .iter()
        .enumerate()
        .map(|(b, &z)| {
            let len = REGION_BLOCK.min(weights.len() - b * REGION_BLOCK) as u32;
            let m = len - z;
            let runs = (0..4u32)
                .map(|zd| u64::from(m) * u64::from(1 + zd) + u64::from(z >> zd))
                .min()
                .unwrap_or(0);
            [
                (f64::from(m) * alt_nz) as u64 + runs,
                (f64::from(m) * non_nz + f64::from(z) * non_zero) as u64,
            ]
        })
        .collect();
    let switch = [
        u64::from(SLICE_HEADER_BITS + EXPECTED_W_PADDING + EXPECTED_Z_PADDING + alt.header_bits()),
        u64::from(SLICE_HEADER_BITS + EXPECTED_W_PADDING + non.header_bits()),
    ];
    let mut cost = [switch[0] + block[0][0], switch[1] + block[0][1]];
    let mut switched = vec![[false; 2]; nb];
    for b in 1..nb {
        let prev = cost;
        for s in 0..2 {
            let stay = prev[s];
            let from = prev[1 - s] + switch[s];
            switched[b][s] = from < stay;
            cost[s] = stay.min(from) + block[b][s];
        }
    }
    // Only worth planning a split if the block model predicts a clear gain
    // over staying in one mode (the slice DP inside one region recovers
    // much of the difference on its own).
    let stay = (0..2)
        .map(|s| switch[s] + block.iter().map(|b| b[s]).sum::<u64>())
        .min()
        .unwrap_or(0);
    let dp = cost[0].min(cost[1]);
    if dp + (stay / 100).max(256) > stay {
        return whole(single);
    }
    let mut s = usize::from(cost[1] < cost[0]);
    let mut bounds = vec![weights.len()];
    for b in (1..nb).rev() {
        if switched[b][s] {
            bounds.push(b * REGION_BLOCK);
            s = 1 - s;
        }
    }
    if bounds.len() == 1 {
        return whole(single);
    }
    bounds.push(0);
    bounds.reverse();
    let regions: Vec<Region> = bounds
        .windows(2)
        .map(|w| Region {
            start: w[0],
            end: w[1],
            plan: plan_region(&weights[w[0]..w[1]]),
        })
        .collect();
    if total_bits(&regions) < single.bits {
        regions
    } else {
        whole(single)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gapped_lower_bound_never_exceeds_the_gapped_plan() {
        // Dense and sparse data between zero runs of 64 to 300 weights.
        let mut x = 0x0dd_ba11u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for case in 0..30u32 {
            let mut w = Vec::new();
            for _ in 0..(1 + case % 6) {
                let zeros = next() % 90;
                let spread = 1 + next() % 127;
                for _ in 0..(20 + next() % 900) {
                    w.push(if next() % 100 < zeros {
                        0
                    } else {
                        ((next() % (2 * spread + 1)) as i32 - spread as i32) as i16
                    });
                }
                w.extend(std::iter::repeat_n(0, 64 + (next() % 240) as usize));
                w.push(1 + (next() % 100) as i16);
            }
            let stats = Stats::new(&w);
            let best_z = stats.zbits.iter().copied().min().unwrap_or(0);
            let cands = all_candidates(&stats.hist, best_z);
            let setup = GappedSetup::new(&w, &stats, &cands).unwrap();
            let planned = total_bits(&plan_gapped_from(&w, &setup));
            let bound = setup.lower_bound(&stats);
            assert!(bound <= planned, "case {case}: {bound} > {planned}");
        }
    }
}
