//! Arbitrary bytes as an `ethos-u` payload (COP1/COP2): parsing never panics.
//! The body is `npuc_fuzz::cop_parse` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::cop_parse(data));
