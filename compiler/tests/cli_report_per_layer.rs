//! `npuc report --per-layer [--json]`: one row per source operator on npuc's own outputs
//! (container and `.tflite`, TFLite and TOSA sources, CPU islands), one row per command group
//! on a stream without a layer map; the rows add up to `npuc report`'s totals.

mod tflite_out_common;

use npuc_test_support::Scratch;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use tflite_out_common::{conv_custom_conv, models};

fn npuc(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .current_dir(models().join(".."))
        .output()
        .expect("npuc runs");
    assert!(
        out.status.success(),
        "npuc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&npuc(args)).expect("JSON")
}

fn compile(model: &Path, out: &Path, extra: &[&str]) {
    let mut a = vec![
        "compile",
        model.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend(extra);
    npuc(&a);
}

const SUMMED: [&str; 8] = [
    "macs",
    "sram_read_bytes",
    "sram_write_bytes",
    "dram_read_bytes",
    "dram_write_bytes",
    "flash_read_bytes",
    "weight_bytes",
    "scale_bytes",
];

/// The per-layer JSON of `artifact`, after checking that its rows and its totals add up to
/// `npuc report --json`'s totals.
fn per_layer(artifact: &Path) -> Value {
    let a = artifact.to_str().unwrap();
    let layers = json(&["report", a, "--per-layer", "--json"]);
    let report = json(&["report", a, "--json"]);
    let rows = layers["layers"].as_array().unwrap();
    let sum = |key: &str| rows.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(
        sum("cycles"),
        report["total_cycles"].as_u64().unwrap(),
        "{a}"
    );
    assert_eq!(layers["total_cycles"], report["total_cycles"], "{a}");
    for key in SUMMED {
        assert_eq!(sum(key), report[key].as_u64().unwrap(), "{a}: {key}");
        assert_eq!(layers[key], report[key], "{a}: {key}");
    }
    // Every command in exactly one row.
    assert_eq!(
        sum("commands") as usize,
        report["ops"].as_array().unwrap().len(),
        "{a}"
    );
    for key in ["accelerator", "system_config", "memory_mode"] {
        assert_eq!(layers[key], report[key], "{a}: {key}");
    }
    layers
}

fn operators(layers: &Value) -> Vec<(Option<u64>, String)> {
    layers["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64(),
                r["operator"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_network_gets_one_row_per_source_operator_in_execution_order() {
    let model = models().join("tflite/ds_cnn.tflite");
    let dir = Scratch::new("per-layer-network");
    let (bin, tfl) = (dir.join("ds_cnn.bin"), dir.join("ds_cnn.tflite"));
    compile(&model, &bin, &[]);
    compile(&model, &tfl, &[]);
    let layers = per_layer(&bin);
    assert_eq!(layers["attribution"], "source_operators");
    assert_eq!(layers["version"], 1);
    let ops = operators(&layers);
    let mut want: Vec<(Option<u64>, String)> = Vec::new();
    for i in 0..9 {
        let op = if i % 2 == 0 {
            "CONV_2D"
        } else {
            "DEPTHWISE_CONV_2D"
        };
        want.push((Some(i), op.to_string()));
    }
    for (i, op) in [
        (9, "AVERAGE_POOL_2D"),
        (10, "FULLY_CONNECTED"),
        (11, "SOFTMAX"),
    ] {
        want.push((Some(i), op.to_string()));
    }
    assert_eq!(ops, want, "{layers:#}");
    let rows = layers["layers"].as_array().unwrap();
    // The softmax is many NPU operations; a convolution is one and does MACs.
    assert!(rows[11]["npu_operations"].as_u64().unwrap() > 5);
    assert_eq!(rows[0]["npu_operations"], 1);
    assert!(rows[2]["macs"].as_u64().unwrap() > 0);
    let util = rows[2]["mac_utilisation"].as_f64().unwrap();
    assert!(util > 0.0 && util <= 100.0, "{util}");
    assert!(rows[0]["output"]
        .as_str()
        .unwrap()
        .starts_with("functional_1/activation_1/Relu"));
    // The .tflite output records the same map: the same rows and figures.
    let from_tflite = per_layer(&tfl);
    assert_eq!(from_tflite["layers"], layers["layers"]);

    let text = npuc(&["report", bin.to_str().unwrap(), "--per-layer"]);
    assert!(text.contains("per source operator"), "{text}");
    assert!(text.contains("#11 SOFTMAX"), "{text}");
    assert!(text.contains("decision P22"), "{text}");
    let total = text.lines().find(|l| l.contains(" total ")).unwrap();
    let cycles = layers["total_cycles"].as_u64().unwrap().to_string();
    assert!(total.contains(&cycles), "{total}");
}

#[test]
fn a_fused_activation_gets_a_row_without_cost_after_its_producer() {
    // The TOSA form of a convolution with ReLU: CONV2D, RESCALE and CLAMP fused into one NPU
    // operation; rows by TOSA operator (no index), the cost on the CONV2D.
    let dir = Scratch::new("per-layer-fused");
    let bin = dir.join("tosa.bin");
    compile(&models().join("tosa/conv2d_3x3_relu.tosa"), &bin, &[]);
    let layers = per_layer(&bin);
    let rows = layers["layers"].as_array().unwrap();
    assert_eq!(rows[0]["operator"], "CONV2D", "{layers:#}");
    assert_eq!(rows[0]["index"], Value::Null);
    assert!(rows[0]["macs"].as_u64().unwrap() > 0);
    let fused: Vec<&Value> = rows.iter().filter(|r| !r["fused_into"].is_null()).collect();
    assert!(!fused.is_empty(), "{layers:#}");
    for r in fused {
        assert_eq!(r["fused_into"]["operator"], "CONV2D");
        assert_eq!(r["cycles"], 0);
        assert_eq!(r["commands"], 0);
    }
}

#[test]
fn cpu_islands_get_no_row_and_a_note() {
    let dir = Scratch::new("per-layer-islands");
    let model = dir.join("conv_custom_conv.tflite");
    std::fs::write(&model, conv_custom_conv()).unwrap();
    let out = dir.join("islands.tflite");
    compile(&model, &out, &[]);
    let layers = per_layer(&out);
    assert_eq!(layers["attribution"], "source_operators");
    let ops = operators(&layers);
    assert_eq!(
        ops,
        [
            (Some(0), "CONV_2D".to_string()),
            (Some(2), "CONV_2D".to_string())
        ],
        "{layers:#}"
    );
    let streams: Vec<u64> = layers["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["stream"].as_u64().unwrap())
        .collect();
    assert_eq!(streams, [0, 1]);
    assert_eq!(layers["cpu_operators"][0]["index"], 1);
    assert_eq!(layers["cpu_operators"][0]["operator"], "npuc_test_cpu_only");
    let text = npuc(&["report", out.to_str().unwrap(), "--per-layer"]);
    assert!(
        text.contains("1 operators run on the CPU and are not estimated: #1 npuc_test_cpu_only"),
        "{text}"
    );
}

#[test]
fn a_vela_stream_gets_one_row_per_command_group() {
    let vela = models().join("vela/u85_256/ds_cnn_vela.tflite");
    let layers = per_layer(&vela);
    assert_eq!(layers["attribution"], "command_groups");
    let rows = layers["layers"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["index"].is_null()));
    assert!(rows
        .iter()
        .all(|r| r["operator"].as_str().unwrap().starts_with("NPU_OP_")));
    let text = npuc(&["report", vela.to_str().unwrap(), "--per-layer"]);
    assert!(text.contains("per command group"), "{text}");
    assert!(text.contains("no layer map"), "{text}");
}

fn backticked(s: &str) -> std::collections::BTreeSet<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_per_layer_json_keys_in_the_readme_are_all_the_keys() {
    let readme = std::fs::read_to_string(models().join("../README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `npuc report ARTIFACT --per-layer"))
        .expect("a README row for --per-layer");
    let keys = &row[row.find("`--json` keys:").unwrap() + "`--json` keys:".len()..];
    let (top, rows) = keys.split_at(keys.find("`layers`").unwrap());
    let mut top = backticked(top);
    top.insert("layers".into());
    top.remove("source_operators");
    top.remove("command_groups");
    let rows = backticked(&rows["`layers`".len()..]);
    let dir = Scratch::new("per-layer-readme");
    let bin = dir.join("readme.bin");
    compile(&models().join("tflite/conv2d_3x3_relu.tflite"), &bin, &[]);
    let v = per_layer(&bin);
    let actual: std::collections::BTreeSet<String> =
        v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(top, actual);
    let actual: std::collections::BTreeSet<String> = v["layers"][0]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(rows, actual);
}

#[test]
fn a_container_without_a_layer_map_still_reads_and_is_grouped_by_command() {
    use prost::Message;
    // A container as npuc wrote it before layer maps: the manifest without sources, commands
    // and layers_version (fields an older reader skips, and an older writer never wrote).
    let dir = Scratch::new("per-layer-old");
    let bin = dir.join("old.bin");
    compile(&models().join("tflite/ds_cnn.tflite"), &bin, &[]);
    let mut bytes = std::fs::read(&bin).unwrap();
    let c = npuc::container::from_bytes(&bytes).unwrap();
    assert_eq!(c.manifest.layers_version, 1);
    let mut manifest = c.manifest.clone();
    manifest.layers_version = 0;
    for o in &mut manifest.operators {
        o.sources.clear();
        o.commands.clear();
    }
    let encoded = manifest.encode_to_vec();
    let at = bytes.len() as u32;
    bytes.extend_from_slice(&encoded);
    bytes.resize(bytes.len().next_multiple_of(16), 0);
    bytes[32..36].copy_from_slice(&at.to_le_bytes());
    bytes[36..40].copy_from_slice(&(encoded.len() as u32).to_le_bytes());
    std::fs::write(&bin, &bytes).unwrap();
    assert_eq!(
        npuc::container::from_bytes(&bytes).unwrap().manifest,
        manifest
    );
    let layers = per_layer(&bin);
    assert_eq!(layers["attribution"], "command_groups");
}
