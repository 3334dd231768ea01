//! Verification of one hand-built graph: compiled on every configuration, the stream decodes
//! and ends in NPU_OP_STOP, and the simulator reproduces the reference interpreter byte for
//! byte on seeded random full-range inputs.

use super::*;
use npuc::compile::compile;
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command};

const SAMPLES: usize = 3;

pub fn check(name: &str, build: fn(&mut Rng) -> npuc_ir::Graph) {
    let g = build(&mut Rng(0x1234_5678_9abc_def1));
    for accel in Accelerator::ALL {
        let options = options(accel);
        let m = compile(&g, &options).unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
        let decoded = decode_stream(&m.payload.command_words().unwrap())
            .unwrap_or_else(|e| panic!("{name} on {accel}: decode: {e}"));
        assert!(
            matches!(decoded.last().map(|d| d.command), Some(Command::OpStop(_))),
            "{name} on {accel}: stream does not end in NPU_OP_STOP"
        );
        let mut rng = Rng(0xdead_beef ^ accel.macs_per_cc() as u64);
        let mut compared = 0;
        for sample in 0..SAMPLES * 4 {
            if compared == SAMPLES {
                break;
            }
            let inputs = random_inputs(&g, &mut rng);
            let expected = match npuc_ir::run_outputs(&g, inputs.clone()) {
                Ok(v) => v,
                // Data-dependent undefined behaviour in the reference (e.g. a RESCALE input
                // outside its window): no expected bytes.
                Err(npuc_ir::InterpError::Undefined { .. }) => continue,
                Err(e) => panic!("{name}: reference: {e}"),
            };
            let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
            let got = simulate(&m, &bytes);
            for (i, (e, o)) in expected.iter().zip(&got).enumerate() {
                let e = e.to_le_bytes();
                if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                    panic!(
                        "{name} on {accel}, sample {sample}, output {i}: first mismatch at byte {pos}: expected {} got {}",
                        e[pos] as i8, o[pos] as i8
                    );
                }
            }
            compared += 1;
        }
        assert_eq!(
            compared, SAMPLES,
            "{name} on {accel}: too many undefined samples"
        );
    }
}
