//! Index mappings (palette, `dirofs`, `palbits`; TRM §3.9.5, §3.9.6) and
//! the candidate mappings of a region, costed from its value histogram.

use super::cost::{zcost, SLICE_HEADER_BITS};
use super::stats::slot;
use crate::swd::{
    Palette, DIROFS_BITS, PALBITS_BITS, PALETTE_SIZE_MAX, PALSIZE_BITS, WEIGHT_INDEX_MAX, WQ_MAX,
    WQ_MAX_TRUNCATED,
};

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
    /// By [`slot`] (512 entries, the last unused); [`NO_INDEX`] for values
    /// without an index.
    pub index_of: Box<[u16; 512]>,
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
        let mut index_of = Box::new([NO_INDEX; 512]);
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
            index_of: Box::new(std::array::from_fn(|s| code_of(s.min(510) as i16 - 255))),
        }
    }
}

/// A candidate coding of a region before slice planning.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    /// Estimated bits of the region with one slice (header, palette,
    /// weight indices with their best parameter, zero runs).
    pub estimate: u64,
    /// Zero-run bits in the estimate (alternating mode).
    zbits: u64,
    pub alternating: bool,
    /// Palette entries (values), most frequent first.
    entries: Vec<i16>,
    dirofs: u16,
    palette_bits: u8,
}

impl Candidate {
    /// The same candidate with other zero-run bits (its region's weights
    /// differ only in zeros).
    pub(super) fn with_zero_run_bits(&self, zbits: u64) -> Self {
        Self {
            estimate: self.estimate - self.zbits + zbits,
            zbits,
            ..self.clone()
        }
    }

    /// Bits of the `newpal` extension of its mapping.
    pub(super) fn header_bits(&self) -> u32 {
        DIROFS_BITS
            + PALSIZE_BITS
            + PALBITS_BITS
            + self.entries.len() as u32 * u32::from(self.palette_bits)
    }

    /// Zero-run bits in the estimate (0 in non-alternating mode).
    pub(super) fn zero_run_bits(&self) -> u64 {
        self.zbits
    }

    /// The mapping: an index for every value it can code.
    pub(super) fn mapping(&self) -> Mapping {
        let k = self.entries.len();
        // Every value with a codable direct index gets it, present or not
        // (absent values are never looked up): value m has code 2m, -m
        // code 2m + 1.
        let mut index_of = Box::new([NO_INDEX; 512]);
        let (k, dirofs) = (k as i32, i32::from(self.dirofs));
        let direct = |code: i32| {
            let idx = k + code - dirofs;
            if code >= dirofs && idx <= i32::from(WEIGHT_INDEX_MAX) {
                idx as u16
            } else {
                NO_INDEX
            }
        };
        // Slot 255 + m holds value m (code 2m), slot 255 - m value -m
        // (code 2m + 1).
        for (m, e) in index_of[255..511].iter_mut().enumerate() {
            *e = direct(2 * m as i32);
        }
        for (s, e) in index_of[..255].iter_mut().enumerate() {
            *e = direct(2 * (255 - s as i32) + 1);
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

/// Regions with fewer weights than this skip the smaller palettes when the
/// largest does not pay (see [`candidates_from_keys`]).
const EARLY_STOP_BELOW: u64 = 8192;

/// The count and code of a sort key.
#[inline]
fn unkey(key: u64) -> (u32, u16) {
    (u32::MAX - (key >> 16) as u32, key as u16)
}

/// The weight value of a sign-magnitude code.
#[inline]
fn value_of(code: u16) -> i16 {
    let m = (code >> 1) as i16;
    if code & 1 == 1 {
        -m
    } else {
        m
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
/// `keys` are the values to index as sort keys (count descending, then
/// code), the first [`PALETTE_SIZE_MAX`] sorted (see [`sort_head`]).
fn candidates_from_keys(
    keys: &[u64],
    hist: &[u32],
    zero_run_bits: u64,
    alternating: bool,
    out: &mut Vec<Candidate>,
) {
    if keys.is_empty() {
        if alternating && hist[slot(0)] > 0 {
            // All-zero region: one zero index, direct mode with dirofs 0
            // (§3.9.9), zero runs around it.
            let n = hist[slot(0)];
            let z = (0..4)
                .map(|zd| u64::from(zcost(n - 1, zd) + 1 + zd))
                .min()
                .unwrap_or(0);
            out.push(Candidate {
                estimate: u64::from(SLICE_HEADER_BITS + DIROFS_BITS + PALSIZE_BITS + PALBITS_BITS)
                    + 1
                    + z,
                zbits: z,
                alternating,
                entries: Vec::new(),
                dirofs: 0,
                palette_bits: 2,
            });
        }
        return;
    }
    let d = keys.len();
    let total: u64 = keys.iter().map(|&k| u64::from(unkey(k).0)).sum();
    // Minimum and maximum code of keys[k..] (dirofs and the largest direct
    // index for a palette of the first k values): the tail beyond the
    // largest palette once, then each k up to it.
    let head = d.min(PALETTE_SIZE_MAX);
    let tail = keys[head..]
        .iter()
        .fold((u16::MAX, 0u16), |(lo, hi), &key| {
            let c = key as u16;
            (lo.min(c), hi.max(c))
        });
    let suffix = |k: usize| {
        keys[k.min(head)..head].iter().fold(tail, |(lo, hi), &key| {
            let c = key as u16;
            (lo.min(c), hi.max(c))
        })
    };
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
    // Direct mode and the largest palette first. In a short region (where
    // costing the candidates is a noticeable part of the encode) the
    // smaller palettes follow only if the largest one saves more weight
    // bits than a two-entry palette header costs: where reordering the most
    // frequent values does not pay, fewer of them rarely do.
    sizes[1..ns].reverse();
    let (mut direct_bits, mut largest_bits) = (None, None);
    let mut idx: Vec<u32> = Vec::with_capacity(d);
    let cnt: Vec<u32> = keys.iter().map(|&key| unkey(key).0).collect();
    let codes: Vec<u32> = keys.iter().map(|&key| u32::from(key as u16)).collect();
    for (n, &k) in sizes[..ns].iter().enumerate() {
        if n == 2 && total < EARLY_STOP_BELOW {
            // The smallest palette's header: two entries.
            let pb2 = codes[..2.min(d)]
                .iter()
                .map(|&c| bit_length(c))
                .max()
                .unwrap_or(2)
                .clamp(2, 9);
            let saving = direct_bits
                .zip(largest_bits)
                .map_or(0, |(d, l): (u64, u64)| d.saturating_sub(l));
            if saving < 2 * u64::from(pb2) {
                break;
            }
        }
        let dirofs = if k == d {
            0
        } else {
            suffix(k).0.min((1 << DIROFS_BITS) - 1)
        };
        let max_index = if k == d {
            k as u32 - 1
        } else {
            (k + usize::from(suffix(k).1 - dirofs)) as u32
        };
        if max_index > u32::from(WEIGHT_INDEX_MAX) {
            continue;
        }
        let palette_bits = if k > 0 {
            codes[..k]
                .iter()
                .map(|&code| bit_length(code))
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
        idx.clear();
        for (j, &key) in keys.iter().enumerate() {
            let code = key as u16;
            idx.push(if j < k {
                j as u32
            } else {
                (k + usize::from(code - dirofs)) as u32
            });
        }
        let wbits = index_bits(&cnt, &idx, total, max_index, ubits);
        if wbits == u64::MAX {
            continue;
        }
        if k == 0 {
            direct_bits = Some(wbits);
        } else if n == 1 {
            largest_bits = Some(wbits);
        }
        let header = DIROFS_BITS + PALSIZE_BITS + PALBITS_BITS + k as u32 * palette_bits;
        out.push(Candidate {
            estimate: wbits + zbits + u64::from(SLICE_HEADER_BITS + header),
            zbits,
            alternating,
            entries: keys[..k].iter().map(|&key| value_of(key as u16)).collect(),
            dirofs,
            palette_bits: palette_bits as u8,
        });
    }
}

/// Bits of weight indices `idx` (with counts `cnt`, `total` in all,
/// largest `max_index`) under their best single weight parameter
/// (`u64::MAX` if none codes them all). `ubits` is the mapping's
/// `uncompressed_bits`.
///
/// Every Golomb-Rice cost follows from s[w] = sum of count * (idx >> w)
/// (§3.9.7). Without wtrunc the cost is convex in wdiv, so only a window
/// around log2(mean index) is summed (all of 0..=5 if the best lies on the
/// window's edge); with wtrunc (1 + wdiv bits, one more for q >= 1) only
/// the smallest codable wdiv counts.
fn index_bits(cnt: &[u32], idx: &[u32], total: u64, max_index: u32, ubits: u32) -> u64 {
    let mut s = [0u64; 7];
    s[0] = cnt
        .iter()
        .zip(idx)
        .map(|(&c, &i)| u64::from(c) * u64::from(i))
        .sum();
    // Smallest wdiv whose quotients fit without / with wtrunc.
    let w_min = (0..6u32).find(|&w| max_index >> w <= WQ_MAX).unwrap_or(6);
    let w_trunc = (0..6u32).find(|&w| max_index >> w <= WQ_MAX_TRUNCATED);
    let guess = bit_length((s[0] / total.max(1)) as u32).saturating_sub(2);
    // s[w] for w in lo..lo + 4 in one pass (fixed-length inner loop).
    let sum4 = |s: &mut [u64; 7], lo: usize| {
        let mut acc = [0u64; 4];
        for (&c, &i) in cnt.iter().zip(idx.iter()) {
            for (d, a) in acc.iter_mut().enumerate() {
                *a += u64::from(c) * u64::from(i >> (lo + d));
            }
        }
        for (d, a) in acc.iter().enumerate() {
            if lo + d <= 6 {
                s[lo + d] = *a;
            }
        }
    };
    let pad = |pos: u64| pos.next_multiple_of(12) - pos;
    let gr = |s: &[u64; 7], w: usize| {
        // q + 1 + wdiv bits, (q >> 1) + 1 wunary0 positions
        total * (1 + w as u64) + s[w] + pad(s[w + 1] + total)
    };
    let w_min = w_min as usize;
    let mut wbits = u64::MAX;
    if w_min <= 5 {
        // Window lo..=lo + 2 (needs s up to lo + 3); slide while the
        // minimum sits on an edge that can move.
        let mut lo = (guess as usize).clamp(w_min.min(3), 3);
        let mut known = [false; 7];
        known[0] = true;
        loop {
            if !(known[lo] && known[lo + 3]) {
                sum4(&mut s, lo);
                for k in &mut known[lo..(lo + 4).min(7)] {
                    *k = true;
                }
            }
            let (best_w, best) = (lo.max(w_min)..=lo + 2)
                .map(|w| (w, gr(&s, w)))
                .min_by_key(|&(_, c)| c)
                .unwrap_or((lo, u64::MAX));
            wbits = wbits.min(best);
            if best_w == lo && lo > w_min {
                lo -= 1;
            } else if best_w == lo + 2 && lo + 2 < 5 {
                lo += 1;
            } else {
                break;
            }
        }
    }
    if let Some(w) = w_trunc {
        let ones: u64 = cnt
            .iter()
            .zip(idx.iter())
            .map(|(&c, &i)| u64::from(c) * u64::from(i >> w != 0))
            .sum();
        wbits = wbits.min(total * (1 + u64::from(w)) + ones + pad(total));
    }
    if max_index >> ubits == 0 {
        wbits = wbits.min(total * u64::from(ubits));
    }
    wbits
}

/// Palettes that close holes in the direct range. Direct indices are
/// `palette_size + code - dirofs`, so every code below `dirofs` must be in
/// the palette, and absent codes between `dirofs` and a present code waste
/// an index each (in non-alternating mode at least `1`, "negative zero").
/// For `dirofs` just past a hole `h` (the first few holes above the
/// smallest present code) the palette holds the present codes below it,
/// which moves every direct index down by the number of holes below
/// `dirofs`; `fill` (0..=2) more entries take the values whose direct
/// index costs most (count times code: per-channel quantisation puts one
/// weight of magnitude 127 in every output channel), each giving up one
/// index of that shift.
fn hole_candidates(
    keys: &[u64],
    total: u64,
    zbits: u64,
    alternating: bool,
    out: &mut Vec<Candidate>,
) {
    const MAX_HOLES: usize = 4;
    let mut low = [false; 32];
    let mut min_code = u16::MAX;
    for &key in keys {
        let code = key as u16;
        if let Some(l) = low.get_mut(usize::from(code)) {
            *l = true;
        }
        min_code = min_code.min(code);
    }
    let top = (1u16 << DIROFS_BITS) - 1;
    let base = min_code.min(top);
    let mut ds = [0u16; MAX_HOLES + 1];
    ds[0] = base;
    let mut nd = 1;
    for h in min_code.saturating_add(1)..top {
        if nd > MAX_HOLES {
            break;
        }
        if !low[usize::from(h)] {
            ds[nd] = h + 1;
            nd += 1;
        }
    }
    let cnt: Vec<u32> = keys.iter().map(|&key| unkey(key).0).collect();
    let mut idx: Vec<u32> = Vec::with_capacity(keys.len());
    let mut members: Vec<usize> = Vec::with_capacity(PALETTE_SIZE_MAX);
    for &d in &ds[..nd] {
        let forced = keys.iter().filter(|&&key| (key as u16) < d).count();
        for fill in 0..=2usize {
            let p = forced + fill;
            if !(2..=PALETTE_SIZE_MAX).contains(&p) {
                continue;
            }
            // The fill values: largest count * code at or above d.
            let mut best = [(0u64, usize::MAX); 2];
            for (j, &key) in keys.iter().enumerate() {
                let code = key as u16;
                if code >= d {
                    let v = u64::from(cnt[j]) * u64::from(code);
                    if v > best[1].0 {
                        best[1] = (v, j);
                        if best[1].0 > best[0].0 {
                            best.swap(0, 1);
                        }
                    }
                }
            }
            if best[..fill].iter().any(|b| b.1 == usize::MAX) {
                continue;
            }
            // Palette in key order (count descending, then code).
            members.clear();
            members.extend(
                keys.iter()
                    .enumerate()
                    .filter(|&(j, &key)| (key as u16) < d || best[..fill].iter().any(|b| b.1 == j))
                    .map(|(j, _)| j),
            );
            members.sort_unstable_by_key(|&j| keys[j]);
            idx.clear();
            idx.extend(keys.iter().map(|&key| {
                let code = key as u16;
                (p + usize::from(code.saturating_sub(d))) as u32
            }));
            for (pos, &j) in members.iter().enumerate() {
                idx[j] = pos as u32;
            }
            let max_index = idx.iter().copied().max().unwrap_or(0);
            if max_index > u32::from(WEIGHT_INDEX_MAX) {
                continue;
            }
            let palette_bits = members
                .iter()
                .map(|&j| bit_length(u32::from(keys[j] as u16)))
                .max()
                .unwrap_or(2)
                .clamp(2, 9);
            let ubits = bit_length(p as u32 - 1);
            let wbits = index_bits(&cnt, &idx, total, max_index, ubits);
            if wbits == u64::MAX {
                continue;
            }
            let header = DIROFS_BITS + PALSIZE_BITS + PALBITS_BITS + p as u32 * palette_bits;
            out.push(Candidate {
                estimate: wbits + zbits + u64::from(SLICE_HEADER_BITS + header),
                zbits,
                alternating,
                entries: members.iter().map(|&j| value_of(keys[j] as u16)).collect(),
                dirofs: d,
                palette_bits: palette_bits as u8,
            });
        }
    }
}

/// Regions with fewer weight indices than this get no hole-closing
/// palette: the saving (about one bit per `1 << wdiv` indices per hole)
/// rarely reaches a 16-byte granule there, and costing the palettes is a
/// noticeable fixed cost of a small stream.
const HOLES_FROM: u64 = 2048;

/// The best of the [`hole_candidates`] of a region in one mode class
/// (`hist`: its value histogram, `zero_run_bits`: its best zero-run bits in
/// alternating mode).
pub(super) fn best_hole_candidate(
    hist: &[u32],
    zero_run_bits: u64,
    alternating: bool,
) -> Option<Candidate> {
    let zeros = if alternating { hist[slot(0)] } else { 0 };
    if hist.iter().map(|&c| u64::from(c)).sum::<u64>() - u64::from(zeros) < HOLES_FROM {
        return None;
    }
    let mut keys = nonzero_keys(hist);
    if !alternating && hist[slot(0)] > 0 {
        keys.push(u64::from(u32::MAX - hist[slot(0)]) << 16);
    }
    let total: u64 = keys.iter().map(|&k| u64::from(unkey(k).0)).sum();
    let zbits = if alternating { zero_run_bits } else { 0 };
    let mut out = Vec::with_capacity(3 * 5);
    hole_candidates(&keys, total, zbits, alternating, &mut out);
    out.into_iter().min_by_key(|c| c.estimate)
}

/// Candidates of both mode classes for a region with histogram `hist` and
/// best zero-run bits `zero_run_bits`.
pub(super) fn all_candidates(hist: &[u32], zero_run_bits: u64) -> Vec<Candidate> {
    let mut cands = Vec::with_capacity(14);
    let mut keys = nonzero_keys(hist);
    sort_head(&mut keys);
    candidates_from_keys(&keys, hist, zero_run_bits, true, &mut cands);
    if hist[slot(0)] > 0 {
        // Insert zero's key into the sorted head (the largest palette's
        // values); a key it displaces joins the unordered tail.
        let zero = u64::from(u32::MAX - hist[slot(0)]) << 16;
        let head = keys.len().min(PALETTE_SIZE_MAX);
        let at = keys[..head].partition_point(|&k| k < zero);
        keys.push(zero);
        keys[at..].rotate_right(1);
    }
    candidates_from_keys(&keys, hist, zero_run_bits, false, &mut cands);
    cands
}

/// Sorts the first [`PALETTE_SIZE_MAX`] smallest keys (the largest
/// palette: most frequent values first) to the front; only their order
/// matters.
fn sort_head(keys: &mut [u64]) {
    if keys.len() > PALETTE_SIZE_MAX {
        keys.select_nth_unstable(PALETTE_SIZE_MAX);
        keys[..PALETTE_SIZE_MAX].sort_unstable();
    } else {
        keys.sort_unstable();
    }
}

/// The non-alternating candidates of a region with histogram `hist`.
pub(super) fn non_alternating_candidates(hist: &[u32]) -> Vec<Candidate> {
    let mut cands = Vec::with_capacity(7);
    let mut keys = nonzero_keys(hist);
    if hist[slot(0)] > 0 {
        keys.push(u64::from(u32::MAX - hist[slot(0)]) << 16);
    }
    sort_head(&mut keys);
    candidates_from_keys(&keys, hist, 0, false, &mut cands);
    cands
}

/// Sort keys of the nonzero values of `hist`, in slot order.
fn nonzero_keys(hist: &[u32]) -> Vec<u64> {
    let mut mask = present_slots(hist);
    mask[slot(0) / 64] &= !(1 << (slot(0) % 64));
    let n: u32 = mask.iter().map(|m| m.count_ones()).sum();
    // One more for the zero key of non-alternating mode.
    let mut keys = Vec::with_capacity(n as usize + 1);
    for_each_slot(&mask, |s| {
        keys.push(u64::from(u32::MAX - hist[s]) << 16 | u64::from(code_of(s as i16 - 255)));
    });
    keys
}

/// Bit `s % 64` of word `s / 64` is set where `hist[s] > 0`.
pub(super) fn present_slots(hist: &[u32]) -> [u64; 8] {
    // One byte (0 or 1) per slot, then 8 bytes to 8 bits by a multiply
    // (byte i of v lands in bit 56 + i of v * 0x0102..80).
    let mut bytes = [0u8; 512];
    for (b, &c) in bytes.iter_mut().zip(hist) {
        *b = u8::from(c != 0);
    }
    let mut mask = [0u64; 8];
    for (m, chunk) in mask.iter_mut().zip(bytes.chunks_exact(64)) {
        let mut x = 0u64;
        for (g, group) in chunk.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(group.try_into().unwrap_or([0; 8]));
            x |= (v.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * g);
        }
        *m = x;
    }
    mask
}

/// Calls `f` with every slot set in `mask`, in ascending order.
#[inline]
pub(super) fn for_each_slot(mask: &[u64; 8], mut f: impl FnMut(usize)) {
    for (w, &m) in mask.iter().enumerate() {
        let mut bits = m;
        while bits != 0 {
            f(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_slots_marks_every_nonzero_count() {
        let mut hist = vec![0u32; 511];
        for s in [0usize, 1, 7, 8, 63, 64, 200, 255, 256, 509, 510] {
            hist[s] = s as u32 + 1;
        }
        let mask = present_slots(&hist);
        let mut got = Vec::new();
        for_each_slot(&mask, |s| got.push(s));
        let want: Vec<usize> = (0..511).filter(|&s| hist[s] > 0).collect();
        assert_eq!(got, want);
    }
}
