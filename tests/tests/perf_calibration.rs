//! npuc's performance model (backend/src/perf) calibrated against Vela 5.2's own estimate, per
//! operation, on Vela's command streams for every corpus network and configuration with Vela
//! fixtures (decisions P17..P28 in docs/decisions.md).
//!
//! The fixture `models/vela/per_layer.csv` is written by `models/scripts/vela_per_layer.py`:
//! Vela's `--enable-debug-db` tables, one row per command-stream offset where a scheduled
//! operation's commands start, with that operation's `op_cycles` (and its components), plus a
//! `total` row per network (Vela's `cycles_total`). Each npuc operation (kernel or DMA) belongs
//! to the Vela operation whose commands start last at or before its offset; an operation's
//! npuc cycles are how far it moves the end of the kernel sequence (`end - previous kernel
//! end`: its own cycles plus any wait for a DMA), so they add up to npuc's total.
//!
//! The tables: `cargo test -p npuc-tests --test perf_calibration -- --ignored --nocapture`
//! (`NPUC_CALIB_NET` restricts the per-operation table to one network, `NPUC_CALIB_CONFIG` the
//! list of the largest outliers to one configuration).

mod common;

use npuc_backend::perf::PerfModel;
use std::collections::BTreeMap;

/// One Vela operation and what npuc attributes to it.
#[derive(Debug, Clone, Default)]
struct Layer {
    op_id: u64,
    operator: String,
    vela: u64,
    vela_npu: u64,
    vela_ac: [u64; 3],
    /// Vela's access cycles of the scale stream (all memories).
    vela_scale_ac: u64,
    npuc: u64,
    npuc_ops: Vec<String>,
}

/// One network in one configuration.
#[derive(Debug, Clone, Default)]
struct Network {
    config: String,
    name: String,
    vela_total: u64,
    npuc_total: u64,
    layers: Vec<Layer>,
}

/// A queue row of the fixture: (stream, offset, op id).
type Queue = Vec<(usize, usize, u64)>;

fn networks() -> Vec<Network> {
    let text = std::fs::read_to_string(common::models_dir().join("vela/per_layer.csv"))
        .expect("models/vela/per_layer.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|&h| h == name).expect(name);
    let (c_cfg, c_net, c_stream, c_off, c_id, c_op, c_cyc, c_npu) = (
        col("config"),
        col("network"),
        col("stream"),
        col("offset"),
        col("op_id"),
        col("operator"),
        col("op_cycles"),
        col("npu_cycles"),
    );
    let c_ac = [col("sram_ac"), col("dram_ac"), col("flash_ac")];
    let c_scale = col("scale_ac");
    let mut nets: BTreeMap<(String, String), (Network, Queue)> = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let key = (f[c_cfg].to_string(), f[c_net].to_string());
        let (net, queue) = nets.entry(key.clone()).or_insert_with(|| {
            (
                Network {
                    config: key.0.clone(),
                    name: key.1.clone(),
                    ..Network::default()
                },
                Vec::new(),
            )
        });
        let num = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        if f[c_off] == "total" {
            net.vela_total = num(c_cyc);
            continue;
        }
        let (stream, offset, id) = (
            num(c_stream) as usize,
            f[c_off].parse::<usize>().expect("offset"),
            num(c_id),
        );
        queue.push((stream, offset, id));
        if !f[c_cyc].is_empty() {
            net.layers.push(Layer {
                op_id: id,
                operator: f[c_op].to_string(),
                vela: num(c_cyc),
                vela_npu: num(c_npu),
                vela_ac: c_ac.map(num),
                vela_scale_ac: num(c_scale),
                ..Layer::default()
            });
        }
    }
    let mut out = Vec::new();
    for (_, (mut net, mut queue)) in nets {
        queue.sort_unstable();
        let dir = common::models_dir().join("vela").join(&net.config);
        let path = dir.join(format!("{}_vela.tflite", net.name));
        let artifact = npuc::artifact::Artifact::read(&path)
            .unwrap_or_else(|e| panic!("{}/{}: {e}", net.config, net.name));
        let map = common::memory_map(&net.config);
        for (s, stream) in artifact.streams.iter().enumerate() {
            let acc = stream.accelerator.expect("Vela's payload names it");
            let perf = PerfModel::new(acc.config(), map.clone())
                .stream(&stream.words)
                .unwrap_or_else(|e| panic!("{}/{}: {e}", net.config, net.name));
            net.npuc_total += perf.total_cycles;
            let mut prev_end = 0;
            for p in &perf.ops {
                let owner = queue
                    .iter()
                    .rfind(|q| q.0 == s && q.1 <= p.offset)
                    .map(|q| q.2);
                let moved = if p.instruction == "NPU_OP_DMA_START" {
                    0
                } else {
                    let m = p.end.saturating_sub(prev_end);
                    prev_end = prev_end.max(p.end);
                    m
                };
                let Some(layer) =
                    owner.and_then(|id| net.layers.iter_mut().find(|l| l.op_id == id))
                else {
                    continue;
                };
                layer.npuc += moved;
                layer.npuc_ops.push(format!(
                    "{}@{}:{}(npu {} mem {:?})",
                    p.instruction.trim_start_matches("NPU_OP_"),
                    p.offset,
                    moved,
                    p.npu_cycles,
                    p.memory_cycles
                ));
            }
        }
        out.push(net);
    }
    out
}

/// Share of Vela's cycles in layers where npuc is within `tol` of Vela (relative).
fn share_within(nets: &[&Network], tol: f64) -> f64 {
    let (mut ok, mut all) = (0u64, 0u64);
    for n in nets {
        for l in &n.layers {
            all += l.vela;
            if l.vela > 0 && ((l.npuc as f64 / l.vela as f64) - 1.0).abs() <= tol {
                ok += l.vela;
            }
        }
    }
    ok as f64 / all.max(1) as f64
}

/// What the calibration reaches (docs/decisions.md P17..P28; issue 13 asks for every total
/// within 0.90..1.10 and, per layer, ±20 % for at least 90 % of the cycles): every network's
/// total within `TOTAL_BAND` of Vela's, at least `TOTAL_WITHIN_TEN` of the 36 within 0.90..1.10,
/// and per configuration at least `LAYER_SHARE_MIN` of Vela's cycles in layers within ±20 %.
/// The remaining outliers and their reasons are listed in P21, P23, P24, P25, P27 and P28.
const TOTAL_BAND: std::ops::RangeInclusive<f64> = 0.77..=1.21;
const TOTAL_WITHIN_TEN: usize = 33;
const LAYER_TOLERANCE: f64 = 0.20;
const LAYER_SHARE_MIN: [(&str, f64); 3] = [
    ("u85_256", 0.952),
    ("u85_2048", 0.925),
    ("u85_256_sram_only", 0.975),
];

#[test]
fn network_totals_are_calibrated_to_velas_estimate() {
    let nets = networks();
    assert!(nets.len() >= 36, "networks x configs: {}", nets.len());
    let mut within = 0;
    for n in &nets {
        let ratio = n.npuc_total as f64 / n.vela_total as f64;
        assert!(
            TOTAL_BAND.contains(&ratio),
            "{}/{}: npuc {} cycles, Vela {} (ratio {ratio:.3})",
            n.config,
            n.name,
            n.npuc_total,
            n.vela_total
        );
        if (0.90..=1.10).contains(&ratio) {
            within += 1;
        }
    }
    assert!(
        within >= TOTAL_WITHIN_TEN,
        "{within} of {} totals within 0.90..1.10",
        nets.len()
    );
}

#[test]
fn most_cycles_are_in_layers_within_twenty_percent_of_velas_estimate() {
    let nets = networks();
    for (config, min) in LAYER_SHARE_MIN {
        let sel: Vec<&Network> = nets.iter().filter(|n| n.config == config).collect();
        let share = share_within(&sel, LAYER_TOLERANCE);
        assert!(
            share >= min,
            "{config}: {:.1} % of Vela's cycles in layers within ±20 % (at least {:.0} %)",
            share * 100.0,
            min * 100.0
        );
    }
}

#[test]
#[ignore = "prints the calibration tables; run with --ignored --nocapture"]
fn print_calibration_tables() {
    let nets = networks();
    let only = std::env::var("NPUC_CALIB_NET").ok();
    let only_config = std::env::var("NPUC_CALIB_CONFIG").ok();
    println!(
        "{:<18} {:<32} {:>9} {:>9} {:>6} {:>7} {:>7} {:>7}",
        "config", "network", "npuc", "Vela", "ratio", "±10%", "±20%", "±50%"
    );
    let mut log_sum = 0.0;
    for n in &nets {
        let ratio = n.npuc_total as f64 / n.vela_total as f64;
        log_sum += ratio.ln();
        println!(
            "{:<18} {:<32} {:>9} {:>9} {:>6.3} {:>6.1}% {:>6.1}% {:>6.1}%",
            n.config,
            n.name,
            n.npuc_total,
            n.vela_total,
            ratio,
            share_within(&[n], 0.10) * 100.0,
            share_within(&[n], 0.20) * 100.0,
            share_within(&[n], 0.50) * 100.0,
        );
    }
    println!(
        "geometric mean of the ratios over {} rows: {:.3}",
        nets.len(),
        (log_sum / nets.len() as f64).exp()
    );
    for config in ["u85_256", "u85_2048", "u85_256_sram_only"] {
        let sel: Vec<&Network> = nets.iter().filter(|n| n.config == config).collect();
        println!(
            "{config}: share of Vela's cycles in layers within ±10 % {:.1} %, ±20 % {:.1} %, ±50 % {:.1} %",
            share_within(&sel, 0.10) * 100.0,
            share_within(&sel, 0.20) * 100.0,
            share_within(&sel, 0.50) * 100.0
        );
    }
    let all: Vec<&Network> = nets.iter().collect();
    println!(
        "all: share within ±20 % {:.1} %",
        share_within(&all, 0.20) * 100.0
    );
    // Distribution of per-layer ratios, weighted by Vela's cycles.
    let edges = [0.0, 0.5, 0.8, 0.9, 1.1, 1.2, 2.0, f64::INFINITY];
    let mut bins = [0u64; 7];
    let mut total = 0u64;
    for n in &nets {
        for l in &n.layers {
            let r = l.npuc as f64 / l.vela.max(1) as f64;
            let b = edges
                .windows(2)
                .position(|w| r >= w[0] && r < w[1])
                .unwrap_or(6);
            bins[b] += l.vela;
            total += l.vela;
        }
    }
    for config in ["u85_256", "u85_2048", "u85_256_sram_only"] {
        let (mut scale_bound, mut off, mut all) = (0u64, 0u64, 0u64);
        for n in nets.iter().filter(|n| n.config == config) {
            for l in &n.layers {
                all += l.vela;
                let r = l.npuc as f64 / l.vela.max(1) as f64;
                if !(0.8..=1.2).contains(&r) {
                    off += l.vela;
                    if l.vela_scale_ac * 10 >= l.vela * 8 {
                        scale_bound += l.vela;
                    }
                }
            }
        }
        println!(
            "{config}: outside ±20 %: {:.1} % of Vela's cycles, of which layers whose cycles are Vela's scale-stream reads: {:.1} %",
            off as f64 * 100.0 / all.max(1) as f64,
            scale_bound as f64 * 100.0 / all.max(1) as f64
        );
    }
    println!("per-layer npuc/Vela ratio, share of Vela's cycles:");
    for (i, b) in bins.iter().enumerate() {
        println!(
            "  [{:.1}, {:.1}): {:5.1} %",
            edges[i],
            edges[i + 1],
            *b as f64 * 100.0 / total.max(1) as f64
        );
    }
    // The largest outliers by absolute cycle difference.
    let mut out: Vec<(i64, &Network, &Layer)> = nets
        .iter()
        .flat_map(|n| {
            n.layers
                .iter()
                .map(move |l| (l.npuc as i64 - l.vela as i64, n, l))
        })
        .filter(|(_, n, l)| {
            let r = l.npuc as f64 / l.vela.max(1) as f64;
            !(0.8..=1.2).contains(&r) && only_config.as_ref().is_none_or(|c| *c == n.config)
        })
        .collect();
    out.sort_by_key(|o| -o.0.abs());
    println!("largest per-layer outliers (outside ±20 %):");
    for (d, n, l) in out.iter().take(40) {
        println!(
            "  {:<18} {:<30} {:>4} {:<16} npuc {:>7} Vela {:>7} (npu {:>7} ac {:?}) diff {:>+7}  {}",
            n.config,
            n.name,
            l.op_id,
            l.operator,
            l.npuc,
            l.vela,
            l.vela_npu,
            l.vela_ac,
            d,
            l.npuc_ops.join(" ")
        );
    }
    if let Some(name) = only {
        for n in nets
            .iter()
            .filter(|n| n.name == name && only_config.as_ref().is_none_or(|c| *c == n.config))
        {
            println!("{} {}:", n.config, n.name);
            for l in &n.layers {
                println!(
                    "  {:>4} {:<16} npuc {:>7} Vela {:>7} npu {:>7} ac {:?} {:.2}  {}",
                    l.op_id,
                    l.operator,
                    l.npuc,
                    l.vela,
                    l.vela_npu,
                    l.vela_ac,
                    l.npuc as f64 / l.vela.max(1) as f64,
                    l.npuc_ops.join(" ")
                );
            }
        }
    }
}
