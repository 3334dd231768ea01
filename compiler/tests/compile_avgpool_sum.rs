//! AVG_POOL2D above the NPU's 8x8 average pooling, and MEAN over height and width, as one
//! NPU_OP_POOL in `sum` mode whose OFM_SCALE divides (decision L52): the operation Vela 5.2
//! programs for DS-CNN's 25x5 head, and bit-exact against the reference interpreter on the inputs where
//! the rounding matters (full-range extremes, exact halves of TFLite's rounding).

mod compile_common;

use compile_common::*;
use npuc::compile::compile;
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command as C, PoolingMode, RegisterFile};
use npuc_ir::*;

fn avgpool(
    shape: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    zp: (i64, i64),
) -> Graph {
    let mut b = GraphBuilder::new("avgpool_sum");
    let x = b.input("x", DType::Int8, shape);
    let attrs = AvgPool2dAttrs {
        kernel,
        stride,
        pad,
        input_zp: zp.0,
        output_zp: zp.1,
        rounding: AvgPoolRounding::Tflite,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// One kernel operation: its pooling mode (`None`: another kernel), kernel height and width,
/// OFM_SCALE scale and shift.
type KernelOp = (Option<PoolingMode>, (u32, u32), (u32, u8));

/// Every kernel operation of `g` compiled for the default configuration.
fn kernel_ops(g: &Graph) -> Vec<KernelOp> {
    let m = compile(g, &options(Accelerator::U85_256)).unwrap();
    let mut regs = RegisterFile::default();
    let mut out = Vec::new();
    for d in decode_stream(&m.payload.command_words().unwrap()).unwrap() {
        regs.apply(&d.command);
        let mode = match d.command {
            C::OpPool(p) => Some(p.pooling_mode),
            C::OpConv(_) | C::OpDepthwise(_) | C::OpElementwise(_) => None,
            _ => continue,
        };
        let k = (
            u32::from(regs.kernel_height_m1.height_m1) + 1,
            u32::from(regs.kernel_width_m1.width_m1) + 1,
        );
        out.push((mode, k, (regs.ofm_scale.scale, regs.ofm_scale.shift)));
    }
    out
}

/// The simulator's output for one input image, on every configuration, equals the
/// interpreter's.
fn check_input(name: &str, g: &Graph, data: Vec<i8>) {
    let ty = &g.tensor(g.inputs()[0]).unwrap().ty;
    let input = TensorValue::new(ty.shape.clone(), TensorData::I8(data)).unwrap();
    let expected = run_outputs(g, vec![input.clone()]).unwrap();
    for accel in Accelerator::ALL {
        let m = compile(g, &options(accel)).unwrap();
        let got = simulate(&m, &[input.to_le_bytes()]);
        assert_eq!(got[0], expected[0].to_le_bytes(), "{name} on {accel}");
    }
}

#[test]
fn ds_cnn_25x5_average_pool_is_one_sum_pool_scaled_as_vela_scales_it() {
    // DS-CNN's head: 25x5 over 64 channels. Vela 5.2's stream (models/vela/*/ds_cnn.cmd.txt):
    // NPU_OP_POOL sum, kernel 25x5, OFM_SCALE 1,099,511,628 >> 37 (floor(2^37 / 125) + 1).
    let g = avgpool([1, 25, 5, 64], [25, 5], [25, 5], [0; 4], (-128, -128));
    assert_eq!(
        kernel_ops(&g),
        [(Some(PoolingMode::Sum), (25, 5), (1_099_511_628, 37))]
    );
    check_sim("avgpool_25x5", &g, 3);
    // The extremes: every sum at its bounds (-128 and 127 after the zero point 255 * 125).
    let n = 25 * 5 * 64;
    check_input("avgpool_25x5 max", &g, vec![127; n]);
    check_input("avgpool_25x5 min", &g, vec![-128; n]);
    check_input(
        "avgpool_25x5 ramp",
        &g,
        (0..n).map(|i| (i % 256) as u8 as i8).collect(),
    );
}

#[test]
fn an_even_window_rounds_exact_halves_away_from_zero() {
    // 10x10: a sum of 100 k + 50 is an exact half, which TFLite rounds away from zero (L6).
    let g = avgpool([1, 10, 10, 2], [10, 10], [10, 10], [0; 4], (0, 0));
    let ops = kernel_ops(&g);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0].0, Some(PoolingMode::Sum));
    for half in [50i64, 350, -50, -450, 150, 12650, -12550] {
        // Channel 0 sums to `half` (positive or negative), channel 1 to `-half`.
        let mut data = vec![0i8; 200];
        let mut put = |c: usize, mut s: i64| {
            for p in 0..100 {
                let v = s.clamp(-128, 127);
                data[p * 2 + c] = v as i8;
                s -= v;
            }
            assert_eq!(s, 0);
        };
        put(0, half);
        put(1, -half);
        check_input(&format!("avgpool_10x10 half {half}"), &g, data);
    }
}

#[test]
fn a_padded_large_average_pool_sums_with_a_pool_and_divides_per_count() {
    // 9x9 stride 2 with padding 4 (5x5 outputs): the window sums are one POOL sum (raw, OFM_SCALE 1), then each
    // rectangle of one count of non-padding taps is divided by a 1x1 DEPTHWISE (L39, L52).
    let g = avgpool([1, 9, 9, 3], [9, 9], [2, 2], [4, 4, 4, 4], (5, -7));
    let ops = kernel_ops(&g);
    assert_eq!(ops[0], (Some(PoolingMode::Sum), (9, 9), (1, 0)), "{ops:?}");
    assert!(
        ops[1..].iter().all(|o| o.0.is_none() && o.1 == (1, 1)),
        "{ops:?}"
    );
    check_sim("avgpool_9x9_pad4", &g, 3);
    check_input("avgpool_9x9_pad4 max", &g, vec![127; 243]);
    check_input("avgpool_9x9_pad4 min", &g, vec![-128; 243]);
}

#[test]
fn a_mean_that_keeps_the_depth_is_one_sum_pool_with_the_rescale_as_ofm_scale() {
    // MEAN over height and width (7x5, 19 channels, double rounding): the window sums of a
    // POOL in sum mode, the output RESCALE's multiplier and shift as OFM_SCALE, no weights
    // (L5, L52); bit-exact on every configuration.
    let g = mean_hw(&mut Rng(5));
    let ops = kernel_ops(&g);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!((ops[0].0, ops[0].1), (Some(PoolingMode::Sum), (7, 5)));
    check_sim("mean_hw", &g, 3);
    check_input("mean_hw max", &g, vec![127; 7 * 5 * 19]);
    check_input("mean_hw min", &g, vec![-128; 7 * 5 * 19]);
}
