//! A committed subset of the official TOSA conformance suite (`models/tosa-conformance/`,
//! picked by `models/scripts/pick_conformance_subset.py` from the suite that
//! `models/scripts/make_conformance.sh` generates; results from the TOSA reference model).
//! The reference interpreter must reproduce every result byte for byte; `compile` for
//! ethos-u85-256 must reproduce it through the simulator or refuse with an error, and at least
//! [`COMPILE_FLOOR`] tests must compile and reproduce it. The whole suite:
//! `tosa_conformance.rs`.

mod common;

use common::conformance::{self, Summary};
use npuc_backend::arch::Accelerator;

/// Minimum number of subset tests that compile and reproduce the reference results.
const COMPILE_FLOOR: usize = 85;

#[test]
fn conformance_subset_interprets_exactly_and_compiles_exactly_or_refuses() {
    let root = common::models_dir().join("tosa-conformance");
    let mut summary = Summary::default();
    for dir in conformance::test_dirs(&root) {
        let case =
            conformance::load(&root, &dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        summary.add(&conformance::run(case, Accelerator::U85_256));
    }
    eprintln!("{}", summary.table("models/tosa-conformance"));
    assert!(
        summary.total >= 30,
        "only {} subset tests found",
        summary.total
    );
    assert!(
        summary.interp_failures.is_empty(),
        "the interpreter differs from the reference model: {:#?}",
        summary.interp_failures
    );
    assert!(
        summary.wrong.is_empty() && summary.crash.is_empty(),
        "wrong compiled results: {:#?}\ncrashes or hangs: {:#?}",
        summary.wrong,
        summary.crash
    );
    assert!(
        summary.compile_exact >= COMPILE_FLOOR,
        "only {} of {} subset tests compile and reproduce the reference (floor {COMPILE_FLOOR})",
        summary.compile_exact,
        summary.total
    );
}
