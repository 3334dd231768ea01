//! Arbitrary bytes through the TFLite reader: parsing and the Vela views must return
//! The body is `npuc_fuzz::tflite_parse` (fuzz/src/lib.rs), which the test suite also runs on the seeds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| npuc_fuzz::tflite_parse(data));
