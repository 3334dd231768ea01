//! SWD encoder benchmark: stream size against Vela's golden streams and
//! encode speed.
//!
//! The tables print before the criterion runs; `cargo bench -p npuc-codecs
//! --bench weights -- nomatch` prints only the tables.
//!
//! `cargo bench -p npuc-codecs --bench weights` prints, per golden case
//! (`models/fixtures/weights-u85-256`; for Vela's FWD cases the SWD stream is
//! compared with Vela's FWD stream), per Vela stream of synthetic realistic
//! weights (`models/fixtures/swd-synthetic-u85-256`) and per synthetic weight
//! distribution (no Vela stream: the ratio column is then bytes per weight;
//! 2^20 weights, then small streams of 320 and 2048 weights), npuc's SWD
//! stream bytes next to Vela's, the ratio, and the encode speed in MB of
//! weights (one byte per weight) per second on one core: by the thread's CPU
//! time (Linux `/proc/thread-self/schedstat`; unaffected by other processes
//! on a busy machine) and by wall-clock time; then runs criterion timings of
//! the same encodes.

#[path = "../tests/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use npuc_codecs::fwd::encode_fwd;
use npuc_codecs::ordering::WeightOrdering;
use npuc_codecs::swd::encode::encode;

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn laplacian(&mut self, b: f64) -> f64 {
        let u = self.unit() - 0.5;
        -b * u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln()
    }
    fn gaussian(&mut self, sigma: f64) -> f64 {
        let (u1, u2) = (self.unit().max(1e-300), self.unit());
        sigma * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

fn q8(x: f64) -> i16 {
    x.round().clamp(-127.0, 127.0) as i16
}

/// Synthetic per-decoder weight sequences of `n` weights.
fn synthetic(n: usize) -> Vec<(&'static str, Vec<i16>)> {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out: Vec<(&'static str, Vec<i16>)> = Vec::with_capacity(8);
    out.push((
        "uniform int8",
        (0..n).map(|_| (r.next() % 255) as i16 - 127).collect(),
    ));
    out.push((
        "laplacian b=6",
        (0..n).map(|_| q8(r.laplacian(6.0))).collect(),
    ));
    out.push((
        "laplacian b=20",
        (0..n).map(|_| q8(r.laplacian(20.0))).collect(),
    ));
    out.push((
        "gaussian s=30",
        (0..n).map(|_| q8(r.gaussian(30.0))).collect(),
    ));
    let centres: Vec<i16> = (0..16).map(|_| q8(r.gaussian(50.0))).collect();
    out.push((
        "clustered 16",
        (0..n)
            .map(|_| centres[(r.laplacian(3.0).abs() as usize).min(15)])
            .collect(),
    ));
    out.push((
        "pruned 80% laplacian",
        (0..n)
            .map(|_| {
                if r.unit() < 0.8 {
                    0
                } else {
                    q8(r.laplacian(15.0))
                }
            })
            .collect(),
    ));
    let mut pruned24 = Vec::with_capacity(n);
    while pruned24.len() < n {
        let keep = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][(r.next() % 6) as usize];
        let mut g = [0i16; 4];
        g[keep.0] = q8(r.laplacian(15.0));
        g[keep.1] = q8(r.laplacian(15.0));
        pruned24.extend_from_slice(&g);
    }
    pruned24.truncate(n);
    out.push(("2:4 pruned laplacian", pruned24));
    out
}

/// CPU time of the calling thread in seconds (Linux `schedstat`), if known.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Encode speed in MB of weights per second (one byte per weight): by the
/// thread's CPU time (one core, whatever else runs on the machine) where
/// Linux reports it, and by wall-clock time.
fn speed(w: &[i16]) -> (Option<f64>, f64) {
    let budget = Duration::from_millis(300);
    let cpu0 = thread_cpu_seconds();
    let start = Instant::now();
    let mut iters = 0u32;
    while iters < 2 || start.elapsed() < budget {
        black_box(encode(black_box(w)).unwrap());
        iters += 1;
    }
    let wall = start.elapsed().as_secs_f64();
    let mb = w.len() as f64 * f64::from(iters) / 1e6;
    let cpu = cpu0
        .zip(thread_cpu_seconds())
        .map(|(a, b)| b - a)
        .filter(|&t| t > 0.0);
    (cpu.map(|t| mb / t), mb / wall)
}

fn golden_streams() -> Vec<(String, Vec<i16>, Option<usize>)> {
    let mut out = Vec::new();
    for case in common::golden_cases() {
        let ordering = WeightOrdering::new(&case.params, case.weights.shape()).unwrap();
        if case.format == "SWD" {
            let streams = ordering.order(&case.weights).unwrap();
            for (k, (s, vela)) in streams.into_iter().zip(&case.streams).enumerate() {
                out.push((format!("{} s{k}", case.name), s, Some(vela.len())));
            }
        } else {
            // Vela chose FWD here; compare SWD against its FWD stream size.
            let merged = ordering.order_fwd(&case.weights).unwrap();
            out.push((
                format!("{} (Vela FWD)", case.name),
                merged,
                Some(case.streams[0].len()),
            ));
        }
    }
    out
}

/// Vela SWD streams for synthetic realistic weights (decoded to get the
/// weights in stream order).
fn synthetic_vela_streams() -> Vec<(String, Vec<i16>, Option<usize>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../models/fixtures/swd-synthetic-u85-256");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().join("vela_stream0.bin").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let vela = std::fs::read(dir.join(&n).join("vela_stream0.bin")).unwrap();
            let w = npuc_codecs::swd::decode::decode(&vela, 1 << 22).unwrap();
            (format!("{n} (synthetic)"), w, Some(vela.len()))
        })
        .collect()
}

fn table(rows: &[(String, Vec<i16>, Option<usize>)]) {
    println!();
    println!(
        "{:40} {:>9} {:>10} {:>10} {:>7} {:>9} {:>9}",
        "case", "weights", "npuc SWD", "Vela", "ratio", "MB/s cpu", "MB/s wall"
    );
    let (mut tn, mut tv) = (0usize, 0usize);
    for (name, w, vela) in rows {
        let bytes = encode(w).unwrap().len();
        let (cpu, wall) = speed(w);
        let cpu = cpu.map_or("-".to_string(), |c| format!("{c:.1}"));
        match vela {
            Some(v) => {
                tn += bytes;
                tv += v;
                println!(
                    "{:40} {:>9} {:>10} {:>10} {:>7.3} {:>9} {:>9.1}",
                    name,
                    w.len(),
                    bytes,
                    v,
                    bytes as f64 / *v as f64,
                    cpu,
                    wall
                );
            }
            None => {
                let fwd = encode_fwd(w)
                    .map(|s| s.len().to_string())
                    .unwrap_or_default();
                println!(
                    "{:40} {:>9} {:>10} {:>10} {:>7.3} {:>9} {:>9.1}   (FWD {fwd} B; ratio = bytes/weight)",
                    name,
                    w.len(),
                    bytes,
                    "-",
                    bytes as f64 / w.len() as f64,
                    cpu,
                    wall
                );
            }
        }
    }
    if tv > 0 {
        println!(
            "{:40} {:>9} {:>10} {:>10} {:>7.4}",
            "total (cases with a Vela stream)",
            "",
            tn,
            tv,
            tn as f64 / tv as f64
        );
    }
    println!();
}

fn main() {
    let golden = golden_streams();
    table(&golden);
    table(&synthetic_vela_streams());
    let synth: Vec<(String, Vec<i16>, Option<usize>)> = synthetic(1 << 20)
        .into_iter()
        .map(|(n, w)| (n.to_string(), w, None))
        .collect();
    table(&synth);
    // Small streams (depthwise and shallow layers): fixed costs per encode.
    let small: Vec<(String, Vec<i16>, Option<usize>)> = [320usize, 2048]
        .into_iter()
        .flat_map(|n| {
            synthetic(n)
                .into_iter()
                .map(move |(name, w)| (format!("{name} ({n})"), w, None))
        })
        .collect();
    table(&small);

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(800))
        .configure_from_args();
    let mut g = c.benchmark_group("swd_encode");
    for (name, w, _) in synth
        .iter()
        .take(3)
        .chain(golden.iter().filter(|r| r.0.contains("bigz")))
    {
        g.throughput(Throughput::Bytes(w.len() as u64));
        g.bench_function(name.as_str(), |b| b.iter(|| encode(black_box(w)).unwrap()));
    }
    g.finish();
    c.final_summary();
}
