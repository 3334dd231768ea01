//! npuc's performance model (backend/src/perf, TRM chapter 4) against Vela 5.2's own estimate
//! (`models/vela/<config>/NAME.perf.txt`, `--verbose-performance`) on Vela's command streams
//! for the corpus networks.
//!
//! Both are models, not measurements: the tests pin MACs (exactly where Vela counts the
//! stream's MAC-unit work) and the SRAM peak, and check the per-operation counts against the
//! simulator; cycles per network and per operation are calibrated in `perf_calibration.rs`.
//! The tables: `cargo test -p npuc-tests --test perf_vs_vela -- --ignored --nocapture`
//! (`print_comparison_table` per network; `print_per_operation_table` per operation of
//! `NPUC_PERF_NET` in `NPUC_PERF_CONFIG`; `print_single_operation_table` for the
//! single-operation models of `NPUC_PERF_CONFIG`).

mod common;

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

struct Row {
    config: &'static str,
    name: String,
    vela: VelaPerf,
    npuc: npuc::report::Figures,
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for config in ["u85_256", "u85_2048", "u85_256_sram_only"] {
        let map = common::memory_map(config);
        for name in networks() {
            let dir = common::models_dir().join("vela").join(config);
            let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.perf.txt"))) else {
                continue;
            };
            let path = dir.join(format!("{name}_vela.tflite"));
            let Some(artifact) = common::read_vela_artifact(config, &name, &path) else {
                continue;
            };
            let report = npuc::report::report(
                &artifact,
                &npuc::targets::ArtifactReaders::new(map.clone(), None),
            )
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

/// Vela's access cycles as a measurement of the memory model: mobilenet_v2_035_96's first
/// convolution on u85_256 reads its 96x96x3 NHWC input from DRAM one 3-byte position at a time
/// (P14), each position costing 3/16 of a 128-byte burst on the IFM channel, whose read buffer
/// holds 16 bursts (P18). npuc's DRAM cycles for it are within 10 % of Vela's DRAM access
/// cycles.
#[test]
fn a_shallow_input_image_costs_what_velas_access_cycles_measure() {
    use npuc_backend::perf::{memory_index, PerfModel};
    use npuc_backend::system::MemoryKind;
    let dir = common::models_dir().join("vela/u85_256");
    let text = std::fs::read_to_string(dir.join("mobilenet_v2_035_96.perf.txt")).expect("perf");
    let (op, vela) = &vela_rows(&text)[0];
    assert_eq!(op, "Conv2D");
    let artifact = npuc::artifact::Artifact::read(&dir.join("mobilenet_v2_035_96_vela.tflite"))
        .expect("model");
    let stream = &artifact.streams[0];
    let perf = PerfModel::new(
        stream.accelerator.expect("named").config(),
        common::memory_map("u85_256"),
    )
    .stream(&stream.words)
    .expect("decodes");
    let conv = perf
        .ops
        .iter()
        .find(|o| o.instruction == "NPU_OP_CONV")
        .expect("a convolution");
    let dram = conv.memory_cycles[memory_index(MemoryKind::Dram)] as f64;
    let ratio = dram / vela[3] as f64;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "npuc DRAM {dram}, Vela DRAM AC {}",
        vela[3]
    );
}

/// Where the model and the simulator count the same thing, they agree: per operation MACs,
/// weight and scale stream bytes, and bytes written (the OFM once; DMA LEN per copy).
#[test]
fn per_operation_counts_agree_with_the_simulator() {
    use npuc::run::npy;
    use npuc_backend::perf::PerfModel;
    let map = common::memory_map("u85_256");
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

/// Vela's per-operation rows with cycles (fused activations and chained elementwise
/// operations have none): (NNG operator, Op Cycles, NPU, SRAM AC, DRAM AC, OnFlash AC,
/// OffFlash AC).
fn vela_rows(text: &str) -> Vec<(String, [u64; 6])> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 13 || f[2] != "NPU" {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        let row = [n(5), n(7), n(8), n(9), n(10), n(11)];
        if row[0] > 0 {
            out.push((f[1].to_string(), row));
        }
    }
    out
}

/// Per operation: npuc's compute and memory cycles next to Vela's NPU and access cycles.
/// `NPUC_PERF_NET` (default mobilenet_v2_035_96) and `NPUC_PERF_CONFIG` (default u85_256).
#[test]
#[ignore = "prints the per-operation comparison; run with --ignored --nocapture"]
fn print_per_operation_table() {
    use npuc_backend::perf::PerfModel;
    let name = std::env::var("NPUC_PERF_NET").unwrap_or("mobilenet_v2_035_96".into());
    let config = std::env::var("NPUC_PERF_CONFIG").unwrap_or("u85_256".into());
    let map = common::memory_map(&config);
    let dir = common::models_dir().join("vela").join(&config);
    let text = std::fs::read_to_string(dir.join(format!("{name}.perf.txt"))).expect("perf");
    let vela = vela_rows(&text);
    let artifact =
        npuc::artifact::Artifact::read(&dir.join(format!("{name}_vela.tflite"))).expect("model");
    let mut v = vela.iter();
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8} | {:<16} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "npuc op",
        "cycles",
        "compute",
        "SRAM",
        "DRAM",
        "flash",
        "Vela op",
        "cycles",
        "NPU",
        "SRAM AC",
        "DRAM AC",
        "flashAC"
    );
    for stream in &artifact.streams {
        let acc = stream.accelerator.expect("payload names it");
        let perf = PerfModel::new(acc.config(), map.clone())
            .stream(&stream.words)
            .expect("decodes");
        for p in &perf.ops {
            let m = p.memory_cycles;
            let left = format!(
                "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}",
                p.instruction.trim_start_matches("NPU_OP_"),
                p.cycles,
                p.cost.compute_cycles,
                m[0],
                m[1],
                m[2] + m[3]
            );
            if p.instruction == "NPU_OP_DMA_START" {
                println!("{left} |");
                continue;
            }
            // A kernel whose OFM is chained writes nothing: Vela folds it into the next row.
            if p.cost.written.iter().all(|&w| w == 0) && p.cost.macs > 0 {
                println!("{left} | (chained)");
                continue;
            }
            match v.next() {
                Some((op, r)) => println!(
                    "{left} | {:<16} {:>8} {:>8} {:>8} {:>8} {:>8}",
                    op,
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4] + r[5]
                ),
                None => println!("{left} | -"),
            }
        }
    }
    for (op, r) in v {
        println!("{:<64} | {op:<16} {:>8} {:>8}", "-", r[0], r[1]);
    }
}

/// Every single-operation Vela model of a configuration (`NPUC_PERF_CONFIG`, default
/// u85_256): npuc's kernel cycles (compute, memory per memory, DMAs) next to Vela's row.
#[test]
#[ignore = "prints single-operation comparisons; run with --ignored --nocapture"]
fn print_single_operation_table() {
    use npuc_backend::perf::PerfModel;
    let config = std::env::var("NPUC_PERF_CONFIG").unwrap_or("u85_256".into());
    let map = common::memory_map(&config);
    let dir = common::models_dir().join("vela").join(&config);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .filter_map(|f| {
            let n = f.file_name().to_string_lossy().to_string();
            n.strip_suffix(".perf.txt").map(str::to_string)
        })
        .collect();
    names.sort();
    println!(
        "{:<28} {:>4} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:<14} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "model",
        "ops",
        "cycles",
        "compute",
        "SRAM",
        "DRAM",
        "flash",
        "dma",
        "Vela op",
        "cycles",
        "NPU",
        "SRAM",
        "DRAM",
        "flash"
    );
    for name in names {
        let text = std::fs::read_to_string(dir.join(format!("{name}.perf.txt"))).expect("perf");
        let vela = vela_rows(&text);
        if vela.len() != 1 {
            continue;
        }
        let Ok(artifact) = npuc::artifact::Artifact::read(&dir.join(format!("{name}_vela.tflite")))
        else {
            continue;
        };
        let (mut n, mut cyc, mut comp, mut mem, mut dma) = (0, 0, 0, [0u64; 3], 0);
        for stream in &artifact.streams {
            let acc = stream.accelerator.expect("payload names it");
            let perf = PerfModel::new(acc.config(), map.clone())
                .stream(&stream.words)
                .expect("decodes");
            for p in &perf.ops {
                if p.instruction == "NPU_OP_DMA_START" {
                    dma += p.cycles;
                    continue;
                }
                n += 1;
                cyc += p.cycles;
                comp += p.cost.compute_cycles;
                mem[0] += p.memory_cycles[0];
                mem[1] += p.memory_cycles[1];
                mem[2] += p.memory_cycles[2] + p.memory_cycles[3];
            }
        }
        let (op, r) = &vela[0];
        println!(
            "{:<28} {:>4} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:<14} {:>7} {:>7} {:>7} {:>7} {:>7}",
            name, n, cyc, comp, mem[0], mem[1], mem[2], dma, op, r[0], r[1], r[2], r[3], r[4] + r[5]
        );
    }
}
