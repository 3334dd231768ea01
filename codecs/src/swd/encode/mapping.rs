//! Index mappings (palette, `dirofs`, `palbits`; TRM §3.9.5, §3.9.6) and
//! the candidate mappings of a region, costed from its value histogram.

use super::cost::{ALL_WPARAMS, INF, SLICE_HEADER_BITS};
use super::stats::slot;
use crate::swd::{Palette, DIROFS_BITS, PALBITS_BITS, PALETTE_SIZE_MAX, PALSIZE_BITS, WEIGHT_INDEX_MAX};

/// `index_of` entry of a value without a weight index.
pub(super) const NO_INDEX: u16 = u16::MAX;

/// Sign-magnitude code `tmp` of a value (§3.9.6).
#[inline]
pub(super) fn code_of(v: i16) -> u16 {
    (v.unsigned_abs() << 1) | u16::from(v < 0)
}

fn bit_length(x: u32) -> u32 {
    u32::BITS - x.leading_zeros()
}

/// A palette state and the value -> weight index table it implies.
#[derive(Clone, Debug)]
pub(super) struct Mapping {
    pub palette: Palette,
    /// 511 entries, by [`slot`]; [`NO_INDEX`] for values without an index.
    pub index_of: Vec<u16>,
}

impl Mapping {
    /// Bits of the `newpal` extension (dirofs, palsize, palbits, entries).
    pub(super) fn header_bits(&self) -> u32 {
        DIROFS_BITS
            + PALSIZE_BITS
            + PALBITS_BITS
            + self.palette.entries.len() as u32 * u32::from(self.palette.palette_bits)
    }

    /// The direct-mode mapping of an all-zero region: `dirofs` 0, zero is index 0.
    pub(super) fn zero() -> Self {
        let mut index_of = vec![NO_INDEX; 511];
        index_of[slot(0)] = 0;
        Self {
            palette: Palette::direct(0, 2),
            index_of,
        }
    }

    /// Direct mode with `dirofs` 0 and 9-bit uncompressed indices: codes
    /// every value.
    pub(super) fn fallback() -> Self {
        Self {
            palette: Palette::direct(0, 9),
            index_of: (0..511).map(|s| code_of(s as i16 - 255)).collect(),
        }
    }
}

/// A candidate coding of a region before slice planning.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    /// Estimated bits of the region with one slice (header, palette,
    /// weight indices with their best parameter, zero runs).
    pub estimate: u64,
    pub alternating: bool,
    /// Palette entries (values), most frequent first.
    entries: Vec<i16>,
    dirofs: u16,
    palette_bits: u8,
}

impl Candidate {
    /// The mapping, with an index for every value of `hist` it can code
    /// (zero is not indexed in alternating mode, except for an all-zero
    /// region).
    pub(super) fn mapping(&self, hist: &[u32]) -> Mapping {
        let k = self.entries.len();
        let mut index_of = vec![NO_INDEX; 511];
        for (s, &c) in hist.iter().enumerate() {
            let v = s as i16 - 255;
            if c == 0 {
                continue;
            }
            let code = code_of(v);
            if code >= self.dirofs {
                let idx = k + usize::from(code - self.dirofs);
                if idx <= usize::from(WEIGHT_INDEX_MAX) {
                    index_of[s] = idx as u16;
                }
            }
        }
        for (i, &v) in self.entries.iter().enumerate() {
            index_of[slot(v)] = i as u16;
        }
        Mapping {
            palette: Palette {
                dirofs: self.dirofs as u8,
                palette_bits: self.palette_bits,
                entries: self.entries.iter().map(|&v| code_of(v)).collect(),
            },
            index_of,
        }
    }
}

/// Appends the candidate index mappings of a region in one mode class to
/// `out`, each with an additive estimate of the region's bits (single
/// slice parameters). `hist` is the region's value histogram and
/// `zero_run_bits` its best total zero-run bits (used in alternating mode).
///
/// Palettes hold the K most frequent values (K from 0, 2, 4, 8, 16, 32 and
/// the number of distinct values), ties broken by smaller code; `dirofs` is
/// the smallest code outside the palette (at most 31).
pub(super) fn candidates(
    hist: &[u32],
    zero_run_bits: u64,
    alternating: bool,
    out: &mut Vec<Candidate>,
) {
    // (count, code, value) of the values to index, most frequent first.
    let mut present: Vec<(u32, u16, i16)> = hist
        .iter()
        .enumerate()
        .filter(|&(s, &c)| c > 0 && !(alternating && s == slot(0)))
        .map(|(s, &c)| {
            let v = s as i16 - 255;
            (c, code_of(v), v)
        })
        .collect();
    if present.is_empty() {
        if alternating && hist[slot(0)] > 0 {
            // All-zero region: one zero index, direct mode with dirofs 0
            // (§3.9.9), zero runs around it.
            let n = hist[slot(0)];
            let z = (0..4)
                .map(|zd| u64::from(super::cost::zcost(n - 1, zd) + 1 + zd))
                .min()
                .unwrap_or(0);
            out.push(Candidate {
                estimate: u64::from(SLICE_HEADER_BITS + DIROFS_BITS + PALSIZE_BITS + PALBITS_BITS)
                    + 1
                    + z,
                alternating,
                entries: Vec::new(),
                dirofs: 0,
                palette_bits: 2,
            });
        }
        return;
    }
    present.sort_unstable_by_key(|&(c, code, _)| (std::cmp::Reverse(c), code));
    let d = present.len();
    // Suffix minimum and maximum of the codes: dirofs and the largest
    // direct index for a palette of the first k values.
    let mut suf_min = vec![u16::MAX; d + 1];
    let mut suf_max = vec![0u16; d + 1];
    for j in (0..d).rev() {
        suf_min[j] = suf_min[j + 1].min(present[j].1);
        suf_max[j] = suf_max[j + 1].max(present[j].1);
    }
    let mut sizes = [0usize; 7];
    let mut ns = 1;
    for k in [2usize, 4, 8, 16, 32] {
        if k <= d {
            sizes[ns] = k;
            ns += 1;
        }
    }
    if (2..=PALETTE_SIZE_MAX).contains(&d) && !sizes[..ns].contains(&d) {
        sizes[ns] = d;
        ns += 1;
    }
    let zbits = if alternating { zero_run_bits } else { 0 };
    let total: u64 = present.iter().map(|p| u64::from(p.0)).sum();
    for &k in &sizes[..ns] {
        let dirofs = if k == d {
            0
        } else {
            suf_min[k].min((1 << DIROFS_BITS) - 1)
        };
        let max_index = if k == d {
            k as u32 - 1
        } else {
            (k + usize::from(suf_max[k] - dirofs)) as u32
        };
        if max_index > u32::from(WEIGHT_INDEX_MAX) {
            continue;
        }
        let palette_bits = if k > 0 {
            present[..k]
                .iter()
                .map(|p| bit_length(u32::from(p.1)))
                .max()
                .unwrap_or(2)
                .clamp(2, 9)
        } else {
            bit_length(max_index).clamp(2, 9)
        };
        let ubits = if k > 0 {
            bit_length(k as u32 - 1)
        } else {
            palette_bits
        };
        // Bits of every weight parameter over the indices, plus wunary0
        // positions of the non-truncated Golomb-Rice parameters.
        let mut bits = [0u64; 13];
        let mut pos = [0u64; 6];
        for (j, &(c, code, _)) in present.iter().enumerate() {
            let idx = if j < k {
                j as u16
            } else {
                k as u16 + code - dirofs
            };
            let c = u64::from(c);
            for (p, b) in bits.iter_mut().enumerate() {
                *b += c * u64::from(ALL_WPARAMS[p].cost(idx, ubits).min(INF));
            }
            for (wdiv, q) in pos.iter_mut().enumerate() {
                *q += c * u64::from((idx >> wdiv) / 2 + 1);
            }
        }
        for (wdiv, &q) in pos.iter().enumerate() {
            bits[wdiv] += q.next_multiple_of(12) - q;
            // wtrunc: one position per index
            bits[wdiv + 6] += total.next_multiple_of(12) - total;
        }
        let wbits = bits.iter().copied().min().unwrap_or(u64::MAX);
        if wbits >= u64::from(INF) {
            continue;
        }
        let header = DIROFS_BITS + PALSIZE_BITS + PALBITS_BITS + k as u32 * palette_bits;
        out.push(Candidate {
            estimate: wbits + zbits + u64::from(SLICE_HEADER_BITS + header),
            alternating,
            entries: present[..k].iter().map(|p| p.2).collect(),
            dirofs,
            palette_bits: palette_bits as u8,
        });
    }
}

/// Candidates of both mode classes for a region with histogram `hist` and
/// best zero-run bits `zero_run_bits`.
pub(super) fn all_candidates(hist: &[u32], zero_run_bits: u64) -> Vec<Candidate> {
    let mut cands = Vec::with_capacity(14);
    candidates(hist, zero_run_bits, true, &mut cands);
    candidates(hist, zero_run_bits, false, &mut cands);
    cands
}

