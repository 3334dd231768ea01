//! Simulator speed on the largest Vela-compiled corpus networks: simulated MACs per second on
//! one core (issue 4 goal: >= 300 million MAC/s, MobileNetV2 1.0 224 in about a second).
//!
//! `cargo bench -p npuc-backend --bench sim` prints one row per network: MACs of one
//! inference, the best wall time of several runs, and MAC/s. Set `NPUC_SIM_BENCH_RUNS` to
//! change the number of runs (default 5). Inputs are deterministic pseudo-random bytes (speed
//! does not depend on values); the arena layout is the one `npuc run` uses.
//!
//! Time is the CPU time of the benchmark thread (`/proc/thread-self/schedstat`, so that other
//! processes on a loaded machine do not count), or wall time where that file does not exist.

use npuc_backend::cop::parse_payload;
use npuc_backend::sim::Simulator;
use npuc_frontend_tflite::TfliteModel;
use std::path::Path;
use std::time::{Duration, Instant};

const NETWORKS: [&str; 6] = [
    "mobilenet_v2_050_128_pruned",
    "mobilenet_v1_050_128_clustered",
    "mobilenet_v2_035_96",
    "resnet8",
    "ds_cnn",
    "unet_small",
];

/// One inference: every ethos-u operator of the model on a fresh simulator. Returns MACs.
fn infer(model: &[u8]) -> u64 {
    let m = TfliteModel::parse(model).expect("corpus model parses");
    let v = m.vela().expect("Vela model");
    let sg = &v.subgraphs[0];
    let npu: Vec<_> = v.ethos_u_ops().collect();
    let arena_size = npu.iter().map(|o| o.scratch_size).max().unwrap_or(0);
    let mut arena = vec![0u8; arena_size];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for fm in &sg.inputs {
        let at = fm.arena_offset.expect("input in the arena") as usize;
        for b in &mut arena[at..at + fm.byte_size] {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = seed as u8;
        }
    }
    let mut macs = 0;
    let mut sim: Option<Simulator> = None;
    let mut arena_id = None;
    for op in npu {
        let payload = parse_payload(&op.payload).expect("COP payload");
        let s = sim.get_or_insert_with(|| Simulator::new(payload.accelerator));
        let mem = s.memory_mut();
        let aid = *arena_id.get_or_insert_with(|| mem.add_buffer(std::mem::take(&mut arena)));
        let ro = mem.add_buffer(op.read_only.clone());
        mem.map_region(0, ro, 0);
        mem.map_region(1, aid, 0);
        if op.scratch_fast_tensor == op.scratch_tensor {
            mem.map_region(2, aid, 0);
        } else {
            let fast = mem.add_buffer(vec![0u8; op.scratch_fast_size]);
            mem.map_region(2, fast, 0);
        }
        macs += s.run(&payload.words).expect("simulates").macs;
    }
    macs
}

/// CPU time of this thread (Linux), else `None`.
fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `f` and returns its result and the time it took (CPU time if available).
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let (cpu, wall) = (thread_cpu_time(), Instant::now());
    let v = f();
    let t = match (cpu, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    (v, t)
}

fn main() {
    // `cargo test --benches` runs benches with `--bench` absent: do one quick pass only.
    let quick = !std::env::args().any(|a| a == "--bench");
    let runs: u32 = std::env::var("NPUC_SIM_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 1 } else { 5 });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/vela/u85_256");
    println!(
        "{:<34} {:>14} {:>12} {:>14}",
        "network (u85_256)", "MACs", "best cpu ms", "MAC/s"
    );
    let (mut all_macs, mut all_time) = (0u64, Duration::ZERO);
    for name in NETWORKS {
        let bytes = std::fs::read(dir.join(format!("{name}_vela.tflite"))).expect("corpus model");
        let mut best = Duration::MAX;
        let mut macs = 0;
        for _ in 0..runs.max(1) {
            let (m, t) = timed(|| infer(&bytes));
            macs = m;
            best = best.min(t);
        }
        all_macs += macs;
        all_time += best;
        println!(
            "{:<34} {:>14} {:>12.2} {:>14.3e}",
            name,
            macs,
            best.as_secs_f64() * 1e3,
            macs as f64 / best.as_secs_f64()
        );
    }
    println!(
        "{:<34} {:>14} {:>12.2} {:>14.3e}",
        "total",
        all_macs,
        all_time.as_secs_f64() * 1e3,
        all_macs as f64 / all_time.as_secs_f64()
    );
}
