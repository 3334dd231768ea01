//! 16-bit feature maps (TFLite's int16x8 scheme), depth multipliers, large dilations,
//! TRANSPOSE_CONV2D and MATMUL through
//! `npuc::compile`: the simulator reproduces the reference interpreter byte for byte on every
//! configuration; what the NPU cannot reproduce exactly is rejected with a typed error.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_ir::*;

const SAMPLES: usize = 3;

/// A 16-bit-multiplier (scale32 = false, single rounding) RESCALE of a 48-bit accumulator.
fn rescale16(rng: &mut Rng, channels: usize, shift: i8, output_zp: i64) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int16,
        multiplier: (0..channels)
            .map(|_| rng.range(16384, 32767) as i32)
            .collect(),
        shift: (0..channels)
            .map(|_| shift + rng.range(0, 1) as i8)
            .collect(),
        scale32: false,
        rounding: RescaleRounding::SingleRound,
        per_channel: channels > 1,
        input_zp: 0,
        output_zp,
        input_unsigned: false,
        output_unsigned: false,
    }
}

fn bias48(rng: &mut Rng, n: usize, r: i64) -> Vec<i64> {
    (0..n).map(|_| rng.range(-r, r)).collect()
}

/// CONV2D 16x8: odd sizes, asymmetric padding, stride (1, 2), 48-bit bias, clamp.
fn conv16(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (7, 9, 5, 12);
    let mut b = GraphBuilder::new("conv16");
    let x = b.input("x", DType::Int16, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, 3, 3, ic], &rng.i8s(oc * 9 * ic));
    let bt = b.const_i48("b", [oc], &bias48(rng, oc, 1 << 24));
    let attrs = ConvAttrs {
        pad: [1, 1, 0, 2],
        stride: [1, 2],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let y = b.op("rescale", Op::Rescale(rescale16(rng, oc, 25, 0)), &[acc]);
    let z = b.op(
        "clamp",
        Op::Clamp(ClampAttrs {
            min: -1000,
            max: 30000,
        }),
        &[y],
    );
    b.output(z);
    b.finish().unwrap()
}

/// CONV2D 16x8 with constant weights whose raw 48-bit accumulator is the graph output (no
/// RESCALE): two images 5x6x7, kernel 3x2, 9 output channels, padding, stride (2, 1); the
/// bias `bias(builder, rng, channels)` makes.
fn conv16_acc_out(
    name: &str,
    rng: &mut Rng,
    bias: impl FnOnce(&mut GraphBuilder, &mut Rng, usize) -> TensorId,
) -> Graph {
    let (h, w, ic, oc) = (5, 6, 7, 9);
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int16, [2, h, w, ic]);
    let wt = b.const_i8("w", [oc, 3, 2, ic], &rng.i8s(oc * 6 * ic));
    let bt = bias(&mut b, rng, oc);
    let attrs = ConvAttrs {
        pad: [1, 0, 1, 1],
        stride: [2, 1],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    b.output(acc);
    b.finish().unwrap()
}

/// CONV2D 16x8 whose 48-bit accumulator is the graph output (no RESCALE): two images,
/// full-range inputs and a 48-bit bias, written raw as 8-byte words (decision L36).
fn conv16_raw_acc(rng: &mut Rng) -> Graph {
    conv16_acc_out("conv16_raw_acc", rng, |b, rng, oc| {
        b.const_i48("b", [oc], &bias48(rng, oc, 1 << 40))
    })
}

/// TRANSPOSE_CONV2D 16x8, stride 2, whose 48-bit accumulator is the graph output.
fn tconv16_raw_acc(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (3, 4, 5, 6);
    let mut b = GraphBuilder::new("tconv16_raw_acc");
    let x = b.input("x", DType::Int16, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, 2, 3, ic], &rng.i8s(oc * 6 * ic));
    let bt = b.const_i48("b", [oc], &bias48(rng, oc, 1 << 40));
    let attrs = TransposeConvAttrs {
        out_pad: [0, 1, -1, 0],
        stride: [2, 2],
        input_zp: 0,
        weight_zp: 0,
    };
    let acc = b.op("tconv", Op::TransposeConv2d(attrs), &[x, wt, bt]);
    b.output(acc);
    b.finish().unwrap()
}

/// DEPTHWISE_CONV2D 16x8, stride 2, dilation 3 in both directions (a 7x7 kernel with zeros).
fn depthwise16_dil3(rng: &mut Rng) -> Graph {
    let (h, w, c) = (11, 12, 6);
    let mut b = GraphBuilder::new("depthwise16_dil3");
    let x = b.input("x", DType::Int16, [1, h, w, c]);
    let wt = b.const_i8("w", [3, 3, c, 1], &rng.i8s(9 * c));
    let bt = b.const_i48("b", [c], &bias48(rng, c, 1 << 20));
    let attrs = ConvAttrs {
        pad: [3, 3, 2, 3],
        stride: [2, 2],
        dilation: [3, 3],
        ..ConvAttrs::default()
    };
    let acc = b.op("dw", Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    let y = b.op("rescale", Op::Rescale(rescale16(rng, c, 23, 0)), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// DEPTHWISE_CONV2D i8 with depth multiplier 3, stride 2 and dilation (1, 3).
fn depth_multiplier3(rng: &mut Rng) -> Graph {
    let (h, w, c, m) = (8, 11, 4, 3);
    let mut b = GraphBuilder::new("depth_multiplier3");
    let x = b.input("x", DType::Int8, [1, h, w, c]);
    let wt = b.const_i8("w", [3, 3, c, m], &rng.i8s(9 * c * m));
    let bias: Vec<i32> = (0..c * m).map(|_| rng.range(-3000, 3000) as i32).collect();
    let bt = b.const_i32("b", [c * m], &bias);
    let attrs = ConvAttrs {
        pad: [1, 1, 3, 3],
        stride: [2, 1],
        dilation: [1, 3],
        input_zp: 5,
        ..ConvAttrs::default()
    };
    let acc = b.op("dw", Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, c * m, 36, RescaleRounding::DoubleRound, -3);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// CONV2D i8 with dilation (4, 2): a 9x3 kernel, the 2 kept as hardware dilation.
fn conv_dil4(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (12, 9, 3, 8);
    let mut b = GraphBuilder::new("conv_dil4");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, 3, 2, ic], &rng.i8s(oc * 6 * ic));
    let bt = b.const_i32("b", [1], &[-77]);
    let attrs = ConvAttrs {
        pad: [4, 4, 1, 1],
        dilation: [4, 2],
        input_zp: -128,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, 1, 39, RescaleRounding::SingleRound, 0);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// The TFLite int16 FULLY_CONNECTED: a 48-bit accumulator widened exactly to i32, then a
/// 32-bit-multiplier per-channel RESCALE (single rounding) to i16 and a ReLU.
fn fc16(rng: &mut Rng, ic: usize, weights: Option<i8>) -> Graph {
    let oc = 10;
    let wv = match weights {
        Some(v) => vec![v; oc * ic],
        None => rng.i8s(oc * ic),
    };
    fc16_with(rng, ic, wv, None, 40, (0, 32767)).0
}

/// [`fc16`] with weights `wv` (`[oc, ic]`), an optional CLAMP of the input, the output
/// RESCALE's shift and the final clamp; with its bias and output RESCALE.
fn fc16_with(
    rng: &mut Rng,
    ic: usize,
    wv: Vec<i8>,
    in_clamp: Option<(i64, i64)>,
    shift: i8,
    clamp: (i64, i64),
) -> (Graph, Vec<i64>, RescaleAttrs) {
    let (n, oc) = (3, wv.len() / ic);
    let mut b = GraphBuilder::new("fc16");
    let mut x = b.input("x", DType::Int16, [n, ic]);
    if let Some((min, max)) = in_clamp {
        x = b.op("in_clamp", Op::Clamp(ClampAttrs { min, max }), &[x]);
    }
    let wt = b.const_i8("w", [oc, ic], &wv);
    let bias = bias48(rng, oc, 1 << 20);
    let bt = b.const_i48("b", [oc], &bias);
    let acc = b.op(
        "fc",
        Op::FullyConnected(FullyConnectedAttrs::default()),
        &[x, wt, bt],
    );
    let widen = RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![16384],
        shift: vec![14],
        scale32: false,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    };
    let a32 = b.op("widen", Op::Rescale(widen), &[acc]);
    let mut r = out_rescale(rng, oc, shift, RescaleRounding::SingleRound, 0);
    r.output_dtype = DType::Int16;
    let y = b.op("rescale", Op::Rescale(r.clone()), &[a32]);
    let (min, max) = clamp;
    let z = b.op("relu", Op::Clamp(ClampAttrs { min, max }), &[y]);
    b.output(z);
    (b.finish().unwrap(), bias, r)
}

fn in_rescale(m: i32, shift: i8) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![m],
        shift: vec![shift],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// The TFLite int16 ADD/SUB operand: exact widening, LOGICAL_LEFT_SHIFT 15, RESCALE.
fn operand16(b: &mut GraphBuilder, name: &str, x: TensorId, m: i32, shift: i8) -> TensorId {
    let w = b.op(
        &format!("{name}_widen"),
        Op::Rescale(in_rescale(1 << 30, 30)),
        &[x],
    );
    let k = b.const_i32(&format!("{name}_k"), [1, 1, 1, 1], &[15]);
    let s = b.op(&format!("{name}_shl"), Op::LogicalLeftShift, &[w, k]);
    let mut r = in_rescale(m, shift);
    r.rounding = RescaleRounding::DoubleRound;
    b.op(&format!("{name}_rescale"), Op::Rescale(r), &[s])
}

fn out16(m: i32, shift: i8) -> RescaleAttrs {
    let mut r = in_rescale(m, shift);
    r.output_dtype = DType::Int16;
    r.rounding = RescaleRounding::DoubleRound;
    r
}

/// ADD 16-bit in the TFLite scheme; the second operand broadcasts over height and width.
fn add16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("add16");
    let x = b.input("x", DType::Int16, [1, 5, 3, 7]);
    let y = b.input("y", DType::Int16, [1, 1, 1, 7]);
    let xa = operand16(&mut b, "x", x, 1_500_000_000, 32);
    let ya = operand16(&mut b, "y", y, 1_073_741_824, 31);
    let s = b.op("add", Op::Add, &[xa, ya]);
    let o = b.op("rescale_out", Op::Rescale(out16(1_300_000_000, 45)), &[s]);
    b.output(o);
    b.finish().unwrap()
}

/// SUB 16-bit with a clamp.
fn sub16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("sub16");
    let x = b.input("x", DType::Int16, [1, 4, 6, 3]);
    let y = b.input("y", DType::Int16, [1, 4, 6, 3]);
    let xa = operand16(&mut b, "x", x, 1_900_000_000, 31);
    let ya = operand16(&mut b, "y", y, 1_200_000_000, 31);
    let s = b.op("sub", Op::Sub, &[xa, ya]);
    let o = b.op("rescale_out", Op::Rescale(out16(1_700_000_000, 46)), &[s]);
    let c = b.op(
        "clamp",
        Op::Clamp(ClampAttrs {
            min: -20000,
            max: 25000,
        }),
        &[o],
    );
    b.output(c);
    b.finish().unwrap()
}

/// MUL 16-bit, the second operand broadcast over depth.
fn mul16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("mul16");
    let x = b.input("x", DType::Int16, [1, 3, 4, 9]);
    let y = b.input("y", DType::Int16, [1, 3, 4, 1]);
    let xa = b.op("x_widen", Op::Rescale(in_rescale(1 << 30, 30)), &[x]);
    let ya = b.op("y_widen", Op::Rescale(in_rescale(1 << 30, 30)), &[y]);
    let s = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[xa, ya]);
    let o = b.op("rescale_out", Op::Rescale(out16(1_073_774_592, 45)), &[s]);
    b.output(o);
    b.finish().unwrap()
}

/// MAX_POOL2D 16-bit 3x3 stride 2 with padding.
fn maxpool16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("maxpool16");
    let x = b.input("x", DType::Int16, [1, 9, 8, 5]);
    let attrs = PoolAttrs {
        kernel: [3, 3],
        stride: [2, 2],
        pad: [1, 1, 1, 0],
    };
    let y = b.op("maxpool", Op::MaxPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// AVG_POOL2D 16-bit 2x3 stride (2, 1) with padding (partial windows) and a clamp.
fn avgpool16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("avgpool16");
    let x = b.input("x", DType::Int16, [1, 7, 6, 4]);
    let attrs = AvgPool2dAttrs {
        kernel: [2, 3],
        stride: [2, 1],
        pad: [0, 1, 1, 1],
        input_zp: 0,
        output_zp: 0,
        rounding: AvgPoolRounding::Tflite,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    let z = b.op(
        "clamp",
        Op::Clamp(ClampAttrs {
            min: -32768,
            max: 1000,
        }),
        &[y],
    );
    b.output(z);
    b.finish().unwrap()
}

/// TRANSPOSE_CONV2D with stride `s`, kernel `k`, output padding/cropping `out_pad`.
fn tconv(
    rng: &mut Rng,
    dtype: DType,
    (h, w, ic, oc): (usize, usize, usize, usize),
    k: [usize; 2],
    s: usize,
    out_pad: [i64; 4],
) -> Graph {
    let mut b = GraphBuilder::new("tconv");
    let x = b.input("x", dtype, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, k[0], k[1], ic], &rng.i8s(oc * k[0] * k[1] * ic));
    let attrs = TransposeConvAttrs {
        out_pad,
        stride: [s, s],
        input_zp: if dtype == DType::Int8 { -7 } else { 0 },
        weight_zp: 0,
    };
    let (acc, r) = if dtype == DType::Int8 {
        let bias: Vec<i32> = (0..oc).map(|_| rng.range(-4000, 4000) as i32).collect();
        let bt = b.const_i32("b", [oc], &bias);
        let acc = b.op("tconv", Op::TransposeConv2d(attrs), &[x, wt, bt]);
        (
            acc,
            out_rescale(rng, oc, 37, RescaleRounding::DoubleRound, 9),
        )
    } else {
        let bt = b.const_i48("b", [oc], &bias48(rng, oc, 1 << 22));
        let acc = b.op("tconv", Op::TransposeConv2d(attrs), &[x, wt, bt]);
        (acc, rescale16(rng, oc, 24, 0))
    };
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// Stride 2, 3x4 kernel, asymmetric crop and pad.
fn tconv_s2_crop(rng: &mut Rng) -> Graph {
    tconv(rng, DType::Int8, (5, 4, 6, 7), [3, 4], 2, [-2, 1, 0, -3])
}

/// 16x8, stride 2, 2x3 kernel, output padding on top and right.
fn tconv16_s2(rng: &mut Rng) -> Graph {
    tconv(rng, DType::Int16, (3, 5, 4, 5), [2, 3], 2, [1, 0, -1, 2])
}

/// Stride 3 (output phases), 3x3 kernel, output padding above and left, crops below and right.
fn tconv_s3_phases(rng: &mut Rng) -> Graph {
    tconv(rng, DType::Int8, (4, 5, 3, 2), [3, 3], 3, [1, -2, 2, -1])
}

/// 16x8, stride 4 with a 2x3 kernel (smaller than the stride: phases without taps write the
/// bias alone).
fn tconv16_s4_phases(rng: &mut Rng) -> Graph {
    tconv(rng, DType::Int16, (3, 2, 4, 3), [2, 3], 4, [0, 1, -1, 2])
}

/// Stride 1, 5x5 kernel cropped to the input size ("same").
fn tconv_s1_same(rng: &mut Rng) -> Graph {
    tconv(rng, DType::Int8, (6, 7, 3, 4), [5, 5], 1, [-2, -2, -2, -2])
}

/// MATMUL `a x b` with broadcast batch dimensions, then a per-tensor RESCALE.
fn matmul(dtype: DType, a: &[usize], b: &[usize], zp: (i64, i64)) -> Graph {
    let mut g = GraphBuilder::new("matmul");
    let x = g.input("a", dtype, a.to_vec());
    let y = g.input("b", dtype, b.to_vec());
    let acc = g.op(
        "matmul",
        Op::MatMul(MatMulAttrs {
            a_zp: zp.0,
            b_zp: zp.1,
        }),
        &[x, y],
    );
    let r = if dtype == DType::Int8 {
        let mut r = in_rescale(1_400_000_000, 40);
        r.output_dtype = DType::Int8;
        r.rounding = RescaleRounding::DoubleRound;
        r.output_zp = -5;
        r
    } else {
        RescaleAttrs {
            multiplier: vec![23456],
            shift: vec![32],
            scale32: false,
            rounding: RescaleRounding::SingleRound,
            ..out16(0, 0)
        }
    };
    let o = g.op("rescale", Op::Rescale(r), &[acc]);
    g.output(o);
    g.finish().unwrap()
}

/// i8, batch 2x3 with the first operand broadcast over the second batch axis.
fn matmul_bcast(_rng: &mut Rng) -> Graph {
    matmul(DType::Int8, &[2, 1, 5, 7], &[2, 3, 7, 6], (3, -4))
}

/// i16, batch 2.
fn matmul16(_rng: &mut Rng) -> Graph {
    matmul(DType::Int16, &[2, 4, 9], &[2, 9, 3], (0, 0))
}

/// A column vector result (W == 1: no transpose copy needed) and a single input channel.
fn matmul_vector(_rng: &mut Rng) -> Graph {
    matmul(DType::Int8, &[1, 6, 10], &[1, 10, 1], (-1, 2))
}

/// Outer product (C == 1).
fn matmul_outer(_rng: &mut Rng) -> Graph {
    matmul(DType::Int8, &[3, 5, 1], &[3, 1, 4], (0, 7))
}

macro_rules! int16_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() {
            let g = super::$name(&mut Rng(0x1234_5678_9abc_def1));
            check_sim(stringify!($name), &g, SAMPLES);
        })*
    };
}

mod sim {
    use super::*;
    int16_tests!(
        conv16,
        conv16_raw_acc,
        tconv16_raw_acc,
        depthwise16_dil3,
        depth_multiplier3,
        conv_dil4,
        add16,
        sub16,
        mul16,
        maxpool16,
        avgpool16,
        tconv_s2_crop,
        tconv16_s2,
        tconv_s1_same,
        tconv_s3_phases,
        tconv16_s4_phases,
        matmul_bcast,
        matmul16,
        matmul_vector,
        matmul_outer,
    );
}

#[test]
fn fc16_whose_accumulator_fits_i32_runs_on_the_32_bit_accumulator() {
    let g = fc16(&mut Rng(3), 40, None);
    check_sim("fc16", &g, SAMPLES);
}

#[test]
fn fc16_whose_accumulator_can_exceed_i32_saturates_it_on_its_own() {
    // 32768 * 127 * 600 > 2^31: the IR saturates the widened accumulator, the 32-bit NPU
    // accumulator would wrap, and the 48-bit one only takes 15-bit scales: the accumulator
    // is written raw (b64), saturated by elementwise operations, then rescaled (L27).
    let g = fc16(&mut Rng(3), 600, Some(127));
    check_sim("fc16_600", &g, SAMPLES);
}

#[test]
fn fc16_accumulators_beyond_i32_saturate() {
    // The IR leaves a widening beyond i32 undefined (TOSA's apply_scale_16 REQUIREs an i32
    // result); TFLite's 64-bit path saturates the output instead. The NPU result is the
    // saturated accumulator rescaled: channel 0 (weights all 127) above 2^31 for the rows of
    // 20000 and 32767, channel 1 (all -127) below -2^31, channel 2 (930 weights 127) on both
    // sides of 2^31, channel 3 random. The rescale maps 2^31 to about 2^14, so a wrapped or
    // an unsaturated accumulator gives other outputs.
    use npuc_backend::arch::Accelerator;
    let (ic, oc) = (1000, 4);
    let mut rng = Rng(17);
    let mut wv = vec![127i8; ic];
    wv.extend(vec![-127i8; ic]);
    wv.extend((0..ic).map(|i| if i < 930 { 127 } else { 0 }));
    wv.extend(rng.i8s(ic));
    let (g, bias, r) = fc16_with(&mut rng, ic, wv.clone(), None, 48, (-32768, 32767));
    let rows: [Vec<i16>; 3] = [
        vec![20000; ic],
        vec![32767; ic],
        (0..ic).map(|_| rng.range(16000, 20000) as i16).collect(),
    ];
    let mut expected = Vec::new();
    for x in &rows {
        for c in 0..oc {
            let acc: i64 = bias[c]
                + x.iter()
                    .zip(&wv[c * ic..(c + 1) * ic])
                    .map(|(&x, &w)| i64::from(x) * i64::from(w))
                    .sum::<i64>();
            let v = acc.clamp(i32::MIN.into(), i32::MAX.into());
            let (m, s) = (i64::from(r.multiplier[c]), i32::from(r.shift[c]));
            let y =
                ((i128::from(v) * i128::from(m) + (1i128 << (s - 1))) >> s).clamp(-32768, 32767);
            expected.extend((y as i16).to_le_bytes());
        }
    }
    let input: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for accel in Accelerator::ALL {
        for (sys, mode) in [
            ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
            ("Ethos_U85_SYS_Flash_High", "Sram_Only"),
        ] {
            let m = compile(&g, &options_in(accel, sys, mode)).unwrap();
            let got = simulate(&m, std::slice::from_ref(&input));
            assert_eq!(got[0], expected, "{accel} {mode}");
        }
    }
}

/// Kernel operations of `g` compiled for the default configuration as (POOL?, OFM transpose).
fn kernels(g: &Graph) -> Vec<(bool, npuc_backend::isa::ActivationTranspose)> {
    use npuc_backend::isa::{decode_stream, Command as C, RegisterFile};
    let m = compile(g, &Options::default()).unwrap();
    let mut regs = RegisterFile::default();
    let mut out = Vec::new();
    for d in decode_stream(&m.payload.command_words().unwrap()).unwrap() {
        regs.apply(&d.command);
        match d.command {
            C::OpPool(_) => out.push((true, regs.ofm_precision.activation_transpose)),
            C::OpConv(_) | C::OpElementwise(_) | C::OpDepthwise(_) => {
                out.push((false, regs.ofm_precision.activation_transpose))
            }
            _ => {}
        }
    }
    out
}

#[test]
fn matmul_transposes_b_with_one_ofm_transposing_copy_per_matrix() {
    use npuc_backend::isa::ActivationTranspose as T;
    // B of 2 batches, each [9 x 3]: one 1x1 POOL writing B^T with the OFM transpose HCW,
    // then the CONV, per batch (docs/decisions.md L9); bit-exact on every configuration.
    let g = matmul(DType::Int16, &[2, 4, 9], &[2, 9, 3], (0, 0));
    let pooled = [(true, T::Hcw), (false, T::Hwc)];
    assert_eq!(kernels(&g), [pooled, pooled].concat());
    check_sim("matmul16", &g, SAMPLES);
    // Above 128 columns the OFM transpose's block limit rules it out: a strided copy (a
    // POOL reading B with byte strides, writing plainly).
    let g = matmul(DType::Int8, &[1, 2, 3], &[1, 3, 130], (0, 0));
    assert_eq!(kernels(&g), [(true, T::Hwc), (false, T::Hwc)]);
    check_sim("matmul_wide", &g, SAMPLES);
}

// 16x8 convolutions whose weights and/or 48-bit bias are graph inputs (decisions L50, L51).

/// Inputs for a graph of i16 data, i8 weights and i48 biases: full-range data and weights;
/// biases that exercise every byte's carry (0, -1, 255, 256, -65536, ...) and reach close
/// to the i48 range (|b| up to 2^47 - 2^42, far beyond what the accumulator adds).
fn inputs48(g: &Graph, rng: &mut Rng) -> Vec<TensorValue> {
    const EDGES: [i64; 8] = [
        0,
        -1,
        255,
        256,
        -256,
        -65536,
        (1 << 47) - (1 << 42),
        -(1 << 47) + (1 << 42),
    ];
    g.inputs()
        .iter()
        .map(|&t| {
            let ty = &g.tensor(t).unwrap().ty;
            let n = ty.shape.num_elements().unwrap();
            let data = match ty.dtype {
                DType::Int16 => TensorData::I16(rng.i16s(n)),
                DType::Int48 => TensorData::I48(
                    (0..n)
                        .map(|i| match EDGES.get(i) {
                            Some(&e) => e,
                            None => rng.range(-(1 << 46), 1 << 46),
                        })
                        .collect(),
                ),
                _ => TensorData::I8(rng.i8s(n)),
            };
            TensorValue::new(ty.shape.clone(), data).unwrap()
        })
        .collect()
}

/// [`check_sim`] on inputs of [`inputs48`] (i48 data as 8-byte words, decision L33).
fn check_sim48(name: &str, g: &Graph) {
    check_sim_with(name, g, SAMPLES, inputs48);
}

/// CONV2D 16x8 with constant weights and a bias that is a graph input: two images, padding,
/// stride (2, 1); the raw i48 accumulator is the output.
fn conv16_input_bias(rng: &mut Rng) -> Graph {
    conv16_acc_out("conv16_input_bias", rng, |b, _, oc| {
        b.input("b", DType::Int48, [oc])
    })
}

/// CONV2D 16x8 whose weights (with a weight zero point, TOSA allows one on i8 weights) and
/// bias are graph inputs: padding, stride, dilation, two images.
fn conv16_input_weights_and_bias(_rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (7, 6, 5, 4);
    let mut b = GraphBuilder::new("conv16_input_weights_and_bias");
    let x = b.input("x", DType::Int16, [2, h, w, ic]);
    let wt = b.input("w", DType::Int8, [oc, 3, 2, ic]);
    let bt = b.input("b", DType::Int48, [oc]);
    let attrs = ConvAttrs {
        pad: [1, 2, 0, 1],
        stride: [2, 1],
        dilation: [1, 2],
        input_zp: 0,
        weight_zp: -19,
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    b.output(acc);
    b.finish().unwrap()
}

/// DEPTHWISE_CONV2D 16x8 with input weights (depth multiplier 2, weight zero point 77) and
/// a constant bias.
fn depthwise16_input_weights(rng: &mut Rng) -> Graph {
    let (h, w, c, m) = (6, 7, 3, 2);
    let mut b = GraphBuilder::new("depthwise16_input_weights");
    let x = b.input("x", DType::Int16, [1, h, w, c]);
    let wt = b.input("w", DType::Int8, [3, 3, c, m]);
    let bt = b.const_i48("b", [c * m], &bias48(rng, c * m, 1 << 40));
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 0],
        stride: [1, 2],
        input_zp: 0,
        weight_zp: 77,
        ..ConvAttrs::default()
    };
    let acc = b.op("dw", Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    b.output(acc);
    b.finish().unwrap()
}

/// TRANSPOSE_CONV2D 16x8 stride 2 with input weights and an input bias.
fn tconv16_input_weights_and_bias(_rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (3, 4, 5, 6);
    let mut b = GraphBuilder::new("tconv16_input_weights_and_bias");
    let x = b.input("x", DType::Int16, [1, h, w, ic]);
    let wt = b.input("w", DType::Int8, [oc, 2, 3, ic]);
    let bt = b.input("b", DType::Int48, [oc]);
    let attrs = TransposeConvAttrs {
        out_pad: [0, 1, -1, 0],
        stride: [2, 2],
        input_zp: 0,
        weight_zp: 0,
    };
    let acc = b.op("tconv", Op::TransposeConv2d(attrs), &[x, wt, bt]);
    b.output(acc);
    b.finish().unwrap()
}

#[test]
fn a_16x8_conv_adds_an_input_bias_on_the_48_bit_accumulator() {
    check_sim48("conv16_input_bias", &conv16_input_bias(&mut Rng(11)));
}

#[test]
fn a_16x8_conv_with_input_weights_and_bias_runs_as_an_i16_matrix_product() {
    let g = conv16_input_weights_and_bias(&mut Rng(12));
    check_sim48("conv16_input_weights_and_bias", &g);
}

#[test]
fn a_16x8_depthwise_with_input_weights_subtracts_the_weight_zero_point() {
    let g = depthwise16_input_weights(&mut Rng(13));
    check_sim48("depthwise16_input_weights", &g);
}

#[test]
fn a_16x8_transpose_conv_with_input_weights_and_bias() {
    let g = tconv16_input_weights_and_bias(&mut Rng(14));
    check_sim48("tconv16_input_weights_and_bias", &g);
}
