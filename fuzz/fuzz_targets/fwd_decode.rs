//! Arbitrary bytes as a FWD weight stream (TRM §3.9.11): decoding never
//! The body is `npuc_fuzz::fwd_decode` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::fwd_decode(data));
