//! Operators the TOSA conformance suite showed refused that now compile (issue 16 B): padded
//! average pools above 8x8 (decision L39), CONCATs of boolean or computed constants (L40),
//! constant outputs whose element count has a prime factor above 65536 (L41), box copies that
//! need the two longest axes as height and width (L42), and dilated kernels beyond 64x64 that
//! split into parts instead of expanding (L44). Each graph is compiled for all five
//! configurations and compared with the reference interpreter on seeded random inputs. A PAD
//! whose fill would exceed the per-operation bound is refused at lowering, naming it (L43);
//! a convolution with input weights and such a padding pads in its im2col copy (L45).

mod compile_common;

use compile_common::*;
use npuc_ir::*;

#[allow(clippy::too_many_arguments)]
fn avgpool(
    name: &str,
    dtype: DType,
    shape: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    rounding: AvgPoolRounding,
    zp: (i64, i64),
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", dtype, shape);
    let attrs = AvgPool2dAttrs {
        kernel,
        stride,
        pad,
        input_zp: zp.0,
        output_zp: zp.1,
        rounding,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// 9x9 windows with padding 8 on every side over an 11x13 input: every output row and
/// column has its own count (1 to 81 taps), TOSA rounding, zero points. Fails if a
/// rectangle's division takes another rectangle's count.
#[test]
fn padded_avgpool_9x9_divides_each_window_by_its_own_count() {
    let g = avgpool(
        "avgpool_9x9_pad8",
        DType::Int8,
        [1, 11, 13, 5],
        [9, 9],
        [1, 1],
        [8, 8, 8, 8],
        AvgPoolRounding::Tosa,
        (-3, 5),
    );
    check_sim("avgpool_9x9_pad8", &g, 2);
}

/// 10x4 windows, strides 2x3, uneven padding, batch 2, TFLite rounding (halves away from
/// zero).
#[test]
fn padded_avgpool_10x4_strided_batched_tflite() {
    let g = avgpool(
        "avgpool_10x4_pad",
        DType::Int8,
        [2, 14, 9, 6],
        [10, 4],
        [2, 3],
        [3, 4, 1, 2],
        AvgPoolRounding::Tflite,
        (0, 0),
    );
    check_sim("avgpool_10x4_pad", &g, 2);
}

/// A 9x2 window with stride 7x1 (a stride above 3 splits the sums into parts) on i16.
#[test]
fn padded_avgpool16_9x2_stride_7() {
    let g = avgpool(
        "avgpool16_9x2_pad",
        DType::Int16,
        [1, 30, 10, 3],
        [9, 2],
        [7, 1],
        [1, 1, 1, 1],
        AvgPoolRounding::Tosa,
        (0, 0),
    );
    check_sim("avgpool16_9x2_pad", &g, 2);
}

/// CONCAT of a graph input with a boolean constant and with a RESHAPE of an i8 constant.
#[test]
fn concat_with_boolean_and_computed_constants() {
    let mut b = GraphBuilder::new("concat_consts");
    let x = b.input("x", DType::Bool, [2, 3, 4]);
    let bits: Vec<bool> = (0..2 * 5 * 4).map(|i| i % 3 == 0).collect();
    let k = b.constant("k", [2, 5, 4], TensorData::Bool(bits));
    let y = b.op("concat", Op::Concat(AxisAttrs { axis: 1 }), &[x, k]);
    b.output(y);
    let z = b.input("z", DType::Int8, [3, 7]);
    let v: Vec<i8> = (0..21).map(|i| (i * 11 - 100) as i8).collect();
    let c = b.const_i8("c", [7, 3], &v);
    let r = b.op(
        "reshape",
        Op::Reshape(ReshapeAttrs {
            shape: Shape::from([3, 7]),
        }),
        &[c],
    );
    let w = b.op("concat2", Op::Concat(AxisAttrs { axis: 0 }), &[r, z]);
    b.output(w);
    let g = b.finish().unwrap();
    check_sim("concat_consts", &g, 2);
}

/// A constant output of 3 x 65537 elements (no height, width and depth of at most 65536
/// holds them): copied as bytes, 65536 to a row.
#[test]
fn a_constant_output_with_a_large_prime_factor_is_copied_as_bytes() {
    let mut b = GraphBuilder::new("const_prime");
    let n = 3 * 65537;
    let v: Vec<i16> = (0..n).map(|i| (i * 7919 % 65536) as u16 as i16).collect();
    let c = b.const_i16("c", [3, 65537], &v);
    b.output(c);
    let g = b.finish().unwrap();
    check_sim("const_prime", &g, 1);
}

/// A CONV2D with input weights (L34) whose im2col copy has 4198 output rows, 3 output
/// columns and 3 kernel rows with no two merging: with the innermost two as height and width
/// it needs 4198 copies (above the 4096 allowed); with the longest two, 3.
#[test]
fn im2col_uses_the_longest_axes_as_height_and_width() {
    let mut b = GraphBuilder::new("im2col_long");
    let x = b.input("x", DType::Int8, [1, 4200, 5, 1]);
    let w = b.input("w", DType::Int8, [1, 3, 1, 1]);
    let bias = b.const_i32("b", [1], &[7]);
    let attrs = ConvAttrs {
        stride: [1, 2],
        ..ConvAttrs::default()
    };
    let y = b.op("conv", Op::Conv2d(attrs), &[x, w, bias]);
    b.output(y);
    let g = b.finish().unwrap();
    check_sim("im2col_long", &g, 1);
}

/// A 3x3 kernel with dilation 33x40 spans 67x81 taps (beyond 64x64 on both sides): it keeps
/// its dilation and splits into parts.
#[test]
fn a_dilated_kernel_beyond_64x64_splits_into_parts() {
    let mut b = GraphBuilder::new("dilated_split");
    let x = b.input("x", DType::Int8, [1, 70, 85, 3]);
    let wv: Vec<i8> = (0..4 * 9 * 3).map(|i| ((i * 37) % 255) as i8).collect();
    let w = b.const_i8("w", [4, 3, 3, 3], &wv);
    let bias = b.const_i32("b", [4], &[100, -50, 3, 0]);
    let attrs = ConvAttrs {
        pad: [33, 33, 40, 40],
        dilation: [33, 40],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, w, bias]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 38, RescaleRounding::DoubleRound);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    let g = b.finish().unwrap();
    check_sim("dilated_split", &g, 1);
}

/// A 70x2 kernel with dilation 1x100 (beyond 64x64, so split) whose column taps read only
/// padding for the one output column: the result is the bias alone, rescaled.
#[test]
fn a_split_window_whose_taps_all_read_padding_gives_the_bias() {
    let mut b = GraphBuilder::new("padding_only");
    let x = b.input("x", DType::Int8, [1, 3, 3, 2]);
    let wv: Vec<i8> = (0..2 * 70 * 2 * 2)
        .map(|i| ((i * 37) % 255) as i8)
        .collect();
    let w = b.const_i8("w", [2, 70, 2, 2], &wv);
    let bias = b.const_i32("b", [2], &[1000, -700]);
    let attrs = ConvAttrs {
        pad: [0, 67, 101, 0],
        stride: [1, 4],
        dilation: [1, 100],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, w, bias]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 34, RescaleRounding::DoubleRound);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    let g = b.finish().unwrap();
    check_sim("padding_only", &g, 1);
}

/// A CONV2D with input weights, stride 4000x3000 and paddings of thousands (the padded input,
/// 8004 x 6006 x 2, is beyond what a PAD may write): the im2col copy applies the padding,
/// filling with the input zero point and copying the taps inside the input.
#[test]
fn a_hugely_padded_conv_with_input_weights_pads_in_its_im2col() {
    let mut b = GraphBuilder::new("im2col_padded");
    let x = b.input("x", DType::Int8, [1, 5, 7, 2]);
    let w = b.input("w", DType::Int8, [3, 3, 4, 2]);
    let bias = b.const_i32("b", [3], &[5, -9, 1000]);
    let attrs = ConvAttrs {
        pad: [4000, 3999, 3000, 2999],
        stride: [4000, 3000],
        dilation: [1, 2],
        input_zp: -7,
        weight_zp: 3,
    };
    let y = b.op("conv", Op::Conv2d(attrs), &[x, w, bias]);
    b.output(y);
    let g = b.finish().unwrap();
    check_sim("im2col_padded", &g, 2);
}

/// A PAD of an 8x8 tensor to 12,000 x 8,000 (96 M elements): refused at lowering, naming the
/// PAD, not by the validator.
#[test]
fn a_pad_beyond_the_per_operation_bound_is_refused_naming_it() {
    let mut b = GraphBuilder::new("huge_pad");
    let x = b.input("x", DType::Int8, [1, 8, 8, 1]);
    let attrs = PadAttrs {
        padding: vec![[0, 0], [5996, 5996], [3996, 3996], [0, 0]],
        pad_const: 0,
    };
    let y = b.op("pad", Op::Pad(attrs), &[x]);
    b.output(y);
    let g = b.finish().unwrap();
    let e = npuc::compile::compile(&g, &options(npuc_backend::arch::Accelerator::U85_256))
        .unwrap_err()
        .to_string();
    assert!(e.contains("pad (PAD)"), "{e}");
    assert!(e.contains("padded tensor of 96000000 elements"), "{e}");
}
