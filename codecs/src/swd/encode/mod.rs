//! SWD weight stream encoder (Ethos-U85 TRM §3.9.3–§3.9.10).
//!
//! [`encode`] turns one weight decoder's weight sequence (the order of
//! [`crate::ordering`]) into a stream the TRM decoder accepts, choosing the
//! coding to minimise its size:
//!
//! 1. **Statistics** (`stats`): one pass gives the value histogram, the
//!    zero-run bits for each `zdiv`, the long zero runs ("gaps", e.g. the
//!    ordering's padding) and the zeros per block.
//! 2. **Regions** (`regions`). The sequence is cut into regions, each
//!    starting with a `newpal` slice that sets the zero-run mode class
//!    (alternating or not) and the index mapping (palette, `dirofs`,
//!    `palbits`). Two plans compete: one without gap regions (one region,
//!    or, in long streams, regions where a DP over blocks of 2048 weights
//!    finds that switching between alternating and non-alternating mode pays
//!    for a header and palette) and, if the stream has zero runs of 64 or
//!    more, one where each such run is an all-zero direct-mode region and
//!    the weights between them share a mapping chosen for them alone.
//! 3. **Index mapping** (`mapping`). Candidate mappings are direct coding
//!    and palettes of the most frequent values (by frequency rank, so
//!    frequent values get small indices); each is costed from the value
//!    histogram with its best weight parameter. The best candidate of a
//!    region is planned; the best of the other mode class too if its
//!    estimate is within 2 % and its lower bound (every index and zero run
//!    at its fewest bits under the planner's parameters) beats that plan.
//! 4. **Slices** (`slices`). Inside a region a dynamic programme over the
//!    coded symbols (weight indices and, in alternating mode, zero runs)
//!    picks the slice boundaries and per-slice `wdiv`, `wtrunc` and `zdiv`
//!    over 16 lanes, a new slice costing its 23-bit header plus the expected
//!    chunk padding.
//! 5. **Hole-closing palettes** (`mapping`, `remap`). Regions of 2048 or
//!    more weight indices then try palettes that give the indices of
//!    absent codes (e.g. "-0") to present values: the planned slices are
//!    re-costed exactly with the translated indices and the palette is
//!    kept only if they shrink.
//! 6. **Emission** (`emit`) writes the slices chunk by chunk as the TRM
//!    parser reads them.
//!
//! Bit costs are exact per symbol: a Golomb-Rice index with quotient `q`
//! costs `q + 1 + wdiv` bits (`wtrunc`: 1 bit for `q == 0`, else 2, plus
//! `wdiv`), an uncompressed index `uncompressed_bits`, a zero run `r`
//! `(r >> zdiv) + 1 + zdiv`. The only non-additive costs are the unused
//! positions of a slice's last `wunary0` (12 positions per chunk) and
//! `zunary` (`zunary_len` bits per chunk), which the chunk writer adds
//! exactly. The encoder is deterministic.

mod bounds;
mod cost;
mod emit;
mod mapping;
mod regions;
mod remap;
mod slices;
mod stats;

use thiserror::Error;

use crate::bitwriter::{BitSink, BitWriter};
use crate::swd::{STREAM_ALIGN_BITS, ZDIV_BITS, ZDIV_END_OF_STREAM};
use emit::{emit_region, region_bits};
use regions::plan_regions;

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
    let mut w = BitWriter::with_capacity(weights.len() + 64);
    let mut stats = emit_stream(&mut w, weights)?;
    let bytes = w.into_bytes();
    stats.bytes = bytes.len();
    Ok((bytes, stats))
}

/// The length in bytes of the stream [`encode`] makes of `weights`, exactly, without
/// making it: the same plan, its bits counted per slice from the symbols (`region_bits`;
/// the tests check it against the emission into a [`crate::bitwriter::BitCounter`]).
///
/// # Errors
/// As [`encode`].
pub fn encoded_len(weights: &[i16]) -> Result<usize, EncodeError> {
    plan(weights).map(|p| p.len())
}

/// A weight sequence planned by the encoder ([`plan`]): the exact length of the stream
/// [`encode`] makes of it is known ([`Planned::len`]), and the stream is made from the plan
/// without planning again ([`Planned::encode`]).
pub struct Planned {
    regions: Vec<regions::Region>,
    weights: usize,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("weights", &self.weights)
            .field("len", &self.len())
            .finish()
    }
}

/// Plans the stream of `weights` as [`encode`] does, without emitting it.
///
/// # Errors
/// As [`encode`].
pub fn plan(weights: &[i16]) -> Result<Planned, EncodeError> {
    check_range(weights)?;
    Ok(Planned {
        regions: plan_regions(weights),
        weights: weights.len(),
    })
}

impl Planned {
    /// The length in bytes of the stream: [`encoded_len`].
    pub fn len(&self) -> usize {
        let payload: u64 = self.regions.iter().map(|r| region_bits(&r.plan)).sum();
        let bits = (payload + u64::from(ZDIV_BITS)).next_multiple_of(STREAM_ALIGN_BITS);
        usize::try_from(bits / 8).unwrap_or(usize::MAX)
    }

    /// Whether the stream is empty (never: it holds at least the end-of-stream marker).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream: what [`encode`] makes of the weights planned.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = BitWriter::with_capacity(self.weights + 64);
        emit_regions(&mut w, &self.regions);
        w.into_bytes()
    }
}

/// [`EncodeError::WeightOutOfRange`] for the first weight outside -255..=255.
fn check_range(weights: &[i16]) -> Result<(), EncodeError> {
    // The extremes first (a fold without early exit, which vectorises), the
    // position only if one is out of range.
    let (lo, hi) = weights
        .iter()
        .fold((0i16, 0i16), |(lo, hi), &w| (lo.min(w), hi.max(w)));
    if lo >= -255 && hi <= 255 {
        return Ok(());
    }
    match weights.iter().position(|w| !(-255..=255).contains(w)) {
        Some(index) => Err(EncodeError::WeightOutOfRange {
            index,
            value: weights[index],
        }),
        None => Ok(()),
    }
}

/// [`encoded_len`] of several weight decoders' streams.
///
/// # Errors
/// As [`encode`].
pub fn encoded_lens(streams: &[Vec<i16>]) -> Result<Vec<usize>, EncodeError> {
    streams.iter().map(|s| encoded_len(s)).collect()
}

/// Plans `weights` and emits the stream into `w`: the regions' slices, the end-of-stream
/// marker and the padding to 128 bits. Returns the size summary (without `bytes`).
fn emit_stream<S: BitSink>(w: &mut S, weights: &[i16]) -> Result<EncodeStats, EncodeError> {
    check_range(weights)?;
    Ok(emit_regions(w, &plan_regions(weights)))
}

/// Emits the planned `regions` into `w` ([`emit_stream`]).
fn emit_regions<S: BitSink>(w: &mut S, regions: &[regions::Region]) -> EncodeStats {
    debug_assert!(regions.windows(2).all(|r| r[0].end == r[1].start));
    let mut stats = EncodeStats::default();
    for r in regions {
        debug_assert!(r.start <= r.end);
        stats.slices += emit_region(w, &r.plan);
        stats.regions += 1;
    }
    stats.payload_bits = w.bit_len();
    w.write(u64::from(ZDIV_END_OF_STREAM), ZDIV_BITS);
    // '1' padding bits up to the next 128-bit boundary, at most 32 per write.
    let mut pad = (STREAM_ALIGN_BITS - w.bit_len() % STREAM_ALIGN_BITS) % STREAM_ALIGN_BITS;
    while pad > 0 {
        let k = pad.min(32) as u32;
        w.write(u64::MAX, k);
        pad -= u64::from(k);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::regions::{plan_mode_regions, plan_region, plan_regions, total_bits};
    use super::stats::Stats;
    use super::*;
    use crate::bitwriter::BitCounter;
    use crate::swd::decode::{decode, decode_traced};
    use crate::swd::{Palette, WeightIndexMode};

    fn round_trip(w: &[i16]) -> Vec<u8> {
        let s = encode(w).unwrap();
        assert_eq!(s.len() % 16, 0);
        assert_eq!(decode(&s, w.len()).unwrap(), w);
        s
    }

    #[test]
    fn a_planned_stream_is_the_stream_encode_makes() {
        let mut next = rng(0x2545_f491);
        for n in [0usize, 1, 7, 100, 3000, 40_000] {
            for zeros in [0u32, 50, 97] {
                let w: Vec<i16> = (0..n)
                    .map(|_| {
                        let r = next();
                        if r % 100 < zeros {
                            0
                        } else {
                            (r >> 8) as i16 % 200
                        }
                    })
                    .collect();
                let p = plan(&w).unwrap();
                let s = encode(&w).unwrap();
                assert_eq!(p.encode(), s, "{n} weights, {zeros} % zeros");
                assert_eq!(p.len(), s.len());
                assert_eq!(encoded_len(&w).unwrap(), s.len());
            }
        }
        assert!(plan(&[0, 256]).is_err());
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
        let split = total_bits(&plan_regions(&w));
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
        let stats = Stats::new(&w);
        let best_z = stats.zbits.iter().copied().min().unwrap_or(0);
        let cands = super::mapping::all_candidates(&stats.hist, best_z);
        let single = plan_mode_regions(&w, &stats, &cands);
        assert!(total_bits(&plan_regions(&w)) < total_bits(&single));
    }

    #[test]
    fn the_palette_closes_the_negative_zero_hole_with_costly_values() {
        // Dense Laplacian int8 weights (non-alternating mode) with one
        // weight of magnitude 127 per 256 ("per channel"). Direct indices
        // `code - dirofs` from dirofs 0 leave index 1 (the code of "-0")
        // unused, and every palette of the most frequent values either
        // keeps that hole or shifts all direct indices by one. The
        // hole-closing palette [0, 127, -127] with dirofs 2 puts the two
        // costliest values in the hole's place: no index below 64 is wasted
        // and the stream is smaller than with any frequency palette.
        let mut next = rng(0x0bad_cafe);
        let mut w: Vec<i16> = (0..16384)
            .map(|_| {
                let u = f64::from(next() % 100_000 + 1) / 100_001.0;
                let m = (-u.ln() * 24.0).min(127.0) as i16;
                if next() % 2 == 0 {
                    m
                } else {
                    -m
                }
            })
            .collect();
        for (k, v) in w.iter_mut().enumerate() {
            if k % 256 == 77 {
                *v = if k % 512 == 77 { 127 } else { -127 };
            }
        }
        let s = round_trip(&w);
        let d = decode_traced(&s, w.len()).unwrap();
        assert_eq!(d.slices.len(), 1);
        assert!(!d.slices[0].header.zero_run_mode.is_alternating());
        let p = d.slices[0].header.new_palette.as_ref().unwrap();
        assert_eq!((p.dirofs, p.entries.as_slice()), (2, &[0, 254, 255][..]));
        let present: std::collections::HashSet<u32> = w
            .iter()
            .map(|&v| u32::from(super::mapping::code_of(v)))
            .collect();
        for i in 0..64 {
            assert!(present.contains(&p.index_to_code(i)), "index {i}: {p:?}");
        }
        let stats = Stats::new(&w);
        let frequency_palettes = super::mapping::all_candidates(&stats.hist, 0)
            .into_iter()
            .filter(|c| !c.alternating)
            .map(|c| super::slices::plan_with(&w, c.mapping(), false).bits)
            .min()
            .unwrap();
        assert!(total_bits(&plan_regions(&w)) < frequency_palettes);
    }

    #[test]
    fn empty_stream_is_one_end_marker() {
        assert_eq!(round_trip(&[]).len(), 16);
    }

    /// Weights of `n` values, `zero_pct` % zeros, magnitudes below `max`, with a zero run of
    /// `gap` weights every 1000 (xorshift32 from `seed`).
    fn sample(n: usize, seed: u32, zero_pct: u32, max: u32, gap: usize) -> Vec<i16> {
        let mut next = rng(seed | 1);
        let mut w: Vec<i16> = (0..n)
            .map(|_| {
                if next() % 100 < zero_pct {
                    0
                } else {
                    let v = (next() % max.max(1)) as i16 + 1;
                    if next() % 2 == 0 {
                        v
                    } else {
                        -v
                    }
                }
            })
            .collect();
        for k in (0..w.len()).step_by(1000) {
            let end = (k + gap).min(w.len());
            w[k..end].iter_mut().for_each(|v| *v = 0);
        }
        w
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// `region_bits` (what `encoded_len` sums) is exactly what `emit_region` writes, for
        /// the planned slices and for the same slices with any weight parameter and `zdiv`
        /// (every mode: Golomb-Rice with and without `wtrunc`, uncompressed, each `zdiv`),
        /// including slices longer than `SLICELEN_MAX`.
        #[test]
        fn region_bits_are_the_bits_emit_region_writes(
            n in 0usize..40_000,
            seed in proptest::prelude::any::<u32>(),
            zero_pct in 0u32..=100,
            max in 1u32..=255,
            gap in 0usize..300,
            forced in proptest::prelude::any::<u64>(),
        ) {
            let w = sample(n, seed, zero_pct, max, gap);
            let mut regions = plan_regions(&w);
            let planned: u64 = regions.iter().map(|r| region_bits(&r.plan)).sum();
            let mut c = BitCounter::new();
            for r in &regions {
                emit_region(&mut c, &r.plan);
            }
            proptest::prop_assert_eq!(planned, c.bit_len());
            let mut pick = rng((forced as u32) | 1);
            for r in &mut regions {
                for s in &mut r.plan.slices {
                    s.wparam = super::cost::ALL_WPARAMS[pick() as usize % 13];
                    s.zdiv = (pick() % 4) as u8;
                }
                let mut c = BitCounter::new();
                emit_region(&mut c, &r.plan);
                proptest::prop_assert_eq!(region_bits(&r.plan), c.bit_len());
            }
        }
    }
}
