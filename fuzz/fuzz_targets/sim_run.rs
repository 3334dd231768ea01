//! Arbitrary bytes as a command stream on the simulator: every run ends within its budgets.
//! The body is `npuc_fuzz::sim_run` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::sim_run(data));
