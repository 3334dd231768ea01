//! Arbitrary bytes as a scale and bias stream (TRM §3.7): decoding never
//! The body is `npuc_fuzz::scale_decode` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::scale_decode(data));
