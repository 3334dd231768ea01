//! Arbitrary bytes through the TOSA reader and lowering: both must return `Ok` or `Err`,
//! never panic, overflow or hang. Bytes 4..8 are forced to `TOSA` half of the time so the
//! fuzzer spends its effort past the identifier check.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_frontend_tosa::{lower, TosaModel};

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if bytes.len() >= 9 && bytes[0] & 1 == 1 {
        bytes[4..8].copy_from_slice(b"TOSA");
    }
    let Ok(model) = TosaModel::parse(&bytes) else {
        return;
    };
    for block in model.blocks() {
        for t in &block.tensors {
            let _ = t.num_elements();
            let _ = block.shape_value(&t.name);
        }
        for op in &block.operators {
            let _ = op.name();
        }
    }
    if let Ok(graph) = lower(&model) {
        let _ = npuc_ir::dump(&graph);
    }
});
