//! One pass over a weight sequence: value histogram, zero-run costs, long
//! zero runs ("gaps") and zeros per block.

use super::cost::{zcost, zcost_min};

/// Shortest zero run that may become a region of its own (a gap).
pub(super) const GAP_MIN: usize = 64;
/// Block size (weights) of the mode DP (a multiple of 64).
pub(super) const REGION_BLOCK: usize = 2048;
/// Zero runs shorter than this are counted, longer ones costed directly.
const SHORT_RUNS: usize = 256;

/// Index of a weight value in a 511-entry table.
#[inline]
pub(super) fn slot(v: i16) -> usize {
    (v + 255) as usize
}

/// Statistics of a weight sequence.
pub(super) struct Stats {
    /// Count of each value, by [`slot`].
    pub hist: Vec<u32>,
    /// Zero-run bits for zdiv 0..=3 when the whole sequence is coded in
    /// alternating mode (runs before every nonzero weight and the trailing run).
    pub zbits: [u64; 4],
    /// Zero-run bits with every run at its own best `zdiv` (a lower bound
    /// of any alternating coding of the sequence).
    pub zbits_min: u64,
    /// The same with every gap counted as an empty run (the gapped plan
    /// ends a region there).
    pub zbits_data: [u64; 4],
    /// [`Self::zbits_min`] with every gap counted as an empty run.
    pub zbits_min_data: u64,
    /// Zero runs of [`GAP_MIN`] or more: (start, end).
    pub gaps: Vec<(usize, usize)>,
    /// Number of zeros in the gaps.
    pub gap_zeros: u64,
    /// Number of zeros in each block of [`REGION_BLOCK`] weights.
    pub block_zeros: Vec<u32>,
}

/// Bit `i` set where `chunk[i] != 0` (at most 64 weights): one byte per
/// weight, then 8 bytes to 8 bits by a multiply (byte i of v lands in bit
/// 56 + i of v * 0x0102..80).
fn nonzero_mask(chunk: &[i16]) -> u64 {
    let mut bytes = [0u8; 64];
    for (b, &v) in bytes.iter_mut().zip(chunk) {
        *b = u8::from(v != 0);
    }
    let mut mask = 0u64;
    for (g, group) in bytes.chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(group.try_into().unwrap_or([0; 8]));
        mask |= (v.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * g);
    }
    mask
}

/// Accumulates zero-run costs: short runs counted, long ones costed.
struct RunCosts {
    short: [u32; SHORT_RUNS],
    long: [u64; 4],
    long_min: u64,
}

impl RunCosts {
    fn new() -> Self {
        Self {
            short: [0; SHORT_RUNS],
            long: [0; 4],
            long_min: 0,
        }
    }

    #[inline]
    fn add(&mut self, run: u32) {
        match self.short.get_mut(run as usize) {
            Some(k) => *k += 1,
            None => {
                for (zd, c) in self.long.iter_mut().enumerate() {
                    *c += u64::from(zcost(run, zd as u32));
                }
                self.long_min += u64::from(zcost_min(run));
            }
        }
    }

    /// Bits of all runs for each zdiv, and with each run at its best zdiv.
    fn total(&self, max_run: u32) -> ([u64; 4], u64) {
        let (mut c, mut min) = (self.long, self.long_min);
        let top = (max_run as usize + 1).min(SHORT_RUNS);
        for (r, &k) in self.short[..top].iter().enumerate() {
            if k > 0 {
                for (zd, ci) in c.iter_mut().enumerate() {
                    *ci += u64::from(k) * u64::from(zcost(r as u32, zd as u32));
                }
                min += u64::from(k) * u64::from(zcost_min(r as u32));
            }
        }
        (c, min)
    }
}

impl Stats {
    /// Gathers the statistics of `weights` (values -255..=255).
    pub(super) fn new(weights: &[i16]) -> Self {
        let n = weights.len();
        // Two interleaved histograms: repeated values (zeros) do not chain
        // one counter's read-modify-write.
        let mut h2 = vec![[0u32; 2]; 511];
        let mut runs = RunCosts::new();
        let mut gaps = Vec::new();
        let mut gap_zeros = 0u64;
        let mut block_zeros = vec![0u32; n.div_ceil(REGION_BLOCK)];
        let mut max_run = 0u32;
        // Zeros since the last nonzero weight.
        let mut run = 0u32;
        let mut record = |run: u32, end: usize, runs: &mut RunCosts| {
            runs.add(run);
            max_run = max_run.max(run);
            if run as usize >= GAP_MIN {
                gaps.push((end - run as usize, end));
                gap_zeros += u64::from(run);
            }
        };
        for (c, chunk) in weights.chunks(64).enumerate() {
            let base = c * 64;
            let nz = nonzero_mask(chunk);
            let mut pairs = chunk.chunks_exact(2);
            for p in &mut pairs {
                h2[slot(p[0])][0] += 1;
                h2[slot(p[1])][1] += 1;
            }
            for &v in pairs.remainder() {
                h2[slot(v)][0] += 1;
            }
            block_zeros[base / REGION_BLOCK] += chunk.len() as u32 - nz.count_ones();
            // Runs end at every nonzero weight. Those right after a
            // nonzero weight (or at the start) are empty: counted at once.
            let carry = u64::from(run == 0);
            let empty = nz & ((nz << 1) | carry);
            runs.short[0] += empty.count_ones();
            let mut rest = nz & !empty;
            while rest != 0 {
                let t = rest.trailing_zeros();
                // The previous nonzero weight of this chunk, if any.
                let below = nz & ((1u64 << t) - 1);
                let r = if below == 0 {
                    run + t
                } else {
                    t - (63 - below.leading_zeros()) - 1
                };
                record(r, base + t as usize, &mut runs);
                rest &= rest - 1;
            }
            run = if nz == 0 {
                run + chunk.len() as u32
            } else {
                chunk.len() as u32 - 1 - (63 - nz.leading_zeros())
            };
        }
        record(run, n, &mut runs);
        let (zbits, zbits_min) = runs.total(max_run);
        // The gapped plan: every gap is an empty run.
        let mut zbits_data = zbits;
        let mut zbits_min_data = zbits_min;
        for &(a, b) in &gaps {
            zbits_min_data -= u64::from(zcost_min((b - a) as u32) - zcost_min(0));
            for (zd, c) in zbits_data.iter_mut().enumerate() {
                *c -= u64::from(zcost((b - a) as u32, zd as u32) - zcost(0, zd as u32));
            }
        }
        Self {
            hist: h2.iter().map(|h| h[0] + h[1]).collect(),
            zbits,
            zbits_min,
            zbits_data,
            zbits_min_data,
            gaps,
            gap_zeros,
            block_zeros,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swd::encode::cost::{zcost_min, zdiv_costs};

    #[test]
    fn stats_match_a_direct_count() {
        let mut w = vec![3i16, 0, 0, -4];
        w.extend([0; 100]);
        w.extend([5, 0, 7]);
        w.extend([0; 70]);
        let s = Stats::new(&w);
        assert_eq!(s.hist[slot(0)], 2 + 100 + 1 + 70);
        assert_eq!(s.hist[slot(-4)], 1);
        assert_eq!(s.gaps, vec![(4, 104), (107, 177)]);
        assert_eq!(s.gap_zeros, 170);
        assert_eq!(s.block_zeros, vec![173]);
        assert_eq!(s.zbits, zdiv_costs(&[0, 2, 100, 1, 70]));
        assert_eq!(s.zbits_min, 1 + 3 + 16 + 2 + 12);
        assert_eq!(s.zbits_data, zdiv_costs(&[0, 2, 0, 1, 0]));
    }

    #[test]
    fn run_statistics_match_a_direct_count_on_random_sequences() {
        let mut x = 0x2545_f491u32;
        for case in 0..60u32 {
            let n = 1 + (case as usize * 37) % 700;
            let zeros = case % 10;
            let w: Vec<i16> = (0..n)
                .map(|k| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    if x % 10 < zeros || (case % 3 == 0 && (k / 150) % 2 == 1) {
                        0
                    } else {
                        (x >> 8) as i16 % 100
                    }
                })
                .collect();
            let mut runs = Vec::new();
            let mut r = 0u32;
            for &v in &w {
                if v == 0 {
                    r += 1;
                } else {
                    runs.push(r);
                    r = 0;
                }
            }
            runs.push(r);
            let s = Stats::new(&w);
            assert_eq!(s.zbits, zdiv_costs(&runs), "case {case}");
            let min: u64 = runs.iter().map(|&r| u64::from(zcost_min(r))).sum();
            assert_eq!(s.zbits_min, min, "case {case}");
        }
    }
}
