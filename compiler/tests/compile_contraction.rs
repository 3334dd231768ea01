//! Matrix products whose contraction is longer than the 65536 channels one NPU operation
//! accumulates over (decision L47): the contraction runs in parts writing raw i32 accumulators,
//! summed by i32 adds, the last add applying the output stage. Each graph is compiled for all
//! five configurations and compared with the reference interpreter on seeded random inputs,
//! and the parts and sums are counted in the stream.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// (NPU_OP_CONV, NPU_OP_ELEMENTWISE) operations in the stream of `g` on U85-256.
fn convs_and_adds(g: &Graph) -> (usize, usize) {
    use npuc_backend::arch::Accelerator;
    use npuc_backend::isa::{decode_stream, Command};
    let m = npuc::compile::compile(g, &options(Accelerator::ALL[1])).expect("compiles");
    let d = decode_stream(&m.payload.command_words().unwrap()).expect("decodes");
    let count = |f: fn(&Command) -> bool| d.iter().filter(|d| f(&d.command)).count();
    (
        count(|c| matches!(c, Command::OpConv(_))),
        count(|c| matches!(c, Command::OpElementwise(_))),
    )
}

/// MATMUL of two graph inputs `[n, h, k] x [n, k, w]` with zero points, then `rescale` if any.
fn matmul(name: &str, a: [usize; 3], b: [usize; 3], rescale: Option<RescaleAttrs>) -> Graph {
    let mut g = GraphBuilder::new(name);
    let x = g.input("a", DType::Int8, a);
    let y = g.input("b", DType::Int8, b);
    let attrs = MatMulAttrs { a_zp: 3, b_zp: -7 };
    let acc = g.op("matmul", Op::MatMul(attrs), &[x, y]);
    let out = match rescale {
        Some(r) => g.op("rescale", Op::Rescale(r), &[acc]),
        None => acc,
    };
    g.output(out);
    g.finish().unwrap()
}

/// The raw i32 accumulator over 65538 channels (the TOSA conformance test
/// `matmul_1x2x65538_i8xi8_outi32` has this shape): two parts and one add.
#[test]
fn a_raw_matmul_over_65538_channels_sums_two_parts() {
    let g = matmul("matmul_raw", [1, 2, 65538], [1, 65538, 1], None);
    assert_eq!(convs_and_adds(&g), (2, 1));
    check_sim("matmul_raw", &g, 1);
}

/// Two columns of B (copied transposed before the parts read it), zero points 0.
#[test]
fn a_matmul_over_65538_channels_with_two_columns() {
    let mut g = GraphBuilder::new("matmul_columns");
    let x = g.input("a", DType::Int8, [1, 1, 65538]);
    let y = g.input("b", DType::Int8, [1, 65538, 2]);
    let attrs = MatMulAttrs { a_zp: 0, b_zp: 0 };
    let z = g.op("long_matmul", Op::MatMul(attrs), &[x, y]);
    g.output(z);
    let g = g.finish().unwrap();
    check_sim("matmul_columns", &g, 1);
}

/// A constant B over 65540 channels, rescaled to i8: B is stored transposed and read as IFM2
/// by the parts (a 1x1 CONV with B as weights would read 65540 IFM channels).
#[test]
fn a_matmul_with_a_constant_b_over_65540_channels() {
    let mut g = GraphBuilder::new("matmul_const");
    let x = g.input("a", DType::Int8, [1, 2, 65540]);
    let bv: Vec<i8> = (0..2 * 65540).map(|i| ((i * 37) % 255) as i8).collect();
    let y = g.const_i8("b", [1, 65540, 2], &bv);
    let attrs = MatMulAttrs { a_zp: -1, b_zp: 2 };
    let acc = g.op("matmul", Op::MatMul(attrs), &[x, y]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 44, RescaleRounding::SingleRound);
    let z = g.op("rescale", Op::Rescale(r), &[acc]);
    g.output(z);
    let g = g.finish().unwrap();
    assert_eq!(convs_and_adds(&g), (2, 1));
    check_sim("matmul_const", &g, 1);
}

/// Three parts over 131075 channels, two batches, rescaled to i8 with double rounding and an
/// output zero point by the last add.
#[test]
fn a_rescaled_matmul_in_three_parts_per_batch() {
    let mut r =
        RescaleAttrs::per_tensor(DType::Int8, 1_400_000_000, 45, RescaleRounding::DoubleRound);
    r.output_zp = -5;
    let g = matmul("matmul_rescaled", [2, 1, 131075], [2, 131075, 1], Some(r));
    assert_eq!(convs_and_adds(&g), (6, 4));
    check_sim("matmul_rescaled", &g, 1);
}

/// A CONV2D with input weights (decision L34) whose im2col rows hold 2 x 32770 = 65540 taps:
/// the matrix product runs in two parts, the bias and RESCALE after the sum as before.
#[test]
fn a_conv_with_input_weights_over_65540_taps_sums_two_parts() {
    let mut b = GraphBuilder::new("conv_contraction");
    let x = b.input("x", DType::Int8, [1, 2, 3, 32770]);
    let w = b.input("w", DType::Int8, [2, 1, 2, 32770]);
    let bias = b.const_i32("b", [2], &[70_000, -3]);
    let attrs = ConvAttrs {
        input_zp: -4,
        weight_zp: 9,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, w, bias]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 42, RescaleRounding::SingleRound);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    let g = b.finish().unwrap();
    assert_eq!(convs_and_adds(&g), (2, 1));
    check_sim("conv_contraction", &g, 1);
}
