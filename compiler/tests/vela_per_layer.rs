//! `npuc compile --verbose-performance`'s `<model>_per-layer.csv` against Vela 5.2's for the
//! same model and configuration (`models/vela_cli/per_layer/`, made by
//! `models/scripts/make_vela_cli.sh`): the same source operators in the same order.
//!
//! Vela writes one row per operation of its own graph: a fused activation is a row of its own
//! without cycles, and an operator it expands (SOFTMAX, MEAN) is one row per operation, named
//! after intermediate tensors (`..._softmax_3`, `..._intermediate`) until the last, which
//! names the operator's output. Those rows are grouped back into source operators here; npuc
//! writes one row per source operator. The cycles come from two different command streams
//! estimated by two different models, so they are printed, and only the network's total is
//! held to a loose band.

use npuc_test_support::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// (Original Operator, Op Cycles, Name) of each row.
fn rows(csv: &str) -> Vec<(String, u64, String)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (op, cycles, name) = (col("Original Operator"), col("Op Cycles"), col("Name"));
    assert_eq!(name, header.len() - 1, "Name is the last column");
    lines
        .map(|l| {
            let f: Vec<&str> = l.splitn(header.len(), ',').collect();
            (
                f[op].to_string(),
                f[cycles].parse().unwrap(),
                f[name].to_string(),
            )
        })
        .collect()
}

/// A name Vela gives an intermediate tensor of an operator it expands.
fn intermediate(name: &str) -> bool {
    if name.ends_with("_intermediate") {
        return true;
    }
    // `<name>_<operator>_<n>`, e.g. `..._softmax_12`.
    let mut parts = name.rsplitn(3, '_');
    let (n, op) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    parts.next().is_some()
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && !op.is_empty()
        && op.bytes().all(|b| b.is_ascii_lowercase())
}

/// Vela's rows grouped into source operators: (operator, cycles, output name).
fn vela_groups(rows: &[(String, u64, String)]) -> Vec<(String, u64, String)> {
    let mut out: Vec<(String, u64, String)> = Vec::new();
    let mut prev: Option<&(String, u64, String)> = None;
    for r in rows {
        let continues = prev.is_some_and(|p| p.0 == r.0 && (p.2 == r.2 || intermediate(&p.2)));
        match (continues, out.last_mut()) {
            (true, Some(g)) => {
                g.1 += r.1;
                g.2 = r.2.clone();
            }
            _ => out.push(r.clone()),
        }
        prev = Some(r);
    }
    out
}

/// An operator's type, spelt comparably: TFLite's `DEPTHWISE_CONV_2D` and Vela's
/// `DepthwiseConv2D` both become `depthwiseconv2d`.
fn kind(op: &str) -> String {
    let k: String = op
        .chars()
        .filter(|&c| c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    match k.as_str() {
        "averagepool2d" => "avgpool".into(),
        "maxpool2d" => "maxpool".into(),
        "concatenation" => "concat".into(),
        _ => k,
    }
}

#[test]
fn per_layer_rows_are_velas_source_operators_in_velas_order() {
    let dir = Scratch::new("vela-per-layer");
    let mut report = String::new();
    for model in ["ds_cnn", "mobilenet_tiny", "resnet8"] {
        let out = Command::new(env!("CARGO_BIN_EXE_npuc"))
            .current_dir(root())
            .args([
                "compile",
                &format!("models/tflite/{model}.tflite"),
                "--accelerator-config",
                "ethos-u85-256",
                "--output-dir",
                dir.to_str().unwrap(),
                "--verbose-performance",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours =
            rows(&std::fs::read_to_string(dir.join(format!("{model}_per-layer.csv"))).unwrap());
        let vela_csv = root().join(format!("models/vela_cli/per_layer/{model}_per-layer.csv"));
        let theirs = vela_groups(&rows(&std::fs::read_to_string(vela_csv).unwrap()));
        let ids = |r: &[(String, u64, String)]| -> Vec<(String, String)> {
            r.iter().map(|(o, _, n)| (kind(o), n.clone())).collect()
        };
        assert_eq!(ids(&ours), ids(&theirs), "{model}: rows differ");
        let (a, b): (u64, u64) = (
            ours.iter().map(|r| r.1).sum(),
            theirs.iter().map(|r| r.1).sum(),
        );
        report.push_str(&format!(
            "{model}: npuc {a} cycles, Vela {b} ({:.2})\n",
            a as f64 / b as f64
        ));
        for (o, t) in ours.iter().zip(&theirs) {
            report.push_str(&format!("  {:<18} npuc {:>7} Vela {:>7}\n", o.0, o.1, t.1));
        }
        // Two compilers' streams, two estimators: only the totals are held, loosely.
        let ratio = a as f64 / b as f64;
        assert!((0.5..=2.0).contains(&ratio), "{model}: {report}");
    }
    println!("{report}");
}

#[test]
fn velas_intermediate_names_are_recognised() {
    assert!(intermediate("a/b;c/BiasAdd_softmax_12"));
    assert!(intermediate("x/Mean_intermediate"));
    assert!(!intermediate("StatefulPartitionedCall_1:0"));
    assert!(!intermediate("functional_1/conv2d_5_1/BiasAdd"));
    assert_eq!(kind("DEPTHWISE_CONV_2D"), kind("DepthwiseConv2D"));
    assert_eq!(kind("AVERAGE_POOL_2D"), kind("AvgPool"));
}
