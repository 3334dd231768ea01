//! Arbitrary bytes as an `ethos-u` payload (COP1/COP2): parsing never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    // Steer half the inputs past the magic check.
    if let Some(first) = data.first() {
        let magic: &[u8] = if first & 1 == 0 { b"COP1" } else { b"COP2" };
        if first & 2 == 0 && bytes.len() >= 4 {
            bytes[..4].copy_from_slice(magic);
        }
    }
    let _ = npuc_backend::cop::parse_payload(&bytes);
});
