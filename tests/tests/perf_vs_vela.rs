//! npuc's performance model (backend/src/perf, TRM chapter 4) against Vela 5.2's own estimate
//! (`models/vela/<config>/NAME.perf.txt`, `--verbose-performance`) on Vela's command streams
//! for the corpus networks.
//!
//! Both are models, not measurements: the tests pin how far apart they are (`RATIO_RANGE`,
//! `GEOMEAN_RANGE`; MACs exactly where Vela counts the stream's MAC-unit work) so that a change
//! in either shows, and check the per-operation counts against the simulator.
//! The table: `cargo test -p npuc-tests --test perf_vs_vela -- --ignored --nocapture`.

mod common;

use npuc_backend::system::{presets, MemoryMap};

/// Vela's per-network figures.
#[derive(Debug, Default, Clone, Copy)]
struct VelaPerf {
    /// Sum of "Op Cycles" over the operator rows.
    cycles: u64,
    /// Sum of "MAC Count".
    macs: u64,
    /// Sum of MACs of the NPU's MAC-unit kernels (Conv2D, DepthwiseConv2D, FullyConnected
    /// and the rows Vela lowers to them), the ones npuc counts.
    conv_macs: u64,
    /// "Total SRAM bandwidth" and "Total DRAM bandwidth", MB per batch (2 decimals).
    sram_mb: f64,
    dram_mb: f64,
    /// "Total SRAM used" in KiB (2 decimals).
    sram_used_kib: f64,
}

/// Parses a `--verbose-performance` listing: every operator table (one per NPU subgraph) and
/// the summary lines.
fn parse_vela_perf(text: &str) -> VelaPerf {
    let mut p = VelaPerf::default();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("-------------------- ") {
            in_table = true;
            continue;
        }
        if in_table {
            if line.trim().is_empty() {
                in_table = false;
                continue;
            }
            // Original Operator, NNG Operator, Target, Staging Usage, Peak%, Op Cycles,
            // Network%, NPU, SRAM AC, DRAM AC, OnFlash AC, OffFlash AC, MAC Count, ...
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 13 || f[2] != "NPU" {
                continue;
            }
            let cycles: u64 = f[5].parse().expect("Op Cycles");
            let macs: u64 = f[12].parse().expect("MAC Count");
            p.cycles += cycles;
            p.macs += macs;
            if matches!(
                f[1],
                "Conv2D" | "DepthwiseConv2D" | "FullyConnected" | "MatMul" | "TransposeConv2D"
            ) {
                p.conv_macs += macs;
            }
        }
        let num = |l: &str| -> f64 {
            l.split_whitespace()
                .rev()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        if line.starts_with("Total SRAM used") {
            p.sram_used_kib = num(line);
        }
        if line.starts_with("Total   SRAM bandwidth  ") && !line.contains("per input") {
            p.sram_mb += num(line);
        }
        if line.starts_with("Total   DRAM bandwidth  ") && !line.contains("per input") {
            p.dram_mb += num(line);
        }
    }
    p
}

fn networks() -> Vec<String> {
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::models_dir().join("corpus.json")).expect("corpus.json"),
    )
    .expect("JSON");
    corpus["models"]
        .as_array()
        .expect("models")
        .iter()
        .filter(|m| m["kind"] == "network")
        .map(|m| m["name"].as_str().expect("name").to_string())
        .collect()
}

/// The system configuration and memory mode each models/vela directory was compiled with
/// (models/scripts/compile_vela.py).
fn memory_map(config: &str) -> MemoryMap {
    let (sys, mode) = if config == "u85_256_sram_only" {
        ("Ethos_U85_SYS_Flash_High", "Sram_Only")
    } else {
        (presets::DEFAULT_SYSTEM_CONFIG, presets::DEFAULT_MEMORY_MODE)
    };
    MemoryMap::new(
        &presets::system_config(sys).expect("preset"),
        &presets::memory_mode(mode).expect("preset"),
    )
    .expect("consistent")
}

struct Row {
    config: &'static str,
    name: String,
    vela: VelaPerf,
    npuc: npuc::report::Figures,
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for config in ["u85_256", "u85_2048", "u85_256_sram_only"] {
        let map = memory_map(config);
        for name in networks() {
            let dir = common::models_dir().join("vela").join(config);
            let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.perf.txt"))) else {
                continue;
            };
            let path = dir.join(format!("{name}_vela.tflite"));
            let Some(artifact) = common::read_vela_artifact(config, &name, &path) else {
                continue;
            };
            let report = npuc::report::report(&artifact, &map, None)
                .unwrap_or_else(|e| panic!("{config}/{name}: {e}"));
            out.push(Row {
                config,
                name,
                vela: parse_vela_perf(&text),
                npuc: report.total,
            });
        }
    }
    out
}

/// Measured on the 36 network x configuration rows (see docs/decisions.md P11): npuc's total
/// cycles are 0.10 to 0.91 of Vela's, geometric mean 0.41. npuc is systematically lower: its
/// model has no per-block or per-operation overhead (the TRM gives none, chapter 4 only warns
/// that "there may be more overhead at top level") and hides memory latency behind the CC's
/// pipelining, where Vela charges DRAM/flash access cycles per transfer. The bounds pin that
/// spread with some room, so a change in either model shows.
const RATIO_RANGE: std::ops::RangeInclusive<f64> = 0.07..=1.25;
const GEOMEAN_RANGE: std::ops::RangeInclusive<f64> = 0.3..=0.6;

#[test]
fn total_cycles_stay_within_the_measured_spread_of_velas_estimate() {
    let rows = rows();
    assert!(rows.len() >= 30, "networks x configs found: {}", rows.len());
    let mut log_sum = 0.0;
    for r in &rows {
        let ratio = r.npuc.cycles as f64 / r.vela.cycles as f64;
        log_sum += ratio.ln();
        assert!(
            RATIO_RANGE.contains(&ratio),
            "{}/{}: npuc {} cycles, Vela {} (ratio {ratio:.2})",
            r.config,
            r.name,
            r.npuc.cycles,
            r.vela.cycles
        );
    }
    let geomean = (log_sum / rows.len() as f64).exp();
    assert!(
        GEOMEAN_RANGE.contains(&geomean),
        "geometric mean {geomean:.3}"
    );
}

/// Networks whose Vela MAC count is not the command stream's: Vela discounts pruned weights
/// (its count for mobilenet_v2_050_128_pruned even differs per configuration), counts the
/// transposed convolutions of unet_small on a different grid, and counts ds_cnn's average
/// pool as an AvgPool while its stream runs it on the MAC unit.
const VELA_COUNTS_OTHERWISE: [&str; 3] = ["mobilenet_v2_050_128_pruned", "unet_small", "ds_cnn"];

#[test]
fn macs_of_mac_unit_kernels_equal_velas_count() {
    let mut compared = 0;
    for r in rows() {
        if VELA_COUNTS_OTHERWISE.contains(&r.name.as_str()) || r.name == "ds_cnn_16x8" {
            assert_ne!(
                r.npuc.macs, r.vela.conv_macs,
                "{}/{}: now equal",
                r.config, r.name
            );
            continue;
        }
        compared += 1;
        assert_eq!(
            r.npuc.macs, r.vela.conv_macs,
            "{}/{}: npuc MACs vs Vela's Conv2D/DepthwiseConv2D/FullyConnected/MatMul MACs",
            r.config, r.name
        );
    }
    assert!(compared >= 24, "rows compared: {compared}");
}

/// Networks where Vela's SRAM allocation is larger than what any command touches.
const VELA_ALLOCATES_MORE_SRAM: [&str; 2] = ["unet_small", "transformer_encoder"];

/// The highest SRAM byte the operations touch is Vela's "Total SRAM used" (to its 0.01 KiB).
#[test]
fn peak_sram_equals_velas_sram_use() {
    let mut compared = 0;
    for r in rows() {
        let npuc_kib = r.npuc.peak_sram as f64 / 1024.0;
        if VELA_ALLOCATES_MORE_SRAM.contains(&r.name.as_str()) {
            assert!(npuc_kib < r.vela.sram_used_kib, "{}/{}", r.config, r.name);
            continue;
        }
        compared += 1;
        assert!(
            (npuc_kib - r.vela.sram_used_kib).abs() <= 0.005 + 1e-9,
            "{}/{}: npuc peak SRAM {} bytes ({npuc_kib:.3} KiB), Vela {} KiB",
            r.config,
            r.name,
            r.npuc.peak_sram,
            r.vela.sram_used_kib
        );
    }
    assert!(compared >= 30, "rows compared: {compared}");
}

#[test]
#[ignore = "prints the comparison table; run with --ignored --nocapture"]
fn print_comparison_table() {
    println!(
        "{:<18} {:<32} {:>10} {:>10} {:>6} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "config",
        "network",
        "npuc cyc",
        "Vela cyc",
        "ratio",
        "npuc MACs",
        "Vela MACs",
        "npuc SRAM",
        "Vela SRAM",
        "npuc DRAM",
        "Vela DRAM"
    );
    let mut log_sum = 0.0;
    let rows = rows();
    for r in &rows {
        let ratio = r.npuc.cycles as f64 / r.vela.cycles as f64;
        log_sum += ratio.ln();
        let mb = |b: u64| b as f64 / 1e6;
        println!(
            "{:<18} {:<32} {:>10} {:>10} {:>6.2} {:>10} {:>10} {:>9.3} {:>9.2} {:>9.3} {:>9.2}",
            r.config,
            r.name,
            r.npuc.cycles,
            r.vela.cycles,
            ratio,
            r.npuc.macs,
            r.vela.macs,
            mb(r.npuc.sram_read + r.npuc.sram_write),
            r.vela.sram_mb,
            mb(r.npuc.dram_read + r.npuc.dram_write + r.npuc.flash_read),
            r.vela.dram_mb,
        );
    }
    println!(
        "geometric mean of npuc/Vela cycles over {} rows: {:.3} (SRAM/DRAM in MB; Vela's DRAM column is its DRAM bandwidth line, npuc's includes flash)",
        rows.len(),
        (log_sum / rows.len() as f64).exp(),
    );
}

/// Where the model and the simulator count the same thing, they agree: per operation MACs,
/// weight and scale stream bytes, and bytes written (the OFM once; DMA LEN per copy).
#[test]
fn per_operation_counts_agree_with_the_simulator() {
    use npuc::run::npy;
    use npuc_backend::perf::PerfModel;
    let map = memory_map("u85_256");
    for name in [
        "mobilenet_tiny",
        "ds_cnn",
        "resnet8",
        "conv2d_3x3_relu",
        "add_broadcast",
    ] {
        let path = common::models_dir().join(format!("vela/u85_256/{name}_vela.tflite"));
        let model = std::fs::read(&path).expect("model");
        let golden = common::models_dir().join(format!("golden/{name}"));
        let mut inputs = Vec::new();
        for i in 0.. {
            let p = golden.join(format!("input{i}_0.npy"));
            let Ok(bytes) = std::fs::read(&p) else { break };
            inputs.push(npy::read(&bytes).expect("npy"));
        }
        let run = npuc::run::run_vela(&model, &inputs).expect("simulates");
        let artifact = npuc::artifact::Artifact::read(&path).expect("artifact");
        for (s, (stream, sim)) in artifact.streams.iter().zip(&run.reports).enumerate() {
            let acc = stream.accelerator.expect("payload names it");
            let perf = PerfModel::new(acc.config(), map.clone())
                .stream(&stream.words)
                .expect("decodes");
            assert_eq!(
                perf.ops.len(),
                sim.ops.len(),
                "{name} stream {s}: operations"
            );
            for (p, o) in perf.ops.iter().zip(&sim.ops) {
                let at = format!("{name} stream {s} {} at {:#x}", o.instruction, o.offset);
                assert_eq!(p.offset, o.offset, "{at}");
                assert_eq!(p.cost.macs, o.macs, "{at}: MACs");
                assert_eq!(p.cost.weight_bytes, o.weight_bytes, "{at}: weight bytes");
                assert_eq!(p.cost.scale_bytes, o.scale_bytes, "{at}: scale bytes");
                assert_eq!(
                    p.cost.written, o.traffic.written,
                    "{at}: bytes written per region"
                );
            }
        }
    }
}
