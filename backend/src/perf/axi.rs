//! Memory accesses as contiguous runs of bytes, and what they cost on an AXI port: bursts
//! (a run is split at every multiple of the burst length, TRM 3.3.1.18 `max_beats`: "bursts
//! are split at an aligned boundary") and data beats (one AXI data transfer moves one
//! aligned port-width word, [`crate::system::AXI_PORT_BYTES`]).
//!
//! An operation's accesses are summarised as families of runs of one length whose start
//! addresses are multiples of one alignment (the gcd of the family's first address and the
//! strides between its runs); where in a burst or word a run starts is then taken uniformly
//! over the possible residues, so a family costs its exact expected number of bursts and beats
//! without enumerating its runs. Decision P14 in `docs/decisions.md`.

/// The alignment recorded for an address that is a multiple of every burst length and port
/// width (larger than any of them).
pub const MAX_ALIGN: u64 = 4096;

/// `count` contiguous runs of `len` bytes whose start addresses are multiples of `align`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runs {
    /// Bytes per run.
    pub len: u64,
    /// Start addresses are multiples of this (a divisor of [`MAX_ALIGN`]).
    pub align: u64,
    /// Number of runs.
    pub count: u64,
    /// The bytes a run within one port-width word takes its share of a burst against (P18:
    /// the word; P26: a kernel's IFM position against 16 channels of its element size).
    pub unit: u64,
}

/// The accesses of one operation in one direction (read or write) to one region.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    families: Vec<Runs>,
}

/// The greatest common divisor of `a` and `b` (`gcd(a, 0) = a`).
pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The alignment of addresses `start + i * step` for every step given: the largest power of
/// two up to [`MAX_ALIGN`] dividing all of them.
pub fn alignment(start: u64, steps: &[u64]) -> u64 {
    // The gcd of a power of two and `x` is the power of two of `x`'s trailing zeros, at most
    // the power's own (0: every power divides it).
    let zeros = steps
        .iter()
        .fold(start.trailing_zeros(), |z, s| z.min(s.trailing_zeros()));
    1 << zeros.min(MAX_ALIGN.trailing_zeros())
}

/// Expected number of `unit`-aligned chunks a run of `len` bytes overlaps when it starts at a
/// uniformly distributed multiple of `align` (modulo `unit`): `1 + floor((r + len - 1) / unit)`
/// averaged over the residues `r`.
pub fn chunks(len: u64, align: u64, unit: u64) -> f64 {
    if len == 0 || unit == 0 {
        return 0.0;
    }
    let g = gcd(align.max(1), unit);
    let (q, s) = ((len - 1) / unit, (len - 1) % unit);
    // Residues r (multiples of g below unit) with r + s >= unit cross one more boundary.
    let crossing = (unit - 1) / g - (unit - 1 - s) / g;
    1.0 + q as f64 + crossing as f64 / (unit / g) as f64
}

impl Access {
    /// Adds `count` runs of `len` bytes aligned to `align`.
    pub fn add(&mut self, len: u64, align: u64, count: u64) {
        self.add_in(len, align, count, u64::from(crate::system::AXI_PORT_BYTES));
    }

    /// Adds `count` runs of `len` bytes aligned to `align`; a run within one word costs
    /// `len x burst / unit` ([`Runs::unit`]).
    pub fn add_in(&mut self, len: u64, align: u64, count: u64, unit: u64) {
        if len == 0 || count == 0 {
            return;
        }
        let align = alignment(align.max(1), &[]);
        match self
            .families
            .iter_mut()
            .find(|f| f.len == len && f.align == align && f.unit == unit)
        {
            Some(f) => f.count += count,
            None => self.families.push(Runs {
                len,
                align,
                count,
                unit,
            }),
        }
    }

    /// Adds every family of `other`.
    pub fn merge(&mut self, other: &Access) {
        for f in &other.families {
            self.add_in(f.len, f.align, f.count, f.unit);
        }
    }

    /// The families of runs.
    pub fn runs(&self) -> &[Runs] {
        &self.families
    }

    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        self.families.iter().map(|f| f.len * f.count).sum()
    }

    /// Expected AXI bursts when bursts are split at multiples of `burst` bytes.
    pub fn bursts(&self, burst: u64) -> f64 {
        self.families
            .iter()
            .map(|f| f.count as f64 * chunks(f.len, f.align, burst))
            .sum()
    }

    /// Expected data beats on a port `width` bytes wide.
    pub fn beats(&self, width: u64) -> f64 {
        self.bursts(width)
    }

    /// Bytes the accesses cost on a memory with bursts of `burst` bytes (decision P18): a run
    /// of at least a burst costs its bytes; a shorter run of whole 16-byte words costs a whole
    /// burst; a run within one word (an NHWC position of a few channels) costs its share of a
    /// burst, `len x burst / unit` (`unit`: the word, or what [`Access::add_in`] gave, at most
    /// a burst; P26).
    pub fn effective_bytes(&self, burst: u64) -> f64 {
        let burst = burst.max(1) as f64;
        let word = f64::from(crate::system::AXI_PORT_BYTES);
        self.families
            .iter()
            .map(|f| {
                let len = f.len as f64;
                let each = if len >= burst {
                    len
                } else if len >= word {
                    burst
                } else {
                    len * burst / (f.unit as f64).clamp(word, burst.max(word))
                };
                each * f.count as f64
            })
            .sum()
    }

    /// Whether nothing is accessed.
    pub fn is_empty(&self) -> bool {
        self.families.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_the_gcd_of_max_align_the_start_and_the_steps() {
        // Against the definition, on a deterministic spread of starts and steps (zeros, odd
        // numbers, powers of two and their multiples, values above MAX_ALIGN).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 5 {
                0 => 0,
                1 => x % 97,
                2 => 1 << (x % 16),
                3 => (x % 9) << (x % 14),
                _ => x % 100_000,
            }
        };
        for _ in 0..20_000 {
            let start = next();
            let steps: Vec<u64> = (0..(start % 4)).map(|_| next()).collect();
            let g = steps
                .iter()
                .fold(gcd(MAX_ALIGN, start), |g, &s| gcd(g, s))
                .max(1);
            assert_eq!(alignment(start, &steps), g, "{start} {steps:?}");
        }
    }

    #[test]
    fn a_position_within_a_word_costs_its_share_of_a_burst_against_its_unit() {
        // P18: a 2-byte position against the 16-byte word, on 128-byte bursts: 16 bytes.
        let mut word = Access::default();
        word.add(2, 2, 10);
        assert_eq!(word.effective_bytes(128), 160.0);
        // P26: against 16 channels of a 16-bit IFM (32 bytes): 8 bytes, as Vela
        // 5.2 charges `bytes x burst / min(burst, depth x element size)`.
        let mut block = Access::default();
        block.add_in(2, 2, 10, 32);
        assert_eq!(block.effective_bytes(128), 80.0);
        // The unit is at least the word and at most a burst; runs of a word or more are
        // unchanged.
        let mut small = Access::default();
        small.add_in(2, 2, 10, 8);
        assert_eq!(small.effective_bytes(128), 160.0);
        let mut large = Access::default();
        large.add_in(2, 2, 10, 256);
        assert_eq!(large.effective_bytes(128), 20.0);
        let mut whole = Access::default();
        whole.add_in(32, 32, 1, 64);
        assert_eq!(whole.effective_bytes(128), 128.0);
        // Families with different units stay apart when merged.
        word.merge(&block);
        assert_eq!(word.runs().len(), 2);
        assert_eq!(word.effective_bytes(128), 240.0);
    }

    #[test]
    fn a_run_costs_the_aligned_chunks_it_overlaps() {
        // 128 aligned bytes: one 128-byte burst, eight 16-byte beats.
        assert_eq!(chunks(128, 128, 128), 1.0);
        assert_eq!(chunks(128, 128, 16), 8.0);
        // A 3-byte pixel anywhere: one burst, and a second one when it straddles a boundary
        // (2 of the 128 byte positions).
        assert_eq!(chunks(3, 1, 128), 1.0 + 2.0 / 128.0);
        // 147 bytes at any byte: two or three bursts of 128.
        assert_eq!(chunks(147, 1, 128), 2.0 + 18.0 / 128.0);
        // 64 bytes 16-aligned in 64-byte bursts: one burst at offset 0, else two.
        assert_eq!(chunks(64, 16, 64), 1.75);
    }

    #[test]
    fn families_merge_by_length_and_alignment() {
        let mut a = Access::default();
        a.add(32, 32, 3);
        a.add(32, 96, 2); // aligned to 32 as well
        a.add(16, 16, 1);
        assert_eq!(a.runs().len(), 2);
        assert_eq!(a.bytes(), 5 * 32 + 16);
        assert_eq!(a.bursts(64), 6.0);
        assert_eq!(a.beats(16), 11.0);
        assert_eq!(alignment(0x9000, &[0x300, 0x10]), 16);
        assert_eq!(alignment(0, &[]), MAX_ALIGN);
    }
}
