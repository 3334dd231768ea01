//! npuc against Vela on every corpus network, side by side.
//!
//!     cargo run --release -p npuc --example vs_vela [-- NAME_FILTER]
//!
//! For every network of `models/corpus.json` (`"kind": "network"`) and every configuration
//! Vela fixtures exist for (`models/vela/<cfg>/<net>_vela.tflite`), the network is compiled by
//! npuc to a `.tflite` (operators the NPU path does not support stay on the CPU and are
//! excluded from npuc's figures; the `cpu` column counts them, Vela's column the ones Vela
//! left on the CPU) and both artifacts are estimated by `npuc report`'s model (TRM chapter 4)
//! in the configuration's system config and memory mode:
//!
//! | config              | system config           | memory mode          |
//! |---------------------|-------------------------|----------------------|
//! | `u85_256`           | Ethos_U85_SYS_DRAM_Mid  | Dedicated_Sram_384KB |
//! | `u85_2048`          | Ethos_U85_SYS_DRAM_Mid  | Dedicated_Sram_384KB |
//! | `u85_256_sram_only` | Ethos_U85_SYS_Flash_High| Sram_Only            |
//!
//! Columns: cycles (and Vela's own estimate for its stream, `cycles_total` from
//! `models/vela/per_layer.csv`, which npuc's model is calibrated to), peak SRAM bytes, off-chip traffic (DRAM read+write, or flash read), the
//! read-only (region 0) bytes, npuc's compile time and, when a `vela` executable is found
//! (`$VELA`, else `vela` on `PATH`; e.g. a venv with `pip install ethos-u-vela==5.2.0`),
//! Vela's compile time for the same network, configuration and memory system (the wall time
//! of the `vela` process, Python start-up included); without one it is not measured.
//! The networks too large for the per-model test sweeps (`corpus.json` `"large"`, files in
//! `models/large/`) follow as rows of their own, outside the total. `VS_VELA_RUNS=N` times
//! each compile N times (both compilers) and reports the medians (default 1). npuc's compile
//! runs with the `npuc` binary's allocator (mimalloc), as `npuc compile` does.

/// The `npuc` binary's allocator (compiler/src/main.rs), so that the in-process compile is
/// timed as `npuc compile` runs it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use npuc::artifact::Artifact;
use npuc::compile::Options;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::{presets, MemoryMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

struct Figures {
    cycles: u64,
    peak_sram: u64,
    /// DRAM bytes read and written.
    dram: u64,
    /// Flash bytes read.
    flash: u64,
    read_only: u64,
}

impl Figures {
    fn offchip(&self) -> u64 {
        self.dram + self.flash
    }
}

fn figures(bytes: &[u8], map: &MemoryMap, acc: Accelerator) -> Figures {
    let artifact = Artifact::from_bytes(bytes).expect("a compiled artifact");
    let r = npuc::report::report(
        &artifact,
        &npuc::targets::ArtifactReaders::new(map.clone(), Some(acc)),
    )
    .expect("the model reads the stream");
    let read_only = artifact
        .streams
        .iter()
        .filter_map(|s| s.op.as_ref())
        .map(|op| op.read_only.len() as u64)
        .sum();
    Figures {
        cycles: r.total.cycles,
        peak_sram: r.total.peak_sram,
        dram: r.total.dram_read + r.total.dram_write,
        flash: r.total.flash_read,
        read_only,
    }
}

fn pct(n: u64, v: u64) -> String {
    if v == 0 {
        return "-".into();
    }
    format!("{:+.0}%", (n as f64 / v as f64 - 1.0) * 100.0)
}

/// The `vela` executable, if one runs (`$VELA`, else `vela` on `PATH`).
fn find_vela() -> Option<PathBuf> {
    let exe = std::env::var_os("VELA").map_or_else(|| PathBuf::from("vela"), PathBuf::from);
    let ok = Command::new(&exe)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(exe)
}

/// How many times each compile is timed (`VS_VELA_RUNS`, default 1; the median is reported).
fn runs() -> usize {
    std::env::var("VS_VELA_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .max(1)
}

/// The median of `times` (not empty).
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2.0
    }
}

/// Median wall time in milliseconds of Vela compiling `model` for `acc` in `sys` / `mode`
/// ([`runs`] times).
fn vela_ms(vela: &Path, model: &Path, acc: Accelerator, sys: &str, mode: &str) -> Option<f64> {
    let times = (0..runs())
        .map(|_| vela_once(vela, model, acc, sys, mode))
        .collect::<Option<Vec<f64>>>()?;
    Some(median(times))
}

/// Wall time in milliseconds of Vela compiling `model` for `acc` in `sys` / `mode`.
fn vela_once(vela: &Path, model: &Path, acc: Accelerator, sys: &str, mode: &str) -> Option<f64> {
    let out = std::env::temp_dir().join(format!("npuc-vs-vela-{}", std::process::id()));
    let t = Instant::now();
    let status = Command::new(vela)
        .args(["--accelerator-config", &acc.to_string()])
        .args(["--config", "Arm/vela.ini", "--system-config", sys])
        .args(["--memory-mode", mode, "--output-dir"])
        .arg(&out)
        .arg(model)
        .output()
        .ok()?
        .status;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let _ = std::fs::remove_dir_all(&out);
    status.success().then_some(ms)
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("models/corpus.json")).expect("models/corpus.json"),
    )
    .expect("corpus.json is JSON");
    let vela = find_vela();
    let own = vela_own_estimates(&root);
    println!(
        "| network | config | npuc cycles | Vela cycles | Δ | Vela's own estimate | npuc peak SRAM | Vela peak SRAM | npuc DRAM B | Vela DRAM B | npuc flash B | Vela flash B | npuc RO B | Vela RO B | npuc cpu ops | Vela cpu ops | npuc compile ms | Vela compile ms |"
    );
    println!(
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut ratios = Ratios::default();
    let mut totals = [(0u64, 0u64); 2];
    let (mut npuc_ms, mut vela_total_ms) = (0f64, 0f64);
    let sets = [("models", "models"), ("large", "models/large")];
    for (set, (key, dir)) in sets.into_iter().enumerate() {
        for m in corpus[key].as_array().into_iter().flatten() {
            if m["kind"] != "network" {
                continue;
            }
            let name = m["name"].as_str().expect("name");
            if !name.contains(&filter) {
                continue;
            }
            let src = root.join(format!("{dir}/tflite/{name}.tflite"));
            let Ok(bytes) = std::fs::read(&src) else {
                continue;
            };
            for (cfg, acc, sys, mode) in CONFIGS {
                let vela_path = root.join(format!("{dir}/vela/{cfg}/{name}_vela.tflite"));
                if !Path::new(&vela_path).exists() {
                    continue;
                }
                let Some(row) = compare(&bytes, &vela_path, (acc, sys, mode)) else {
                    println!("| {name} | {cfg} | error |");
                    continue;
                };
                let vms = vela.as_ref().and_then(|v| vela_ms(v, &src, acc, sys, mode));
                npuc_ms += row.ms;
                vela_total_ms += vms.unwrap_or(0.0);
                let (n, v) = (&row.npuc, &row.vela);
                let mut cpu = row.cpu;
                if cpu.is_empty() {
                    totals[set].0 += n.cycles;
                    totals[set].1 += v.cycles;
                }
                let vela_cpu = m["vela"][cfg]["cpu_ops"].as_array().map_or(0, |a| a.len());
                let cpu_note = if cpu.is_empty() {
                    "0".to_string()
                } else {
                    cpu.sort_unstable();
                    let n = cpu.len();
                    cpu.dedup();
                    format!("{n} ({})", cpu.join(","))
                };
                ratios.add(&format!("{name} {cfg}"), n, v, (row.ms, vms));
                let vms = vms.map_or_else(|| "-".to_string(), |t| format!("{t:.0}"));
                let own = own
                    .get(&(cfg.to_string(), name.to_string()))
                    .map_or_else(|| "-".to_string(), |c| c.to_string());
                println!(
                    "| {name} | {cfg} | {} | {} | {} | {own} | {} | {} | {} | {} | {} | {} | {} | {} | {cpu_note} | {vela_cpu} | {:.0} | {vms} |",
                    n.cycles,
                    v.cycles,
                    pct(n.cycles, v.cycles),
                    n.peak_sram,
                    v.peak_sram,
                    n.dram,
                    v.dram,
                    n.flash,
                    v.flash,
                    n.read_only,
                    v.read_only,
                    row.ms,
                );
            }
        }
    }
    println!();
    ratios.print();
    let [(sum_n, sum_v), (large_n, large_v)] = totals;
    println!(
        "Total cycles over the corpus rows where npuc runs everything on the NPU: npuc {sum_n}, Vela {sum_v} ({})",
        pct(sum_n, sum_v)
    );
    if large_v > 0 {
        println!(
            "Large networks (models/large, not in the total): npuc {large_n}, Vela {large_v} ({})",
            pct(large_n, large_v)
        );
    }
    println!("Rows with npuc CPU operators exclude those operators from npuc's figures (Vela runs them on the NPU).");
    match vela {
        Some(v) => println!(
            "Compile time over all rows: npuc {npuc_ms:.0} ms, Vela {vela_total_ms:.0} ms ({}, wall time of each process, median of {} runs).",
            v.display(),
            runs()
        ),
        None => println!(
            "Compile time over all rows: npuc {npuc_ms:.0} ms; Vela's is not measured (no `vela` on PATH and no $VELA)."
        ),
    }
}

/// Vela's own estimate of each (config, network), its `cycles_total`, from
/// `models/vela/per_layer.csv` (`models/scripts/vela_per_layer.py`); empty without the file.
fn vela_own_estimates(root: &Path) -> std::collections::BTreeMap<(String, String), u64> {
    let text = std::fs::read_to_string(root.join("models/vela/per_layer.csv")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() > 6 && f[3] == "total")
                .then(|| Some(((f[0].to_string(), f[1].to_string()), f[6].parse().ok()?)))
                .flatten()
        })
        .collect()
}

/// The configurations compared: Vela fixture directory, accelerator, system config, memory
/// mode.
const CONFIGS: [(&str, Accelerator, &str, &str); 3] = [
    (
        "u85_256",
        Accelerator::U85_256,
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    ),
    (
        "u85_2048",
        Accelerator::U85_2048,
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    ),
    (
        "u85_256_sram_only",
        Accelerator::U85_256,
        "Ethos_U85_SYS_Flash_High",
        "Sram_Only",
    ),
];

/// One row: both artifacts' figures, npuc's CPU operators and compile time.
struct Row {
    npuc: Figures,
    vela: Figures,
    cpu: Vec<String>,
    ms: f64,
}

/// Compiles `bytes` with npuc and estimates it and Vela's artifact at `vela_path`.
fn compare(
    bytes: &[u8],
    vela_path: &Path,
    (acc, sys, mode): (Accelerator, &str, &str),
) -> Option<Row> {
    let system_config = presets::system_config(sys).expect("preset");
    let memory_mode = presets::memory_mode(mode).expect("preset");
    let map = MemoryMap::new(&system_config, &memory_mode).expect("consistent presets");
    let options = Options {
        accelerator: acc,
        system_config,
        memory_mode,
        ..Options::default()
    };
    let t = Instant::now();
    let out = npuc::tflite_out::compile_tflite(bytes, &options, &mut |_| {});
    let mut times = vec![t.elapsed().as_secs_f64() * 1e3];
    for _ in 1..runs() {
        let t = Instant::now();
        let _ = npuc::tflite_out::compile_tflite(bytes, &options, &mut |_| {});
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let ms = median(times);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{}: {e}", vela_path.display());
            return None;
        }
    };
    let cpu = out.partition.cpu_ops().map(|o| o.opcode.clone()).collect();
    let vela_bytes = std::fs::read(vela_path).expect("vela fixture");
    Some(Row {
        npuc: figures(&out.bytes, &map, acc),
        vela: figures(&vela_bytes, &map, acc),
        cpu,
        ms,
    })
}

/// npuc's figure over Vela's on every row, for the geomean and worst row of each column.
#[derive(Default)]
struct Ratios {
    /// (column, row, npuc / Vela); a column whose Vela figure is 0 on a row skips that row.
    all: Vec<(&'static str, String, f64)>,
}

impl Ratios {
    const COLUMNS: [&'static str; 5] = [
        "cycles",
        "off-chip B",
        "DRAM B",
        "peak SRAM",
        "compile time",
    ];

    fn add(&mut self, row: &str, n: &Figures, v: &Figures, (n_ms, v_ms): (f64, Option<f64>)) {
        let pairs = [
            (n.cycles as f64, v.cycles as f64),
            (n.offchip() as f64, v.offchip() as f64),
            (n.dram as f64, v.dram as f64),
            (n.peak_sram as f64, v.peak_sram as f64),
            (n_ms, v_ms.unwrap_or(0.0)),
        ];
        for (column, (a, b)) in Self::COLUMNS.into_iter().zip(pairs) {
            if b > 0.0 && a > 0.0 {
                self.all.push((column, row.to_string(), a / b));
            }
        }
    }

    /// One line per column: rows, geomean, worst row, rows above Vela.
    fn print(&self) {
        for column in Self::COLUMNS {
            let rows: Vec<&(&str, String, f64)> =
                self.all.iter().filter(|r| r.0 == column).collect();
            let Some(worst) = rows.iter().max_by(|a, b| a.2.total_cmp(&b.2)) else {
                continue;
            };
            let geomean = (rows.iter().map(|r| r.2.ln()).sum::<f64>() / rows.len() as f64).exp();
            let above = rows.iter().filter(|r| r.2 > 1.0).count();
            println!(
                "{column}: npuc / Vela geomean {geomean:.3} over {} rows, worst {:.3} ({}), {above} rows above Vela",
                rows.len(),
                worst.2,
                worst.1
            );
        }
    }
}
