//! Property tests: round trips, rescale identities, TOSA double rounding = gemmlowp's two-step
//! rounding, and "the validator and interpreter never panic".

mod common;
use common::*;
use npuc_ir::quant::{apply_scale_16, apply_scale_32, gemmlowp};
use npuc_ir::validate::infer_output_types;
use npuc_ir::*;
use proptest::prelude::*;

fn shape_and_data() -> impl Strategy<Value = (Vec<usize>, Vec<i64>)> {
    prop::collection::vec(1usize..5, 1..5).prop_flat_map(|shape| {
        let n: usize = shape.iter().product();
        (Just(shape), prop::collection::vec(-128i64..128, n))
    })
}

proptest! {
    #[test]
    fn reshape_round_trip((shape, data) in shape_and_data(), seed in any::<u64>()) {
        let x = i8v(&shape, &data);
        // Any permutation of the extents has the same element count.
        let mut other = shape.clone();
        let len = other.len();
        other.rotate_left((seed as usize) % len);
        let there = eval_v(Op::Reshape(ReshapeAttrs { shape: Shape::from(other.clone()) }), &[x]);
        prop_assert_eq!(&there, &data); // row-major order is unchanged
        let y = i8v(&other, &there);
        let back = eval(Op::Reshape(ReshapeAttrs { shape: Shape::from(shape.clone()) }), &[y]);
        prop_assert_eq!(back, (DType::Int8, shape, data));
    }

    #[test]
    fn transpose_round_trip(
        (shape, data) in shape_and_data(),
        perm in Just(()).prop_flat_map(|_| Just(vec![0usize, 1, 2, 3]).prop_shuffle()),
    ) {
        let perms: Vec<usize> = perm.into_iter().filter(|&p| p < shape.len()).collect();
        let mut inverse = vec![0; perms.len()];
        for (i, &p) in perms.iter().enumerate() {
            inverse[p] = i;
        }
        let (_, tshape, t) = eval(Op::Transpose(TransposeAttrs { perms: perms.clone() }), &[i8v(&shape, &data)]);
        prop_assert_eq!(&tshape, &perms.iter().map(|&p| shape[p]).collect::<Vec<_>>());
        let back = eval(Op::Transpose(TransposeAttrs { perms: inverse }), &[i8v(&tshape, &t)]);
        prop_assert_eq!(back, (DType::Int8, shape, data));
    }

    #[test]
    fn rescale_2_30_shift_30_is_identity(
        v8 in prop::collection::vec(-128i64..128, 1..16),
        v16 in prop::collection::vec(-32768i64..32768, 1..16),
        double in any::<bool>(),
    ) {
        let r = if double { RescaleRounding::DoubleRound } else { RescaleRounding::SingleRound };
        let y = eval_v(Op::Rescale(rescale(DType::Int8, 1 << 30, 30, r)), &[i8v(&[v8.len()], &v8)]);
        prop_assert_eq!(y, v8);
        let y = eval_v(Op::Rescale(rescale(DType::Int16, 1 << 30, 30, r)), &[i16v(&[v16.len()], &v16)]);
        prop_assert_eq!(y, v16);
    }

    /// TOSA DOUBLE_ROUND with shift = 31 + e equals gemmlowp's
    /// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(v, m), e) — TFLite's
    /// MultiplyByQuantizedMultiplier for a right shift.
    #[test]
    fn double_round_equals_gemmlowp_right_shift(v in any::<i32>(), m in 0i32..=i32::MAX, e in 1u32..=31) {
        let tosa = apply_scale_32(v.into(), m, 31 + e as i32, true).unwrap();
        let tfl = gemmlowp::rounding_divide_by_pot(gemmlowp::saturating_rounding_doubling_high_mul(v, m), e);
        prop_assert_eq!(tosa, tfl);
    }

    /// For shift = 31 - k ≤ 31 (a left shift by k in TFLite), both TOSA modes equal
    /// SaturatingRoundingDoublingHighMul(v << k, m) wherever TOSA defines the result.
    #[test]
    fn shift_at_most_31_equals_gemmlowp_left_shift(
        (shift, v) in (2i32..=31).prop_flat_map(|s| (Just(s), -(1i32 << (s - 1))..(1i32 << (s - 1)))),
        m in 0i32..=i32::MAX,
    ) {
        let k = 31 - shift;
        let tfl = gemmlowp::saturating_rounding_doubling_high_mul(v << k, m);
        prop_assert_eq!(apply_scale_32(v.into(), m, shift, false).unwrap(), tfl);
        prop_assert_eq!(apply_scale_32(v.into(), m, shift, true).unwrap(), tfl);
    }

    /// SINGLE_ROUND is the exact product rounded half towards +infinity.
    #[test]
    fn single_round_is_round_half_up(v in any::<i32>(), m in 0i32..=i32::MAX, shift in 2i32..=62) {
        if let Ok(r) = apply_scale_32(v.into(), m, shift, false) {
            let p = i128::from(v) * i128::from(m);
            let expected = (2 * p + (1i128 << shift)).div_euclid(1i128 << (shift + 1));
            prop_assert_eq!(i128::from(r), expected);
        } else {
            // Only the TOSA value window can fail for a non-negative multiplier.
            let half = 1i64 << (shift - 1);
            prop_assert!(i64::from(v) < -half || i64::from(v) >= half);
        }
    }

    #[test]
    fn scale16_is_round_half_up(v in -(1i64 << 47)..(1i64 << 47), m in 0i16..=i16::MAX, shift in 2i32..=62) {
        let p = i128::from(v) * i128::from(m);
        let expected = (2 * p + (1i128 << shift)).div_euclid(1i128 << (shift + 1));
        match apply_scale_16(v, m, shift) {
            Ok(r) => prop_assert_eq!(i128::from(r), expected),
            Err(_) => prop_assert!(i32::try_from(expected).is_err()),
        }
    }
}

/// Elementwise operators on i32 for the random-graph property.
fn ewise_op(k: u8) -> Op {
    match k % 16 {
        0 => Op::Add,
        1 => Op::Sub,
        2 => Op::Mul(MulAttrs { shift: 0 }),
        3 => Op::Mul(MulAttrs { shift: 7 }),
        4 => Op::Maximum,
        5 => Op::Minimum,
        6 => Op::IntDiv,
        7 => Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        8 => Op::LogicalLeftShift,
        9 => Op::LogicalRightShift,
        10 => Op::BitwiseXor,
        11 => Op::Abs,
        12 => Op::Negate(NegateAttrs::default()),
        13 => Op::Clz,
        14 => Op::Clamp(ClampAttrs {
            min: -1000,
            max: 1000,
        }),
        _ => Op::Rescale(rescale(
            DType::Int32,
            1 << 30,
            31,
            RescaleRounding::DoubleRound,
        )),
    }
}

fn edge_i32() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::from(i32::MIN)),
        Just(i64::from(i32::MAX)),
        -40i64..40,
        any::<i32>().prop_map(i64::from),
    ]
}

proptest! {
    /// Random chains of elementwise operators over broadcasting inputs: the interpreter
    /// returns values or `Undefined`, never panics, never produces an internal error.
    #[test]
    fn interpreter_never_panics_on_elementwise_graphs(
        a in prop::collection::vec(edge_i32(), 6),
        b in prop::collection::vec(edge_i32(), 3),
        c in prop::collection::vec(edge_i32(), 2),
        ops in prop::collection::vec((any::<u8>(), 0usize..3), 1..6),
    ) {
        let mut gb = GraphBuilder::new("random");
        let ins = [
            gb.input("a", DType::Int32, [2, 3]),
            gb.input("b", DType::Int32, [1, 3]),
            gb.input("c", DType::Int32, [2, 1]),
        ];
        let mut cur = ins[0];
        for (i, (k, other)) in ops.iter().enumerate() {
            let op = ewise_op(*k);
            let args: Vec<TensorId> = match op.arity() {
                Some(2) => vec![cur, ins[*other]],
                _ => vec![cur],
            };
            cur = gb.op(&format!("op{i}"), op, &args);
        }
        gb.output(cur);
        let g = gb.finish().expect("well-typed chain");
        let values = vec![i32v(&[2, 3], &a), i32v(&[1, 3], &b), i32v(&[2, 1], &c)];
        match run(&g, values) {
            Ok(v) => prop_assert_eq!(v.len(), 3 + ops.len()),
            Err(InterpError::Undefined { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Random convolution / pooling geometry: inference either rejects it or the interpreter
    /// runs it to a value or `Undefined`; nothing panics. Shapes are mostly consistent so that
    /// most cases reach the interpreter.
    #[test]
    fn window_ops_never_panic(
        nhwc in prop::collection::vec(1usize..6, 4),
        (kh, kw, oc) in (1usize..4, 1usize..4, 1usize..3),
        pad in prop::collection::vec(prop_oneof![8 => 0usize..3, 1 => Just(usize::MAX)], 4),
        stride in prop::collection::vec(prop_oneof![8 => 1usize..3, 1 => Just(0usize), 1 => Just(usize::MAX)], 2),
        out_pad in prop::collection::vec(prop_oneof![8 => -2i64..3, 1 => Just(i64::MIN), 1 => Just(i64::MAX)], 4),
        which in 0u8..5,
        zp in -130i64..130,
        fill in any::<i8>(),
    ) {
        let [n, h, w, c] = [nhwc[0], nhwc[1], nhwc[2], nhwc[3]];
        let pad4 = [pad[0], pad[1], pad[2], pad[3]];
        let st = [stride[0], stride[1]];
        let (op, w_shape, bias_len) = match which {
            0 => (Op::Conv2d(ConvAttrs { pad: pad4, stride: st, dilation: [1, 2], input_zp: zp, weight_zp: 0 }), vec![oc, kh, kw, c], oc),
            1 => (Op::DepthwiseConv2d(ConvAttrs { pad: pad4, stride: st, dilation: [2, 1], input_zp: 0, weight_zp: zp }), vec![kh, kw, c, oc], c * oc),
            2 => (Op::TransposeConv2d(TransposeConvAttrs { out_pad: [out_pad[0], out_pad[1], out_pad[2], out_pad[3]], stride: st, input_zp: zp, weight_zp: 0 }), vec![oc, kh, kw, c], oc),
            3 => (Op::MaxPool2d(PoolAttrs { kernel: [kh, kw], stride: st, pad: pad4 }), vec![], 0),
            _ => (Op::AvgPool2d(AvgPool2dAttrs { kernel: [kh, kw], stride: st, pad: pad4, input_zp: zp, output_zp: 0, rounding: AvgPoolRounding::Tosa }), vec![], 0),
        };
        let in_len = n * h * w * c;
        let mut inputs = vec![TensorValue::from_i64(DType::Int8, [n, h, w, c], &vec![i64::from(fill); in_len]).unwrap()];
        if bias_len > 0 {
            let wl: usize = w_shape.iter().product();
            inputs.push(TensorValue::from_i64(DType::Int8, w_shape, &vec![-128; wl]).unwrap());
            inputs.push(i32v(&[bias_len], &vec![i64::from(i32::MAX) - 1000; bias_len]));
        }
        let types: Vec<TensorType> = inputs.iter().map(|v| v.tensor_type()).collect();
        if infer_output_types(&op, &types).is_ok() {
            match try_eval(op, &inputs) {
                Ok(_) | Err(InterpError::Undefined { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}

/// A layout / conversion operator with small random (possibly invalid) attributes.
fn layout_op(k: u8, a: &[usize], b: &[i64]) -> Op {
    let v = |i: usize| a[i % a.len()];
    let s = |i: usize| b[i % b.len()];
    match k % 12 {
        0 => Op::Pad(PadAttrs {
            padding: vec![[v(0), v(1)], [v(2), v(3)], [v(4), v(5)]],
            pad_const: s(0),
        }),
        1 => Op::Slice(SliceAttrs {
            start: vec![v(0), v(1), v(2)],
            size: vec![v(3), v(4), v(5)],
        }),
        2 => Op::Tile(TileAttrs {
            multiples: vec![v(0), v(1), v(2)],
        }),
        3 => Op::Transpose(TransposeAttrs {
            perms: vec![v(0), v(1), v(2)],
        }),
        4 => Op::Reverse(AxisAttrs { axis: v(0) }),
        5 => Op::Reshape(ReshapeAttrs {
            shape: Shape::from(vec![v(0), v(1), v(2)]),
        }),
        6 => Op::Concat(AxisAttrs { axis: v(0) }),
        7 => Op::ReduceMax(AxisAttrs { axis: v(1) }),
        8 => Op::ArgMax(AxisAttrs { axis: v(2) }),
        9 => Op::Cast(CastAttrs {
            to: DType::ALL[v(0) % 8],
        }),
        10 => Op::Rescale(RescaleAttrs {
            output_dtype: [DType::Int8, DType::UInt8, DType::Int16, DType::Int32][v(0) % 4],
            multiplier: vec![s(0).rem_euclid(1 << 31) as i32; 1 + v(1) % 3],
            shift: vec![(2 + s(1).rem_euclid(61)) as i8; 1 + v(1) % 3],
            scale32: v(2) % 2 == 0,
            rounding: if v(3) % 2 == 0 {
                RescaleRounding::SingleRound
            } else {
                RescaleRounding::DoubleRound
            },
            per_channel: v(4) % 2 == 0,
            input_zp: s(2) % 3,
            output_zp: s(3) % 3,
            input_unsigned: v(5) % 4 == 0,
            output_unsigned: v(0) % 4 == 0,
        }),
        _ => Op::Resize(ResizeAttrs {
            mode: if v(0) % 2 == 0 {
                ResizeMode::NearestNeighbor
            } else {
                ResizeMode::Bilinear
            },
            scale: [
                1 + s(0).rem_euclid(5),
                1 + s(1).rem_euclid(5),
                1 + s(2).rem_euclid(5),
                1 + s(3).rem_euclid(5),
            ],
            offset: [s(4) % 3, s(5) % 3],
            border: [s(6) % 3, s(7) % 3],
        }),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Random layout / conversion attributes on a random small i8 tensor: rejected by
    /// inference, or run to a value or `Undefined`; never a panic.
    #[test]
    fn layout_ops_never_panic(
        k in any::<u8>(),
        a in prop::collection::vec(prop_oneof![8 => 0usize..4, 1 => Just(usize::MAX)], 6),
        b in prop::collection::vec(prop_oneof![4 => -3i64..40, 1 => any::<i64>(), 1 => Just(1i64 << 30)], 8),
        dims in prop::collection::vec(1usize..4, 3),
        rank4 in any::<bool>(),
        fill in any::<i8>(),
    ) {
        let op = layout_op(k, &a, &b);
        let shape = if rank4 { vec![1, dims[0], dims[1], dims[2]] } else { dims.clone() };
        let n: usize = shape.iter().product();
        let x = TensorValue::from_i64(DType::Int8, shape, &vec![i64::from(fill); n]).unwrap();
        let inputs = vec![x];
        let types: Vec<TensorType> = inputs.iter().map(|v| v.tensor_type()).collect();
        if infer_output_types(&op, &types).is_ok() {
            match try_eval(op, &inputs) {
                Ok(_) | Err(InterpError::Undefined { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}
