//! Reviewed disassembly of a small compiled stream (conv 3x3 + rescale + ReLU, then a 2x2 max
//! pool) on the default configuration.

use npuc::artifact::Artifact;
use npuc::compile::{compile, Options};
use npuc_ir::*;

#[test]
fn conv_pool_disassembly() {
    let mut b = GraphBuilder::new("conv_pool");
    let x = b.input("x", DType::Int8, [1, 4, 4, 2]);
    let w: Vec<i8> = (0..4 * 9 * 2).map(|i| (i * 7 % 19 - 9) as i8).collect();
    let wt = b.const_i8("w", [4, 3, 3, 2], &w);
    let bt = b.const_i32("b", [4], &[10, -20, 30, -40]);
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 1],
        input_zp: -1,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = RescaleAttrs {
        output_dtype: DType::Int8,
        multiplier: vec![1 << 30, 1 << 29, 3 << 28, 1 << 30],
        shift: vec![36, 36, 37, 38],
        scale32: true,
        rounding: RescaleRounding::DoubleRound,
        per_channel: true,
        input_zp: 0,
        output_zp: -128,
        input_unsigned: false,
        output_unsigned: false,
    };
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let y = b.op(
        "relu",
        Op::Clamp(ClampAttrs {
            min: -128,
            max: 127,
        }),
        &[y],
    );
    let p = PoolAttrs {
        kernel: [2, 2],
        stride: [2, 2],
        pad: [0; 4],
    };
    let z = b.op("pool", Op::MaxPool2d(p), &[y]);
    b.output(z);
    let g = b.finish().unwrap();
    let m = compile(&g, &Options::default()).unwrap();
    let text = npuc::disasm::text(&Artifact::from_bytes(m.payload.bytes()).unwrap()).unwrap();
    insta::assert_snapshot!(text);
}
