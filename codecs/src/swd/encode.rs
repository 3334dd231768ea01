//! SWD weight stream encoder (Ethos-U85 TRM §3.9.3–§3.9.10).
//!
//! [`encode`] turns one weight decoder's weight sequence (the order of
//! [`crate::ordering`]) into a stream the TRM decoder accepts, choosing the
//! coding to minimise its size:
//!
//! 1. **Regions.** The sequence is cut into regions, each starting with a
//!    `newpal` slice that sets the zero-run mode class (alternating or not)
//!    and the index mapping (palette, `dirofs`, `palbits`). A dynamic
//!    programme over blocks of 2048 weights decides where switching between
//!    alternating and non-alternating mode pays for a new header and
//!    palette, with per-block costs from bit tables; a split is kept only if
//!    its planned size beats a single region.
//! 2. **Index mapping.** Per region, candidate mappings are direct coding and
//!    palettes of the most frequent values (by frequency rank, so frequent
//!    values get small indices); each is costed exactly from the value
//!    histogram with its best weight parameters.
//! 3. **Slices.** Inside a region a second dynamic programme over the coded
//!    symbols (weight indices and, in alternating mode, zero runs) picks the
//!    slice boundaries and per-slice `wdiv`, `wtrunc` and `zdiv`, a new slice
//!    costing its 23-bit header plus the expected chunk padding.
//!
//! Bit costs are exact per symbol: a Golomb-Rice index with quotient `q`
//! costs `q + 1 + wdiv` bits (`wtrunc`: 1 bit for `q == 0`, else 2, plus
//! `wdiv`), an uncompressed index `uncompressed_bits`, a zero run `r`
//! `(r >> zdiv) + 1 + zdiv`. The only non-additive costs are the unused
//! positions of a slice's last `wunary0` (12 positions per chunk) and
//! `zunary` (`zunary_len` bits per chunk), which the chunk writer adds
//! exactly. The encoder is deterministic.

use thiserror::Error;

use super::{
    Palette, WeightIndexMode, ZeroRunMode, DIROFS_BITS, PALBITS_BITS, PALETTE_SIZE_MAX,
    PALSIZE_BITS, SLICELEN_M1_BITS, SLICELEN_MAX, STREAM_ALIGN_BITS, WDIV_BITS, WEIGHT_INDEX_MAX,
    WQ_MAX, WUNARY0_BITS, ZDIV_BITS, ZDIV_END_OF_STREAM,
};
use crate::bitwriter::BitWriter;

/// Why a weight sequence could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// A weight outside -255..=255 (TRM §3.9.1).
    #[error("weight {value} at position {index} is outside -255..=255")]
    WeightOutOfRange {
        /// Position in the input.
        index: usize,
        /// The weight.
        value: i16,
    },
}

/// Size summary of an encoded stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Number of slices.
    pub slices: usize,
    /// Number of slices with `newpal == 1` (regions).
    pub regions: usize,
    /// Bits before the end-of-stream marker and padding.
    pub payload_bits: u64,
    /// Stream length in bytes (a multiple of 16).
    pub bytes: usize,
}

/// Encodes one weight decoder's weights (values -255..=255, in stream
/// order) as an SWD stream, padded to a 128-bit boundary.
///
/// # Errors
/// [`EncodeError::WeightOutOfRange`] for a weight outside -255..=255.
pub fn encode(weights: &[i16]) -> Result<Vec<u8>, EncodeError> {
    encode_with_stats(weights).map(|(b, _)| b)
}

/// Encodes the streams of several weight decoders (one call of [`encode`]
/// each).
///
/// # Errors
/// As [`encode`].
pub fn encode_streams(streams: &[Vec<i16>]) -> Result<Vec<Vec<u8>>, EncodeError> {
    streams.iter().map(|s| encode(s)).collect()
}

/// Like [`encode`], also returning a size summary.
///
/// # Errors
/// As [`encode`].
pub fn encode_with_stats(weights: &[i16]) -> Result<(Vec<u8>, EncodeStats), EncodeError> {
    if let Some(index) = weights.iter().position(|w| !(-255..=255).contains(w)) {
        return Err(EncodeError::WeightOutOfRange {
            index,
            value: weights[index],
        });
    }
    let regions = plan_regions(weights);
    debug_assert!(regions.windows(2).all(|r| r[0].end == r[1].start));
    let mut w = BitWriter::with_capacity(weights.len() + 64);
    let mut stats = EncodeStats::default();
    for r in &regions {
        debug_assert!(r.start <= r.end);
        stats.slices += emit_region(&mut w, &r.plan);
        stats.regions += 1;
    }
    stats.payload_bits = w.bit_len();
    w.write(u64::from(ZDIV_END_OF_STREAM), ZDIV_BITS);
    w.align(STREAM_ALIGN_BITS, true);
    let bytes = w.into_bytes();
    stats.bytes = bytes.len();
    Ok((bytes, stats))
}

// ---------------------------------------------------------------------------
// Index mappings

const NO_INDEX: u16 = u16::MAX;
const INF: u32 = u32::MAX / 4;

/// Sign-magnitude code `tmp` of a value (§3.9.6).
#[inline]
fn code_of(v: i16) -> u16 {
    (v.unsigned_abs() << 1) | u16::from(v < 0)
}

#[inline]
fn slot(v: i16) -> usize {
    (v + 255) as usize
}

fn bit_length(x: u32) -> u32 {
    u32::BITS - x.leading_zeros()
}

/// A palette state and the value -> weight index table it implies.
#[derive(Clone, Debug)]
struct Mapping {
    palette: Palette,
    index_of: Vec<u16>, // 511 entries, by slot(value)
}

impl Mapping {
    /// Builds a mapping from palette entries (weight values, most frequent
    /// first) for the values in `present` (each value once). Returns `None`
    /// if a present value has no index.
    fn build(entries: &[i16], present: &[i16], alternating: bool) -> Option<Self> {
        let k = entries.len();
        debug_assert!(k == 0 || (2..=PALETTE_SIZE_MAX).contains(&k));
        let mut in_pal = [false; 511];
        for &v in entries {
            in_pal[slot(v)] = true;
        }
        // dirofs: smallest code among present values outside the palette.
        let mut min_code = u16::MAX;
        for &v in present {
            if !(in_pal[slot(v)] || (alternating && v == 0)) {
                min_code = min_code.min(code_of(v));
            }
        }
        let dirofs = if min_code == u16::MAX {
            0
        } else {
            min_code.min((1 << DIROFS_BITS) - 1)
        };
        let mut index_of = vec![NO_INDEX; 511];
        for (i, &v) in entries.iter().enumerate() {
            if index_of[slot(v)] == NO_INDEX {
                index_of[slot(v)] = i as u16;
            }
        }
        let mut max_index = 0u32;
        for &v in present {
            let s = slot(v);
            if alternating && v == 0 {
                continue;
            }
            if index_of[s] == NO_INDEX {
                let c = code_of(v);
                if c < dirofs {
                    return None;
                }
                let idx = k as u32 + u32::from(c - dirofs);
                if idx > u32::from(WEIGHT_INDEX_MAX) {
                    return None;
                }
                index_of[s] = idx as u16;
            }
            max_index = max_index.max(u32::from(index_of[s]));
        }
        let palette_bits = if k > 0 {
            entries
                .iter()
                .map(|&v| bit_length(u32::from(code_of(v))))
                .max()
                .unwrap_or(2)
                .clamp(2, 9)
        } else {
            bit_length(max_index).clamp(2, 9)
        };
        let palette = Palette {
            dirofs: dirofs as u8,
            palette_bits: palette_bits as u8,
            entries: entries.iter().map(|&v| code_of(v)).collect(),
        };
        Some(Self { palette, index_of })
    }

    /// Bits of the `newpal` extension (dirofs, palsize, palbits, entries).
    fn header_bits(&self) -> u32 {
        DIROFS_BITS
            + PALSIZE_BITS
            + PALBITS_BITS
            + self.palette.entries.len() as u32 * u32::from(self.palette.palette_bits)
    }
}

// ---------------------------------------------------------------------------
// Weight and zero-run parameters and their bit costs

/// Weight index coding of a slice: Golomb-Rice `wdiv` 0..=5 with or
/// without `wtrunc`, or uncompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WParam {
    Gr { wdiv: u8, trunc: bool },
    Unc,
}

const ALL_WPARAMS: [WParam; 13] = [
    WParam::Gr {
        wdiv: 0,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 1,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 2,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 3,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 4,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 5,
        trunc: false,
    },
    WParam::Gr {
        wdiv: 0,
        trunc: true,
    },
    WParam::Gr {
        wdiv: 1,
        trunc: true,
    },
    WParam::Gr {
        wdiv: 2,
        trunc: true,
    },
    WParam::Gr {
        wdiv: 3,
        trunc: true,
    },
    WParam::Gr {
        wdiv: 4,
        trunc: true,
    },
    WParam::Gr {
        wdiv: 5,
        trunc: true,
    },
    WParam::Unc,
];

impl WParam {
    /// Bits of one weight index (INF if not codable).
    #[inline]
    fn cost(self, idx: u16, ubits: u32) -> u32 {
        let idx = u32::from(idx);
        match self {
            WParam::Gr { wdiv, trunc } => {
                let q = idx >> wdiv;
                let wdiv = u32::from(wdiv);
                if trunc {
                    match q {
                        0 => 1 + wdiv,
                        1 | 2 => 2 + wdiv,
                        _ => INF,
                    }
                } else if q <= WQ_MAX {
                    q + 1 + wdiv
                } else {
                    INF
                }
            }
            WParam::Unc => {
                if idx >> ubits == 0 {
                    ubits
                } else {
                    INF
                }
            }
        }
    }

    /// `wunary0` positions used by one index.
    #[inline]
    fn positions(self, idx: u16) -> u32 {
        match self {
            WParam::Gr { wdiv, trunc: false } => (u32::from(idx) >> wdiv) / 2 + 1,
            WParam::Gr { trunc: true, .. } => 1,
            WParam::Unc => 0,
        }
    }

    fn mode(self) -> WeightIndexMode {
        match self {
            WParam::Gr { wdiv, .. } => WeightIndexMode::GolombRice { wdiv },
            WParam::Unc => WeightIndexMode::Uncompressed,
        }
    }

    fn trunc(self) -> bool {
        matches!(self, WParam::Gr { trunc: true, .. })
    }
}

/// Bits of one zero run with divisor `1 << zdiv`.
#[inline]
fn zcost(run: u32, zdiv: u32) -> u32 {
    (run >> zdiv).saturating_add(1 + zdiv)
}

/// Slice header without the palette extension: zdiv, slicelen_m1, wdiv,
/// wtrunc, newpal.
const SLICE_HEADER_BITS: u32 = ZDIV_BITS + SLICELEN_M1_BITS + WDIV_BITS + 2;

/// Expected unused `wunary0`/`zunary` bits at the end of a slice.
const EXPECTED_W_PADDING: u32 = 6;
const EXPECTED_Z_PADDING: u32 = 5;

// ---------------------------------------------------------------------------
// Symbols of a region

/// The coded symbols of one region: weight indices and (alternating mode)
/// zero runs. In alternating mode `zruns[0]` precedes the first index and
/// `zruns[i + 1]` follows index `i`.
struct Symbols {
    alternating: bool,
    idx: Vec<u16>,
    zruns: Vec<u32>,
}

fn symbols(weights: &[i16], mapping: &Mapping, alternating: bool) -> Symbols {
    if !alternating {
        let idx = weights.iter().map(|&v| mapping.index_of[slot(v)]).collect();
        return Symbols {
            alternating,
            idx,
            zruns: Vec::new(),
        };
    }
    let mut idx = Vec::new();
    let mut zruns = Vec::new();
    let mut run = 0u32;
    for &v in weights {
        if v == 0 {
            run += 1;
        } else {
            zruns.push(run);
            run = 0;
            idx.push(mapping.index_of[slot(v)]);
        }
    }
    zruns.push(run);
    if idx.is_empty() {
        // All-zero region: one zero weight coded as an index (§3.9.9).
        let n = weights.len() as u32;
        idx.push(mapping.index_of[slot(0)]);
        zruns = vec![0, n.saturating_sub(1)];
    }
    Symbols {
        alternating,
        idx,
        zruns,
    }
}

// ---------------------------------------------------------------------------
// Slice planning inside a region

/// One planned slice: symbols `start..end` of the region's index list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlicePlan {
    start: usize,
    end: usize,
    wparam: WParam,
    zdiv: u8,
}

/// A region's coding: mapping, symbols and slices.
struct RegionPlan {
    mapping: Mapping,
    sym: Symbols,
    slices: Vec<SlicePlan>,
    /// Estimated bits (exact up to chunk padding).
    bits: u64,
}

/// Lanes of the slice DP: (weight parameter, zdiv) pairs.
const LANES: usize = 16;
/// Weight parameters of the alternating-mode lanes (each with zdiv 0..=3).
const ALT_WPARAMS: usize = LANES / 4;
/// Per-symbol lane cost of a weight index the lane's parameter cannot code
/// (or of an unused lane): larger than any codable block, so the DP never
/// keeps such a lane, yet 16 of them plus zero runs fit in a `u16`.
const UNCODABLE: u16 = 1024;

/// Sparse histogram: (index, count) for every index that occurs.
fn sparse_hist(idx: &[u16]) -> Vec<(u16, u32)> {
    let mut h = [0u32; 512];
    for &i in idx {
        h[usize::from(i)] += 1;
    }
    h.iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, &c)| (i as u16, c))
        .collect()
}

/// Weight parameters sorted by total cost over a sparse index histogram
/// (only parameters that can code every index), at most `n`.
fn best_wparams(hist: &[(u16, u32)], ubits: u32, n: usize) -> Vec<(WParam, u64)> {
    let mut costs: Vec<(WParam, u64)> = ALL_WPARAMS
        .iter()
        .filter_map(|&p| {
            let mut c = 0u64;
            let mut pos = 0u64;
            for &(i, h) in hist {
                let b = p.cost(i, ubits);
                if b >= INF {
                    return None;
                }
                c += u64::from(h) * u64::from(b);
                pos += u64::from(h) * u64::from(p.positions(i));
            }
            // wunary0 padding: round positions up to whole chunks.
            Some((p, c + pos.next_multiple_of(12) - pos))
        })
        .collect();
    costs.sort_by_key(|&(_, c)| c);
    costs.truncate(n);
    costs
}

/// Total zero-run bits for each zdiv 0..=3.
fn zdiv_costs(zruns: &[u32]) -> [u64; 4] {
    let mut c = [0u64; 4];
    for &r in zruns {
        for (zd, ci) in c.iter_mut().enumerate() {
            *ci += u64::from(zcost(r, zd as u32));
        }
    }
    c
}

/// Adds a lane row into a block accumulator (vectorised: 16 x u16).
#[inline(always)]
fn add_row(acc: &mut [u16; LANES], row: &[u16; LANES]) {
    for (a, r) in acc.iter_mut().zip(row) {
        *a = a.wrapping_add(*r);
    }
}

/// Dynamic programme over the symbols choosing slice boundaries and
/// per-slice (weight parameter, zdiv). Returns the slices and the estimated
/// bits of the region without its palette extension.
///
/// Lanes: in non-alternating mode every weight parameter (13), so that a
/// stretch of small indices (e.g. the zero padding of the ordering) gets a
/// slice with `wdiv` 0 or `wtrunc` even where that parameter cannot code
/// the rest of the region; in alternating mode the best [`ALT_WPARAMS`]
/// parameters of the region, each with every `zdiv`.
fn plan_slices(sym: &Symbols, ubits: u32) -> (Vec<SlicePlan>, u64) {
    let n = sym.idx.len();
    let hist = sparse_hist(&sym.idx);
    let mut lane_w = [WParam::Unc; LANES];
    let mut lane_z = [0u32; LANES];
    let mut used = 0;
    if sym.alternating {
        for (p, _) in best_wparams(&hist, ubits, ALT_WPARAMS) {
            for z in 0..4 {
                lane_w[used] = p;
                lane_z[used] = z;
                used += 1;
            }
        }
    } else {
        for &p in &ALL_WPARAMS {
            lane_w[used] = p;
            used += 1;
        }
    }
    let switch_cost = SLICE_HEADER_BITS
        + EXPECTED_W_PADDING
        + if sym.alternating {
            EXPECTED_Z_PADDING
        } else {
            0
        };
    // The DP runs over blocks of up to BLOCK symbols: slice boundaries fall
    // on block starts. A symbol followed by a zero run of ISOLATE or more
    // gets a block of its own, so that such runs can be coded in a slice
    // with their own zdiv (ordering padding produces them regularly).
    const BLOCK: usize = 16;
    const ISOLATE: u32 = 48;
    const ZTAB: usize = 256;
    let zrow = |r: u32| -> [u32; LANES] {
        let mut row = [0u32; LANES];
        if sym.alternating {
            for s in 0..used {
                row[s] = zcost(r, lane_z[s]);
            }
        }
        row
    };
    // Per index, the weight bits of every lane (UNCODABLE if not codable or
    // unused). Only indices that occur need a row.
    let mut wlane: Vec<[u16; LANES]> = vec![[UNCODABLE; LANES]; 512];
    for &(i, _) in &hist {
        let row = &mut wlane[usize::from(i)];
        for s in 0..used {
            row[s] = lane_w[s].cost(i, ubits).min(u32::from(UNCODABLE)) as u16;
        }
    }
    // Per short zero run, the zero-run bits of every lane.
    let zlane: Vec<[u16; LANES]> = if sym.alternating {
        (0..ZTAB as u32)
            .map(|r| zrow(r).map(|c| c as u16))
            .collect()
    } else {
        Vec::new()
    };

    // Forward pass over blocks. Costs are kept relative to the best lane
    // (`base` holds the offset); `rel[b]` keeps each lane's relative cost
    // after block b saturated to 255: the backtrack only needs to know
    // whether it exceeds the switch cost (the lane started a new slice at
    // block b + 1, coming from a best lane) and which lanes are best (0).
    debug_assert!(switch_cost < 255);
    let mut starts: Vec<usize> = Vec::with_capacity(n / BLOCK + 2);
    let mut rel: Vec<[u8; LANES]> = Vec::with_capacity(n / BLOCK + 2);
    let mut cost = [0u64; LANES];
    let mut base = 0u64;
    let sw = u64::from(switch_cost);
    let mut i = 0;
    while i < n {
        // Block i..j; sums of short-run symbols in u16 lanes, long runs exact.
        let mut acc = [0u16; LANES];
        let mut exact = [0u64; LANES];
        let mut j = i;
        if !sym.alternating {
            // No zero runs: plain sums of up to BLOCK weight rows.
            let end = (i + BLOCK).min(n);
            for &ix in &sym.idx[i..end] {
                add_row(&mut acc, &wlane[usize::from(ix)]);
            }
            j = end;
        }
        while sym.alternating && j < n && j - i < BLOCK {
            let r = sym.zruns[j + 1];
            if r >= ISOLATE && j > i {
                break;
            }
            add_row(&mut acc, &wlane[usize::from(sym.idx[j])]);
            if (r as usize) < ZTAB {
                add_row(&mut acc, &zlane[r as usize]);
            } else {
                for (e, z) in exact.iter_mut().zip(zrow(r)) {
                    *e += u64::from(z);
                }
            }
            j += 1;
            if r >= ISOLATE {
                break;
            }
        }
        if i == 0 && sym.alternating {
            for (e, z) in exact.iter_mut().zip(zrow(sym.zruns[0])) {
                *e += u64::from(z);
            }
        }
        let mut t = [0u64; LANES];
        for s in 0..LANES {
            let prev = if i == 0 { sw } else { cost[s].min(sw) };
            t[s] = prev + u64::from(acc[s]) + exact[s];
        }
        let m = t[..used].iter().copied().fold(u64::MAX, u64::min);
        base += m;
        let mut row = [u8::MAX; LANES];
        for s in 0..used {
            cost[s] = t[s] - m;
            row[s] = cost[s].min(255) as u8;
        }
        for c in &mut cost[used..] {
            *c = u64::from(u32::MAX);
        }
        starts.push(i);
        rel.push(row);
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

/// A candidate coding of a region before slice planning.
#[derive(Clone)]
struct Candidate {
    estimate: u64,
    mapping: Mapping,
    alternating: bool,
}

/// Candidate index mappings for a region in one mode class, each with an
/// additive estimate of the region's bits (single slice parameters).
/// Value histogram of a region and the best total zero-run bits over zdiv
/// 0..=3 (alternating mode), in one pass.
fn region_stats(weights: &[i16]) -> (Vec<u32>, u64) {
    let mut hist = vec![0u32; 511];
    // Zero runs: short ones counted, long ones costed directly.
    let mut short = [0u32; 256];
    let mut c = [0u64; 4];
    let mut run = 0u32;
    let add_run = |run: u32, short: &mut [u32; 256], c: &mut [u64; 4]| {
        if run == 0 {
            // most runs are empty: no memory round trip through short[0]
            for (zd, ci) in c.iter_mut().enumerate() {
                *ci += 1 + zd as u64;
            }
        } else if let Some(k) = short.get_mut(run as usize) {
            *k += 1;
        } else {
            for (zd, ci) in c.iter_mut().enumerate() {
                *ci += u64::from(zcost(run, zd as u32));
            }
        }
    };
    for &v in weights {
        hist[slot(v)] += 1;
        if v == 0 {
            run += 1;
        } else {
            add_run(run, &mut short, &mut c);
            run = 0;
        }
    }
    add_run(run, &mut short, &mut c);
    for (r, &k) in short.iter().enumerate() {
        for (zd, ci) in c.iter_mut().enumerate() {
            *ci += u64::from(k) * u64::from(zcost(r as u32, zd as u32));
        }
    }
    (hist, c.iter().min().copied().unwrap_or(0))
}

/// Candidate index mappings for a region in one mode class, each with an
/// additive estimate of the region's bits (single slice parameters).
fn candidates(
    weights: &[i16],
    full_hist: &[u32],
    zero_run_bits: u64,
    alternating: bool,
    out: &mut Vec<Candidate>,
) {
    let mut hist = full_hist.to_vec();
    let present: Vec<i16> = (0..511)
        .filter(|&s| hist[s] > 0)
        .map(|s| s as i16 - 255)
        .collect();
    let nonzero = hist.iter().enumerate().any(|(s, &c)| c > 0 && s != slot(0));
    if alternating && !nonzero {
        // All-zero region: one zero index, direct mode with dirofs 0.
        if let Some(mapping) = Mapping::build(&[], &present, false) {
            out.push(Candidate {
                estimate: u64::from(SLICE_HEADER_BITS + mapping.header_bits())
                    + zdiv_costs(&[weights.len() as u32])
                        .iter()
                        .min()
                        .copied()
                        .unwrap_or(0),
                mapping,
                alternating,
            });
        }
        return;
    }
    let mut zbits = 0;
    if alternating {
        hist[slot(0)] = 0;
        zbits = zero_run_bits;
    }
    // Values by decreasing frequency (ties: smaller code first).
    let mut by_freq: Vec<i16> = (0..511)
        .filter(|&s| hist[s] > 0)
        .map(|s| s as i16 - 255)
        .collect();
    by_freq.sort_by_key(|&v| (std::cmp::Reverse(hist[slot(v)]), code_of(v)));
    let d = by_freq.len();
    let mut sizes: Vec<usize> = vec![0];
    for k in [2usize, 4, 8, 16, 32] {
        if k <= d {
            sizes.push(k);
        }
    }
    if (2..=PALETTE_SIZE_MAX).contains(&d) && !sizes.contains(&d) {
        sizes.push(d);
    }
    for k in sizes {
        let Some(mapping) = Mapping::build(&by_freq[..k], &present, alternating) else {
            continue;
        };
        let ih: Vec<(u16, u32)> = present
            .iter()
            .map(|&v| (mapping.index_of[slot(v)], hist[slot(v)]))
            .filter(|&(_, c)| c > 0)
            .collect();
        let ubits = mapping.palette.uncompressed_bits();
        let Some(&(_, wbits)) = best_wparams(&ih, ubits, 1).first() else {
            continue;
        };
        out.push(Candidate {
            estimate: wbits + zbits + u64::from(SLICE_HEADER_BITS + mapping.header_bits()),
            mapping,
            alternating,
        });
    }
}

fn plan_candidate(weights: &[i16], c: Candidate) -> RegionPlan {
    let sym = symbols(weights, &c.mapping, c.alternating);
    let (slices, bits) = plan_slices(&sym, c.mapping.palette.uncompressed_bits());
    RegionPlan {
        bits: bits + u64::from(c.mapping.header_bits()),
        mapping: c.mapping,
        sym,
        slices,
    }
}

/// Plans one region: the best candidate by estimate is planned exactly;
/// runners-up within 2% of it are planned too and the smallest plan wins.
fn plan_region(weights: &[i16]) -> RegionPlan {
    plan_region_from(weights, all_candidates(weights).0)
}

/// Candidates of both mode classes for a region, and its value histogram.
fn all_candidates(weights: &[i16]) -> (Vec<Candidate>, Vec<u32>) {
    let mut cands = Vec::new();
    let (hist, zero_run_bits) = region_stats(weights);
    candidates(weights, &hist, zero_run_bits, true, &mut cands);
    candidates(weights, &hist, zero_run_bits, false, &mut cands);
    (cands, hist)
}

/// [`plan_region`] with the candidates already computed.
fn plan_region_from(weights: &[i16], mut cands: Vec<Candidate>) -> RegionPlan {
    cands.sort_by_key(|c| c.estimate);
    let Some(best_estimate) = cands.first().map(|c| c.estimate) else {
        return fallback_plan(weights);
    };
    let mut best: Option<RegionPlan> = None;
    let mut classes_done = [false; 2];
    for c in cands {
        if c.estimate > best_estimate + best_estimate / 50 {
            break;
        }
        // One exact plan per mode class: palette variants within a class
        // differ little once the estimate has ranked them.
        if std::mem::replace(&mut classes_done[usize::from(c.alternating)], true) {
            continue;
        }
        let plan = plan_candidate(weights, c);
        if best.as_ref().is_none_or(|b| plan.bits < b.bits) {
            best = Some(plan);
        }
    }
    best.unwrap_or_else(|| fallback_plan(weights))
}

struct Region {
    start: usize,
    end: usize,
    plan: RegionPlan,
}

/// Block size (weights) of the region DP.
const REGION_BLOCK: usize = 2048;

/// Splits the stream into regions, each starting with a `newpal` slice.
///
/// A dynamic programme over blocks of [`REGION_BLOCK`] weights with two
/// states, alternating and non-alternating mode (each with the index
/// mapping and weight parameters that are best for the whole stream),
/// decides where switching mode pays for a new slice header and palette.
/// Block costs come from per-value bit tables (zero runs with the best
/// `zdiv` per block). If it proposes more than one region, each region is
/// planned on its own (with its own palette) and the split is kept only if
/// its planned size beats the single-region plan.
fn plan_regions(weights: &[i16]) -> Vec<Region> {
    if weights.is_empty() {
        return Vec::new();
    }
    let whole = plan_mode_regions(weights);
    match plan_gapped(weights) {
        Some(g) if total_bits(&g) < total_bits(&whole) => g,
        _ => whole,
    }
}

fn total_bits(regions: &[Region]) -> u64 {
    regions.iter().map(|r| r.plan.bits).sum()
}

/// Shortest zero run that [`plan_gapped`] codes as a region of its own.
const GAP_MIN: usize = 64;

/// Regions around long zero runs ("gaps", e.g. the zero padding the
/// weight ordering inserts): every gap of [`GAP_MIN`] or more zeros is a
/// region of its own (an all-zero alternating slice in direct mode, whose
/// `newpal` costs 13 bits), and the weights between gaps are coded with one
/// index mapping chosen for them alone (so zero, if it only occurs in the
/// gaps, takes no palette entry). `None` if there is no gap.
fn plan_gapped(weights: &[i16]) -> Option<Vec<Region>> {
    // Gaps: (start, end) of zero runs of GAP_MIN or more.
    let mut gaps = Vec::new();
    let mut run_start = 0;
    for (i, &v) in weights.iter().enumerate() {
        if v != 0 {
            if i - run_start >= GAP_MIN {
                gaps.push((run_start, i));
            }
            run_start = i + 1;
        }
    }
    if weights.len() - run_start >= GAP_MIN {
        gaps.push((run_start, weights.len()));
    }
    if gaps.is_empty() {
        return None;
    }
    // Data segments between gaps, and their concatenation for statistics.
    let mut segments = Vec::with_capacity(gaps.len() + 1);
    let mut at = 0;
    for &(a, b) in &gaps {
        if a > at {
            segments.push((at, a, false));
        }
        segments.push((a, b, true));
        at = b;
    }
    if at < weights.len() {
        segments.push((at, weights.len(), false));
    }
    let data: Vec<i16> = segments
        .iter()
        .filter(|s| !s.2)
        .flat_map(|&(a, b, _)| weights[a..b].iter().copied())
        .collect();
    let cand = if data.is_empty() {
        None
    } else {
        all_candidates(&data)
            .0
            .into_iter()
            .min_by_key(|c| c.estimate)
    };
    let zero = zero_mapping();
    let mut regions = Vec::with_capacity(segments.len());
    for (a, b, gap) in segments {
        let plan = if gap {
            zero_region_plan(&zero, b - a)
        } else {
            let c = cand.as_ref()?;
            plan_candidate(&weights[a..b], c.clone())
        };
        regions.push(Region {
            start: a,
            end: b,
            plan,
        });
    }
    Some(regions)
}

/// The direct-mode mapping of an all-zero region: `dirofs` 0, zero is index 0.
fn zero_mapping() -> Mapping {
    let mut index_of = vec![NO_INDEX; 511];
    index_of[slot(0)] = 0;
    Mapping {
        palette: Palette::direct(0, 2),
        index_of,
    }
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

/// [`plan_regions`] without gap regions: one region, or regions that switch
/// between alternating and non-alternating mode.
fn plan_mode_regions(weights: &[i16]) -> Vec<Region> {
    let (cands, hist) = all_candidates(weights);
    let best_of = |alt: bool| {
        cands
            .iter()
            .filter(|c| c.alternating == alt)
            .min_by_key(|c| c.estimate)
            .cloned()
    };
    let (alt, non) = (best_of(true), best_of(false));
    let single = plan_region_from(weights, cands);
    let whole = |plan| {
        vec![Region {
            start: 0,
            end: weights.len(),
            plan,
        }]
    };
    let nb = weights.len().div_ceil(REGION_BLOCK);
    if nb < 2 {
        return whole(single);
    }
    let (Some(alt), Some(non)) = (alt.as_ref(), non.as_ref()) else {
        return whole(single);
    };
    // Bits per value for each class with its best single weight parameter.
    let value_bits = |c: &Candidate| -> Option<Vec<u32>> {
        let ubits = c.mapping.palette.uncompressed_bits();
        let ih: Vec<(u16, u32)> = (0..511)
            .filter(|&s| hist[s] > 0 && !(c.alternating && s == slot(0)))
            .map(|s| (c.mapping.index_of[s], hist[s]))
            .collect();
        let (p, _) = *best_wparams(&ih, ubits, 1).first()?;
        Some(
            (0..511)
                .map(|s| {
                    if c.alternating && s == slot(0) {
                        0
                    } else if hist[s] > 0 {
                        p.cost(c.mapping.index_of[s], ubits).min(1 << 16)
                    } else {
                        0
                    }
                })
                .collect(),
        )
    };
    let (Some(alt_bits), Some(non_bits)) = (value_bits(alt), value_bits(non)) else {
        return whole(single);
    };
    // Per-block costs: [alternating, non-alternating].
    let mut block = vec![[0u64; 2]; nb];
    let mut run = 0u32;
    let mut zsum = [0u64; 4];
    // Zero runs that end in the block: short ones counted, long ones costed.
    let mut short = [0u32; 64];
    let add_run = |run: u32, short: &mut [u32; 64], zsum: &mut [u64; 4]| {
        if run == 0 {
            // most runs are empty: no memory round trip through short[0]
            zsum[0] += 1;
            zsum[1] += 2;
            zsum[2] += 3;
            zsum[3] += 4;
        } else if let Some(k) = short.get_mut(run as usize) {
            *k += 1;
        } else {
            for (zd, z) in zsum.iter_mut().enumerate() {
                *z += u64::from(zcost(run, zd as u32));
            }
        }
    };
    for (b, chunk) in weights.chunks(REGION_BLOCK).enumerate() {
        let (mut a, mut n) = (0u64, 0u64);
        for &v in chunk {
            let s = slot(v);
            a += u64::from(alt_bits[s]);
            n += u64::from(non_bits[s]);
            if v == 0 {
                run += 1;
            } else {
                add_run(run, &mut short, &mut zsum);
                run = 0;
            }
        }
        if b + 1 == nb {
            add_run(run, &mut short, &mut zsum);
        }
        for (r, k) in short.iter_mut().enumerate() {
            if *k > 0 {
                for (zd, z) in zsum.iter_mut().enumerate() {
                    *z += u64::from(*k) * u64::from(zcost(r as u32, zd as u32));
                }
                *k = 0;
            }
        }
        block[b] = [a + zsum.iter().copied().min().unwrap_or(0), n];
        zsum = [0; 4];
    }
    let switch = [
        u64::from(
            SLICE_HEADER_BITS + alt.mapping.header_bits() + EXPECTED_W_PADDING + EXPECTED_Z_PADDING,
        ),
        u64::from(SLICE_HEADER_BITS + non.mapping.header_bits() + EXPECTED_W_PADDING),
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
    let split_bits: u64 = regions.iter().map(|r| r.plan.bits).sum();
    if split_bits < single.bits {
        regions
    } else {
        whole(single)
    }
}

/// A plan that always exists: non-alternating direct mode with dirofs 0,
/// uncompressed 9-bit indices.
fn fallback_plan(weights: &[i16]) -> RegionPlan {
    let mapping = Mapping {
        palette: Palette::direct(0, 9),
        index_of: (0..511).map(|s| code_of(s as i16 - 255)).collect(),
    };
    let sym = symbols(weights, &mapping, false);
    let n = weights.len();
    let slices = vec![SlicePlan {
        start: 0,
        end: n,
        wparam: WParam::Unc,
        zdiv: 0,
    }];
    RegionPlan {
        mapping,
        sym,
        slices,
        bits: u64::MAX,
    }
}

// ---------------------------------------------------------------------------
// Emission

/// Writes a region's slices; returns the number of slices written.
fn emit_region(w: &mut BitWriter, plan: &RegionPlan) -> usize {
    let sym = &plan.sym;
    let mut count = 0;
    let mut first = true;
    for s in &plan.slices {
        // Slices longer than SLICELEN_MAX are split (same parameters).
        let mut a = s.start;
        while a < s.end {
            let b = (a + SLICELEN_MAX as usize).min(s.end);
            let zr: &[u32] = if sym.alternating {
                if first {
                    &sym.zruns[a..=b]
                } else {
                    &sym.zruns[a + 1..=b]
                }
            } else {
                &[]
            };
            let pal = if first {
                Some(&plan.mapping.palette)
            } else {
                None
            };
            emit_slice(
                w,
                sym.alternating,
                s.zdiv,
                s.wparam,
                pal,
                &plan.mapping.palette,
                &sym.idx[a..b],
                zr,
            );
            first = false;
            count += 1;
            a = b;
        }
    }
    count
}

/// Writes one slice: header and chunks, mirroring the TRM chunk parser
/// (§3.9.10) step by step.
#[allow(clippy::too_many_arguments)]
fn emit_slice(
    w: &mut BitWriter,
    alternating: bool,
    zdiv: u8,
    wparam: WParam,
    newpal: Option<&Palette>,
    palette: &Palette,
    idx: &[u16],
    zruns: &[u32],
) {
    let zrm = if alternating {
        ZeroRunMode::Alternating { zdiv }
    } else {
        ZeroRunMode::NoZeroRuns
    };
    let wmode = wparam.mode();
    w.write(u64::from(zrm.zdiv()), ZDIV_BITS);
    w.write(idx.len() as u64 - 1, SLICELEN_M1_BITS);
    w.write(u64::from(wmode.wdiv()), WDIV_BITS);
    w.write_bit(wparam.trunc());
    w.write_bit(newpal.is_some());
    if let Some(p) = newpal {
        w.write(u64::from(p.dirofs), DIROFS_BITS);
        w.write(u64::from(p.palsize().unwrap_or(0)), PALSIZE_BITS);
        w.write(u64::from(p.palbits().unwrap_or(0)), PALBITS_BITS);
        for &e in &p.entries {
            w.write(u64::from(e), u32::from(p.palette_bits));
        }
    }
    let w_cnt = idx.len();
    let z_cnt = if alternating { zruns.len() } else { 0 };
    let zdiv = u32::from(zdiv);
    let zlen = zrm.zunary_len();
    let (unc, wdiv) = match wparam {
        WParam::Gr { wdiv, .. } => (false, u32::from(wdiv)),
        WParam::Unc => (true, 0),
    };
    let trunc = wparam.trunc();
    let wremain_bits = if unc {
        palette.uncompressed_bits()
    } else {
        wdiv
    };
    let unc_per_chunk = palette.uncompressed_per_chunk();
    let wmask = (1u32 << wremain_bits) - 1;
    let zmask = (1u32 << zdiv) - 1;

    let (mut wq_i, mut wr_i) = (0usize, 0usize);
    // Quotient still to emit for weight wq_i.
    let mut wq_left = idx.first().map_or(0, |&i| u32::from(i) >> wdiv);
    let (mut zq_i, mut zr_i) = (0usize, 0usize);
    let mut zq_left = zruns.first().map_or(0, |&z| z >> zdiv);
    let (mut prev_w, mut prev_wq_i, mut prev_z, mut prev_zq_i) = (false, 0usize, false, 0usize);
    loop {
        let balance = wq_i as i64 - zq_i as i64;
        let w_enable = (!alternating || balance < 8) && wq_i < w_cnt;
        let z_enable = alternating && balance >= 0 && zq_i < z_cnt;
        let mut wunary1 = 0u64;
        let mut wunary1_len = 0u32;
        if w_enable && !unc {
            // Positions of this chunk, filled weight by weight. Each
            // position is c = 0 ("0"), 1 ("1" + wunary1 0) or 2 ("1" +
            // wunary1 1); c < 2 ends an index. Without wtrunc a quotient q
            // takes q / 2 positions of c = 2 and one of c = q % 2, and may
            // continue in the next chunk; with wtrunc every index is one
            // position (q <= 2).
            let mut wunary0 = 0u64;
            let mut i = 0u32;
            while i < WUNARY0_BITS && wq_i < w_cnt {
                let q = wq_left;
                if trunc {
                    let b0 = u64::from(q > 0);
                    wunary0 |= b0 << i;
                    wunary1 |= u64::from(q >= 2) << wunary1_len;
                    wunary1_len += b0 as u32;
                    i += 1;
                } else {
                    let (pairs, last) = (q >> 1, q & 1);
                    let room = WUNARY0_BITS - i;
                    if pairs >= room {
                        // The chunk ends inside this index.
                        let ones = (1u64 << room) - 1;
                        wunary0 |= ones << i;
                        wunary1 |= ones << wunary1_len;
                        wunary1_len += room;
                        wq_left = q - 2 * room;
                        break;
                    }
                    let ones = (1u64 << pairs) - 1;
                    wunary0 |= (ones | (u64::from(last) << pairs)) << i;
                    wunary1 |= ones << wunary1_len;
                    wunary1_len += pairs + last;
                    i += pairs + 1;
                }
                wq_i += 1;
                wq_left = idx.get(wq_i).map_or(0, |&x| u32::from(x) >> wdiv);
            }
            w.write(wunary0, WUNARY0_BITS);
        }
        if z_enable {
            let mut zunary = 0u64;
            let mut i = 0;
            // Runs of '1' (quotient) bits in bulk, then the terminating '0'.
            while i < zlen && zq_i < z_cnt {
                let k = zq_left.min(zlen - i);
                zunary |= ((1u64 << k) - 1) << i;
                i += k;
                zq_left -= k;
                if i < zlen {
                    // the '0' ending run zq_i (padding bits also stay 0)
                    i += 1;
                    zq_i += 1;
                    zq_left = zruns.get(zq_i).map_or(0, |&z| z >> zdiv);
                }
            }
            w.write(zunary, zlen);
        }
        if w_enable && !unc {
            // At most 12 bits.
            w.write(wunary1, wunary1_len);
        }
        if w_enable && unc {
            wq_i += unc_per_chunk.min(w_cnt - wq_i);
        }
        if prev_w {
            while wr_i < prev_wq_i {
                w.write(u64::from(u32::from(idx[wr_i]) & wmask), wremain_bits);
                wr_i += 1;
            }
        }
        if prev_z {
            while zr_i < prev_zq_i {
                w.write(u64::from(zruns[zr_i] & zmask), zdiv);
                zr_i += 1;
            }
        }
        prev_w = w_enable;
        prev_wq_i = wq_i;
        prev_z = z_enable;
        prev_zq_i = zq_i;
        if !(prev_w || prev_z) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swd::decode::{decode, decode_traced};

    fn round_trip(w: &[i16]) -> Vec<u8> {
        let s = encode(w).unwrap();
        assert_eq!(s.len() % 16, 0);
        assert_eq!(decode(&s, w.len()).unwrap(), w);
        s
    }

    #[test]
    fn small_sequences_round_trip() {
        round_trip(&[]);
        round_trip(&[0]);
        round_trip(&[5]);
        round_trip(&[0, 5, 6, 0, 0, 0, 7, 0]);
        round_trip(&[0; 100]);
        round_trip(&[-255, 255, 0, 1, -1]);
        let v: Vec<i16> = (0..3000).map(|i| ((i * 7919) % 511 - 255) as i16).collect();
        round_trip(&v);
    }

    #[test]
    fn dense_and_sparse_stretches_get_their_own_regions() {
        // Dense uniform int8, then 97 % zeros, then dense again: one
        // non-alternating region would code every zero as an index, one
        // alternating region would pay a zero run per dense weight.
        let mut x = 0x1234_5678u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut w: Vec<i16> = (0..20_000).map(|_| (next() % 255) as i16 - 127).collect();
        w.extend((0..20_000).map(|_| {
            let r = next();
            if r % 100 < 97 {
                0
            } else {
                (r >> 8) as i16 % 127
            }
        }));
        w.extend((0..20_000).map(|_| (next() % 255) as i16 - 127));
        let (s, stats) = encode_with_stats(&w).unwrap();
        assert_eq!(decode(&s, w.len()).unwrap(), w);
        assert_eq!(stats.regions, 3);
        let single = plan_region(&w);
        let split: u64 = plan_regions(&w).iter().map(|r| r.plan.bits).sum();
        assert!(split + 2000 < single.bits, "{split} vs {}", single.bits);
    }

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

    /// Laplacian-like int8 values with a few zeros.
    fn laplacian_block(next: &mut impl FnMut() -> u32, n: usize) -> Vec<i16> {
        (0..n)
            .map(|_| {
                let u = f64::from(next() % 100_000 + 1) / 100_001.0;
                let m = (-u.ln() * 20.0).min(127.0) as i16;
                if next() % 2 == 0 {
                    m
                } else {
                    -m
                }
            })
            .collect()
    }

    #[test]
    fn short_zero_stretches_get_a_wdiv0_slice() {
        // 48 zeros (too short for a region of their own) between dense
        // Laplacian stretches: coding them with the stretches' wdiv (5)
        // costs 6 bits each, a slice of their own with wdiv 0 one bit.
        let mut next = rng(0xdead_beef);
        let mut w = Vec::new();
        for _ in 0..8 {
            w.extend(laplacian_block(&mut next, 1152));
            w.extend([0; 48]);
        }
        let s = round_trip(&w);
        let d = decode_traced(&s, w.len()).unwrap();
        let zero_slices = d
            .slices
            .iter()
            .filter(|t| {
                t.header.weight_index_mode == WeightIndexMode::GolombRice { wdiv: 0 }
                    && t.header.slicelen >= 48
                    && w[t.first_weight..t.first_weight + t.weight_count]
                        .iter()
                        .all(|&v| v == 0)
            })
            .count();
        assert_eq!(zero_slices, 8);
    }

    #[test]
    fn long_zero_runs_are_regions_and_the_palette_skips_zero() {
        // The ordering's padding: 128 zeros after every 1152 weights of 16
        // clustered values. Each run is an all-zero direct-mode region; the
        // clustered weights get a 16-entry palette without zero.
        let mut next = rng(0x1234_5678);
        let centres: Vec<i16> = (0..16).map(|i| (i * 15 - 110) as i16 | 1).collect();
        let mut w = Vec::new();
        for _ in 0..8 {
            w.extend((0..1152).map(|_| centres[(next() % 16) as usize]));
            w.extend([0; 128]);
        }
        let s = round_trip(&w);
        let d = decode_traced(&s, w.len()).unwrap();
        let palettes: Vec<&Palette> = d
            .slices
            .iter()
            .filter_map(|t| t.header.new_palette.as_ref())
            .collect();
        assert_eq!(palettes.len(), 16);
        for (k, p) in palettes.iter().enumerate() {
            if k % 2 == 0 {
                assert_eq!(p.entries.len(), 16);
                assert!(!p.entries.contains(&0));
            } else {
                assert_eq!((p.entries.len(), p.dirofs), (0, 0));
            }
        }
        let single = plan_mode_regions(&w);
        assert!(total_bits(&plan_regions(&w)) < total_bits(&single));
    }

    #[test]
    fn empty_stream_is_one_end_marker() {
        assert_eq!(round_trip(&[]).len(), 16);
    }
}
