//! `npuc supported-ops`: printed from the dispatch tables, committed as
//! docs/SUPPORTED_OPS.md, and checked against Vela 5.2's own list for the U85.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Operator names of the first Markdown table after `heading`.
fn table(md: &str, heading: &str) -> BTreeSet<String> {
    let at = md.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    md[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| "))
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| l.split('|').nth(1).unwrap().trim().to_string())
        .collect()
}

#[test]
fn the_committed_list_is_what_npuc_supported_ops_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_npuc"))
        .arg("supported-ops")
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, npuc::supported_ops::markdown());
    let committed = std::fs::read_to_string(repo().join("docs/SUPPORTED_OPS.md")).unwrap();
    assert!(
        committed == printed,
        "docs/SUPPORTED_OPS.md is stale: regenerate it with \
         `cargo run -p npuc -- supported-ops > docs/SUPPORTED_OPS.md`"
    );
}

#[test]
fn every_tflite_operator_vela_places_on_the_u85_is_in_the_list_but_resource_variables() {
    let vela = std::fs::read_to_string(repo().join("models/SUPPORTED_OPS_vela_5.2.md")).unwrap();
    let theirs = table(&vela, "## Ethos-U85 TFLite Summary Table");
    assert!(theirs.len() > 70);
    let ours = table(&npuc::supported_ops::markdown(), "## TFLite");
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    assert_eq!(missing, ["ASSIGN_VARIABLE", "READ_VARIABLE"]);
}

#[test]
fn every_tosa_operator_of_the_corpus_is_in_the_list() {
    let ours = table(&npuc::supported_ops::markdown(), "## TOSA");
    for e in std::fs::read_dir(repo().join("models/tosa")).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let model = npuc_frontend_tosa::TosaModel::parse(&bytes).unwrap();
        for op in model.blocks().flat_map(|b| &b.operators) {
            assert!(
                ours.contains(&op.name()),
                "{}: {}",
                path.display(),
                op.name()
            );
        }
    }
}
