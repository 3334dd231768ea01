//! SWD stream walk for validation: CPU time of `decoded_len` (and, for scale, `decode`) over
//! the streams the encoder makes of synthetic ordering-like weights (dense, sparse, padded,
//! clustered: every zero-run and weight-index mode the planner picks), and a hash of the
//! verdicts (equal hashes before and after a change: the same counts).
//!
//! `cargo bench -p npuc-codecs --bench swd_decoded_len`

use std::hint::black_box;

use npuc_codecs::swd::decode::{decode, decoded_len};
use npuc_codecs::swd::encode::encode;

/// CPU time of the calling thread in seconds (Linux `schedstat`).
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// Synthetic weights: per-channel blocks of Laplacian weights of varying width and
/// sparsity, some followed by zero padding, some clustered.
fn synthetic_streams() -> Vec<Vec<i16>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..200)
        .map(|k| {
            let channels = 8 + (next() % 120) as usize;
            let per = 9 * (1 + (next() % 64) as usize);
            let pad = if k % 3 == 0 {
                (next() % 100) as usize
            } else {
                0
            };
            let zeros = next() % 90;
            let scale = 2.0 + (next() % 40) as f64;
            let centres: Vec<i16> = (0..16).map(|_| (next() % 200) as i16 - 100).collect();
            let mut w = Vec::with_capacity(channels * (per + pad));
            for _ in 0..channels {
                for _ in 0..per {
                    let v = if next() % 100 < zeros {
                        0
                    } else if k % 5 == 1 {
                        centres[(next() % 16) as usize]
                    } else {
                        let u = ((next() >> 11) as f64 / (1u64 << 53) as f64).max(1e-12);
                        let m = (-u.ln() * scale).min(255.0) as i16;
                        if next() % 2 == 0 {
                            m
                        } else {
                            -m
                        }
                    };
                    w.push(v);
                }
                w.extend(std::iter::repeat_n(0, pad));
            }
            w
        })
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let streams: Vec<(Vec<u8>, usize)> = synthetic_streams()
        .into_iter()
        .filter_map(|w| Some((encode(&w).ok()?, w.len())))
        .collect();
    let weights: usize = streams.iter().map(|s| s.1).sum();
    let bytes: usize = streams.iter().map(|s| s.0.len()).sum();
    println!(
        "synthetic: {} streams, {weights} weights, {bytes} bytes",
        streams.len()
    );
    let (mut best_len, mut best_dec) = (f64::MAX, f64::MAX);
    let (mut h_len, mut h_dec) = (0u64, 0u64);
    for _ in 0..5 {
        let t0 = thread_cpu_seconds();
        let mut h = 0u64;
        for (b, n) in &streams {
            let c = black_box(decoded_len(black_box(b), *n).unwrap_or(usize::MAX));
            h = h.wrapping_mul(31).wrapping_add(c as u64);
        }
        best_len = best_len.min(thread_cpu_seconds() - t0);
        h_len = h;
        let t0 = thread_cpu_seconds();
        let mut h = 0u64;
        for (b, n) in &streams {
            let c = black_box(decode(black_box(b), *n).map_or(usize::MAX, |v| v.len()));
            h = h.wrapping_mul(31).wrapping_add(c as u64);
        }
        best_dec = best_dec.min(thread_cpu_seconds() - t0);
        h_dec = h;
    }
    let mw = weights as f64 / 1e6;
    println!(
        "decoded_len: {:.1} ms ({:.0} M weights/s), hash {h_len:016x}",
        best_len * 1e3,
        mw / best_len
    );
    println!(
        "decode:      {:.1} ms ({:.0} M weights/s), hash {h_dec:016x}",
        best_dec * 1e3,
        mw / best_dec
    );
}
