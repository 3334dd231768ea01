//! Compile time of every corpus network, npuc against Vela's whole process.
//!
//!     cargo run --release -p npuc --example compile_time [-- RUNS [NAME_FILTER]]
//!
//! For every network of `models/corpus.json` (`"kind": "network"`, the `models` and `large`
//! sets) on u85-256 in Ethos_U85_SYS_DRAM_Mid / Dedicated_Sram_384KB, npuc compiles the
//! `.tflite` to a Vela-format `.tflite` as `npuc compile` does (parse, partition, compile,
//! validate, write) in this process, `RUNS` times (default 3), and the fastest run counts.
//! When a `vela` executable is found (`$VELA`, else `vela` on `PATH`; e.g. the venv of
//! `pip install ethos-u-vela==5.2.0`), Vela compiles the same network for the same
//! configuration `RUNS` times as a process of its own (Python start-up included), fastest
//! run counted. Prints a Markdown table with the ratio npuc / Vela.

use npuc::compile::Options;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::presets;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const SYSTEM: &str = "Ethos_U85_SYS_DRAM_Mid";
const MODE: &str = "Dedicated_Sram_384KB";

/// The `vela` executable, if one runs (`$VELA`, else `vela` on `PATH`).
fn find_vela() -> Option<PathBuf> {
    let exe = std::env::var_os("VELA").map_or_else(|| PathBuf::from("vela"), PathBuf::from);
    let ok = Command::new(&exe)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(exe)
}

/// Fastest wall time in milliseconds of `runs` runs of `f` (`None` if a run fails).
fn fastest(runs: usize, mut f: impl FnMut() -> bool) -> Option<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t = Instant::now();
        if !f() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    Some(best)
}

fn vela_once(vela: &Path, model: &Path) -> bool {
    let out = std::env::temp_dir().join(format!("npuc-compile-time-{}", std::process::id()));
    let ok = Command::new(vela)
        .args(["--accelerator-config", "ethos-u85-256"])
        .args(["--config", "Arm/vela.ini", "--system-config", SYSTEM])
        .args(["--memory-mode", MODE, "--output-dir"])
        .arg(&out)
        .arg(model)
        .output()
        .is_ok_and(|o| o.status.success());
    let _ = std::fs::remove_dir_all(&out);
    ok
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .max(1);
    let filter = std::env::args().nth(2).unwrap_or_default();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("models/corpus.json")).expect("models/corpus.json"),
    )
    .expect("corpus.json is JSON");
    let vela = find_vela();
    let options = Options {
        accelerator: Accelerator::U85_256,
        system_config: presets::system_config(SYSTEM).expect("preset"),
        memory_mode: presets::memory_mode(MODE).expect("preset"),
        ..Options::default()
    };
    println!("| network | npuc ms | Vela ms | npuc / Vela |");
    println!("|---|---:|---:|---:|");
    let mut ratios = Vec::new();
    for (key, dir) in [("models", "models"), ("large", "models/large")] {
        for m in corpus[key].as_array().into_iter().flatten() {
            let name = m["name"].as_str().unwrap_or_default();
            if m["kind"] != "network" || !name.contains(&filter) {
                continue;
            }
            let src = root.join(format!("{dir}/tflite/{name}.tflite"));
            let Ok(bytes) = std::fs::read(&src) else {
                continue;
            };
            let npuc = fastest(runs, || {
                npuc::tflite_out::compile_tflite(&bytes, &options, &mut |_| {}).is_ok()
            });
            let vela_ms = vela
                .as_ref()
                .and_then(|v| fastest(runs, || vela_once(v, &src)));
            let cell = |ms: Option<f64>| ms.map_or_else(|| "-".to_string(), |m| format!("{m:.1}"));
            let ratio = match (npuc, vela_ms) {
                (Some(n), Some(v)) if v > 0.0 => {
                    ratios.push(n / v);
                    format!("{:.3}", n / v)
                }
                _ => "-".to_string(),
            };
            println!("| {name} | {} | {} | {ratio} |", cell(npuc), cell(vela_ms));
        }
    }
    if !ratios.is_empty() {
        let geomean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let worst = ratios.iter().copied().fold(0f64, f64::max);
        println!();
        println!(
            "npuc / Vela over {} networks: geomean {geomean:.3}, worst {worst:.3} (fastest of {runs} runs each).",
            ratios.len()
        );
    }
}
