//! RESIZE whose offset holds whole input rows or columns (TOSA allows offsets up to 16 n, the
//! NPU's RESIZE_*_OFFSET less than n): the IFM starts that many rows or columns later and the
//! offset keeps its remainder (decision L48). Bilinear (i8 sums, i16 sums as 8-byte words) and
//! nearest neighbour, one image and a batch, each compiled for all five configurations and
//! compared with the reference interpreter.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

/// The TOSA border (in `[-16 n, n)`, as large as possible) that makes the output size of an
/// axis of `size` an integer: `((size - 1) n - offset + border) / d + 1`.
fn border(size: i64, [n, d]: [i64; 2], offset: i64) -> i64 {
    (-16 * n..n)
        .rev()
        .find(|b| {
            ((size - 1) * n - offset + b).rem_euclid(d) == 0 && (size - 1) * n - offset + b >= 0
        })
        .expect("a border")
}

fn resize(
    b: &mut GraphBuilder,
    name: &str,
    x: TensorId,
    shape: [i64; 2],
    mode: ResizeMode,
    scale: [i64; 4],
    offset: [i64; 2],
) -> TensorId {
    let attrs = ResizeAttrs {
        mode,
        scale,
        offset,
        border: [
            border(shape[0], [scale[0], scale[1]], offset[0]),
            border(shape[1], [scale[2], scale[3]], offset[1]),
        ],
    };
    b.op(name, Op::Resize(attrs), &[x])
}

fn offsets_beyond_one_pixel() -> Graph {
    let mut b = GraphBuilder::new("resize_offsets");
    let x8 = b.input("x8", DType::Int8, [1, 9, 11, 3]);
    let x16 = b.input("x16", DType::Int16, [1, 7, 10, 2]);
    let xb = b.input("xb", DType::Int8, [2, 5, 5, 2]);
    let (bl, nn) = (ResizeMode::Bilinear, ResizeMode::NearestNeighbor);
    let outs = [
        // n = 1: the offsets are whole pixels (the conformance suite's `sc1x2x1x2_off12x2`).
        resize(&mut b, "bilinear_i8", x8, [9, 11], bl, [1, 2, 1, 2], [5, 3]),
        // Remainders 1 of 3 and 1 of 2 after 2 rows and 4 columns.
        resize(
            &mut b,
            "nearest_i16",
            x16,
            [7, 10],
            nn,
            [3, 2, 2, 5],
            [7, 9],
        ),
        // i16 sums in i48 (8-byte words), offsets 3 1/4 rows and 2 1/2 columns.
        resize(
            &mut b,
            "bilinear_i16",
            x16,
            [7, 10],
            bl,
            [4, 3, 2, 1],
            [13, 5],
        ),
        // A batch of two images, each cropped.
        resize(
            &mut b,
            "nearest_batch",
            xb,
            [5, 5],
            nn,
            [2, 3, 2, 3],
            [4, 2],
        ),
    ];
    for y in outs {
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn offsets_of_whole_pixels_crop_the_input() {
    // `check_sim` compares i48 outputs as the 8-byte words the NPU writes (decision L33).
    check_sim("resize_offsets", &offsets_beyond_one_pixel(), 2);
}
