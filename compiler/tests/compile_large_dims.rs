//! Feature maps with a side above 65536 (the 16-bit `*_M1` size fields, TRM 3.10): each
//! operation is split into NPU operations that fit (decision L46), one case per family,
//! bit-exact against the reference interpreter on all five configurations, and the split is
//! visible in the number of kernel operations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// Kernel operations (NPU_OP_CONV/DEPTHWISE/POOL/ELEMENTWISE) in the stream of `g` on U85-256.
fn kernel_ops(g: &Graph) -> usize {
    use npuc_backend::arch::Accelerator;
    use npuc_backend::isa::{decode_stream, Command};
    let m = npuc::compile::compile(g, &options(Accelerator::ALL[1])).expect("compiles");
    decode_stream(&m.payload.command_words().unwrap())
        .expect("decodes")
        .iter()
        .filter(|d| {
            matches!(
                d.command,
                Command::OpConv(_)
                    | Command::OpDepthwise(_)
                    | Command::OpPool(_)
                    | Command::OpElementwise(_)
            )
        })
        .count()
}

/// MAXIMUM of [1, 65539, 1, 2] and a [1, 1, 1, 2] operand broadcast along the height: 65539
/// is prime and the broadcast operand forbids re-folding, so the height is cut in two.
fn maximum_broadcast(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("maximum_broadcast");
    let x = b.input("x", DType::Int8, [1, 65539, 1, 2]);
    let y = b.input("y", DType::Int8, [1, 1, 1, 2]);
    let z = b.op("max", Op::Maximum, &[x, y]);
    b.output(z);
    b.finish().unwrap()
}

/// MINIMUM of two [1, 65540, 1, 1] tensors: re-folded (65540 = 2 x 32770), one operation.
fn minimum_refold(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("minimum_refold");
    let x = b.input("x", DType::Int8, [1, 65540, 1, 1]);
    let y = b.input("y", DType::Int8, [1, 65540, 1, 1]);
    let z = b.op("min", Op::Minimum, &[x, y]);
    b.output(z);
    b.finish().unwrap()
}

/// MAX_POOL2D over [1, 2, 65539, 1], 2x3 window, stride 1x2, padding top, left and right:
/// the OFM (32770 columns) fits but the IFM does not, so the width is cut into column bands,
/// each reading its halo, with the padding at the true edges only.
fn max_pool_columns(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("max_pool_columns");
    let x = b.input("x", DType::Int8, [1, 2, 65539, 1]);
    let attrs = PoolAttrs {
        kernel: [2, 3],
        stride: [1, 2],
        pad: [1, 0, 1, 1],
    };
    let y = b.op("maxpool", Op::MaxPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// AVG_POOL2D over [1, 131078, 2, 1], 3x2 window, padding top, bottom and right: three row
/// bands; the averages at the true edges count only the real taps.
fn avg_pool_rows(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("avg_pool_rows");
    let x = b.input("x", DType::Int8, [1, 65539 * 2, 2, 1]);
    let attrs = AvgPool2dAttrs {
        kernel: [3, 2],
        stride: [1, 1],
        pad: [1, 1, 0, 1],
        input_zp: 3,
        output_zp: -2,
        rounding: AvgPoolRounding::Tflite,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// DEPTHWISE_CONV2D 3x1, stride 1, padding 1 top and bottom, over [1, 65539, 1, 2], then a
/// per-channel RESCALE: row bands with a two-row halo.
fn depthwise_rows(rng: &mut Rng) -> Graph {
    let c = 2;
    let mut b = GraphBuilder::new("depthwise_rows");
    let x = b.input("x", DType::Int8, [1, 65539, 1, c]);
    let wt = b.const_i8("w", [3, 1, c, 1], &rng.i8s(3 * c));
    let bt = b.const_i32("b", [c], &[1000, -700]);
    let attrs = ConvAttrs {
        pad: [1, 1, 0, 0],
        input_zp: 5,
        ..ConvAttrs::default()
    };
    let acc = b.op("dw", Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, c, 36, RescaleRounding::DoubleRound, -4);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// REDUCE_MAX over the 65539-element axis of [1, 2, 65539, 1] (the window is longer than a
/// pool takes: partial maxima of runs, then their maximum), REDUCE_MIN over the short axis
/// of [1, 65539, 2, 1] (row bands).
fn reductions(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("reductions");
    let x = b.input("x", DType::Int8, [1, 2, 65539, 1]);
    let m = b.op("max", Op::ReduceMax(AxisAttrs { axis: 2 }), &[x]);
    let y = b.input("y", DType::Int8, [1, 65539, 2, 1]);
    let n = b.op("min", Op::ReduceMin(AxisAttrs { axis: 2 }), &[y]);
    b.output(m);
    b.output(n);
    b.finish().unwrap()
}

#[test]
fn elementwise_with_a_broadcast_operand_is_cut_along_the_large_axis() {
    let g = maximum_broadcast(&mut Rng(1));
    assert_eq!(kernel_ops(&g), 2);
    check("maximum_broadcast", maximum_broadcast);
}

#[test]
fn elementwise_of_one_shape_is_refolded() {
    let g = minimum_refold(&mut Rng(1));
    assert_eq!(kernel_ops(&g), 1);
    check("minimum_refold", minimum_refold);
}

#[test]
fn max_pool_is_cut_into_column_bands() {
    let g = max_pool_columns(&mut Rng(1));
    assert!(kernel_ops(&g) >= 2);
    check("max_pool_columns", max_pool_columns);
}

#[test]
fn avg_pool_is_cut_into_row_bands() {
    let g = avg_pool_rows(&mut Rng(1));
    assert!(kernel_ops(&g) >= 2);
    check("avg_pool_rows", avg_pool_rows);
}

#[test]
fn depthwise_is_cut_into_row_bands() {
    let g = depthwise_rows(&mut Rng(1));
    assert!(kernel_ops(&g) >= 2);
    check("depthwise_rows", depthwise_rows);
}

#[test]
fn reductions_along_and_across_a_large_axis() {
    let g = reductions(&mut Rng(1));
    // Max: two partial pools and the final one; min: two row bands.
    assert_eq!(kernel_ops(&g), 5);
    check("reductions", reductions);
}

/// TRANSPOSE_CONV2D stride 2, 3x2 kernel, over [1, 32769, 2, 1] and [1, 32770, 2, 1]: the
/// OFMs (65539 and 65541 rows) are cut into two row bands of the zero-inserted IFM each; the
/// second bands' windows start on an IFM row in one and on an inserted row in the other
/// (which starts one row later with one more row of padding).
fn transpose_conv_rows(rng: &mut Rng) -> Graph {
    let oc = 2;
    let mut b = GraphBuilder::new("transpose_conv_rows");
    let wt = b.const_i8("w", [oc, 3, 2, 1], &rng.i8s(oc * 6));
    let bt = b.const_i32("b", [oc], &[-900, 1200]);
    let attrs = TransposeConvAttrs {
        out_pad: [0, 0, 0, 0],
        stride: [2, 2],
        input_zp: -7,
        weight_zp: 0,
    };
    for h in [32769, 32770] {
        let x = b.input(&format!("x{h}"), DType::Int8, [1, h, 2, 1]);
        let acc = b.op(
            &format!("tconv{h}"),
            Op::TransposeConv2d(attrs.clone()),
            &[x, wt, bt],
        );
        let r = out_rescale(rng, oc, 37, RescaleRounding::DoubleRound, 9);
        let y = b.op(&format!("rescale{h}"), Op::Rescale(r), &[acc]);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn transpose_conv_is_cut_into_row_bands_of_the_upscaled_ifm() {
    let g = transpose_conv_rows(&mut Rng(1));
    assert!(kernel_ops(&g) >= 4);
    check("transpose_conv_rows", transpose_conv_rows);
}
