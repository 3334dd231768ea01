//! SWD encoder on recorded weight streams: CPU time of `encoded_len` and
//! `encode` over every stream of a file, and a hash of their outputs (equal
//! hashes before and after a change of the planner: the same bytes).
//!
//! `SWD_STREAMS=FILE cargo bench -p npuc-codecs --bench swd_streams`, where
//! FILE holds streams as a little-endian `u32` count of weights followed by
//! that many little-endian `i16` weights, one after another (e.g. every
//! stream one compilation hands the encoder). Without `SWD_STREAMS` it runs
//! on synthetic ordering-like streams (dense, sparse, padded, clustered).

use std::hint::black_box;

use npuc_codecs::swd::encode::{encode, encoded_len};

mod common;
use common::{synthetic_streams, thread_cpu_seconds};

/// Streams of a recorded file (see the module documentation).
fn read_streams(path: &str) -> Vec<Vec<i16>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4])) as usize;
        at += 4;
        let end = at + 2 * n;
        assert!(end <= bytes.len(), "{path}: truncated stream at byte {at}");
        out.push(
            bytes[at..end]
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect(),
        );
        at = end;
    }
    out
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (name, streams) = match std::env::var("SWD_STREAMS") {
        Ok(p) => (p.clone(), read_streams(&p)),
        Err(_) => ("synthetic".to_string(), synthetic_streams(127.0)),
    };
    let weights: usize = streams.iter().map(Vec::len).sum();
    println!("{name}: {} streams, {weights} weights", streams.len());
    let runs = 3;
    let (mut best_len, mut best_enc) = (f64::MAX, f64::MAX);
    let (mut h_len, mut h_enc) = (0, 0);
    for _ in 0..runs {
        let t0 = thread_cpu_seconds();
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for s in &streams {
            let n = black_box(encoded_len(black_box(s)).unwrap_or(usize::MAX));
            h = fnv(h, &n.to_le_bytes());
        }
        best_len = best_len.min(thread_cpu_seconds() - t0);
        h_len = h;
        let t0 = thread_cpu_seconds();
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for s in &streams {
            let b = black_box(encode(black_box(s)).unwrap_or_default());
            h = fnv(h, &b);
        }
        best_enc = best_enc.min(thread_cpu_seconds() - t0);
        h_enc = h;
    }
    let mw = weights as f64 / 1e6;
    println!(
        "encoded_len: {best_len:.3} CPU s ({:.1} M weights/s), hash {h_len:016x}",
        mw / best_len
    );
    println!(
        "encode:      {best_enc:.3} CPU s ({:.1} M weights/s), hash {h_enc:016x}",
        mw / best_enc
    );
}
