//! Reduction graphs: MEAN in the form the TFLite frontend lowers it to (exact widening
//! RESCALE, REDUCE_SUMs, optional RESHAPE, output RESCALE) and REDUCE_MAX / REDUCE_MIN chains,
//! over every combination of height, width and depth the NPU lowering distinguishes.

use super::*;

/// The exact i8 -> i32 widening (`x - zp`, multiplier 2^30 >> 30).
fn widen(zp: i64) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![1 << 30],
        shift: vec![30],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// MEAN over `axes` of an i8 tensor of `shape`; `reshape` reshapes the sums before the
/// output RESCALE.
fn mean(
    rng: &mut Rng,
    name: &str,
    shape: &[usize],
    axes: &[usize],
    reshape: Option<Vec<usize>>,
    rounding: RescaleRounding,
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int8, shape.to_vec());
    let mut t = b.op("widen", Op::Rescale(widen(rng.range(-128, 127))), &[x]);
    for (i, &axis) in axes.iter().enumerate() {
        t = b.op(&format!("sum{i}"), Op::ReduceSum(AxisAttrs { axis }), &[t]);
    }
    if let Some(s) = reshape {
        t = b.op(
            "reshape",
            Op::Reshape(ReshapeAttrs { shape: s.into() }),
            &[t],
        );
    }
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let zp = rng.range(-128, 127);
    let mut r = out_rescale(rng, 1, 30, rounding, zp);
    // Roughly 1/count, so the mean stays in range.
    r.shift[0] += (usize::BITS - count.leading_zeros()) as i8;
    let y = b.op("rescale", Op::Rescale(r), &[t]);
    b.output(y);
    b.finish().unwrap()
}

/// MEAN over height and width with a reshape to [1, C] (global average pooling head).
pub fn mean_hw(rng: &mut Rng) -> Graph {
    mean(
        rng,
        "mean_hw",
        &[1, 7, 5, 19],
        &[1, 2],
        Some(vec![1, 19]),
        RescaleRounding::DoubleRound,
    )
}

/// MEAN over the height only (a tall depthwise window).
pub fn mean_h(rng: &mut Rng) -> Graph {
    mean(
        rng,
        "mean_h",
        &[1, 9, 4, 24],
        &[1],
        None,
        RescaleRounding::SingleRound,
    )
}

/// MEAN over the last axis of a rank-3 tensor (a 1x1 convolution to depth 1).
pub fn mean_c(rng: &mut Rng) -> Graph {
    mean(
        rng,
        "mean_c",
        &[3, 6, 33],
        &[2],
        None,
        RescaleRounding::DoubleRound,
    )
}

/// MEAN over every axis (a full-window convolution to depth 1).
pub fn mean_hwc(rng: &mut Rng) -> Graph {
    mean(
        rng,
        "mean_hwc",
        &[1, 4, 5, 9],
        &[3, 1, 2],
        None,
        RescaleRounding::DoubleRound,
    )
}

fn reduce(name: &str, shape: &[usize], axes: &[usize], max: bool) -> Graph {
    let mut b = GraphBuilder::new(name);
    let mut t = b.input("x", DType::Int8, shape.to_vec());
    for (i, &axis) in axes.iter().enumerate() {
        let a = AxisAttrs { axis };
        let op = if max {
            Op::ReduceMax(a)
        } else {
            Op::ReduceMin(a)
        };
        t = b.op(&format!("reduce{i}"), op, &[t]);
    }
    b.output(t);
    b.finish().unwrap()
}

/// REDUCE_MAX over the depth (the channels read as the pooled width).
pub fn reduce_max_c(_rng: &mut Rng) -> Graph {
    reduce("reduce_max_c", &[1, 5, 7, 13], &[3], true)
}

/// REDUCE_MIN over height and width.
pub fn reduce_min_hw(_rng: &mut Rng) -> Graph {
    reduce("reduce_min_hw", &[1, 6, 5, 10], &[2, 1], false)
}

/// REDUCE_MAX over every axis.
pub fn reduce_max_hwc(_rng: &mut Rng) -> Graph {
    reduce("reduce_max_hwc", &[1, 3, 4, 5], &[1, 2, 3], true)
}

/// REDUCE_MIN over the first axis of a rank-3 tensor.
pub fn reduce_min_h3(_rng: &mut Rng) -> Graph {
    reduce("reduce_min_h3", &[6, 4, 3], &[0], false)
}

fn avgpool_large(
    name: &str,
    shape: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    rounding: AvgPoolRounding,
    zp: (i64, i64),
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int8, shape);
    let attrs = AvgPool2dAttrs {
        kernel,
        stride,
        pad: [0; 4],
        input_zp: zp.0,
        output_zp: zp.1,
        rounding,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// AVG_POOL2D 25x5 (odd window, the ds_cnn head), TFLite rounding: one output.
pub fn avgpool_25x5_tflite(_rng: &mut Rng) -> Graph {
    avgpool_large(
        "avgpool_25x5_tflite",
        [1, 25, 5, 16],
        [25, 5],
        [25, 5],
        AvgPoolRounding::Tflite,
        (0, 0),
    )
}

/// AVG_POOL2D 10x4 stride 2 (even window: exact halves round away from zero), TFLite
/// rounding, several outputs.
pub fn avgpool_10x4_s2_tflite(_rng: &mut Rng) -> Graph {
    avgpool_large(
        "avgpool_10x4_s2_tflite",
        [1, 14, 9, 24],
        [10, 4],
        [2, 2],
        AvgPoolRounding::Tflite,
        (0, 0),
    )
}

/// AVG_POOL2D 16x16 (a power-of-two window), TFLite rounding.
pub fn avgpool_16x16_tflite(_rng: &mut Rng) -> Graph {
    avgpool_large(
        "avgpool_16x16_tflite",
        [1, 16, 17, 8],
        [16, 16],
        [1, 1],
        AvgPoolRounding::Tflite,
        (0, 0),
    )
}

/// AVG_POOL2D 9x12 with TOSA rounding and zero points.
pub fn avgpool_9x12_tosa(_rng: &mut Rng) -> Graph {
    avgpool_large(
        "avgpool_9x12_tosa",
        [1, 10, 12, 8],
        [9, 12],
        [1, 3],
        AvgPoolRounding::Tosa,
        (-5, 9),
    )
}

/// AVG_POOL2D 8x8 stride 8 with one output (the resnet8 head): the stride never applies.
pub fn avgpool_8x8_s8(_rng: &mut Rng) -> Graph {
    avgpool_large(
        "avgpool_8x8_s8",
        [1, 8, 8, 64],
        [8, 8],
        [8, 8],
        AvgPoolRounding::Tflite,
        (0, 0),
    )
}

/// ARGMAX of an i8 tensor over `axis`.
pub fn argmax(name: &str, shape: &[usize], axis: usize) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int8, shape.to_vec());
    let y = b.op("argmax", Op::ArgMax(AxisAttrs { axis }), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// ARGMAX over the depth (argmax_x on the (H*W, C, 1) view).
pub fn argmax_c(_rng: &mut Rng) -> Graph {
    argmax("argmax_c", &[1, 5, 6, 10], 3)
}

/// ARGMAX over the width (argmax_x).
pub fn argmax_w(_rng: &mut Rng) -> Graph {
    argmax("argmax_w", &[1, 4, 9, 7], 2)
}

/// ARGMAX over the height of a rank-3 tensor (argmax_y).
pub fn argmax_h(_rng: &mut Rng) -> Graph {
    argmax("argmax_h", &[11, 3, 5], 0)
}

/// ARGMAX of a vector.
pub fn argmax_1d(_rng: &mut Rng) -> Graph {
    argmax("argmax_1d", &[37], 0)
}

/// RESIZE of an i8 [1, h, w, c] tensor to [1, oh, ow, c]; bilinear gets the TFLite tail
/// `acc + (acc >> 31)` and a RESCALE dividing by `2^shift` (half away from zero).
#[allow(clippy::too_many_arguments)]
fn resize(
    name: &str,
    input: [usize; 4],
    out_hw: [usize; 2],
    mode: ResizeMode,
    scale: [i64; 4],
    offset: [i64; 2],
    shift: i8,
    output_zp: i64,
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int8, input);
    let attrs = ResizeAttrs {
        mode,
        scale,
        offset,
        border: [
            (out_hw[0] as i64 - 1) * scale[1] + offset[0] - (input[1] as i64 - 1) * scale[0],
            (out_hw[1] as i64 - 1) * scale[3] + offset[1] - (input[2] as i64 - 1) * scale[2],
        ],
    };
    let y = b.op("resize", Op::Resize(attrs), &[x]);
    let y = if mode == ResizeMode::Bilinear {
        let c31 = b.const_i32("c31", [1, 1, 1, 1], &[31]);
        let sign = b.op(
            "sign",
            Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: false }),
            &[y, c31],
        );
        let adj = b.op("adjust", Op::Add, &[y, sign]);
        let r = RescaleAttrs {
            output_dtype: DType::Int8,
            multiplier: vec![1 << 11],
            shift: vec![shift + 11],
            scale32: true,
            rounding: RescaleRounding::SingleRound,
            per_channel: false,
            input_zp: 0,
            output_zp,
            input_unsigned: false,
            output_unsigned: false,
        };
        b.op("rescale", Op::Rescale(r), &[adj])
    } else {
        y
    };
    b.output(y);
    b.finish().unwrap()
}

/// Bilinear x2 with half-pixel centres in TFLite's units (n = 1024, reduced to 4 on the NPU).
pub fn resize_bilinear_x2(_rng: &mut Rng) -> Graph {
    resize(
        "resize_bilinear_x2",
        [1, 5, 7, 12],
        [10, 14],
        ResizeMode::Bilinear,
        [1024, 512, 1024, 512],
        [-256, -256],
        20,
        3,
    )
}

/// Bilinear 5/3 up in y, 2/3 down in x with an odd numerator (no common factor: the 48-bit
/// accumulator format).
pub fn resize_bilinear_odd(_rng: &mut Rng) -> Graph {
    resize(
        "resize_bilinear_odd",
        [1, 6, 9, 5],
        [10, 6],
        ResizeMode::Bilinear,
        [1000, 600, 1000, 1500],
        [0, 250],
        20,
        -4,
    )
}

/// Nearest neighbour x3 (TOSA form, i8 -> i8) with an offset.
pub fn resize_nearest_x3(_rng: &mut Rng) -> Graph {
    resize(
        "resize_nearest_x3",
        [1, 4, 3, 7],
        [12, 9],
        ResizeMode::NearestNeighbor,
        [6, 2, 6, 2],
        [-2, 1],
        0,
        0,
    )
}

/// Bilinear x2 in the TOSA form: RESIZE (i32) -> RESCALE dividing by 16 (single rounding,
/// half up), no sign adjustment.
pub fn resize_bilinear_tosa(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("resize_bilinear_tosa");
    let x = b.input("x", DType::Int8, [1, 5, 6, 9]);
    let attrs = ResizeAttrs {
        mode: ResizeMode::Bilinear,
        scale: [4, 2, 4, 2],
        offset: [-1, -1],
        border: [1, 1],
    };
    let y = b.op("resize", Op::Resize(attrs), &[x]);
    let r = RescaleAttrs {
        output_dtype: DType::Int8,
        multiplier: vec![1 << 30],
        shift: vec![34],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 6,
        input_unsigned: false,
        output_unsigned: false,
    };
    let z = b.op("rescale", Op::Rescale(r), &[y]);
    b.output(z);
    b.finish().unwrap()
}
