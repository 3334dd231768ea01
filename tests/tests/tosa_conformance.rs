//! The official TOSA conformance suite, whole: run with the suite made by
//! `models/scripts/make_conformance.sh DIR`:
//!
//! ```text
//! NPUC_CONFORMANCE=DIR cargo test -p npuc-tests --test tosa_conformance -- --ignored --nocapture
//! ```
//!
//! For every test of every set under DIR (pro-int, ext-int16, ext-int4, ext-doubleround, or
//! DIR itself when it is one set): the reference interpreter must reproduce the TOSA reference
//! model's result byte for byte, and `compile` for ethos-u85-256 must either give a container
//! whose simulation reproduces it, or refuse with an error. Prints one table per set (refusals
//! by class) and fails on any interpreter difference, wrong compiled result, panic or hang.
//! `NPUC_CONFORMANCE_FILTER=text` runs only the tests whose path contains `text`.

mod common;

use common::conformance::{self, Summary};
use npuc_backend::arch::Accelerator;
use std::path::PathBuf;

#[test]
#[ignore = "needs the generated suite: NPUC_CONFORMANCE=DIR (models/scripts/make_conformance.sh)"]
fn tosa_conformance_suite() {
    let Some(root) = std::env::var_os("NPUC_CONFORMANCE").map(PathBuf::from) else {
        panic!("set NPUC_CONFORMANCE to the directory made by models/scripts/make_conformance.sh");
    };
    let filter = std::env::var("NPUC_CONFORMANCE_FILTER").unwrap_or_default();
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("operators").is_dir())
        .collect();
    sets.sort();
    if sets.is_empty() {
        sets.push(root.clone());
    }
    let mut all = Summary::default();
    let mut tables = String::new();
    for set in &sets {
        let mut summary = Summary::default();
        let mut skipped = Vec::new();
        for dir in conformance::test_dirs(set) {
            if !dir.to_string_lossy().contains(&filter) {
                continue;
            }
            let case = match conformance::load(&root, &dir) {
                Ok(c) => c,
                Err(e) => {
                    skipped.push(format!("{}: {e}", dir.display()));
                    continue;
                }
            };
            let report = conformance::run(case, Accelerator::U85_256);
            if std::env::var_os("NPUC_CONFORMANCE_VERBOSE").is_some() {
                eprintln!(
                    "{}: {:?} / {:?}",
                    report.name, report.interpreter, report.compiled
                );
            }
            summary.add(&report);
            all.add(&report);
        }
        let title = set
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        tables.push_str(&summary.table(&title));
        for s in &skipped {
            tables.push_str(&format!("  SKIPPED {s}\n"));
        }
    }
    if sets.len() > 1 {
        tables.push_str(&all.table("all sets"));
    }
    eprintln!("{tables}");
    assert!(
        all.total > 0,
        "no conformance test found under {}",
        root.display()
    );
    assert!(
        all.interp_failures.is_empty() && all.wrong.is_empty() && all.crash.is_empty(),
        "{} interpreter differences, {} wrong compiled results, {} crashes or hangs (table above)",
        all.interp_failures.len(),
        all.wrong.len(),
        all.crash.len()
    );
}
