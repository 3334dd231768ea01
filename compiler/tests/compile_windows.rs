//! Window operations beyond the hardware's window limits and over batches (decisions L2, L6,
//! L23, L24, L25): strides above 3, dilations above 2 with strides, kernels above 64x64 and
//! above the pooling limits run as parts summed (maximised) through the accumulator
//! (ACC_FORMAT.acc_input = ifm2); batched convolutions and pools run per image; average pooling
//! with a stride above 3 runs at a divisor of the stride and is subsampled; transposed
//! convolutions with other strides than 1x1 and 2x2 run as output phases; MATMUL with a
//! constant B is a 1x1 CONV (int8) or reads B transposed from read-only data (int16). Every
//! graph is compiled for all five configurations and compared with the reference interpreter on
//! seeded random inputs (`compile_common::check`).

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// A per-channel rescale for `k` accumulated products of full-range i8 (or i16) inputs and
/// weights, giving outputs of a useful spread.
fn rescale_for(rng: &mut Rng, oc: usize, k: usize, i16_in: bool) -> RescaleAttrs {
    let spread = if i16_in { 19000.0 } else { 74.0 } * 74.0 * (k as f64).sqrt();
    let target = if i16_in { 8000.0 } else { 40.0 };
    if i16_in {
        let shift = (15.0 + (spread / target).log2()).round() as i8;
        RescaleAttrs {
            output_dtype: DType::Int16,
            multiplier: (0..oc).map(|_| rng.range(16384, 32767) as i32).collect(),
            shift: vec![shift; oc],
            scale32: false,
            rounding: RescaleRounding::SingleRound,
            per_channel: oc > 1,
            input_zp: 0,
            output_zp: 0,
            input_unsigned: false,
            output_unsigned: false,
        }
    } else {
        let shift = (30.5 + (spread / target).log2()).round() as i8;
        out_rescale(rng, oc, shift, RescaleRounding::DoubleRound, -5)
    }
}

/// A CONV2D (or, with `mult`, a DEPTHWISE_CONV2D of that multiplier) on `[n, h, w, c]`, then its
/// rescale and a clamp.
#[allow(clippy::too_many_arguments)]
fn conv(
    rng: &mut Rng,
    dtype: DType,
    [n, h, w, c]: [usize; 4],
    oc: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    pad: [usize; 4],
    mult: Option<usize>,
) -> Graph {
    let i16_in = dtype == DType::Int16;
    let mut b = GraphBuilder::new("conv");
    let x = b.input("x", dtype, [n, h, w, c]);
    let (kh, kw) = (kernel[0], kernel[1]);
    let (op, wt, oc, k) = match mult {
        None => {
            let wt = b.const_i8("w", [oc, kh, kw, c], &rng.i8s(oc * kh * kw * c));
            (Op::Conv2d as fn(ConvAttrs) -> Op, wt, oc, kh * kw * c)
        }
        Some(m) => {
            let wt = b.const_i8("w", [kh, kw, c, m], &rng.i8s(kh * kw * c * m));
            (
                Op::DepthwiseConv2d as fn(ConvAttrs) -> Op,
                wt,
                c * m,
                kh * kw,
            )
        }
    };
    let bt = if i16_in {
        let v: Vec<i64> = (0..oc).map(|_| rng.range(-1 << 24, 1 << 24)).collect();
        b.const_i48("b", [oc], &v)
    } else {
        let v: Vec<i32> = (0..oc).map(|_| rng.range(-20000, 20000) as i32).collect();
        b.const_i32("b", [oc], &v)
    };
    let attrs = ConvAttrs {
        pad,
        stride,
        dilation,
        input_zp: if i16_in { 0 } else { 9 },
        weight_zp: 0,
    };
    let acc = b.op("conv", op(attrs), &[x, wt, bt]);
    let y = b.op(
        "rescale",
        Op::Rescale(rescale_for(rng, oc, k, i16_in)),
        &[acc],
    );
    let z = b.op(
        "clamp",
        Op::Clamp(ClampAttrs {
            min: -100,
            max: if i16_in { 30000 } else { 120 },
        }),
        &[y],
    );
    b.output(z);
    b.finish().unwrap()
}

/// CONV2D 5x3, stride 4x5, padding on every side: four row phases and five column phases.
fn conv_stride_4x5(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [1, 13, 17, 3],
        6,
        [5, 3],
        [4, 5],
        [1, 1],
        [2, 1, 1, 1],
        None,
    )
}

/// CONV2D 16x8, stride 6 (hardware stride 3 over every other row), dilation 3 (taps in both
/// phases): the partial sums are b64 (48-bit accumulators).
fn conv16_stride_6_dilation_3(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int16,
        [1, 15, 14, 4],
        5,
        [3, 2],
        [6, 6],
        [3, 3],
        [1, 1, 0, 1],
        None,
    )
}

/// CONV2D 70x66 (both sides above 64): four kernel tiles.
fn conv_kernel_70x66(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [1, 72, 69, 2],
        3,
        [70, 66],
        [1, 2],
        [1, 1],
        [0; 4],
        None,
    )
}

/// CONV2D over a batch of 3 with a 3x3 kernel (one operation per image).
fn conv_batch_3(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [3, 6, 7, 5],
        4,
        [3, 3],
        [2, 1],
        [1, 1],
        [1, 1, 1, 1],
        None,
    )
}

/// DEPTHWISE_CONV2D 16x8 over a batch of 2, stride 4x1.
fn depthwise16_batch_2_stride_4(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int16,
        [2, 11, 6, 7],
        7,
        [4, 3],
        [4, 1],
        [1, 1],
        [1, 2, 1, 1],
        Some(1),
    )
}

/// DEPTHWISE_CONV2D, depth multiplier 3, stride 5, dilation 3.
fn depthwise_mult_3_stride_5(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [1, 16, 12, 2],
        6,
        [3, 3],
        [5, 5],
        [3, 3],
        [3, 2, 3, 2],
        Some(3),
    )
}

fn max_pool(
    dtype: DType,
    nhwc: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
) -> Graph {
    let mut b = GraphBuilder::new("maxpool");
    let x = b.input("x", dtype, nhwc);
    let y = b.op(
        "maxpool",
        Op::MaxPool2d(PoolAttrs {
            kernel,
            stride,
            pad,
        }),
        &[x],
    );
    b.output(y);
    b.finish().unwrap()
}

/// MAX_POOL2D 3x5, stride 4x6, SAME-like padding.
fn max_pool_stride_4x6(_rng: &mut Rng) -> Graph {
    max_pool(DType::Int8, [1, 17, 20, 3], [3, 5], [4, 6], [1, 1, 2, 2])
}

/// MAX_POOL2D 16-bit, 300x260 (above 65536 taps): split into 256-tap runs, over a batch of 2.
fn max_pool16_300x260_batch_2(_rng: &mut Rng) -> Graph {
    max_pool(DType::Int16, [2, 301, 262, 2], [300, 260], [1, 2], [0; 4])
}

fn avg_pool(nhwc: [usize; 4], kernel: [usize; 2], stride: [usize; 2], pad: [usize; 4]) -> Graph {
    let mut b = GraphBuilder::new("avgpool");
    let x = b.input("x", DType::Int8, nhwc);
    let y = b.op(
        "avgpool",
        Op::AvgPool2d(AvgPool2dAttrs {
            kernel,
            stride,
            pad,
            input_zp: 3,
            output_zp: -2,
            rounding: AvgPoolRounding::Tflite,
        }),
        &[x],
    );
    b.output(y);
    b.finish().unwrap()
}

/// AVG_POOL2D 5x3, stride 4x5 with padding: the NPU's average pooling at stride 2x1,
/// subsampled by 2x5 (the counts of non-padding taps stay the window's).
fn avg_pool_stride_4x5_padded(_rng: &mut Rng) -> Graph {
    avg_pool([1, 14, 23, 4], [5, 3], [4, 5], [2, 2, 1, 1])
}

/// AVG_POOL2D 10x9 stride 5 without padding, over a batch of 2: a POOL sum (L6, L52)
/// split into stride phases.
fn avg_pool_10x9_stride_5_batch_2(_rng: &mut Rng) -> Graph {
    avg_pool([2, 21, 19, 3], [10, 9], [5, 5], [0; 4])
}

/// MATMUL with a constant B and a broadcast batch.
fn matmul_const(dtype: DType, da: &[usize], db: &[usize], rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("matmul_const");
    let a = b.input("a", dtype, da.to_vec());
    let n: usize = db.iter().product();
    let bt = if dtype == DType::Int8 {
        b.const_i8("b", db.to_vec(), &rng.i8s(n))
    } else {
        b.const_i16("b", db.to_vec(), &rng.i16s(n))
    };
    let zp = if dtype == DType::Int8 {
        (-3, 11)
    } else {
        (0, 0)
    };
    let acc = b.op(
        "matmul",
        Op::MatMul(MatMulAttrs {
            a_zp: zp.0,
            b_zp: zp.1,
        }),
        &[a, bt],
    );
    let k = da[da.len() - 1];
    let r = if dtype == DType::Int8 {
        let mut r = rescale_for(rng, 1, k, false);
        r.per_channel = false;
        r
    } else {
        let mut r = rescale_for(rng, 1, k, true);
        r.shift[0] += 8;
        r.per_channel = false;
        r
    };
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

fn matmul_const_b_folded(rng: &mut Rng) -> Graph {
    matmul_const(DType::Int8, &[3, 5, 7], &[1, 7, 4], rng)
}

fn matmul_const_b_per_batch(rng: &mut Rng) -> Graph {
    matmul_const(DType::Int8, &[2, 1, 4, 6], &[2, 3, 6, 5], rng)
}

fn matmul16_const_b(rng: &mut Rng) -> Graph {
    matmul_const(DType::Int16, &[2, 4, 6], &[2, 6, 3], rng)
}

/// CONV2D 16x8 with 300 output channels, stride 5x1 and a 2x14 kernel: its parts are deep
/// enough to be cut into OFM-depth slices (whose weights move into their encoded streams, so
/// only the IFM2's b64 type tells an accumulator input from a matrix operand).
fn conv16_stride_5_deep(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int16,
        [1, 11, 67, 8],
        300,
        [2, 14],
        [5, 1],
        [1, 1],
        [0, 1, 6, 7],
        None,
    )
}

/// DEPTHWISE_CONV2D 77x10 with dilation 4 on an 11x8 input ("SAME": 147 rows of padding
/// before): the taps that read only padding are left out, which leaves a padding the hardware
/// takes.
fn depthwise_77x10_dilation_4_on_11x8(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [1, 11, 8, 11],
        11,
        [77, 10],
        [2, 9],
        [4, 1],
        [147, 147, 1, 1],
        Some(1),
    )
}

/// DEPTHWISE_CONV2D 16x8, depth multiplier 4 on 229 channels, 10x8 kernel with dilation 4x3
/// and stride 1x6: a DEPTHWISE of the input's channels repeated (decision L28; as a CONV with
/// zero weights it took gigabytes to compile).
fn depthwise16_mult_4_on_229_channels(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int16,
        [1, 39, 25, 229],
        916,
        [10, 8],
        [1, 6],
        [4, 3],
        [0, 0, 0, 0],
        Some(4),
    )
}

/// DEPTHWISE_CONV2D, depth multiplier 2 on 9 channels, batch 3, 1x1 kernel (the batch folds
/// into the rows) and a 3x3 one with padding per image.
fn depthwise_mult_2_batch_3(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [3, 7, 5, 9],
        18,
        [3, 3],
        [1, 1],
        [1, 1],
        [1, 1, 1, 1],
        Some(2),
    )
}

fn depthwise_mult_3_1x1_batch_2(rng: &mut Rng) -> Graph {
    conv(
        rng,
        DType::Int8,
        [2, 6, 4, 10],
        30,
        [1, 1],
        [1, 1],
        [1, 1],
        [0, 0, 0, 0],
        Some(3),
    )
}

/// Compiles `build`'s graph for every configuration in four memory systems (fast memory with
/// mid and low bandwidth DRAM behind it, SRAM only, shared SRAM) and verifies three random
/// samples on the simulator.
fn check_modes(name: &str, build: fn(&mut Rng) -> Graph) {
    use npuc::verify::{verify_graph, VerifyOptions};
    use npuc_backend::arch::Accelerator;
    let g = build(&mut Rng(0x1234_5678_9abc_def1));
    let modes = [
        ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
        ("Ethos_U85_SYS_DRAM_Low", "Dedicated_Sram_384KB"),
        ("Ethos_U85_SYS_Flash_High", "Sram_Only"),
        ("Ethos_U85_SYS_DRAM_Low", "Shared_Sram"),
    ];
    for accel in Accelerator::ALL {
        for (sys, mode) in modes {
            let m = npuc::compile(&g, &options_in(accel, sys, mode))
                .unwrap_or_else(|e| panic!("{name} on {accel} {mode}: {e}"));
            let opts = VerifyOptions {
                samples: 3,
                seed: 11,
            };
            let r = verify_graph(&g, &m, &opts)
                .unwrap_or_else(|e| panic!("{name} on {accel} {mode}: {e}"));
            assert!(
                r.is_bit_exact(),
                "{name} on {accel} {mode}: {}",
                r.describe()
            );
        }
    }
}

macro_rules! window_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check_modes(stringify!($name), super::$name); })*
    };
}

mod sim {
    use super::*;
    window_tests!(
        conv_stride_4x5,
        conv16_stride_6_dilation_3,
        conv_kernel_70x66,
        conv_batch_3,
        depthwise16_batch_2_stride_4,
        depthwise_mult_3_stride_5,
        max_pool_stride_4x6,
        max_pool16_300x260_batch_2,
        avg_pool_stride_4x5_padded,
        avg_pool_10x9_stride_5_batch_2,
        matmul_const_b_folded,
        matmul_const_b_per_batch,
        matmul16_const_b,
        conv16_stride_5_deep,
        depthwise_77x10_dilation_4_on_11x8,
        depthwise16_mult_4_on_229_channels,
        depthwise_mult_2_batch_3,
        depthwise_mult_3_1x1_batch_2,
    );
}
