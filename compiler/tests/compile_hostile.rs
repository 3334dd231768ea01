//! `compile` on hostile graphs (issue 16 C): refused with an error naming the operator, never
//! by running out of memory.

use npuc::compile::{compile, Options};
use npuc_ir::*;

mod compile_common;

use compile_common::{check_sim, conv_then_pool};

/// A 3x3 CONV2D with dilation `d` and SAME padding on an 8x8x4 input, + RESCALE.
fn dilated_conv(d: usize) -> Graph {
    let (h, w, ic, oc) = (8, 8, 4, 8);
    let mut b = GraphBuilder::new("dilated");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    let weights: Vec<i8> = (0..oc * 9 * ic).map(|i| ((i * 37) % 255) as i8).collect();
    let wt = b.const_i8("w", [oc, 3, 3, ic], &weights);
    let bt = b.const_i32("b", [oc], &vec![100; oc]);
    let conv = ConvAttrs {
        pad: [d, d, d, d],
        dilation: [d, d],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(conv), &[x, wt, bt]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 40, RescaleRounding::DoubleRound);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// Dilation 100,000 would expand the 3x3 kernel to 200,001 x 200,001 taps (960 GB of
/// weights): the kernel is never expanded; the window keeps its dilation and splits into parts
/// (decision L44), of which only the centre tap reads data, so it compiles in bounded work and
/// exactly. A dilated span of 2^31 or more (dilation 2^30) is refused, naming the operator, before
/// anything is allocated.
#[test]
fn a_huge_dilation_is_never_expanded() {
    check_sim("dilated_100000", &dilated_conv(100_000), 1);
    let e = compile(&dilated_conv(1 << 30), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("conv"), "{e}");
    assert!(e.contains("dilation"), "{e}");
    // A dilation the expansion can serve still compiles.
    compile(&dilated_conv(4), &Options::default()).unwrap();
}

/// Every compiled stream is validated before it is returned (C9): a stream that reads an
/// unmapped region, or writes past the arena, is refused naming the operation it belongs to.
#[test]
fn a_stream_that_would_fault_fails_validation_naming_the_operator() {
    use npuc_backend::isa::{decode_stream, encode_stream, Command};
    let model = compile(&conv_then_pool(), &Options::default()).unwrap();
    npuc::compile::validate_model(&model).unwrap();
    let cmds: Vec<Command> = decode_stream(&model.payload.command_words().unwrap())
        .unwrap()
        .iter()
        .map(|d| d.command)
        .collect();
    let pool_at = cmds
        .iter()
        .position(|c| matches!(c, Command::OpPool(_)))
        .unwrap();
    // (a) the pooling's IFM in region 5, which nothing maps.
    let mut bad = cmds.clone();
    bad.insert(
        pool_at,
        Command::SetIfmRegion(npuc_backend::isa::SetIfmRegion { region: 5 }),
    );
    // (b) the pooling's OFM far past the end of the arena.
    let mut past = cmds.clone();
    past.insert(
        pool_at,
        Command::SetOfmBase0(npuc_backend::isa::SetOfmBase0 {
            addr_hi: 0,
            addr_lo: 1 << 30,
        }),
    );
    for (what, cmds) in [("unmapped region", bad), ("past the arena", past)] {
        let mut m = model.clone();
        m.payload =
            npuc::payload::TargetPayload::u85_command_stream(&encode_stream(&cmds).unwrap());
        let e = npuc::compile::validate_model(&m).unwrap_err().to_string();
        assert!(e.contains("operator pool"), "{what}: {e}");
        assert!(e.contains("fails validation"), "{what}: {e}");
    }
}

/// `verify` refuses, before allocating anything, a graph whose largest operation would need
/// more than 4 GiB of 64-bit values in the reference interpreter (decision H8).
#[test]
fn verify_refuses_a_graph_the_interpreter_cannot_hold() {
    let small = compile(&conv_then_pool(), &Options::default()).unwrap();
    let mut b = GraphBuilder::new("huge");
    let x = b.input("x", DType::Int8, [1, 16384, 16384, 4]);
    let y = b.op("clamp", Op::Clamp(ClampAttrs { min: -1, max: 1 }), &[x]);
    b.output(y);
    let g = b.finish().unwrap();
    let (bytes, op) = npuc::verify::interpreter_working_set(&g);
    assert_eq!((bytes, op.as_str()), (16 << 30, "clamp"));
    let e = npuc::verify::verify_graph(&g, &small, &npuc::verify::VerifyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("operator clamp"), "{e}");
}
