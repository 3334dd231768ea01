//! Lower bounds of SWD stream size for a weight sequence (TRM §3.9.4–§3.9.10).
//!
//! `cargo run --release -p npuc-codecs --example swd_bounds [stream.bin ...]`
//! (default: every Vela stream in `models/fixtures/swd-synthetic-u85-256`).
//! Each stream is decoded to its weights, which are re-encoded by npuc; the
//! report gives, in bytes:
//!
//! - `H0`: the order-0 (single-symbol) entropy of the weights;
//! - `one code`: a lower bound for a stream whose slices all use one weight
//!   code and one zero-run code: the fewest index bits under any mapping
//!   (palette of any ≤ 32 values in any order, `dirofs` 0..=31; palette
//!   slots counted at the cheapest slot cost and the palette itself free)
//!   and weight parameter, plus in alternating mode the fewest zero-run
//!   bits under one `zdiv`, plus the slice header, the `newpal` fields and
//!   the end marker, rounded up to the 16-byte stream granule;
//! - `windows`: the best coding of each window of L weights on its own
//!   (frequency palettes, one parameter, header per window): if the data
//!   were not stationary, short windows would pay; they cost more the
//!   shorter they get.
//!
//! A slice codes its weight indices (and zero runs) with one prefix code
//! chosen from a small family, so only non-stationary data can beat the
//! one-code bound by switching codes between slices. The weight ordering's
//! zero padding is such non-stationarity: `PADDING=period,data` (e.g.
//! `1280,1152`) drops the weights at positions `p % period >= data` (which
//! must all be zero) before the bounds are computed; removing zeros never
//! makes a stream longer, so the bounds still hold for the padded
//! sequence.

use std::collections::BTreeMap;

use npuc_codecs::swd::decode::decode;
use npuc_codecs::swd::encode::encode;

/// Sign-magnitude code of a weight (TRM §3.9.6).
fn code(v: i16) -> u32 {
    u32::from((v.unsigned_abs() << 1) | u16::from(v < 0))
}

/// Bits of index `i` under weight parameter `mode` (0..=5 Golomb-Rice
/// `wdiv`, 6..=11 with `wtrunc`); `None` if not codable.
fn gr_bits(mode: u32, i: u32) -> Option<u64> {
    let (k, trunc) = (mode % 6, mode >= 6);
    let q = i >> k;
    match (trunc, q) {
        (true, 0) => Some(u64::from(1 + k)),
        (true, 1 | 2) => Some(u64::from(2 + k)),
        (false, q) if q <= 31 => Some(u64::from(q + 1 + k)),
        _ => None,
    }
}

/// The fewest index bits of a value histogram (code -> count) under any
/// mapping and weight parameter (see the module documentation). For each
/// Golomb-Rice parameter two bounds hold and the larger counts: the
/// values by count on indices 0, 1, 2, ... (any mapping is injective and
/// the cost grows with the index), and, for each palette size and
/// `dirofs`, direct values at their direct index with the palette's
/// entries at the cheapest slot cost.
fn index_lower_bound(hist: &BTreeMap<u32, u64>) -> u64 {
    let total: u64 = hist.values().sum();
    let max_code = hist.keys().copied().max().unwrap_or(0);
    let mut counts: Vec<u64> = hist.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let mut best = u64::MAX;
    // Uncompressed: direct mode needs every index in palbits bits (at
    // least 2), a palette holds every value.
    let min_code = hist.keys().copied().min().unwrap_or(0);
    let direct = (max_code - min_code.min(31)).max(1);
    best = best.min(total * u64::from((32 - direct.leading_zeros()).max(2)));
    if (2..=32).contains(&hist.len()) {
        let bits = 32 - (hist.len() as u32 - 1).leading_zeros();
        best = best.min(total * u64::from(bits));
    }
    for mode in 0..12 {
        let ranked: Option<u64> = counts
            .iter()
            .enumerate()
            .map(|(r, &n)| gr_bits(mode, r as u32).map(|b| b * n))
            .sum();
        let Some(ranked) = ranked else {
            continue;
        };
        let slot = gr_bits(mode, 0).unwrap_or(0);
        let mut mapped = u64::MAX;
        for p in (0..=32u32).filter(|&p| p != 1) {
            for dirofs in 0..=31u32 {
                // Values that must be in the palette (below dirofs or not
                // codable directly) cost a slot; the other palette slots
                // go to the largest savings.
                let (mut bits, mut forced) = (0u64, 0u32);
                let mut savings = Vec::new();
                for (&c, &n) in hist {
                    match (c >= dirofs)
                        .then(|| gr_bits(mode, p + c - dirofs))
                        .flatten()
                    {
                        Some(d) => {
                            bits += n * d;
                            savings.push(n * d.saturating_sub(slot));
                        }
                        None => {
                            bits += n * slot;
                            forced += 1;
                        }
                    }
                }
                if forced > p {
                    continue;
                }
                savings.sort_unstable_by(|a, b| b.cmp(a));
                let saved: u64 = savings.iter().take((p - forced) as usize).sum();
                mapped = mapped.min(bits - saved);
            }
        }
        best = best.min(ranked.max(mapped));
    }
    best
}

/// Zero runs of an alternating coding: before every nonzero weight and the
/// trailing run.
fn zero_runs(w: &[i16]) -> Vec<u32> {
    let mut runs = Vec::new();
    let mut r = 0;
    for &v in w {
        if v == 0 {
            r += 1;
        } else {
            runs.push(r);
            r = 0;
        }
    }
    runs.push(r);
    runs
}

/// The fewest bits of `runs` under one `zdiv`.
fn zero_run_bits(runs: &[u32]) -> u64 {
    (0..4u32)
        .map(|zd| runs.iter().map(|&r| u64::from((r >> zd) + 1 + zd)).sum())
        .min()
        .unwrap_or(0)
}

fn histogram(w: impl Iterator<Item = i16>) -> BTreeMap<u32, u64> {
    let mut h = BTreeMap::new();
    for v in w {
        *h.entry(code(v)).or_insert(0) += 1;
    }
    h
}

/// Bits of a lower bound for one code for the whole of `w` (without the
/// header), in alternating and non-alternating mode.
fn one_code_bits(w: &[i16]) -> u64 {
    let non = index_lower_bound(&histogram(w.iter().copied()));
    let nonzero = histogram(w.iter().copied().filter(|&v| v != 0));
    let alt = if nonzero.is_empty() {
        u64::MAX
    } else {
        index_lower_bound(&nonzero) + zero_run_bits(&zero_runs(w))
    };
    non.min(alt)
}

/// Stream bytes of `payload` bits: slice header (23), `newpal` fields
/// (13), end marker (3), padded to 128 bits.
fn stream_bytes(payload: u64) -> u64 {
    (payload + 23 + 13 + 3).div_ceil(128) * 16
}

/// The best coding of each window of `len` weights on its own: frequency
/// palettes of 0, 2..=32 entries with `dirofs` the smallest code outside,
/// one weight parameter, zero runs with one `zdiv`, plus a slice header and
/// the palette per window.
fn windowed_bits(w: &[i16], len: usize) -> u64 {
    w.chunks(len)
        .map(|win| {
            let mut best = u64::MAX;
            for alternating in [false, true] {
                let h = histogram(win.iter().copied().filter(|&v| !alternating || v != 0));
                if h.is_empty() {
                    continue;
                }
                let mut by_count: Vec<(u32, u64)> = h.iter().map(|(&c, &n)| (c, n)).collect();
                by_count.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
                let z = if alternating {
                    zero_run_bits(&zero_runs(win))
                } else {
                    0
                };
                for p in (0..=32usize.min(by_count.len())).filter(|&p| p != 1) {
                    let dirofs = by_count[p..].iter().map(|x| x.0).min().unwrap_or(0).min(31);
                    let idx: Vec<(u32, u64)> = by_count
                        .iter()
                        .enumerate()
                        .map(|(j, &(c, n))| {
                            (
                                if j < p {
                                    j as u32
                                } else {
                                    p as u32 + c - dirofs
                                },
                                n,
                            )
                        })
                        .collect();
                    let palbits = by_count[..p]
                        .iter()
                        .map(|x| 32 - x.0.leading_zeros())
                        .max()
                        .unwrap_or(0)
                        .max(2);
                    let header = 23 + 13 + p as u64 * u64::from(palbits);
                    for mode in 0..12 {
                        let bits: Option<u64> = idx
                            .iter()
                            .map(|&(i, n)| gr_bits(mode, i).map(|b| b * n))
                            .sum();
                        if let Some(b) = bits {
                            best = best.min(b + z + header);
                        }
                    }
                    // Uncompressed.
                    let n: u64 = idx.iter().map(|x| x.1).sum();
                    let max = idx.iter().map(|x| x.0).max().unwrap_or(0);
                    let ubits = if p > 0 {
                        32 - (p as u32 - 1).leading_zeros()
                    } else {
                        (32 - max.leading_zeros()).max(2)
                    };
                    if max >> ubits == 0 {
                        best = best.min(n * u64::from(ubits) + z + header);
                    }
                }
            }
            best
        })
        .sum()
}

fn entropy_bytes(w: &[i16]) -> f64 {
    let n = w.len() as f64;
    let h: f64 = histogram(w.iter().copied())
        .values()
        .map(|&c| -(c as f64) * (c as f64 / n).log2())
        .sum();
    h / 8.0
}

fn main() {
    let mut paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    if paths.is_empty() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../models/fixtures/swd-synthetic-u85-256");
        let mut cases: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixture directory")
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("vela_stream0.bin"))
            .filter(|p| p.exists())
            .collect();
        cases.sort();
        paths = cases;
    }
    let padding: Option<(usize, usize)> = std::env::var("PADDING").ok().map(|v| {
        let (p, d) = v.split_once(',').expect("PADDING=period,data");
        (p.parse().expect("period"), d.parse().expect("data"))
    });
    println!(
        "{:36} {:>7} {:>7} {:>7} {:>8} {:>9}   windows of L weights: L = 256, 1024, 4096, all",
        "stream", "Vela", "npuc", "H0", "one code", "0.97 Vela"
    );
    for path in paths {
        let vela = std::fs::read(&path).expect("stream");
        let padded = decode(&vela, 1 << 24).expect("a valid SWD stream");
        let ours = encode(&padded).expect("weights in range");
        let w: Vec<i16> = match padding {
            Some((period, data)) => {
                let is_pad = |p: usize| p % period >= data;
                let pad_ok = padded
                    .iter()
                    .enumerate()
                    .all(|(p, &v)| !is_pad(p) || v == 0);
                assert!(pad_ok, "padding must be zero");
                let kept = padded.iter().enumerate().filter(|&(p, _)| !is_pad(p));
                kept.map(|(_, &v)| v).collect()
            }
            None => padded,
        };
        let name = path.parent().and_then(|p| p.file_name()).map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let windows: Vec<String> = [256, 1024, 4096, w.len().max(1)]
            .iter()
            .map(|&l| stream_bytes(windowed_bits(&w, l).saturating_sub(36)).to_string())
            .collect();
        println!(
            "{:36} {:>7} {:>7} {:>7.0} {:>8} {:>9.0}   {}",
            name,
            vela.len(),
            ours.len(),
            entropy_bytes(&w),
            stream_bytes(one_code_bits(&w)),
            0.97 * vela.len() as f64,
            windows.join(" ")
        );
    }
}
