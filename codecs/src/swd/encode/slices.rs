//! Slice planning inside a region (TRM §3.9.4, §3.9.5): the coded symbols
//! of a region and a dynamic programme choosing slice boundaries and
//! per-slice weight parameter and `zdiv`.

use super::cost::{
    zcost, IndexSums, WParam, ALL_WPARAMS, EXPECTED_W_PADDING, EXPECTED_Z_PADDING, GR_BITS, INF,
    SLICE_HEADER_BITS,
};
use super::mapping::Mapping;

/// The coded symbols of one region: weight indices and (alternating mode)
/// zero runs. In alternating mode `zruns[0]` precedes the first index and
/// `zruns[i + 1]` follows index `i`.
pub(super) struct Symbols {
    pub alternating: bool,
    pub idx: Vec<u16>,
    pub zruns: Vec<u32>,
}

/// The symbols of `weights` under `mapping`.
pub(super) fn symbols(weights: &[i16], mapping: &Mapping, alternating: bool) -> Symbols {
    let map: &[u16; 512] = &mapping.index_of;
    let at = |v: i16| map[(i32::from(v) + 255) as usize & 511];
    if !alternating {
        return Symbols {
            alternating,
            idx: weights.iter().map(|&v| at(v)).collect(),
            zruns: Vec::new(),
        };
    }
    // Branch-free compaction: every weight writes its index and the run
    // before it at position k; only nonzero weights advance k.
    let n = weights.len();
    let mut idx = vec![0u16; n + 1];
    let mut zruns = vec![0u32; n + 2];
    let mut k = 0usize;
    let mut run = 0u32;
    for &v in weights {
        idx[k] = at(v);
        zruns[k] = run;
        let nz = v != 0;
        run = if nz { 0 } else { run + 1 };
        k += usize::from(nz);
    }
    if k == 0 {
        // All-zero region: one zero weight coded as an index (§3.9.9).
        return Symbols {
            alternating,
            idx: vec![at(0)],
            zruns: vec![0, (n as u32).saturating_sub(1)],
        };
    }
    idx.truncate(k);
    zruns[k] = run;
    zruns.truncate(k + 1);
    Symbols {
        alternating,
        idx,
        zruns,
    }
}

/// One planned slice: symbols `start..end` of the region's index list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SlicePlan {
    pub start: usize,
    pub end: usize,
    pub wparam: WParam,
    pub zdiv: u8,
}

/// A region's coding: mapping, symbols and slices.
pub(super) struct RegionPlan {
    pub mapping: Mapping,
    pub sym: Symbols,
    pub slices: Vec<SlicePlan>,
    /// Estimated bits (exact up to chunk padding).
    pub bits: u64,
}

/// Plans the slices of `weights` coded with `mapping`.
pub(super) fn plan_with(weights: &[i16], mapping: Mapping, alternating: bool) -> RegionPlan {
    let sym = symbols(weights, &mapping, alternating);
    let (slices, bits) = plan_slices(&sym, mapping.palette.uncompressed_bits());
    RegionPlan {
        bits: bits + u64::from(mapping.header_bits()),
        mapping,
        sym,
        slices,
    }
}

/// Lanes of the slice DP: (weight parameter, zdiv) pairs.
const LANES: usize = 16;
/// Weight parameters of the alternating-mode lanes (each with zdiv 0..=3).
pub(super) const ALT_WPARAMS: usize = LANES / 4;
/// Per-symbol lane cost of a weight index the lane's parameter cannot code
/// (or of an unused lane): larger than any codable block, so the DP never
/// keeps such a lane, yet 16 of them plus zero runs fit in a `u16`.
const UNCODABLE: u16 = 1024;

/// Lane rows of the non-alternating lanes ([`ALL_WPARAMS`] order) for the
/// Golomb-Rice parameters ([`UNCODABLE`] where one cannot code the index);
/// the uncompressed lane (12) and the unused lanes are 0: the DP adds the
/// uncompressed lane's bits per block and masks the unused lanes, and full
/// rows keep the per-symbol sum one vector addition.
static GR_LANE_ROWS: [[u16; LANES]; 512] = {
    let mut t = [[0; LANES]; 512];
    let mut idx = 0;
    while idx < 512 {
        let mut p = 0;
        while p < 12 {
            let b = GR_BITS[p][idx];
            t[idx][p] = if b == 255 { UNCODABLE } else { b as u16 };
            p += 1;
        }
        idx += 1;
    }
    t
};

/// Dense histogram of weight indices (512 entries).
pub(super) fn index_hist(idx: &[u16]) -> [u32; 512] {
    let mut h = [0u32; 512];
    for &i in idx {
        h[usize::from(i) & 511] += 1;
    }
    h
}

/// Adds a lane row into a block accumulator (vectorised: 16 x u16).
#[inline(always)]
fn add_row(acc: &mut [u16; LANES], row: &[u16; LANES]) {
    for (a, r) in acc.iter_mut().zip(row) {
        *a = a.wrapping_add(*r);
    }
}

/// The DP runs over blocks of up to BLOCK symbols: slice boundaries fall
/// on block starts. A symbol followed by a zero run of ISOLATE or more gets
/// a block of its own, so that such runs can be coded in a slice with their
/// own zdiv (ordering padding produces them regularly).
const BLOCK: usize = 16;
const ISOLATE: u32 = 48;
/// Zero runs below this have a precomputed lane row.
const ZTAB: usize = 256;

/// The lanes of the slice DP for one mode class and mapping, with their
/// per-index and per-zero-run bit rows. Built once and shared by every
/// region coded with the same mapping.
pub(super) struct Lanes {
    alternating: bool,
    ubits: u32,
    used: usize,
    lane_w: [WParam; LANES],
    lane_z: [u32; LANES],
    /// Alternating mode: a row per weight index (only indices that occur
    /// are filled). Non-alternating mode uses [`GR_LANE_ROWS`].
    rows: Vec<[u16; LANES]>,
    /// Alternating mode: a row per zero run below [`ZTAB`] up to the
    /// longest run.
    zlane: Vec<[u16; LANES]>,
}

impl Lanes {
    /// Lanes for symbols with index histogram `hist` (dense, 512 entries)
    /// and longest zero run `max_run`: in non-alternating mode every weight parameter (13), so
    /// that a stretch of small indices (e.g. the zero padding of the
    /// ordering) gets a slice with `wdiv` 0 or `wtrunc` even where that
    /// parameter cannot code the rest of the region; in alternating mode
    /// the best [`ALT_WPARAMS`] parameters, each with every `zdiv`.
    pub(super) fn new(hist: &[u32; 512], ubits: u32, alternating: bool, max_run: u32) -> Self {
        let mut lane_w = [WParam::Unc; LANES];
        let mut lane_z = [0u32; LANES];
        let mut used = 0;
        if alternating {
            for (p, _) in IndexSums::from_dense(hist).best(ubits, ALT_WPARAMS) {
                for z in 0..4 {
                    lane_w[used] = p;
                    lane_z[used] = z;
                    used += 1;
                }
            }
        } else {
            for &p in &ALL_WPARAMS {
                debug_assert_eq!(p.ordinal(), used);
                lane_w[used] = p;
                used += 1;
            }
        }
        let mut lanes = Self {
            alternating,
            ubits,
            used,
            lane_w,
            lane_z,
            rows: Vec::new(),
            zlane: Vec::new(),
        };
        if alternating {
            // Lanes are (weight parameter, zdiv 0..=3) in groups of four:
            // each group repeats its parameter's bits; unused groups are
            // uncodable.
            let groups = used / 4;
            let mut col = [usize::MAX; ALT_WPARAMS];
            for (c, p) in col.iter_mut().zip(lane_w.iter().step_by(4).take(groups)) {
                if *p != WParam::Unc {
                    *c = p.ordinal();
                }
            }
            // Rows up to the largest index that occurs.
            let top = hist.iter().rposition(|&c| c > 0);
            let mut t = vec![[UNCODABLE; LANES]; top.map_or(0, |t| t + 1)];
            for i in (0..t.len()).filter(|&i| hist[i] > 0) {
                let gr = &GR_LANE_ROWS[i];
                let unc = WParam::Unc.cost_capped(i as u16, ubits, UNCODABLE);
                let row = &mut t[i];
                for (g, &c) in col[..groups].iter().enumerate() {
                    let bits = if c < 12 { gr[c] } else { unc };
                    row[4 * g..4 * g + 4].fill(bits);
                }
            }
            lanes.rows = t;
            // Lanes are (weight parameter, zdiv 0..=3) in groups of four.
            debug_assert!((0..used).all(|s| lane_z[s] == (s % 4) as u32));
            lanes.zlane = (0..(max_run as usize + 1).min(ZTAB) as u16)
                .map(|r| {
                    let z = [r + 1, (r >> 1) + 2, (r >> 2) + 3, (r >> 3) + 4];
                    std::array::from_fn(|s| if s < used { z[s % 4] } else { 0 })
                })
                .collect();
        }
        lanes
    }

    /// The non-alternating lanes: [`Self::new`] of any indices.
    fn non_alternating(ubits: u32) -> Self {
        Self::new(&[0; 512], ubits, false, 0)
    }

    /// Zero-run bits of a run in every lane.
    fn zrow(&self, r: u32) -> [u32; LANES] {
        let mut row = [0u32; LANES];
        if self.alternating {
            for (c, &z) in row.iter_mut().zip(&self.lane_z[..self.used]) {
                *c = zcost(r, z);
            }
        }
        row
    }
}

/// Masks of the lanes the DP does not use: they never become the best.
struct UnusedLanes {
    /// `u32::MAX` for an unused lane, else 0.
    wide: [u32; LANES],
    /// `i16::MAX` for an unused lane, else 0.
    narrow: [i16; LANES],
}

impl UnusedLanes {
    fn new(used: usize) -> Self {
        Self {
            wide: std::array::from_fn(|s| if s < used { 0 } else { u32::MAX }),
            narrow: std::array::from_fn(|s| if s < used { 0 } else { i16::MAX }),
        }
    }
}

/// Closes a block of the slice DP: every used lane's cost after it is its
/// relative cost after the previous block capped at `switch_cost` (a new
/// slice from the best lane; `switch_cost` alone at the first block) plus
/// the block's bits `acc` and `exact`. Returns the smallest of them and
/// leaves in `cost` each lane's cost above it, saturated at 255 (unused
/// lanes: 255).
fn close_block_exact(
    cost: &mut [u8; LANES],
    first: bool,
    switch_cost: u32,
    acc: &[u16; LANES],
    exact: &[u32; LANES],
    unused: &UnusedLanes,
) -> u32 {
    let mut t = [0u32; LANES];
    for s in 0..LANES {
        let prev = if first {
            switch_cost
        } else {
            u32::from(cost[s]).min(switch_cost)
        };
        t[s] = ((prev + u32::from(acc[s])) | unused.wide[s]).saturating_add(exact[s]);
    }
    let m = t.iter().copied().fold(u32::MAX, u32::min);
    for (c, &ts) in cost.iter_mut().zip(&t) {
        *c = (ts - m).min(255) as u8;
    }
    m
}

/// [`close_block_exact`] of a block without exact bits, in 16-bit lanes:
/// a block's `acc` is at most [`BLOCK`] rows of at most [`UNCODABLE`] +
/// [`ZTAB`] bits (20,480), so with the previous cost (below 256) every used
/// lane stays below `i16::MAX`, the unused lanes' value.
fn close_block(
    cost: &mut [u8; LANES],
    first: bool,
    switch_cost: u32,
    acc: &[u16; LANES],
    unused: &UnusedLanes,
) -> u32 {
    const _: () = assert!(BLOCK * (UNCODABLE as usize + ZTAB) + 255 < i16::MAX as usize);
    debug_assert!(switch_cost < 255);
    let sw = switch_cost as i16;
    let mut t = [0i16; LANES];
    for s in 0..LANES {
        let prev = if first { sw } else { (cost[s] as i16).min(sw) };
        t[s] = (prev + acc[s] as i16) | unused.narrow[s];
    }
    let m = t.iter().copied().fold(i16::MAX, i16::min);
    for (c, &ts) in cost.iter_mut().zip(&t) {
        *c = (ts - m).min(255) as u8;
    }
    m as u32
}

/// Dynamic programme over the symbols choosing slice boundaries and
/// per-slice (weight parameter, zdiv). Returns the slices and the estimated
/// bits of the region without its palette extension.
pub(super) fn plan_slices(sym: &Symbols, ubits: u32) -> (Vec<SlicePlan>, u64) {
    let lanes = if sym.alternating {
        let hist = index_hist(&sym.idx);
        let max_run = sym.zruns.iter().copied().max().unwrap_or(0);
        Lanes::new(&hist, ubits, true, max_run)
    } else {
        // The non-alternating lanes are every weight parameter, whatever the indices.
        Lanes::non_alternating(ubits)
    };
    plan_slices_with(sym, &lanes)
}

/// [`plan_slices`] with given lanes (which must cover every index and run).
pub(super) fn plan_slices_with(sym: &Symbols, lanes: &Lanes) -> (Vec<SlicePlan>, u64) {
    debug_assert_eq!(sym.alternating, lanes.alternating);
    let n = sym.idx.len();
    let (used, ubits) = (lanes.used, lanes.ubits);
    let (lane_w, lane_z) = (&lanes.lane_w, &lanes.lane_z);
    let zrow = |r: u32| lanes.zrow(r);
    let zlane = &lanes.zlane;
    let switch_cost = SLICE_HEADER_BITS
        + EXPECTED_W_PADDING
        + if sym.alternating {
            EXPECTED_Z_PADDING
        } else {
            0
        };
    // Rows of the indices; in non-alternating mode the lanes are in
    // ALL_WPARAMS order and the static Golomb-Rice rows serve, the
    // uncompressed lane is summed per block.
    let wlane: &[[u16; LANES]] = if sym.alternating {
        &lanes.rows
    } else {
        &GR_LANE_ROWS
    };
    let unc_lane = WParam::Unc.ordinal();
    // Forward pass over blocks. Costs are kept relative to the best lane
    // (`base` holds the offset); `rel[b]` keeps each lane's relative cost
    // after block b saturated to 255: the backtrack only needs to know
    // whether it exceeds the switch cost (the lane started a new slice at
    // block b + 1, coming from a best lane) and which lanes are best (0).
    debug_assert!(switch_cost < 255);
    let mut starts: Vec<usize> = Vec::with_capacity(n / BLOCK + 2);
    let mut rel: Vec<[u8; LANES]> = Vec::with_capacity(n / BLOCK + 2);
    // Relative cost of each lane after the previous block, saturated at
    // 255 (above the switch cost: a lane that expensive restarts anyway).
    let mut cost = [0u8; LANES];
    let unused = UnusedLanes::new(used);
    let mut base = 0u64;
    let sw = u64::from(switch_cost);
    let mut i = 0;
    while i < n {
        // Block i..j; sums of short-run symbols in u16 lanes, long runs exact.
        let mut acc = [0u16; LANES];
        let mut exact = [0u32; LANES];
        let mut has_exact = false;
        let mut j = i;
        if !sym.alternating {
            // No zero runs: plain sums of up to BLOCK weight rows.
            let end = (i + BLOCK).min(n);
            let mut any = 0u16;
            for &ix in &sym.idx[i..end] {
                add_row(&mut acc, &wlane[usize::from(ix) & 511]);
                any |= ix;
            }
            debug_assert_eq!(acc[unc_lane], 0);
            acc[unc_lane] += if u32::from(any) >> ubits == 0 {
                ((end - i) as u32 * ubits) as u16
            } else {
                UNCODABLE
            };
            j = end;
        }
        while sym.alternating && j < n && j - i < BLOCK {
            let r = sym.zruns[j + 1];
            if r >= ISOLATE && j > i {
                break;
            }
            add_row(&mut acc, &wlane[usize::from(sym.idx[j]) & 511]);
            if let Some(z) = zlane.get(r as usize) {
                add_row(&mut acc, z);
            } else {
                has_exact = true;
                for (e, z) in exact.iter_mut().zip(zrow(r)) {
                    *e = e.saturating_add(z);
                }
            }
            j += 1;
            if r >= ISOLATE {
                break;
            }
        }
        if i == 0 && sym.alternating {
            has_exact = true;
            for (e, z) in exact.iter_mut().zip(zrow(sym.zruns[0])) {
                *e = e.saturating_add(z);
            }
        }
        let m = if has_exact {
            close_block_exact(&mut cost, i == 0, switch_cost, &acc, &exact, &unused)
        } else {
            close_block(&mut cost, i == 0, switch_cost, &acc, &unused)
        };
        base += u64::from(m);
        starts.push(i);
        rel.push(cost);
        i = j;
    }
    // Backtrack from the first best final lane.
    let best = |row: &[u8; LANES]| row.iter().position(|&c| c == 0).unwrap_or(0);
    let mut slices = Vec::new();
    let nb = starts.len();
    if nb > 0 {
        let mut s = best(&rel[nb - 1]);
        let mut end = n;
        for b in (1..nb).rev() {
            if u64::from(rel[b - 1][s]) > sw {
                slices.push(SlicePlan {
                    start: starts[b],
                    end,
                    wparam: lane_w[s],
                    zdiv: lane_z[s] as u8,
                });
                end = starts[b];
                s = best(&rel[b - 1]);
            }
        }
        slices.push(SlicePlan {
            start: 0,
            end,
            wparam: lane_w[s],
            zdiv: lane_z[s] as u8,
        });
    }
    slices.reverse();
    debug_assert!(slices.iter().all(|s| sym.idx[s.start..s.end]
        .iter()
        .all(|&i| s.wparam.cost(i, ubits) < INF)));
    let total = base;
    // The first slice's switch cost stands for its header.
    let bits = total + u64::from(SLICE_HEADER_BITS) - u64::from(switch_cost.min(total as u32));
    (slices, bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// A block closed in 16-bit lanes is closed as in 32-bit lanes without exact bits:
        /// any previous costs, used lanes and block sums up to the largest a block reaches.
        #[test]
        fn a_block_closed_in_16_bit_lanes_is_closed_as_in_32_bit_lanes(
            prev in proptest::prelude::any::<[u8; LANES]>(),
            sums in proptest::collection::vec(0u32..=(BLOCK * (UNCODABLE as usize + ZTAB)) as u32, LANES),
            used in 1usize..=LANES,
            first in proptest::prelude::any::<bool>(),
            alternating in proptest::prelude::any::<bool>(),
        ) {
            let switch_cost = SLICE_HEADER_BITS
                + EXPECTED_W_PADDING
                + if alternating { EXPECTED_Z_PADDING } else { 0 };
            let acc: [u16; LANES] = std::array::from_fn(|s| sums[s] as u16);
            let unused = UnusedLanes::new(used);
            let (mut narrow, mut wide) = (prev, prev);
            let m16 = close_block(&mut narrow, first, switch_cost, &acc, &unused);
            let m32 = close_block_exact(&mut wide, first, switch_cost, &acc, &[0; LANES], &unused);
            proptest::prop_assert_eq!((m16, narrow), (m32, wide));
        }
    }
}
