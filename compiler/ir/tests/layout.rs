//! Data movement (TOSA §2.10), scatter/gather (§2.11), reductions (§2.9), ARGMAX (§2.3.1)
//! and RESIZE (§2.12.1).

mod common;
use common::*;
use npuc_ir::*;

#[test]
fn concat_along_an_axis() {
    // [[1],[2]] ++ [[3,4],[5,6]] on axis 1 = [[1,3,4],[2,5,6]]
    let (_, shape, v) = eval(
        Op::Concat(AxisAttrs { axis: 1 }),
        &[i8v(&[2, 1], &[1, 2]), i8v(&[2, 2], &[3, 4, 5, 6])],
    );
    assert_eq!((shape, v), (vec![2, 3], vec![1, 3, 4, 2, 5, 6]));
    let v = eval_v(
        Op::Concat(AxisAttrs { axis: 0 }),
        &[
            i8v(&[1, 2], &[1, 2]),
            i8v(&[1, 2], &[3, 4]),
            i8v(&[1, 2], &[5, 6]),
        ],
    );
    assert_eq!(v, vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn pad_with_constant() {
    // [[1,2]] padded by [[1,0],[0,2]] with 9 -> [[9,9,9,9],[1,2,9,9]]
    let op = Op::Pad(PadAttrs {
        padding: vec![[1, 0], [0, 2]],
        pad_const: 9,
    });
    let (_, shape, v) = eval(op, &[i8v(&[1, 2], &[1, 2])]);
    assert_eq!((shape, v), (vec![2, 4], vec![9, 9, 9, 9, 1, 2, 9, 9]));
}

#[test]
fn reshape_keeps_row_major_order() {
    let op = Op::Reshape(ReshapeAttrs {
        shape: Shape::from([3, 2]),
    });
    let (_, shape, v) = eval(op, &[i8v(&[2, 3], &[1, 2, 3, 4, 5, 6])]);
    assert_eq!((shape, v), (vec![3, 2], vec![1, 2, 3, 4, 5, 6]));
    let bad = Op::Reshape(ReshapeAttrs {
        shape: Shape::from([4]),
    });
    assert!(graph1(bad, &[i8v(&[2, 3], &[0; 6])]).is_err());
}

#[test]
fn slice_tile_reverse_transpose() {
    // [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
    let x = i8v(&[3, 4], &(0..12).collect::<Vec<_>>());
    let slice = Op::Slice(SliceAttrs {
        start: vec![1, 1],
        size: vec![2, 2],
    });
    assert_eq!(eval_v(slice, std::slice::from_ref(&x)), vec![5, 6, 9, 10]);
    let out_of_bounds = Op::Slice(SliceAttrs {
        start: vec![2, 0],
        size: vec![2, 4],
    });
    assert!(graph1(out_of_bounds, std::slice::from_ref(&x)).is_err());

    let tile = Op::Tile(TileAttrs {
        multiples: vec![2, 1],
    });
    let (_, shape, v) = eval(tile, &[i8v(&[1, 2], &[1, 2])]);
    assert_eq!((shape, v), (vec![2, 2], vec![1, 2, 1, 2]));

    let rev = Op::Reverse(AxisAttrs { axis: 1 });
    assert_eq!(
        eval_v(rev, &[i8v(&[2, 2], &[1, 2, 3, 4])]),
        vec![2, 1, 4, 3]
    );

    // output dim i is input dim perms[i]: [2,3] -> [3,2]
    let tr = Op::Transpose(TransposeAttrs { perms: vec![1, 0] });
    let (_, shape, v) = eval(tr, &[i8v(&[2, 3], &[1, 2, 3, 4, 5, 6])]);
    assert_eq!((shape, v), (vec![3, 2], vec![1, 4, 2, 5, 3, 6]));
    let not_perm = Op::Transpose(TransposeAttrs { perms: vec![0, 0] });
    assert!(graph1(not_perm, &[i8v(&[2, 3], &[0; 6])]).is_err());
}

#[test]
fn gather_and_scatter() {
    // values [[1,2],[3,4],[5,6]] (N=1, K=3, C=2), indices [2, 0] -> [[5,6],[1,2]]
    let values = i8v(&[1, 3, 2], &[1, 2, 3, 4, 5, 6]);
    let (_, shape, v) = eval(Op::Gather, &[values.clone(), i32v(&[1, 2], &[2, 0])]);
    assert_eq!((shape, v), (vec![1, 2, 2], vec![5, 6, 1, 2]));
    undefined(Op::Gather, &[values, i32v(&[1, 1], &[3])]);

    // scatter [10, 20] to rows [2, 0] of [1, 2, 3] -> [20, 2, 10]
    let vin = i8v(&[1, 3, 1], &[1, 2, 3]);
    let upd = i8v(&[1, 2, 1], &[10, 20]);
    let v = eval_v(
        Op::Scatter,
        &[vin.clone(), i32v(&[1, 2], &[2, 0]), upd.clone()],
    );
    assert_eq!(v, vec![20, 2, 10]);
    // a position written twice is undefined
    undefined(Op::Scatter, &[vin, i32v(&[1, 2], &[1, 1]), upd]);
}

#[test]
fn reductions_keep_the_axis() {
    let x = i32v(&[2, 3], &[1, 2, 3, 4, 5, 6]);
    let (_, shape, v) = eval(
        Op::ReduceSum(AxisAttrs { axis: 0 }),
        std::slice::from_ref(&x),
    );
    assert_eq!((shape, v), (vec![1, 3], vec![5, 7, 9]));
    let (_, shape, v) = eval(
        Op::ReduceSum(AxisAttrs { axis: 1 }),
        std::slice::from_ref(&x),
    );
    assert_eq!((shape, v), (vec![2, 1], vec![6, 15]));
    undefined(
        Op::ReduceSum(AxisAttrs { axis: 0 }),
        &[i32v(&[2], &[i32::MAX.into(), 1])],
    );
    let y = i8v(&[2, 2], &[-3, 7, 5, -8]);
    assert_eq!(
        eval_v(
            Op::ReduceMax(AxisAttrs { axis: 1 }),
            std::slice::from_ref(&y)
        ),
        vec![7, 5]
    );
    assert_eq!(
        eval_v(Op::ReduceMin(AxisAttrs { axis: 0 }), &[y]),
        vec![-3, -8]
    );
    let b = boolv(&[2, 2], &[1, 0, 1, 1]);
    assert_eq!(
        eval_v(
            Op::ReduceAll(AxisAttrs { axis: 1 }),
            std::slice::from_ref(&b)
        ),
        vec![0, 1]
    );
    assert_eq!(
        eval_v(Op::ReduceAny(AxisAttrs { axis: 0 }), &[b]),
        vec![1, 1]
    );
}

#[test]
fn argmax_returns_the_first_maximum() {
    // [1,3,3,2] -> 1; all equal to the type minimum -> 0
    let (dt, shape, v) = eval(
        Op::ArgMax(AxisAttrs { axis: 1 }),
        &[i8v(&[2, 4], &[1, 3, 3, 2, -128, -128, -128, -128])],
    );
    assert_eq!((dt, shape, v), (DType::Int32, vec![2], vec![1, 0]));
}

/// 2x upscale of a 2-row column with TOSA's half-pixel parameters for `[OH,OW] = 2 * [IH,IW]`:
/// scale_y = 4/2, offset_y = -1, border_y = 1 -> OH = ((2 - 1) * 4 + 1 + 1) / 2 + 1 = 4.
fn upscale(mode: ResizeMode) -> Op {
    Op::Resize(ResizeAttrs {
        mode,
        scale: [4, 2, 1, 1],
        offset: [-1, 0],
        border: [1, 0],
    })
}

#[test]
fn resize_nearest() {
    // y = 2*oy - 1 = -1, 1, 3, 5; iy = floor(y / 4) = -1, 0, 0, 1; dy = 3, 1, 3, 1;
    // pick iy + 1 when 2*dy >= 4: rows 0, 0, 1, 1
    let (dt, shape, v) = eval(
        upscale(ResizeMode::NearestNeighbor),
        &[i8v(&[1, 2, 1, 1], &[10, 20])],
    );
    assert_eq!(
        (dt, shape, v),
        (DType::Int8, vec![1, 4, 1, 1], vec![10, 10, 20, 20])
    );
}

#[test]
fn resize_bilinear_is_unnormalised() {
    // acc = in[iy0] * (4 - dy) + in[iy1] * dy (x weight is scale_x_n = 1), neighbours clamped:
    // oy0: iy0 = iy1 = 0 -> 40; oy1: 10*3 + 20*1 = 50; oy2: 10*1 + 20*3 = 70; oy3: 20*4 = 80
    // (i.e. 10, 12.5, 17.5, 20 times scale_y_n * scale_x_n = 4).
    let (dt, _, v) = eval(
        upscale(ResizeMode::Bilinear),
        &[i8v(&[1, 2, 1, 1], &[10, 20])],
    );
    assert_eq!((dt, v), (DType::Int32, vec![40, 50, 70, 80]));
    let (dt, _, _) = eval(
        upscale(ResizeMode::Bilinear),
        &[i16v(&[1, 2, 1, 1], &[10, 20])],
    );
    assert_eq!(dt, DType::Int48);
}

#[test]
fn resize_rejects_out_of_range_parameters() {
    let x = i8v(&[1, 2, 1, 1], &[0, 0]);
    let with = |scale, offset, border| {
        graph1(
            Op::Resize(ResizeAttrs {
                mode: ResizeMode::NearestNeighbor,
                scale,
                offset,
                border,
            }),
            std::slice::from_ref(&x),
        )
        .is_err()
    };
    assert!(with([0, 1, 1, 1], [0, 0], [0, 0])); // zero numerator
    assert!(with([4096, 1, 1, 1], [0, 0], [0, 0])); // numerator > 2048
    assert!(with([1, 16, 1, 1], [0, 0], [0, 0])); // 1/16 downscale
    assert!(with([2, 1, 1, 1], [-3, 0], [0, 0])); // offset < -scale_n
    assert!(!with([2, 1, 1, 1], [0, 0], [0, 0]));
}
