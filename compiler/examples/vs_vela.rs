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
//! Columns: cycles, peak SRAM bytes, off-chip traffic (DRAM read+write, or flash read), the
//! read-only (region 0) bytes, and npuc's compile time.

use npuc::artifact::Artifact;
use npuc::compile::Options;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::{presets, MemoryMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Figures {
    cycles: u64,
    peak_sram: u64,
    offchip: u64,
    read_only: u64,
}

fn figures(bytes: &[u8], map: &MemoryMap, acc: Accelerator) -> Figures {
    let artifact = Artifact::from_bytes(bytes).expect("a compiled artifact");
    let r = npuc::report::report(&artifact, map, Some(acc)).expect("the model reads the stream");
    let read_only = artifact
        .streams
        .iter()
        .filter_map(|s| s.op.as_ref())
        .map(|op| op.read_only.len() as u64)
        .sum();
    Figures {
        cycles: r.total.cycles,
        peak_sram: r.total.peak_sram,
        offchip: r.total.dram_read + r.total.dram_write + r.total.flash_read,
        read_only,
    }
}

fn pct(n: u64, v: u64) -> String {
    if v == 0 {
        return "-".into();
    }
    format!("{:+.0}%", (n as f64 / v as f64 - 1.0) * 100.0)
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("models/corpus.json")).expect("models/corpus.json"),
    )
    .expect("corpus.json is JSON");
    let configs = [
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
    println!(
        "| network | config | npuc cycles | Vela cycles | Δ | npuc peak SRAM | Vela peak SRAM | npuc off-chip B | Vela off-chip B | npuc RO B | Vela RO B | npuc cpu ops | Vela cpu ops | compile ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let (mut sum_n, mut sum_v) = (0u64, 0u64);
    for m in corpus["models"].as_array().expect("models") {
        if m["kind"] != "network" {
            continue;
        }
        let name = m["name"].as_str().expect("name");
        if !name.contains(&filter) {
            continue;
        }
        let src = root.join(format!("models/tflite/{name}.tflite"));
        let Ok(bytes) = std::fs::read(&src) else {
            continue;
        };
        for (cfg, acc, sys, mode) in configs {
            let vela_path = root.join(format!("models/vela/{cfg}/{name}_vela.tflite"));
            if !Path::new(&vela_path).exists() {
                continue;
            }
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
            let out = npuc::tflite_out::compile_tflite(&bytes, &options, &mut |_| {});
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let out = match out {
                Ok(o) => o,
                Err(e) => {
                    println!("| {name} | {cfg} | error: {e} |");
                    continue;
                }
            };
            let mut cpu: Vec<String> = out.partition.cpu_ops().map(|o| o.opcode.clone()).collect();
            let vela_cpu = m["vela"][cfg]["cpu_ops"].as_array().map_or(0, |a| a.len());
            let vela_bytes = std::fs::read(&vela_path).expect("vela fixture");
            let n = figures(&out.bytes, &map, acc);
            let v = figures(&vela_bytes, &map, acc);
            if cpu.is_empty() {
                sum_n += n.cycles;
                sum_v += v.cycles;
            }
            let cpu_note = if cpu.is_empty() {
                "0".to_string()
            } else {
                cpu.sort_unstable();
                format!("{} ({})", cpu.len(), {
                    let mut c = cpu.clone();
                    c.dedup();
                    c.join(",")
                })
            };
            println!(
                "| {name} | {cfg} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {cpu_note} | {vela_cpu} | {ms:.0} |",
                n.cycles,
                v.cycles,
                pct(n.cycles, v.cycles),
                n.peak_sram,
                v.peak_sram,
                n.offchip,
                v.offchip,
                n.read_only,
                v.read_only,
            );
        }
    }
    println!(
        "\nTotal cycles over the rows where npuc runs everything on the NPU: npuc {sum_n}, Vela {sum_v} ({})",
        pct(sum_n, sum_v)
    );
    println!("Rows with npuc CPU operators exclude those operators from npuc's figures (Vela runs them on the NPU).");
}
