//! The README's quick start and key lists against what npuc does.

use npuc_test_support::Scratch;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

fn backticked(s: &str) -> BTreeSet<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_quick_start_says_where_the_binary_is_and_where_the_summary_goes() {
    let r = readme();
    let quick = &r[r.find("## Set-up").unwrap()..r.find("## What works today").unwrap()];
    assert!(quick.contains("target/release/npuc"), "{quick}");
    // The summary paragraph follows the compile command and names stderr.
    let compile = quick.find("compile models/tflite").unwrap();
    let summary = quick.find("summary on stderr").unwrap();
    let tests = quick.find("cargo test --workspace").unwrap();
    assert!(compile < summary && summary < tests, "{quick}");
    // And stderr is where it goes.
    let dir = Scratch::new("readme");
    let out = dir.join("quick-start.bin");
    let o = Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(["compile", "models/tflite/conv2d_3x3_relu.tflite", "-o"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("npuc compile summary"));
}

#[test]
fn the_report_json_keys_in_the_readme_are_all_the_keys() {
    let r = readme();
    let row = r.lines().find(|l| l.starts_with("| `npuc report")).unwrap();
    let keys = &row[row.find("`--json` keys:").unwrap() + "`--json` keys:".len()..];
    let (top, ops) = keys.split_at(keys.find("`ops`").unwrap());
    let mut top = backticked(top);
    top.insert("ops".into());
    let ops = backticked(&ops["`ops`".len()..]);
    let o = Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args([
            "report",
            "--json",
            "models/vela/u85_256/conv2d_3x3_relu_vela.tflite",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let actual: BTreeSet<String> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(top, actual);
    let actual: BTreeSet<String> = v["ops"][0].as_object().unwrap().keys().cloned().collect();
    assert_eq!(ops, actual);
}
