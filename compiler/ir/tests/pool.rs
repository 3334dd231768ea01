//! AVG_POOL2D (TOSA §2.3.2) and MAX_POOL2D (§2.3.12). Padding taps never count.

mod common;
use common::*;
use npuc_ir::*;

fn avg(kernel: [usize; 2], pad: [usize; 4], zps: (i64, i64), rounding: AvgPoolRounding) -> Op {
    Op::AvgPool2d(AvgPool2dAttrs {
        kernel,
        stride: [1, 1],
        pad,
        input_zp: zps.0,
        output_zp: zps.1,
        rounding,
    })
}

const MODES: [AvgPoolRounding; 2] = [AvgPoolRounding::Tosa, AvgPoolRounding::Tflite];

#[test]
fn avg_pool_rounds_ties_away_from_zero() {
    // sum 10 / 4 = 2.5 -> 3. TOSA: reciprocal_scale(4) = (2^30 + 1, 32);
    // (10 * (2^30 + 1) + 2^31) >> 32 = floor((12 * 2^30 + 10) / 2^32) = 3.
    // -10 / 4: (-10 * (2^30 + 1) + 2^31) >> 32 = floor(-2 - 10/2^32) = -3; TFLite (-10 - 2) / 4 = -3.
    for mode in MODES {
        let v = eval_v(
            avg([2, 2], [0; 4], (0, 0), mode),
            &[i8v(&[1, 2, 2, 1], &[1, 2, 3, 4])],
        );
        assert_eq!(v, vec![3]);
        let v = eval_v(
            avg([2, 2], [0; 4], (0, 0), mode),
            &[i8v(&[1, 2, 2, 1], &[-1, -2, -3, -4])],
        );
        assert_eq!(v, vec![-3]);
    }
}

#[test]
fn avg_pool_divides_by_valid_taps_only() {
    // [[1,2],[3,4]], 2x2 kernel, pad 1 all round -> 3x3:
    // corners: 1, 2, 3, 4 (one tap); edges: (1+2)/2 = 1.5 -> 2, (1+3)/2 = 2, (2+4)/2 = 3,
    // (3+4)/2 = 3.5 -> 4; centre 10/4 = 2.5 -> 3.
    for mode in MODES {
        let (_, shape, v) = eval(
            avg([2, 2], [1; 4], (0, 0), mode),
            &[i8v(&[1, 2, 2, 1], &[1, 2, 3, 4])],
        );
        assert_eq!(shape, vec![1, 3, 3, 1]);
        assert_eq!(v, vec![1, 2, 2, 2, 3, 3, 3, 4, 4]);
    }
}

#[test]
fn avg_pool_zero_point_changes_rounding() {
    // [-1, 0]: with zero points 0 the mean -0.5 rounds to -1 (TFLite's behaviour, which
    // ignores zero points). Subtracting zp = -128 first gives (127 + 128) / 2 = 127.5 -> 128,
    // and 128 - 128 = 0. So a TFLite frontend must set both zero points to 0.
    let x = i8v(&[1, 1, 2, 1], &[-1, 0]);
    for mode in MODES {
        assert_eq!(
            eval_v(avg([1, 2], [0; 4], (0, 0), mode), std::slice::from_ref(&x)),
            vec![-1]
        );
        assert_eq!(
            eval_v(
                avg([1, 2], [0; 4], (-128, -128), mode),
                std::slice::from_ref(&x)
            ),
            vec![0]
        );
    }
}

#[test]
fn avg_pool_saturates_after_output_zero_point() {
    // 127 - (-128) = 255; 255 + 127 = 382 -> 127
    let v = eval_v(
        avg([1, 1], [0; 4], (-128, 127), AvgPoolRounding::Tosa),
        &[i8v(&[1, 1, 1, 1], &[127])],
    );
    assert_eq!(v, vec![127]);
}

#[test]
fn avg_pool_int16() {
    // (32767 + 32766) / 2 = 32766.5 -> 32767
    for mode in MODES {
        let v = eval_v(
            avg([1, 2], [0; 4], (0, 0), mode),
            &[i16v(&[1, 1, 2, 1], &[32767, 32766])],
        );
        assert_eq!(v, vec![32767]);
    }
}

#[test]
fn avg_pool_rejects_pad_not_smaller_than_kernel() {
    assert!(graph1(
        avg([2, 2], [2, 0, 0, 0], (0, 0), AvgPoolRounding::Tosa),
        &[i8v(&[1, 2, 2, 1], &[0; 4])]
    )
    .is_err());
    // non-zero zero point on i16
    assert!(graph1(
        avg([1, 1], [0; 4], (1, 0), AvgPoolRounding::Tosa),
        &[i16v(&[1, 1, 1, 1], &[0])]
    )
    .is_err());
}

#[test]
fn max_pool_ignores_padding() {
    // [[1,-5],[3,-2]], 2x2 kernel, pad 1: a padding tap of 0 would win over -5 and -2.
    let op = Op::MaxPool2d(PoolAttrs {
        kernel: [2, 2],
        stride: [1, 1],
        pad: [1; 4],
    });
    let v = eval_v(op, &[i8v(&[1, 2, 2, 1], &[1, -5, 3, -2])]);
    assert_eq!(v, vec![1, 1, -5, 3, 3, -2, 3, 3, -2]);
}

#[test]
fn max_pool_stride() {
    // 1x4 row [1, 7, -3, 2], kernel 1x2 stride 2 -> [7, 2]
    let op = Op::MaxPool2d(PoolAttrs {
        kernel: [1, 2],
        stride: [1, 2],
        pad: [0; 4],
    });
    let v = eval_v(op, &[i16v(&[1, 1, 4, 1], &[1, 7, -3, 2])]);
    assert_eq!(v, vec![7, 2]);
}
