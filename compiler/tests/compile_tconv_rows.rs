//! TRANSPOSE_CONV2D with runtime weights whose row stride is at least the kernel height
//! (decision L49): the kernel rows become output channels of one CONV2D over the input, and
//! data movement places each `(input row, kernel row)` at its output row; no zero-inserted
//! input is built. Each graph is compiled for all five configurations and compared with the
//! reference interpreter on seeded random inputs.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// TRANSPOSE_CONV2D of `x` with runtime weights `[oc, kh, kw, ic]`, bias, then a RESCALE to
/// i8 when `rescaled`.
fn tconv(
    name: &str,
    x: [usize; 4],
    wshape: [usize; 4],
    attrs: TransposeConvAttrs,
    rescaled: bool,
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let xi = b.input("x", DType::Int8, x);
    let w = b.input("w", DType::Int8, wshape);
    let bias: Vec<i32> = (0..wshape[0] as i32).map(|i| 1000 * i - 77).collect();
    let bt = b.const_i32("b", [wshape[0]], &bias);
    let acc = b.op("tconv", Op::TransposeConv2d(attrs), &[xi, w, bt]);
    let out = match rescaled {
        true => {
            let r =
                RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 40, RescaleRounding::SingleRound);
            b.op("rescale", Op::Rescale(r), &[acc])
        }
        false => acc,
    };
    b.output(out);
    b.finish().unwrap()
}

/// Stride 4 x 1 over a 3-row kernel (a zero row between input rows' contributions), zero
/// points, output padding cropping the first row and adding one at the end: raw accumulator.
#[test]
fn a_row_stride_above_the_kernel_height_places_rows() {
    let attrs = TransposeConvAttrs {
        out_pad: [-1, 1, 0, 1],
        stride: [4, 1],
        input_zp: 5,
        weight_zp: -3,
    };
    let g = tconv("tconv_rows", [1, 3, 4, 2], [3, 3, 2, 2], attrs, false);
    check_sim("tconv_rows", &g, 1);
}

/// Stride 3 x 2 over a 3 x 3 kernel (rows exactly adjacent, columns zero-inserted), output
/// padding before the first row, a batch of two, rescaled to i8.
#[test]
fn a_row_stride_equal_to_the_kernel_height_with_column_stride() {
    let attrs = TransposeConvAttrs {
        out_pad: [2, 0, -1, 0],
        stride: [3, 2],
        input_zp: -2,
        weight_zp: 0,
    };
    let g = tconv("tconv_rows_batch", [2, 2, 3, 3], [2, 3, 3, 3], attrs, true);
    check_sim("tconv_rows_batch", &g, 1);
}
