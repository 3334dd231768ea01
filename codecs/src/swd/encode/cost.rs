//! Bit costs of the SWD symbols (TRM §3.9.7–§3.9.10): weight indices under
//! each weight parameter, zero runs under each `zdiv`, and slice overheads.

use crate::swd::{
    WeightIndexMode, SLICELEN_M1_BITS, WDIV_BITS, WDIV_MAX_GOLOMB_RICE, WEIGHT_INDEX_MAX, WQ_MAX,
    WQ_MAX_TRUNCATED, ZDIV_BITS,
};

/// Cost of a symbol that cannot be coded.
pub(super) const INF: u32 = u32::MAX / 4;

/// Weight index coding of a slice: Golomb-Rice `wdiv` 0..=5 with or
/// without `wtrunc`, or uncompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WParam {
    Gr { wdiv: u8, trunc: bool },
    Unc,
}

/// Every weight parameter: Golomb-Rice without `wtrunc` (wdiv 0..=5), with
/// `wtrunc` (wdiv 0..=5), uncompressed.
pub(super) const ALL_WPARAMS: [WParam; 13] = {
    let mut all = [WParam::Unc; 13];
    let mut k = 0;
    while k <= WDIV_MAX_GOLOMB_RICE {
        all[k as usize] = WParam::Gr {
            wdiv: k,
            trunc: false,
        };
        all[k as usize + 6] = WParam::Gr {
            wdiv: k,
            trunc: true,
        };
        k += 1;
    }
    all
};

/// `GR_BITS[p][idx]`: bits of weight index `idx` under the Golomb-Rice
/// parameter `ALL_WPARAMS[p]` (p < 12), saturated to 255 when not codable.
pub(super) static GR_BITS: [[u8; 512]; 12] = {
    let mut t = [[0u8; 512]; 12];
    let mut p = 0;
    while p < 12 {
        let wdiv = (p % 6) as u32;
        let trunc = p >= 6;
        let mut idx = 0;
        while idx < 512 {
            let q = (idx as u32) >> wdiv;
            let bits = if trunc {
                if q == 0 {
                    1 + wdiv
                } else if q <= 2 {
                    2 + wdiv
                } else {
                    255
                }
            } else if q <= WQ_MAX {
                q + 1 + wdiv
            } else {
                255
            };
            t[p][idx] = bits as u8;
            idx += 1;
        }
        p += 1;
    }
    t
};

/// `MIN_GR_BITS[idx]`: the fewest bits of weight index `idx` under any
/// Golomb-Rice parameter (with or without `wtrunc`).
pub(super) static MIN_GR_BITS: [u8; 512] = {
    let mut t = [255u8; 512];
    let mut idx = 0;
    while idx < 512 {
        let mut p = 0;
        while p < 12 {
            if GR_BITS[p][idx] < t[idx] {
                t[idx] = GR_BITS[p][idx];
            }
            p += 1;
        }
        idx += 1;
    }
    t
};

/// The fewest bits of one zero run under any `zdiv`.
#[inline]
pub(super) fn zcost_min(run: u32) -> u32 {
    (0..4).map(|zd| zcost(run, zd)).min().unwrap_or(0)
}

impl WParam {
    /// Position of this parameter in [`ALL_WPARAMS`].
    #[inline]
    pub(super) fn ordinal(self) -> usize {
        match self {
            WParam::Gr { wdiv, trunc } => usize::from(wdiv) + if trunc { 6 } else { 0 },
            WParam::Unc => 12,
        }
    }

    /// Bits of one weight index (INF if not codable). `ubits` is the
    /// region's `uncompressed_bits`.
    #[inline]
    pub(super) fn cost(self, idx: u16, ubits: u32) -> u32 {
        debug_assert!(idx <= WEIGHT_INDEX_MAX);
        match self {
            WParam::Unc => {
                if u32::from(idx) >> ubits == 0 {
                    ubits
                } else {
                    INF
                }
            }
            _ => match GR_BITS[self.ordinal()][usize::from(idx) & 511] {
                255 => INF,
                b => u32::from(b),
            },
        }
    }

    /// [`Self::cost`] saturated to `cap`.
    #[inline]
    pub(super) fn cost_capped(self, idx: u16, ubits: u32, cap: u16) -> u16 {
        match self {
            WParam::Unc => {
                if u32::from(idx) >> ubits == 0 {
                    ubits as u16
                } else {
                    cap
                }
            }
            _ => match GR_BITS[self.ordinal()][usize::from(idx) & 511] {
                255 => cap,
                b => u16::from(b).min(cap),
            },
        }
    }

    pub(super) fn mode(self) -> WeightIndexMode {
        match self {
            WParam::Gr { wdiv, .. } => WeightIndexMode::GolombRice { wdiv },
            WParam::Unc => WeightIndexMode::Uncompressed,
        }
    }

    pub(super) fn trunc(self) -> bool {
        matches!(self, WParam::Gr { trunc: true, .. })
    }
}

/// Bits of one zero run with divisor `1 << zdiv`.
#[inline]
pub(super) fn zcost(run: u32, zdiv: u32) -> u32 {
    (run >> zdiv).saturating_add(1 + zdiv)
}

/// Slice header without the palette extension: zdiv, slicelen_m1, wdiv,
/// wtrunc, newpal.
pub(super) const SLICE_HEADER_BITS: u32 = ZDIV_BITS + SLICELEN_M1_BITS + WDIV_BITS + 2;

/// Expected unused `wunary0`/`zunary` bits at the end of a slice.
pub(super) const EXPECTED_W_PADDING: u32 = 6;
pub(super) const EXPECTED_Z_PADDING: u32 = 5;

/// Sums over weight indices from which every weight parameter's total cost
/// follows.
pub(super) struct IndexSums {
    /// s[w] = sum of count * (idx >> w).
    pub s: [u64; 7],
    /// t[w] = count of idx >= 1 << w.
    pub t: [u64; 6],
    /// Number of indices.
    pub total: u64,
    /// Largest index.
    pub max_idx: u32,
}

impl IndexSums {
    /// From a sparse histogram: (index, count) pairs.
    pub(super) fn from_sparse(hist: &[(u16, u32)]) -> Self {
        let mut s = [0u64; 7];
        let mut t = [0u64; 6];
        let (mut total, mut max_idx) = (0u64, 0u32);
        for &(i, h) in hist {
            let (h, i) = (u64::from(h), u32::from(i));
            for (w, sw) in s.iter_mut().enumerate() {
                *sw += h * u64::from(i >> w);
            }
            for (w, tw) in t.iter_mut().enumerate() {
                *tw += h * u64::from(i >> w != 0);
            }
            total += h;
            max_idx = max_idx.max(i);
        }
        Self {
            s,
            t,
            total,
            max_idx,
        }
    }

    /// From a dense histogram (`hist[i]` = count of index `i`): s[w] is
    /// the sum of j times the count of indices with `idx >> w == j`, and
    /// those bucket counts halve from one `w` to the next.
    pub(super) fn from_dense(hist: &[u32; 512]) -> Self {
        let n = hist.iter().rposition(|&c| c > 0).map_or(1, |m| m + 1);
        let mut s = [0u64; 7];
        let mut t = [0u64; 6];
        // Buckets of idx >> 1.
        let mut level = [0u64; 256];
        let mut m = n.div_ceil(2);
        let (mut total, mut s0) = (0u64, 0u64);
        for (j, (b, pair)) in level
            .iter_mut()
            .zip(hist.chunks_exact(2))
            .take(m)
            .enumerate()
        {
            let (lo, hi) = (u64::from(pair[0]), u64::from(pair[1]));
            *b = lo + hi;
            total += lo + hi;
            s0 += (2 * j as u64) * (lo + hi) + hi;
        }
        s[0] = s0;
        t[0] = total - u64::from(hist[0]);
        for w in 1..7 {
            let lv = &mut level[..m];
            s[w] = lv.iter().enumerate().map(|(j, &c)| j as u64 * c).sum();
            if w < 6 {
                t[w] = total - lv[0];
            }
            // Buckets of idx >> (w + 1).
            let next = m.div_ceil(2);
            for j in 0..next {
                lv[j] = lv[2 * j] + lv.get(2 * j + 1).copied().unwrap_or(0);
            }
            m = next;
        }
        Self {
            s,
            t,
            total,
            max_idx: (n - 1) as u32,
        }
    }

    /// Weight parameters sorted by total cost (only parameters that can
    /// code every index), at most `n`. The cost includes the unused
    /// `wunary0` positions of a last chunk. `ubits` is the mapping's
    /// `uncompressed_bits`.
    pub(super) fn best(&self, ubits: u32, n: usize) -> Vec<(WParam, u64)> {
        let Self {
            s,
            t,
            total,
            max_idx,
        } = *self;
        let pad = |pos: u64| pos.next_multiple_of(12) - pos;
        let mut costs: Vec<(WParam, u64)> = Vec::with_capacity(13);
        for wdiv in 0..=WDIV_MAX_GOLOMB_RICE {
            let w = usize::from(wdiv);
            let base = total * (1 + w as u64);
            if max_idx >> w <= WQ_MAX {
                // q + 1 + wdiv bits, (q >> 1) + 1 wunary0 positions
                let trunc = false;
                costs.push((
                    WParam::Gr { wdiv, trunc },
                    base + s[w] + pad(s[w + 1] + total),
                ));
            }
            if max_idx >> w <= WQ_MAX_TRUNCATED {
                let trunc = true;
                costs.push((WParam::Gr { wdiv, trunc }, base + t[w] + pad(total)));
            }
        }
        if max_idx >> ubits == 0 {
            costs.push((WParam::Unc, total * u64::from(ubits)));
        }
        // Stable: ties keep the ALL_WPARAMS order.
        costs.sort_by_key(|&(p, c)| (c, p.ordinal()));
        costs.truncate(n);
        costs
    }
}

/// Weight parameters sorted by total cost over a sparse index histogram
/// (see [`IndexSums::best`]).
pub(super) fn best_wparams(hist: &[(u16, u32)], ubits: u32, n: usize) -> Vec<(WParam, u64)> {
    IndexSums::from_sparse(hist).best(ubits, n)
}

/// Total zero-run bits for each zdiv 0..=3.
pub(super) fn zdiv_costs(zruns: &[u32]) -> [u64; 4] {
    let mut c = [0u64; 4];
    for &r in zruns {
        for (zd, ci) in c.iter_mut().enumerate() {
            *ci += u64::from(zcost(r, zd as u32));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_index_sums_agree() {
        let sparse = [(0u16, 5u32), (3, 2), (17, 9), (64, 1), (200, 4), (511, 1)];
        let mut dense = vec![0u32; 512];
        for &(i, c) in &sparse {
            dense[usize::from(i)] = c;
        }
        let mut dense5 = dense.clone();
        dense5[511] = 0;
        for (d, s) in [(&dense, &sparse[..]), (&dense5, &sparse[..5])] {
            let d: &[u32; 512] = d[..].try_into().unwrap();
            let (a, b) = (IndexSums::from_dense(d), IndexSums::from_sparse(s));
            assert_eq!(
                (a.s, a.t, a.total, a.max_idx),
                (b.s, b.t, b.total, b.max_idx)
            );
            for ubits in [5, 8, 9] {
                assert_eq!(a.best(ubits, 13), b.best(ubits, 13));
            }
        }
    }

    #[test]
    fn table_costs_equal_the_golomb_rice_formula() {
        for p in ALL_WPARAMS {
            for idx in 0..=WEIGHT_INDEX_MAX {
                let want = match p {
                    WParam::Gr { wdiv, trunc } => {
                        let q = u32::from(idx) >> wdiv;
                        let k = u32::from(wdiv);
                        match (trunc, q) {
                            (true, 0) => 1 + k,
                            (true, 1 | 2) => 2 + k,
                            (true, _) => INF,
                            (false, q) if q <= WQ_MAX => q + 1 + k,
                            _ => INF,
                        }
                    }
                    WParam::Unc => {
                        if idx < 256 {
                            8
                        } else {
                            INF
                        }
                    }
                };
                assert_eq!(p.cost(idx, 8), want, "{p:?} {idx}");
            }
            assert_eq!(ALL_WPARAMS[p.ordinal()], p);
        }
    }
}
