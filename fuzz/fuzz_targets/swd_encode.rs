//! Arbitrary weights through the SWD encoder (TRM §3.9.3-3.9.10): every
//! The body is `npuc_fuzz::swd_encode` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::swd_encode(data));
