//! `npuc::compile` end to end: every test graph on every configuration decodes, ends in
//! NPU_OP_STOP, and the simulator reproduces the reference interpreter byte for byte on
//! seeded random full-range inputs.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command};

const SAMPLES: usize = 3;

fn check(name: &str, build: fn(&mut Rng) -> npuc_ir::Graph) {
    let g = build(&mut Rng(0x1234_5678_9abc_def1));
    for accel in Accelerator::ALL {
        let options = Options { accelerator: accel };
        let m = compile(&g, &options).unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
        let decoded = decode_stream(&m.command_stream)
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

macro_rules! sim_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name), compile_common::$name); })*
    };
}

sim_tests!(
    conv3x3_relu,
    conv_s2,
    conv_dilated,
    depthwise,
    fully_connected,
    maxpool,
    avgpool,
    add,
    sub,
    mul,
    network,
);

#[test]
fn output_is_deterministic() {
    for (name, build) in all_graphs() {
        let a = compile(&build(&mut Rng(7)), &Options::default()).unwrap();
        let b = compile(&build(&mut Rng(7)), &Options::default()).unwrap();
        assert_eq!(
            npuc::container::to_bytes(&a),
            npuc::container::to_bytes(&b),
            "{name}"
        );
    }
}
