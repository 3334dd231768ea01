//! SWD stream walk for validation: CPU time of `decoded_len` (and, for scale, `decode`) over
//! the streams the encoder makes of synthetic ordering-like weights (dense, sparse, padded,
//! clustered: every zero-run and weight-index mode the planner picks), and a hash of the
//! verdicts (equal hashes before and after a change: the same counts).
//!
//! `cargo bench -p npuc-codecs --bench swd_decoded_len`

use std::hint::black_box;

use npuc_codecs::swd::decode::{decode, decoded_len};
use npuc_codecs::swd::encode::encode;

mod common;
use common::{synthetic_streams, thread_cpu_seconds};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let streams: Vec<(Vec<u8>, usize)> = synthetic_streams(255.0)
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
