//! Arbitrary bytes through the TOSA reader and lowering: both must return `Ok` or `Err`,
//! The body is `npuc_fuzz::tosa_parse` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::tosa_parse(data));
