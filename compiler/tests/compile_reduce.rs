//! Reductions through `npuc::compile`: MEAN as a unit-weight depthwise / convolution and
//! REDUCE_MAX / REDUCE_MIN as a max / min pool, ARGMAX as an argmax pool,
//! RESIZE as NPU_OP_RESIZE, large
//! AVG_POOL2D windows as a POOL sum divided by OFM_SCALE (L6, L52), bit-exact against the reference interpreter on
//! all five configurations.

mod compile_common;

use compile_common::*;

macro_rules! reduce_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name), compile_common::$name); })*
    };
}

reduce_tests!(
    mean_hw,
    mean_h,
    mean_c,
    mean_hwc,
    reduce_max_c,
    reduce_min_hw,
    reduce_max_hwc,
    reduce_min_h3,
    avgpool_25x5_tflite,
    avgpool_10x4_s2_tflite,
    avgpool_16x16_tflite,
    avgpool_9x12_tosa,
    avgpool_8x8_s8,
    argmax_c,
    argmax_w,
    argmax_h,
    argmax_1d,
    resize_bilinear_x2,
    resize_bilinear_odd,
    resize_nearest_x3,
    resize_bilinear_tosa,
);

/// ARGMAX on the inputs where the argmax pool's -2^31 start value matters: windows of only
/// -128 (index 0), only non-positive values, ties (the first maximum wins) and 127 last.
#[test]
fn argmax_edge_windows() {
    use npuc::compile::compile;
    use npuc_backend::arch::Accelerator;
    use npuc_ir::{TensorData, TensorValue};
    let g = argmax("argmax_edges", &[1, 6, 4], 2);
    let rows: [[i8; 4]; 6] = [
        [-128, -128, -128, -128],
        [-5, -3, -3, -9],
        [0, -1, 0, -128],
        [7, 7, 7, 7],
        [-128, -128, -128, 127],
        [-127, -128, -128, -127],
    ];
    let data: Vec<i8> = rows.iter().flatten().copied().collect();
    let input = TensorValue::new([1usize, 6, 4], TensorData::I8(data.clone())).unwrap();
    let expected = npuc_ir::run_outputs(&g, vec![input]).unwrap();
    assert_eq!(
        expected[0].to_le_bytes(),
        [0i32, 1, 0, 0, 3, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
    );
    for accel in Accelerator::ALL {
        let m = compile(&g, &options(accel)).unwrap();
        let bytes: Vec<u8> = data.iter().map(|&v| v as u8).collect();
        let got = simulate(&m, &[bytes]);
        assert_eq!(got[0], expected[0].to_le_bytes(), "{accel}");
    }
}

/// REDUCE_ANY over the depth and REDUCE_ALL over height and width of boolean tensors (bytes
/// 0 / 1 as a max / min pool), on sparse and dense random booleans.
#[test]
fn reduce_any_all_of_booleans() {
    use npuc::compile::compile;
    use npuc_backend::arch::Accelerator;
    use npuc_ir::*;
    let shape = [1usize, 4, 5, 6];
    let mut b = GraphBuilder::new("any_all");
    let x = b.input("x", DType::Bool, shape);
    let any = b.op("any", Op::ReduceAny(AxisAttrs { axis: 3 }), &[x]);
    let any = b.op(
        "reshape",
        Op::Reshape(ReshapeAttrs {
            shape: vec![1, 4, 5].into(),
        }),
        &[any],
    );
    let all = b.op("all_h", Op::ReduceAll(AxisAttrs { axis: 1 }), &[x]);
    let all = b.op("all_w", Op::ReduceAll(AxisAttrs { axis: 2 }), &[all]);
    b.output(any);
    b.output(all);
    let g = b.finish().unwrap();
    let mut rng = Rng(99);
    for accel in Accelerator::ALL {
        let m = compile(&g, &options(accel)).unwrap();
        // Mostly false, then mostly true: both reductions see both answers.
        for density in [8u64, 92] {
            let data: Vec<bool> = (0..120).map(|_| rng.next() % 100 < density).collect();
            let input = TensorValue::new(shape, TensorData::Bool(data.clone())).unwrap();
            let expected = run_outputs(&g, vec![input]).unwrap();
            let bytes: Vec<u8> = data.iter().map(|&v| u8::from(v)).collect();
            let got = simulate(&m, &[bytes]);
            for (e, o) in expected.iter().zip(&got) {
                assert_eq!(&e.to_le_bytes(), o, "{accel}, density {density}");
            }
        }
    }
}

/// TFLite's int16 RESIZE_BILINEAR (x2, half-pixel centres): RESIZE (i48) -> identity RESCALE to
/// i32 -> `acc + (acc >> 31)` -> RESCALE dividing by 16 (half away from zero) -> i16.
fn resize_bilinear_16x8(_rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let mut b = GraphBuilder::new("resize_bilinear_16x8");
    let x = b.input("x", DType::Int16, [1, 4, 5, 4]);
    let attrs = ResizeAttrs {
        mode: ResizeMode::Bilinear,
        scale: [4, 2, 4, 2],
        offset: [-1, -1],
        border: [1, 1],
    };
    let acc = b.op("resize", Op::Resize(attrs), &[x]);
    let rescale = |out, multiplier: i32, shift: i8, scale32| {
        Op::Rescale(RescaleAttrs {
            output_dtype: out,
            multiplier: vec![multiplier],
            shift: vec![shift],
            scale32,
            rounding: RescaleRounding::SingleRound,
            per_channel: false,
            input_zp: 0,
            output_zp: 0,
            input_unsigned: false,
            output_unsigned: false,
        })
    };
    let acc = b.op("narrow", rescale(DType::Int32, 4, 2, false), &[acc]);
    let c31 = b.const_i32("c31", [1, 1, 1, 1], &[31]);
    let ars = ArithmeticRightShiftAttrs { round: false };
    let sign = b.op("sign", Op::ArithmeticRightShift(ars), &[acc, c31]);
    let adj = b.op("adjust", Op::Add, &[acc, sign]);
    let y = b.op("rescale", rescale(DType::Int16, 1 << 27, 31, true), &[adj]);
    b.output(y);
    b.finish().unwrap()
}

/// 16-bit bilinear RESIZE by 4/3 in both axes in the TOSA form: RESIZE (i48) -> RESCALE by
/// 1/32 (16-bit multiplier, single rounding) -> i16.
fn resize_bilinear_16_tosa(_rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let mut b = GraphBuilder::new("resize_bilinear_16_tosa");
    let x = b.input("x", DType::Int16, [1, 6, 9, 3]);
    let attrs = ResizeAttrs {
        mode: ResizeMode::Bilinear,
        scale: [8, 6, 4, 3],
        offset: [0, 0],
        border: [(8 - 1) * 6 - (6 - 1) * 8, (12 - 1) * 3 - (9 - 1) * 4],
    };
    let acc = b.op("resize", Op::Resize(attrs), &[x]);
    let r = RescaleAttrs {
        output_dtype: DType::Int16,
        multiplier: vec![1 << 14],
        shift: vec![19],
        scale32: false,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    };
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn resize_bilinear_16x8_tflite_form() {
    check("resize_bilinear_16x8", resize_bilinear_16x8);
}

#[test]
fn resize_bilinear_16_bit_tosa_form() {
    check("resize_bilinear_16_tosa", resize_bilinear_16_tosa);
}

/// AVG_POOL2D above 8x8 on an i16 feature map (a unit-weight DEPTHWISE with the 32-bit
/// accumulator and a per-channel division, decision L6).
fn avgpool16(
    name: &str,
    shape: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    rounding: npuc_ir::AvgPoolRounding,
) -> npuc_ir::Graph {
    use npuc_ir::*;
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int16, shape);
    let attrs = AvgPool2dAttrs {
        kernel,
        stride,
        pad: [0; 4],
        input_zp: 0,
        output_zp: 0,
        rounding,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// ds_cnn_16x8's global pool: 25x5, TFLite rounding.
fn avgpool16_25x5_tflite(_rng: &mut Rng) -> npuc_ir::Graph {
    let r = npuc_ir::AvgPoolRounding::Tflite;
    avgpool16("avgpool16_25x5", [1, 25, 5, 64], [25, 5], [25, 5], r)
}

/// 10x4 stride 2: an even window, so exact halves occur and must round away from zero.
fn avgpool16_10x4_s2_tflite(_rng: &mut Rng) -> npuc_ir::Graph {
    let r = npuc_ir::AvgPoolRounding::Tflite;
    avgpool16("avgpool16_10x4_s2", [1, 14, 9, 24], [10, 4], [2, 2], r)
}

/// 9x12 stride 1x3, TOSA rounding.
fn avgpool16_9x12_tosa(_rng: &mut Rng) -> npuc_ir::Graph {
    let r = npuc_ir::AvgPoolRounding::Tosa;
    avgpool16("avgpool16_9x12", [1, 10, 12, 8], [9, 12], [1, 3], r)
}

#[test]
fn avgpool16_large_windows() {
    check("avgpool16_25x5_tflite", avgpool16_25x5_tflite);
    check("avgpool16_10x4_s2_tflite", avgpool16_10x4_s2_tflite);
    check("avgpool16_9x12_tosa", avgpool16_9x12_tosa);
}
