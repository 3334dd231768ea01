//! Arbitrary bytes as a command stream: decoding never panics, and whatever decodes re-encodes to
//! The body is `npuc_fuzz::isa_decode` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::isa_decode(data));
