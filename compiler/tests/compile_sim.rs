//! `npuc::compile` end to end: every test graph on every configuration decodes, ends in
//! NPU_OP_STOP, and the simulator reproduces the reference interpreter byte for byte on
//! seeded random full-range inputs.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
macro_rules! sim_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name), compile_common::$name); })*
    };
}

sim_tests!(
    conv3x3_relu,
    conv_s2,
    conv_dilated,
    conv1x1_batched,
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
