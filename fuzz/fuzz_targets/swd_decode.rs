//! Arbitrary bytes as an SWD weight stream (TRM §3.9.4-3.9.10): decoding never
//! The body is `npuc_fuzz::swd_decode` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::swd_decode(data));
