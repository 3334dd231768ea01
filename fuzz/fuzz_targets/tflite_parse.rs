//! Arbitrary bytes through the TFLite reader: parsing and the Vela views must return
//! `Ok` or `Err`, never panic, overflow or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_frontend_tflite::TfliteModel;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = TfliteModel::parse(data) else {
        return;
    };
    let _ = model.ethos_u_ops();
    let _ = model.vela();
    for sg in model.subgraphs() {
        for t in &sg.tensors {
            let _ = t.static_shape();
            let _ = t.byte_size();
            let _ = model.tensor_data(t);
        }
        for op in &sg.operators {
            let _ = op.opcode.name();
            let _ = op.builtin_options_type();
        }
    }
});
