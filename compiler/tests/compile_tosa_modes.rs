//! TOSA operator modes that compile through graph rewrites before lowering
//! (`compile::lower::{broadcast_tile, argmax16, reduce_axis}`) or widened lowerings: operands
//! broadcasting in more than three alternating axis groups (tiled), CAST bool <-> i32, ARGMAX
//! of i16 (ties and all-negative lines), REDUCE_SUM over every axis; bit-exact against the
//! reference interpreter on all five configurations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

fn shr(b: &mut GraphBuilder, name: &str, x: TensorId, dtype: DType, k: i64) -> TensorId {
    let rank = b.graph().tensor(x).unwrap().ty.shape.0.len();
    let data = match dtype {
        DType::Int8 => TensorData::I8(vec![k as i8]),
        DType::Int16 => TensorData::I16(vec![k as i16]),
        _ => TensorData::I32(vec![k as i32]),
    };
    let c = b.constant(&format!("{name}_k"), vec![1; rank], data);
    let attrs = ArithmeticRightShiftAttrs { round: false };
    b.op(name, Op::ArithmeticRightShift(attrs), &[x, c])
}

fn alternating_broadcasts(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("alternating_broadcasts");
    // five alternating groups (TOSA ADD i32 rank 5)
    let a = b.input("a", DType::Int32, [2, 3, 1, 4, 5]);
    let c = b.input("c", DType::Int32, [1, 3, 2, 1, 5]);
    // halved: the sums stay inside i32
    let a = shr(&mut b, "a2", a, DType::Int32, 1);
    let c = shr(&mut b, "c2", c, DType::Int32, 1);
    let y = b.op("add", Op::Add, &[a, c]);
    b.output(y);
    let y = b.op("max", Op::Maximum, &[c, a]);
    b.output(y);
    // bool, batch 2, four groups
    let p = b.input("p", DType::Bool, [2, 3, 4, 5]);
    let q = b.input("q", DType::Bool, [1, 3, 1, 5]);
    let y = b.op("and", Op::LogicalAnd, &[p, q]);
    b.output(y);
    let y = b.op("select_bool", Op::Select, &[p, q, p]);
    b.output(y);
    // SELECT with all three operands broadcasting differently
    let cond = b.input("cond", DType::Bool, [1, 4, 1, 6]);
    for (k, dt) in [DType::Int8, DType::Int16, DType::Int32]
        .into_iter()
        .enumerate()
    {
        let x = b.input(&format!("x{k}"), dt, [2, 4, 5, 6]);
        let z = b.input(&format!("z{k}"), dt, [1, 1, 5, 1]);
        let y = b.op(&format!("select{k}"), Op::Select, &[cond, x, z]);
        b.output(y);
        let y = b.op(&format!("select_swapped{k}"), Op::Select, &[cond, z, x]);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn operands_broadcasting_in_alternating_groups_are_tiled() {
    check("alternating_broadcasts", alternating_broadcasts);
}

fn casts_bool_i32(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("casts_bool_i32");
    let p = b.input("p", DType::Bool, [2, 3, 7]);
    let y = b.op(
        "bool_to_i32",
        Op::Cast(CastAttrs { to: DType::Int32 }),
        &[p],
    );
    b.output(y);
    // i32 values -2..=1 (x >> 30): zeros are frequent
    let x = b.input("x", DType::Int32, [2, 3, 7]);
    let small = shr(&mut b, "small", x, DType::Int32, 30);
    let y = b.op(
        "i32_to_bool",
        Op::Cast(CastAttrs { to: DType::Bool }),
        &[small],
    );
    b.output(y);
    let y = b.op(
        "full_to_bool",
        Op::Cast(CastAttrs { to: DType::Bool }),
        &[x],
    );
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn cast_between_bool_and_i32() {
    check("casts_bool_i32", casts_bool_i32);
}

fn argmax_i16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("argmax_i16");
    // values -4..=3 (x >> 13): ties, all-negative lines and zero maxima are frequent
    let x = b.input("x", DType::Int16, [4, 6, 9]);
    let small = shr(&mut b, "small", x, DType::Int16, 13);
    for axis in 0..3 {
        let y = b.op(
            &format!("argmax{axis}"),
            Op::ArgMax(AxisAttrs { axis }),
            &[small],
        );
        b.output(y);
    }
    let y = b.op("argmax_full", Op::ArgMax(AxisAttrs { axis: 2 }), &[x]);
    b.output(y);
    let v = b.input("v", DType::Int16, [2, 3, 4, 5]);
    let small = shr(&mut b, "small4", v, DType::Int16, 14);
    for axis in 0..4 {
        let y = b.op(
            &format!("argmax4_{axis}"),
            Op::ArgMax(AxisAttrs { axis }),
            &[small],
        );
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn argmax_of_i16_takes_the_first_maximum() {
    check("argmax_i16", argmax_i16);
}

fn reduce_sum_axes(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("reduce_sum_axes");
    let x = b.input("x", DType::Int32, [2, 3, 4, 5]);
    // x >> 4 keeps the sums of up to 5 elements inside i32
    let x = shr(&mut b, "x16", x, DType::Int32, 4);
    for axis in 0..4 {
        let y = b.op(
            &format!("sum{axis}"),
            Op::ReduceSum(AxisAttrs { axis }),
            &[x],
        );
        b.output(y);
    }
    let z = b.input("z", DType::Int32, [3, 2, 7, 2, 3]);
    let z = shr(&mut b, "z16", z, DType::Int32, 4);
    for axis in [0, 2, 3] {
        let y = b.op(
            &format!("sum5_{axis}"),
            Op::ReduceSum(AxisAttrs { axis }),
            &[z],
        );
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn reduce_sum_over_any_axis() {
    check("reduce_sum_axes", reduce_sum_axes);
}

/// `(multiplier, shift)` of a positive scale for a 32-bit (or, `bits` 15, 16-bit) multiplier.
fn scale_of(x: f64, bits: u32) -> (i32, i8) {
    let mut shift = 0i32;
    let mut m = x;
    while m < (1u64 << (bits - 1)) as f64 && shift < 62 {
        m *= 2.0;
        shift += 1;
    }
    (
        (m.round() as i64).min((1i64 << bits) - 1) as i32,
        shift as i8,
    )
}

struct Mode {
    out: DType,
    scales: Vec<f64>,
    scale32: bool,
    double: bool,
    zps: (i64, i64),
    unsigned: (bool, bool),
}

fn rescale(b: &mut GraphBuilder, name: &str, x: TensorId, m: &Mode) -> TensorId {
    let bits = if m.scale32 { 31 } else { 15 };
    let (multiplier, shift) = m.scales.iter().map(|&s| scale_of(s, bits)).unzip();
    let attrs = RescaleAttrs {
        output_dtype: m.out,
        multiplier,
        shift,
        scale32: m.scale32,
        rounding: if m.double {
            RescaleRounding::DoubleRound
        } else {
            RescaleRounding::SingleRound
        },
        per_channel: m.scales.len() > 1,
        input_zp: m.zps.0,
        output_zp: m.zps.1,
        input_unsigned: m.unsigned.0,
        output_unsigned: m.unsigned.1,
    };
    b.op(name, Op::Rescale(attrs), &[x])
}

fn mode(out: DType, scales: &[f64], zps: (i64, i64), unsigned: (bool, bool)) -> Mode {
    Mode {
        out,
        scales: scales.to_vec(),
        scale32: true,
        double: false,
        zps,
        unsigned,
    }
}

fn rescale_modes(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("rescale_modes");
    let ch = [0.31, 0.77, 1.3, 2.9];
    let wide: Vec<f64> = ch.iter().map(|v| v * 300.0).collect();
    let x8 = b.input("x8", DType::Int8, [2, 3, 5, 4]);
    let x16 = b.input("x16", DType::Int16, [1, 3, 5, 4]);
    let x32 = b.input("x32", DType::Int32, [3, 5, 4]);
    let (i8_, i16_, i32_) = (DType::Int8, DType::Int16, DType::Int32);
    let cases: Vec<(TensorId, Mode)> = vec![
        // u8 in (zero points 200 and 0), per channel and per tensor, double rounding
        (
            x8,
            Mode {
                double: true,
                ..mode(i8_, &ch, (200, -7), (true, false))
            },
        ),
        (x8, mode(i16_, &[300.0], (0, 0), (true, false))),
        (x8, mode(i16_, &wide, (255, 0), (true, false))),
        // u8 / u16 out: zero points 128 / 32768 and 0; scales that saturate at both ends
        (x8, mode(i8_, &[1.7], (11, 128), (false, true))),
        (x8, mode(i8_, &ch, (-3, 0), (false, true))),
        (x8, mode(i16_, &[400.0], (5, 32768), (false, true))),
        (
            x8,
            Mode {
                double: true,
                ..mode(i16_, &wide, (0, 0), (false, true))
            },
        ),
        // u16 in (zero points 32768 and 0) to every type
        (x16, mode(i8_, &[1.0 / 250.0], (32768, 0), (true, false))),
        (x16, mode(i8_, &[1.0 / 300.0], (0, 100), (true, false))),
        (x16, mode(i16_, &[0.5], (0, 0), (true, false))),
        (x16, mode(i16_, &ch, (32768, 0), (true, false))),
        (x16, mode(i16_, &[1.3], (0, 32768), (false, true))),
        // i16 per channel, 16-bit multipliers
        (
            x16,
            Mode {
                scale32: false,
                ..mode(i16_, &ch, (0, 0), (false, false))
            },
        ),
        (
            x16,
            Mode {
                double: true,
                ..mode(i8_, &[0.003, 0.01, 0.02, 0.05], (0, -5), (false, false))
            },
        ),
        // i32 per channel (shifts above 31)
        (
            x32,
            Mode {
                double: true,
                ..mode(i8_, &[3e-8, 7e-9, 1e-8, 2e-8], (0, 9), (false, false))
            },
        ),
        (
            x32,
            mode(i32_, &[0.12, 0.2, 0.3, 0.49], (0, 0), (false, false)),
        ),
        (
            x32,
            mode(i16_, &[3e-6, 5e-6, 1e-5, 2e-5], (0, 0), (false, false)),
        ),
    ];
    for (k, (x, m)) in cases.iter().enumerate() {
        let y = rescale(&mut b, &format!("rescale{k}"), *x, m);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn rescale_in_every_signedness_and_per_channel_mode() {
    check("rescale_modes", rescale_modes);
}

fn bilinear_sums(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("bilinear_sums");
    let x = b.input("x", DType::Int8, [1, 5, 6, 9]);
    let x2 = b.input("x2", DType::Int8, [2, 3, 3, 2]);
    // (input, scale, offset, border): even scales whose common powers of two the rescaled
    // form divides out, fractional scales, negative offsets, a x16 axis, a batch of 2
    let cases = [
        (x, [4, 2, 4, 2], [-1, -1], [1, 1]),
        (x, [2, 1, 2, 1], [0, 0], [0, 0]),
        (x, [10, 3, 5, 3], [1, 2], [0, 1]),
        (x2, [11, 2, 16, 1], [-5, 0], [1, 0]),
    ];
    for (k, (input, scale, offset, border)) in cases.into_iter().enumerate() {
        let attrs = ResizeAttrs {
            mode: ResizeMode::Bilinear,
            scale,
            offset,
            border,
        };
        let y = b.op(&format!("resize{k}"), Op::Resize(attrs), &[input]);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn bilinear_resize_writes_its_i32_sums() {
    check("bilinear_sums", bilinear_sums);
}

/// A 16-bit MATMUL whose 48-bit accumulators (70-long rows of full-range values: up to
/// 2^36, far beyond i32) feed three RESCALEs, per channel and per tensor, to i8, i16 and i32:
/// written raw as 8-byte words, each RESCALE reads them back as its initial accumulator.
fn matmul_i48_in_memory(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("matmul_i48_in_memory");
    let x = b.input("a", DType::Int16, [2, 3, 70]);
    let y = b.input("b", DType::Int16, [2, 70, 4]);
    let acc = b.op(
        "matmul",
        Op::MatMul(MatMulAttrs { a_zp: 0, b_zp: 0 }),
        &[x, y],
    );
    let ch = [0.5, 0.7, 1.3, 2.0];
    let scale16 = |out, scales: Vec<f64>| Mode {
        scale32: false,
        ..mode(out, &scales, (0, 0), (false, false))
    };
    let cases = [
        scale16(
            DType::Int8,
            ch.iter().map(|v| v / f64::from(1 << 28)).collect(),
        ),
        scale16(DType::Int16, vec![1.0 / f64::from(1 << 20)]),
        scale16(DType::Int32, ch.iter().map(|v| v / 128.0).collect()),
    ];
    for (k, m) in cases.iter().enumerate() {
        let o = rescale(&mut b, &format!("rescale{k}"), acc, m);
        b.output(o);
    }
    b.finish().unwrap()
}

#[test]
fn matmul_i48_accumulators_feeding_several_rescales_live_in_memory() {
    check("matmul_i48_in_memory", matmul_i48_in_memory);
}

/// Bilinear RESIZEs of i16 data whose i48 sums (up to 2^15 * 24 * 2^16 with the NPU's
/// `acc << 16`) are rescaled by non-power-of-two scales (1/24, 1/3, 1/15, per-channel) or read
/// by two RESCALEs: written raw as 8-byte words, each RESCALE reads them back.
fn bilinear_i16_sums_in_memory(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("bilinear_i16_sums_in_memory");
    let x = b.input("x", DType::Int16, [1, 4, 5, 3]);
    let x2 = b.input("x2", DType::Int16, [2, 3, 3, 2]);
    let cases = [
        (x, [4, 2, 6, 2], [-1, -2], [1, 2], vec![1.0 / 24.0]),
        (x, [1, 3, 3, 7], [0, 1], [0, -3], vec![1.0 / 3.0, 0.2, 0.1]),
        (x2, [3, 3, 5, 5], [2, -4], [0, 4], vec![1.0 / 15.0]),
    ];
    for (k, (input, scale, offset, border, scales)) in cases.into_iter().enumerate() {
        let attrs = ResizeAttrs {
            mode: ResizeMode::Bilinear,
            scale,
            offset,
            border,
        };
        let sum = b.op(&format!("resize{k}"), Op::Resize(attrs), &[input]);
        let m = Mode {
            scale32: false,
            ..mode(DType::Int16, &scales, (0, 0), (false, false))
        };
        let y = rescale(&mut b, &format!("rescale{k}"), sum, &m);
        b.output(y);
        if k == 0 {
            // A second reader of the same sums: i32 output.
            let m = Mode {
                scale32: false,
                ..mode(DType::Int32, &[0.75], (0, 0), (false, false))
            };
            let y = rescale(&mut b, "rescale0_i32", sum, &m);
            b.output(y);
        }
    }
    b.finish().unwrap()
}

#[test]
fn bilinear_i16_sums_rescaled_by_any_scale_live_in_memory() {
    check("bilinear_i16_sums_in_memory", bilinear_i16_sums_in_memory);
}

/// CONV2Ds whose weights are a graph input (the weight decoder takes constants only): im2col
/// copies, a MATMUL-form CONV with the weights from IFM2 and zero points on both operands,
/// then the bias and per-channel or per-tensor output rescale on the i32 accumulators.
fn conv2d_input_weights(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("conv2d_input_weights");
    let x = b.input("x", DType::Int8, [1, 9, 8, 5]);
    let w = b.input("w", DType::Int8, [6, 3, 2, 5]);
    let w1 = b.input("w1", DType::Int8, [3, 2, 2, 5]);
    let bias = b.const_i32("bias", [6], &[-3000, 0, 17, 2500, -1, 900]);
    let bias1 = b.const_i32("bias1", [3], &[40, -40, 7]);
    let cases = [
        (
            w,
            bias,
            [2, 1],
            [1, 2],
            (-7, 4),
            vec![0.0011, 0.002, 0.0007, 0.0015, 0.001, 0.0009],
        ),
        (w1, bias1, [1, 1], [1, 1], (3, -2), vec![0.003]),
    ];
    for (k, (wt, bt, stride, dilation, (input_zp, weight_zp), scales)) in
        cases.into_iter().enumerate()
    {
        let attrs = ConvAttrs {
            pad: [0; 4],
            stride,
            dilation,
            input_zp,
            weight_zp,
        };
        let acc = b.op(&format!("conv{k}"), Op::Conv2d(attrs), &[x, wt, bt]);
        let m = Mode {
            double: true,
            ..mode(DType::Int8, &scales, (0, -3), (false, false))
        };
        let y = rescale(&mut b, &format!("rescale{k}"), acc, &m);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn conv2d_with_input_weights_runs_as_a_matrix_product() {
    check("conv2d_input_weights", conv2d_input_weights);
}
