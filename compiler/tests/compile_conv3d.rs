//! CONV3D (TOSA §2.3.5) compiles as one batched CONV2D whose input channels are the depth taps
//! (`compile::lower::conv3d`), bit-exact against the reference interpreter on all five
//! configurations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// i8 CONV3D with every depth feature at once: padding front and back (filled with the input
/// zero point), depth stride 3 (one SLICE per output depth), depth dilation 2, batch 2, a weight
/// zero point, then a per-channel RESCALE.
fn conv3d_depth_stride_dilation(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("conv3d_depth_stride_dilation");
    let x = b.input("x", DType::Int8, [2, 7, 5, 4, 3]);
    let (oc, kd, kh, kw, ic) = (5, 3, 2, 3, 3);
    let w = b.const_i8("w", [oc, kd, kh, kw, ic], &rng.i8s(oc * kd * kh * kw * ic));
    let bias: Vec<i32> = (0..oc).map(|_| rng.range(-3000, 3000) as i32).collect();
    let bias = b.const_i32("bias", [oc], &bias);
    let a = Conv3dAttrs {
        pad: [2, 1, 1, 0, 1, 1],
        stride: [3, 1, 2],
        dilation: [2, 1, 1],
        input_zp: -7,
        weight_zp: 3,
    };
    let acc = b.op("conv3d", Op::Conv3d(a), &[x, w, bias]);
    let y = b.op(
        "rescale",
        Op::Rescale(out_rescale(rng, oc, 19, RescaleRounding::DoubleRound, 4)),
        &[acc],
    );
    b.output(y);
    b.finish().unwrap()
}

/// i16 x i8 CONV3D into i48, depth stride 1 (one SLICE per depth tap), then a per-tensor
/// RESCALE (16-bit multiplier, as TOSA requires for i48) to i16.
fn conv3d_i16(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("conv3d_i16");
    let x = b.input("x", DType::Int16, [1, 4, 3, 3, 2]);
    let (oc, kd, kh, kw, ic) = (3, 2, 3, 3, 2);
    let w = b.const_i8("w", [oc, kd, kh, kw, ic], &rng.i8s(oc * kd * kh * kw * ic));
    let bias = b.const_i48("bias", [oc], &[1 << 20, -5, 77]);
    let a = Conv3dAttrs {
        pad: [0, 0, 1, 1, 1, 1],
        stride: [1, 1, 1],
        dilation: [1, 1, 1],
        input_zp: 0,
        weight_zp: 0,
    };
    let acc = b.op("conv3d", Op::Conv3d(a), &[x, w, bias]);
    let mut r = RescaleAttrs::per_tensor(DType::Int16, 23_000, 26, RescaleRounding::SingleRound);
    r.scale32 = false;
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn conv3d_with_depth_padding_stride_and_dilation() {
    check("conv3d_depth_stride_dilation", conv3d_depth_stride_dilation);
}

#[test]
fn conv3d_i16_into_i48() {
    check("conv3d_i16", conv3d_i16);
}
