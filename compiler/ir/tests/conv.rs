//! Convolution-like operators: raw accumulators `Σ (in - in_zp) * (w - w_zp) + bias`.
//! TOSA §2.3.4 CONV2D, §2.3.5 CONV3D, §2.3.7 DEPTHWISE_CONV2D, §2.3.15 TRANSPOSE_CONV2D, §2.3.9 MATMUL;
//! FULLY_CONNECTED as in TFLite. Padding taps contribute 0 *after* zero-point subtraction.

mod common;
use common::*;
use npuc_ir::*;

/// Input 1..9 as a 3x3 single-channel image; with input_zp = 1 the values are 0..8:
/// ```text
/// 0 1 2
/// 3 4 5
/// 6 7 8
/// ```
fn image3x3() -> TensorValue {
    i8v(&[1, 3, 3, 1], &[1, 2, 3, 4, 5, 6, 7, 8, 9])
}

/// 2x2 kernel [[1, 2], [3, 4]] in OHWI.
fn kernel2x2() -> TensorValue {
    i8v(&[1, 2, 2, 1], &[1, 2, 3, 4])
}

fn conv(a: ConvAttrs) -> Op {
    Op::Conv2d(ConvAttrs { input_zp: 1, ..a })
}

#[test]
fn conv2d_valid() {
    // out(0,0) = 0*1 + 1*2 + 3*3 + 4*4 = 27, + bias 10 = 37
    // out(0,1) = 1*1 + 2*2 + 4*3 + 5*4 = 37 -> 47; out(1,0) = 57 -> 67; out(1,1) = 67 -> 77
    let (dt, shape, v) = eval(
        conv(ConvAttrs::default()),
        &[image3x3(), kernel2x2(), i32v(&[1], &[10])],
    );
    assert_eq!((dt, shape), (DType::Int32, vec![1, 2, 2, 1]));
    assert_eq!(v, vec![37, 47, 67, 77]);
}

#[test]
fn conv2d_padding_contributes_zero_after_zero_point() {
    // pad top = left = 1: out(0,0) sees only in(0,0) under w(1,1): 0*4 = 0 -> 10
    // out(0,1) = in(0,0)*3 + in(0,1)*4 = 4 -> 14; out(0,2) = 1*3 + 2*4 = 11 -> 21
    // out(1,0) = in(0,0)*2 + in(1,0)*4 = 12 -> 22; out(2,0) = 3*2 + 6*4 = 30 -> 40
    let a = ConvAttrs {
        pad: [1, 0, 1, 0],
        ..Default::default()
    };
    let v = eval_v(conv(a), &[image3x3(), kernel2x2(), i32v(&[1], &[10])]);
    assert_eq!(v, vec![10, 14, 21, 22, 37, 47, 40, 67, 77]);
}

#[test]
fn conv2d_dilation_and_stride() {
    // dilation 2: the 2x2 kernel taps the corners: 0*1 + 2*2 + 6*3 + 8*4 = 54 -> 64
    let a = ConvAttrs {
        dilation: [2, 2],
        ..Default::default()
    };
    let v = eval_v(conv(a), &[image3x3(), kernel2x2(), i32v(&[1], &[10])]);
    assert_eq!(v, vec![64]);
    // stride 2 on 3x3 with a 2x2 kernel: floor((3 - 2) / 2) + 1 = 1 output; the last row and
    // column are never read (TOSA would require exact division; see validate::window_out).
    let a = ConvAttrs {
        stride: [2, 2],
        ..Default::default()
    };
    let (_, shape, v) = eval(conv(a), &[image3x3(), kernel2x2(), i32v(&[1], &[10])]);
    assert_eq!((shape, v), (vec![1, 1, 1, 1], vec![37]));
}

#[test]
fn conv2d_channels_bias_and_weight_zero_point() {
    // in [3, -2]; w = [[1, 1], [2, -1]] (OC=2, IC=2): [3 - 2, 6 + 2] = [1, 8]; bias [1] = 100
    let x = i8v(&[1, 1, 1, 2], &[3, -2]);
    let w = i8v(&[2, 1, 1, 2], &[1, 1, 2, -1]);
    let b = i32v(&[1], &[100]);
    let v = eval_v(
        Op::Conv2d(ConvAttrs::default()),
        &[x.clone(), w.clone(), b.clone()],
    );
    assert_eq!(v, vec![101, 108]);
    // weight_zp 1: w - 1 = [[0, 0], [1, -2]] -> [0, 3 + 4] = [0, 7]
    let a = ConvAttrs {
        weight_zp: 1,
        ..Default::default()
    };
    assert_eq!(eval_v(Op::Conv2d(a), &[x, w, b]), vec![100, 107]);
    // per-channel bias
    let v = eval_v(
        Op::Conv2d(ConvAttrs::default()),
        &[
            i8v(&[1, 1, 1, 2], &[3, -2]),
            i8v(&[2, 1, 1, 2], &[1, 1, 2, -1]),
            i32v(&[2], &[-1, -8]),
        ],
    );
    assert_eq!(v, vec![0, 0]);
}

#[test]
fn conv2d_int16_accumulates_in_int48() {
    // 32767 * 127 + 2^40 = 4161409 + 1099511627776
    let (dt, _, v) = eval(
        Op::Conv2d(ConvAttrs::default()),
        &[
            i16v(&[1, 1, 1, 1], &[32767]),
            i8v(&[1, 1, 1, 1], &[127]),
            i48v(&[1], &[1 << 40]),
        ],
    );
    assert_eq!(dt, DType::Int48);
    assert_eq!(v, vec![1_099_515_789_185]);
}

#[test]
fn conv2d_accumulator_overflow_is_undefined() {
    undefined(
        Op::Conv2d(ConvAttrs::default()),
        &[
            i8v(&[1, 1, 1, 1], &[1]),
            i8v(&[1, 1, 1, 1], &[1]),
            i32v(&[1], &[i32::MAX.into()]),
        ],
    );
}

#[test]
fn depthwise_conv2d() {
    // input 2x2, C = 2: channel 0 = [1,2,3,4], channel 1 = [5,6,7,8] (NHWC interleaved)
    // weights [KH,KW,C,M=2]: (c0,m0) = 1, (c0,m1) = 1,2,3,4, (c1,m0) = -1, (c1,m1) = 0
    // out channel c*M + m: [1+2+3+4, 1+4+9+16, -(5+6+7+8), 0] = [10, 30, -26, 0]
    let x = i8v(&[1, 2, 2, 2], &[1, 5, 2, 6, 3, 7, 4, 8]);
    let w = i8v(
        &[2, 2, 2, 2],
        &[1, 1, -1, 0, 1, 2, -1, 0, 1, 3, -1, 0, 1, 4, -1, 0],
    );
    let (_, shape, v) = eval(
        Op::DepthwiseConv2d(ConvAttrs::default()),
        &[x, w, i32v(&[4], &[0, 0, 0, 1])],
    );
    assert_eq!(shape, vec![1, 1, 1, 4]);
    assert_eq!(v, vec![10, 30, -26, 1]);
}

#[test]
fn transpose_conv2d_stride2_scatters_kernel_copies() {
    // out(2*iy + ky, 2*ix + kx) = in(iy, ix) * w(ky, kx), in = [[1,2],[3,4]], w = [[1,2],[3,4]]
    let x = i8v(&[1, 2, 2, 1], &[1, 2, 3, 4]);
    let op = |out_pad| {
        Op::TransposeConv2d(TransposeConvAttrs {
            out_pad,
            stride: [2, 2],
            ..Default::default()
        })
    };
    let (_, shape, v) = eval(op([0; 4]), &[x.clone(), kernel2x2(), i32v(&[1], &[0])]);
    assert_eq!(shape, vec![1, 4, 4, 1]); // (2 - 1) * 2 + 2
    #[rustfmt::skip]
    assert_eq!(v, vec![
        1, 2, 2, 4,
        3, 4, 6, 8,
        3, 6, 4, 8,
        9, 12, 12, 16,
    ]);
    // Negative out_pad crops: top = left = -1 drops the first row and column.
    let (_, shape, v) = eval(op([-1, 0, -1, 0]), &[x, kernel2x2(), i32v(&[1], &[0])]);
    assert_eq!(shape, vec![1, 3, 3, 1]);
    assert_eq!(v, vec![4, 6, 8, 6, 4, 8, 12, 12, 16]);
}

#[test]
fn transpose_conv2d_stride1_overlaps() {
    // all-ones kernel, stride 1: each output sums the inputs it overlaps
    let x = i8v(&[1, 2, 2, 1], &[1, 2, 3, 4]);
    let v = eval_v(
        Op::TransposeConv2d(TransposeConvAttrs::default()),
        &[x, i8v(&[1, 2, 2, 1], &[1, 1, 1, 1]), i32v(&[1], &[0])],
    );
    assert_eq!(v, vec![1, 3, 2, 4, 10, 6, 3, 7, 4]);
}

#[test]
fn fully_connected() {
    // [[1,2,3],[-1,0,1]] x [[1,0,-1],[2,2,2]]^T + [5,-5] = [[-2+5, 12-5], [-2+5, 0-5]]
    let x = i8v(&[2, 3], &[1, 2, 3, -1, 0, 1]);
    let w = i8v(&[2, 3], &[1, 0, -1, 2, 2, 2]);
    let b = i32v(&[2], &[5, -5]);
    let op = |input_zp| {
        Op::FullyConnected(FullyConnectedAttrs {
            input_zp,
            weight_zp: 0,
        })
    };
    assert_eq!(
        eval_v(op(0), &[x.clone(), w.clone(), b.clone()]),
        vec![3, 7, 3, -5]
    );
    // input_zp 1: x - 1 = [[0,1,2],[-2,-1,0]] -> [[-2+5, 6-5], [-2+5, -6-5]]
    assert_eq!(eval_v(op(1), &[x, w, b]), vec![3, 1, 3, -11]);
}

#[test]
fn fully_connected_overflow_is_undefined() {
    undefined(
        Op::FullyConnected(FullyConnectedAttrs::default()),
        &[
            i8v(&[1, 1], &[-128]),
            i8v(&[1, 1], &[-128]),
            i32v(&[1], &[i32::MAX.into()]),
        ],
    );
}

#[test]
fn matmul() {
    // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
    let a = i8v(&[1, 2, 3], &[1, 2, 3, 4, 5, 6]);
    let b = i8v(&[1, 3, 2], &[1, 0, 0, 1, 1, 1]);
    let (dt, shape, v) = eval(Op::MatMul(MatMulAttrs::default()), &[a.clone(), b.clone()]);
    assert_eq!(
        (dt, shape, v),
        (DType::Int32, vec![1, 2, 2], vec![4, 5, 10, 11])
    );
    // a_zp 1: [[0,1,2],[3,4,5]] x b = [[2,3],[8,9]]
    let op = Op::MatMul(MatMulAttrs { a_zp: 1, b_zp: 0 });
    assert_eq!(eval_v(op, &[a, b]), vec![2, 3, 8, 9]);
}

#[test]
fn matmul_broadcasts_batch() {
    // a: 2 batches of [1,2] rows [1,2] and [3,4]; b: 1 batch [[5],[6]] -> [17, 39]
    let a = i8v(&[2, 1, 2], &[1, 2, 3, 4]);
    let b = i8v(&[1, 2, 1], &[5, 6]);
    let (_, shape, v) = eval(Op::MatMul(MatMulAttrs::default()), &[a, b]);
    assert_eq!((shape, v), (vec![2, 1, 1], vec![17, 39]));
    // rank 2 works too
    let v = eval_v(
        Op::MatMul(MatMulAttrs::default()),
        &[i8v(&[1, 2], &[1, 2]), i8v(&[2, 1], &[3, 4])],
    );
    assert_eq!(v, vec![11]);
}

#[test]
fn matmul_int16_is_int48() {
    let (dt, _, v) = eval(
        Op::MatMul(MatMulAttrs::default()),
        &[
            i16v(&[1, 1, 2], &[-32768, -32768]),
            i16v(&[1, 2, 1], &[-32768, -32768]),
        ],
    );
    assert_eq!((dt, v), (DType::Int48, vec![1 << 31]));
}

#[test]
fn conv3d_sums_depth_taps_with_padding_stride_and_zero_points() {
    // input [1, D=3, 1, 1, 1] = [1, 2, 3] with input_zp 1 -> [0, 1, 2]; kernel depth 2 with
    // weight_zp -1: w = [1, 2] -> [2, 3]; pad front 1, stride 2 along depth:
    // out(0) = pad*2 + in(0)*3 = 0; out(1) = in(1)*2 + in(2)*3 = 2 + 6 = 8; bias 5
    let x = i8v(&[1, 3, 1, 1, 1], &[1, 2, 3]);
    let w = i8v(&[1, 2, 1, 1, 1], &[1, 2]);
    let a = Conv3dAttrs {
        pad: [1, 0, 0, 0, 0, 0],
        stride: [2, 1, 1],
        dilation: [1, 1, 1],
        input_zp: 1,
        weight_zp: -1,
    };
    let (dt, shape, v) = eval(Op::Conv3d(a), &[x, w, i32v(&[1], &[5])]);
    assert_eq!((dt, shape), (DType::Int32, vec![1, 2, 1, 1, 1]));
    assert_eq!(v, vec![5, 13]);
}

#[test]
fn conv3d_with_unit_depth_is_conv2d() {
    // the 2x2 kernel over the 3x3 image of conv2d_valid, as one depth slice
    let x = i8v(&[1, 1, 3, 3, 1], &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let w = i8v(&[1, 1, 2, 2, 1], &[1, 2, 3, 4]);
    let a = Conv3dAttrs {
        pad: [0; 6],
        stride: [1; 3],
        dilation: [1; 3],
        input_zp: 1,
        weight_zp: 0,
    };
    let v = eval_v(Op::Conv3d(a), &[x, w, i32v(&[1], &[10])]);
    assert_eq!(v, vec![37, 47, 67, 77]);
}
