//! TOSA models built with the generated builder, lowered and run on the IR interpreter;
//! expected values are worked by hand from the TOSA 1.0 pseudocode.

mod common;

use common::*;
use npuc_frontend_tosa::schema::{AttributeT, DType as D, Op, RoundingMode};
use npuc_ir::DType;

/// RESCALE i32 -> i8, multiplier 2^30, shift 33 (value / 8), output_zp 5.
fn rescale_model(mode: RoundingMode) -> Vec<u8> {
    let mut b = B::new();
    b.input("x", &[1, 6], D::INT32)
        .konst("m", &[1], D::INT32, i32s(&[1 << 30]))
        .konst("s", &[1], D::INT8, i8s(&[33]))
        .scalar("izp", D::INT32, 0)
        .scalar("ozp", D::INT8, 5)
        .output("y", &[1, 6], D::INT8)
        .op(
            Op::RESCALE,
            rescale_attr(true, mode, false),
            &["x", "m", "s", "izp", "ozp"],
            &["y"],
        );
    b.finish()
}

#[test]
fn rescale_single_and_double_round() {
    let x: &[i64] = &[3, -3, 4, -4, 11, -12];
    // single: (v*2^30 + 2^32) >> 33 = floor((v + 4) / 8)
    let single = run(
        &rescale_model(RoundingMode::SINGLE_ROUND),
        &[(&[1, 6], DType::Int32, x)],
    );
    assert_eq!(single, vec![vec![5, 5, 6, 5, 6, 4]]);
    // double: shift > 31 adds sign(v) * 2^30 to the rounding term: floor((v + 4 ± 1) / 8)
    let double = run(
        &rescale_model(RoundingMode::DOUBLE_ROUND),
        &[(&[1, 6], DType::Int32, x)],
    );
    assert_eq!(double, vec![vec![6, 5, 6, 4, 7, 3]]);
}

#[test]
fn rescale_per_channel_i8_with_input_zp() {
    // i8 [1,2,2] -> i8, per channel: c0 multiplier 2^30 shift 30 (x1), c1 2^30 shift 31 (x0.5)
    let mut b = B::new();
    b.input("x", &[1, 2, 2], D::INT8)
        .konst("m", &[2], D::INT32, i32s(&[1 << 30, 1 << 30]))
        .konst("s", &[2], D::INT8, i8s(&[30, 31]))
        .scalar("izp", D::INT8, -3)
        .scalar("ozp", D::INT8, 0)
        .output("y", &[1, 2, 2], D::INT8)
        .op(
            Op::RESCALE,
            rescale_attr(true, RoundingMode::SINGLE_ROUND, true),
            &["x", "m", "s", "izp", "ozp"],
            &["y"],
        );
    // values minus zp: [10-(-3)=13, 4+3=7, -3+3=0, 124+3=127] -> [13, round(3.5)=4, 0, 64]
    let out = run(&b.finish(), &[(&[1, 2, 2], DType::Int8, &[10, 4, -3, 124])]);
    assert_eq!(out, vec![vec![13, 4, 0, 64]]);
}

fn conv_model() -> B {
    let mut b = B::new();
    b.input("x", &[1, 2, 2, 1], D::INT8)
        .konst("w", &[2, 1, 2, 1], D::INT8, i8s(&[1, 2, 3, -1]))
        .konst("bias", &[2], D::INT32, i32s(&[10, -5]))
        .scalar("xzp", D::INT8, 1)
        .scalar("wzp", D::INT8, 1)
        .output("acc", &[1, 2, 1, 2], D::INT32)
        .op(
            Op::CONV2D,
            conv_attr([0; 4], [1, 1], D::INT32),
            &["x", "w", "bias", "xzp", "wzp"],
            &["acc"],
        );
    b
}

#[test]
fn conv2d_with_zero_points() {
    // input - 1 = [[0,1],[2,3]]; weights - 1 = oc0 [0,1], oc1 [2,-2]
    // row 0: oc0 = 1 + 10 = 11, oc1 = -2 - 5 = -7; row 1: oc0 = 3 + 10 = 13, oc1 = 4 - 6 - 5 = -7
    let out = run(
        &conv_model().finish(),
        &[(&[1, 2, 2, 1], DType::Int8, &[1, 2, 3, 4])],
    );
    assert_eq!(out, vec![vec![11, -7, 13, -7]]);
}

#[test]
fn conv2d_int4_weights() {
    // The same weights packed as INT4 (low nibble first): [1,2] -> 0x21, [3,-1] -> 0xf3.
    let mut b = B::new();
    b.input("x", &[1, 2, 2, 1], D::INT8)
        .konst("w", &[2, 1, 2, 1], D::INT4, vec![0x21, 0xf3])
        .konst("bias", &[2], D::INT32, i32s(&[10, -5]))
        .scalar("xzp", D::INT8, 1)
        .konst("wzp", &[1], D::INT4, vec![0])
        .output("acc", &[1, 2, 1, 2], D::INT32)
        .op(
            Op::CONV2D,
            conv_attr([0; 4], [1, 1], D::INT32),
            &["x", "w", "bias", "xzp", "wzp"],
            &["acc"],
        );
    // weights [1,2],[3,-1], weight_zp 0: row 0 (0,1): 2+10=12, -1-5=-6; row 1 (2,3): 2*1+3*2+10=18, 6-3-5=-2
    let out = run(&b.finish(), &[(&[1, 2, 2, 1], DType::Int8, &[1, 2, 3, 4])]);
    assert_eq!(out, vec![vec![12, -6, 18, -2]]);
}

#[test]
fn conv2d_int4_weights_as_a_graph_input() {
    // EXT-INT4 weights that are a graph input: an i8 tensor holding -8..=7 (the reference
    // model's INT4 .npy data), the same result as the packed constant above.
    let mut b = B::new();
    b.input("x", &[1, 2, 2, 1], D::INT8)
        .input("w", &[2, 1, 2, 1], D::INT4)
        .konst("bias", &[2], D::INT32, i32s(&[10, -5]))
        .scalar("xzp", D::INT8, 1)
        .konst("wzp", &[1], D::INT4, vec![0])
        .output("acc", &[1, 2, 1, 2], D::INT32)
        .op(
            Op::CONV2D,
            conv_attr([0; 4], [1, 1], D::INT32),
            &["x", "w", "bias", "xzp", "wzp"],
            &["acc"],
        );
    let out = run(
        &b.finish(),
        &[
            (&[1, 2, 2, 1], DType::Int8, &[1, 2, 3, 4]),
            (&[2, 1, 2, 1], DType::Int8, &[1, 2, 3, -1]),
        ],
    );
    assert_eq!(out, vec![vec![12, -6, 18, -2]]);
}

#[test]
fn identity_int4_passes_values() {
    let mut b = B::new();
    b.input("x", &[3], D::INT4).output("y", &[3], D::INT4).op(
        Op::IDENTITY,
        empty(Op::IDENTITY),
        &["x"],
        &["y"],
    );
    let out = run(&b.finish(), &[(&[3], DType::Int8, &[-8, 0, 7])]);
    assert_eq!(out, vec![vec![-8, 0, 7]]);
}

#[test]
fn int4_is_refused_where_the_profile_has_no_int4() {
    let mut b = B::new();
    b.input("x", &[3], D::INT4).output("y", &[3], D::INT4).op(
        Op::ABS,
        empty(Op::ABS),
        &["x"],
        &["y"],
    );
    assert!(lower_err(&b.finish()).contains("element type INT4 is not allowed here"));
}

#[test]
fn table_i8() {
    let table: Vec<i8> = (0..256).map(|j| (127 - j) as i8).collect();
    let mut b = B::new();
    b.input("x", &[4], D::INT8)
        .konst("t", &[256], D::INT8, i8s(&table))
        .output("y", &[4], D::INT8)
        .op(Op::TABLE, empty(Op::TABLE), &["x", "t"], &["y"]);
    // out = table[x + 128] = -1 - x
    let out = run(&b.finish(), &[(&[4], DType::Int8, &[-128, 0, 127, 5])]);
    assert_eq!(out, vec![vec![127, -1, -128, -6]]);
}

#[test]
fn table_i16_interpolates() {
    // table[j] = 64 * j: out = (base << 7) + (next - base) * frac = 64*j*128 + 64*frac
    // for in = -32768 + 128*j + frac, i.e. out = 64 * (in + 32768).
    let table: Vec<i16> = (0..513).map(|j| (64 * j - 16384) as i16).collect();
    let mut b = B::new();
    b.input("x", &[3], D::INT16)
        .konst("t", &[513], D::INT16, i16s(&table))
        .output("y", &[3], D::INT32)
        .op(Op::TABLE, empty(Op::TABLE), &["x", "t"], &["y"]);
    let out = run(&b.finish(), &[(&[3], DType::Int16, &[-32768, 0, 1000])]);
    let f = |x: i64| -16384 * 128 + 64 * (x + 32768);
    assert_eq!(out, vec![vec![f(-32768), f(0), f(1000)]]);
}

#[test]
fn matmul_with_zero_points() {
    let mut b = B::new();
    b.input("a", &[1, 2, 2], D::INT8)
        .konst("b", &[1, 2, 2], D::INT8, i8s(&[0, 1, -1, 2]))
        .scalar("azp", D::INT8, 1)
        .scalar("bzp", D::INT8, -1)
        .output("y", &[1, 2, 2], D::INT32)
        .op(
            Op::MATMUL,
            empty(Op::MATMUL),
            &["a", "b", "azp", "bzp"],
            &["y"],
        );
    // (A-1) = [[0,1],[2,3]], (B+1) = [[1,2],[0,3]] -> [[0,3],[2,13]]
    let out = run(&b.finish(), &[(&[1, 2, 2], DType::Int8, &[1, 2, 3, 4])]);
    assert_eq!(out, vec![vec![0, 3, 2, 13]]);
}

#[test]
fn add_broadcast_and_mul_with_shift() {
    let mut b = B::new();
    b.input("a", &[1, 4], D::INT32)
        .input("b", &[1, 4], D::INT32)
        .konst("ten", &[1, 1], D::INT32, i32s(&[10]))
        .scalar("sh", D::INT8, 2)
        .tensor("p", &[1, 4], D::INT32)
        .output("sum", &[1, 4], D::INT32)
        .op(Op::MUL, empty(Op::MUL), &["a", "b", "sh"], &["p"])
        .op(Op::ADD, empty(Op::ADD), &["p", "ten"], &["sum"]);
    // (a*b + 2) >> 2: 15 -> 4, -15 -> -4, 300 -> 75, 7 -> 2; then + 10
    let out = run(
        &b.finish(),
        &[
            (&[1, 4], DType::Int32, &[3, -3, 100, 7]),
            (&[1, 4], DType::Int32, &[5, 5, 3, 1]),
        ],
    );
    assert_eq!(out, vec![vec![14, 6, 85, 12]]);
}

#[test]
fn pad_with_const_shape() {
    let mut b = B::new();
    b.input("x", &[1, 3], D::INT8)
        .shape("padding", &[0, 0, 1, 2])
        .scalar("pv", D::INT8, 7)
        .output("y", &[1, 6], D::INT8)
        .op(Op::PAD, empty(Op::PAD), &["x", "padding", "pv"], &["y"]);
    let out = run(&b.finish(), &[(&[1, 3], DType::Int8, &[1, 2, 3])]);
    assert_eq!(out, vec![vec![7, 1, 2, 3, 7, 7]]);
}

#[test]
fn chain_conv_rescale_clamp_reshape_slice_transpose() {
    let mut b = conv_model();
    b.outputs_clear();
    b.tensor("acc2", &[1, 2, 1, 2], D::INT32)
        .konst("m", &[1], D::INT32, i32s(&[1 << 30]))
        .konst("s", &[1], D::INT8, i8s(&[31]))
        .scalar("izp", D::INT32, 0)
        .scalar("ozp", D::INT8, -1)
        .tensor("q", &[1, 2, 1, 2], D::INT8)
        .tensor("c", &[1, 2, 1, 2], D::INT8)
        .shape("newshape", &[2, 2])
        .tensor("r", &[2, 2], D::INT8)
        .shape("start", &[0, 1])
        .shape("size", &[2, 1])
        .tensor("sl", &[2, 1], D::INT8)
        .output("t", &[1, 2], D::INT8)
        .op(Op::IDENTITY, empty(Op::IDENTITY), &["acc"], &["acc2"])
        .op(
            Op::RESCALE,
            rescale_attr(true, RoundingMode::DOUBLE_ROUND, false),
            &["acc2", "m", "s", "izp", "ozp"],
            &["q"],
        )
        .op(Op::CLAMP, clamp_attr(-5, 6), &["q"], &["c"])
        .op(Op::RESHAPE, empty(Op::RESHAPE), &["c", "newshape"], &["r"])
        .op(
            Op::SLICE,
            empty(Op::SLICE),
            &["r", "start", "size"],
            &["sl"],
        )
        .op(Op::TRANSPOSE, transpose_attr(&[1, 0]), &["sl"], &["t"]);
    // acc = [11, -7, 13, -7]; x/2 double round (shift 31 is not > 31: plain round half up):
    // floor((v + 1) / 2) = [6, -3, 7, -3]; -1 -> [5, -4, 6, -4]; clamp [-5, 6] unchanged;
    // reshape [[5,-4],[6,-4]]; slice column 1 -> [[-4],[-4]]; transpose -> [[-4, -4]]
    let out = run(&b.finish(), &[(&[1, 2, 2, 1], DType::Int8, &[1, 2, 3, 4])]);
    assert_eq!(out, vec![vec![-4, -4]]);
}

// ---- profile errors ----

#[test]
fn add_on_int8_is_outside_the_profile() {
    let mut b = B::new();
    b.input("a", &[2], D::INT8)
        .input("b", &[2], D::INT8)
        .output("y", &[2], D::INT8)
        .op(Op::ADD, empty(Op::ADD), &["a", "b"], &["y"]);
    let e = lower_err(&b.finish());
    assert!(e.contains("ADD") && e.contains("INT8"), "{e}");
}

#[test]
fn conv_zero_point_must_be_constant() {
    let mut b = B::new();
    b.input("x", &[1, 2, 2, 1], D::INT8)
        .input("xzp", &[1], D::INT8)
        .konst("w", &[2, 1, 2, 1], D::INT8, i8s(&[1, 2, 3, -1]))
        .konst("bias", &[2], D::INT32, i32s(&[10, -5]))
        .scalar("wzp", D::INT8, 1)
        .output("acc", &[1, 2, 1, 2], D::INT32)
        .op(
            Op::CONV2D,
            conv_attr([0; 4], [1, 1], D::INT32),
            &["x", "w", "bias", "xzp", "wzp"],
            &["acc"],
        );
    let e = lower_err(&b.finish());
    assert!(e.contains("xzp") && e.contains("constant"), "{e}");
}

#[test]
fn conv_wrong_acc_type() {
    let mut b = B::new();
    b.input("x", &[1, 2, 2, 1], D::INT8)
        .konst("w", &[2, 1, 2, 1], D::INT8, i8s(&[1, 2, 3, -1]))
        .konst("bias", &[2], D::INT32, i32s(&[10, -5]))
        .scalar("xzp", D::INT8, 0)
        .scalar("wzp", D::INT8, 0)
        .output("acc", &[1, 2, 1, 2], D::INT32)
        .op(
            Op::CONV2D,
            conv_attr([0; 4], [1, 1], D::INT48),
            &["x", "w", "bias", "xzp", "wzp"],
            &["acc"],
        );
    let e = lower_err(&b.finish());
    assert!(e.contains("acc_type"), "{e}");
}

#[test]
fn rescale_bad_shift_and_double_round_without_scale32() {
    let mut b = B::new();
    b.input("x", &[2], D::INT32)
        .konst("m", &[1], D::INT32, i32s(&[1 << 30]))
        .konst("s", &[1], D::INT8, i8s(&[63]))
        .scalar("izp", D::INT32, 0)
        .scalar("ozp", D::INT8, 0)
        .output("y", &[2], D::INT8)
        .op(
            Op::RESCALE,
            rescale_attr(true, RoundingMode::SINGLE_ROUND, false),
            &["x", "m", "s", "izp", "ozp"],
            &["y"],
        );
    assert!(lower_err(&b.finish()).contains("shift 63"));

    let mut b = B::new();
    b.input("x", &[2], D::INT32)
        .konst("m", &[1], D::INT16, i16s(&[1 << 14]))
        .konst("s", &[1], D::INT8, i8s(&[15]))
        .scalar("izp", D::INT32, 0)
        .scalar("ozp", D::INT8, 0)
        .output("y", &[2], D::INT8)
        .op(
            Op::RESCALE,
            rescale_attr(false, RoundingMode::DOUBLE_ROUND, false),
            &["x", "m", "s", "izp", "ozp"],
            &["y"],
        );
    assert!(lower_err(&b.finish()).contains("DOUBLE_ROUND requires scale32"));
}

#[test]
fn rescale_nonzero_zp_on_int32_input() {
    let mut b = B::new();
    b.input("x", &[2], D::INT32)
        .konst("m", &[1], D::INT32, i32s(&[1 << 30]))
        .konst("s", &[1], D::INT8, i8s(&[30]))
        .scalar("izp", D::INT32, 4)
        .scalar("ozp", D::INT8, 0)
        .output("y", &[2], D::INT8)
        .op(
            Op::RESCALE,
            rescale_attr(true, RoundingMode::SINGLE_ROUND, false),
            &["x", "m", "s", "izp", "ozp"],
            &["y"],
        );
    let e = lower_err(&b.finish());
    assert!(e.contains("input_zp 4"), "{e}");
}

#[test]
fn declared_output_type_must_match() {
    let mut b = B::new();
    b.input("a", &[2], D::INT32)
        .input("b", &[2], D::INT32)
        .output("y", &[3], D::INT32)
        .op(Op::ADD, empty(Op::ADD), &["a", "b"], &["y"]);
    let e = lower_err(&b.finish());
    assert!(e.contains("declared"), "{e}");
}

#[test]
fn float_and_control_flow_are_rejected() {
    let mut b = B::new();
    b.input("a", &[2], D::FP32).output("y", &[2], D::FP32).op(
        Op::SIGMOID,
        AttributeT::NONE,
        &["a"],
        &["y"],
    );
    let e = lower_err(&b.finish());
    assert!(e.contains("FP32"), "{e}");
    let mut b = B::new();
    b.input("a", &[2], D::INT32).output("y", &[2], D::INT32).op(
        Op::POW,
        AttributeT::NONE,
        &["a", "a"],
        &["y"],
    );
    let e = lower_err(&b.finish());
    assert!(e.contains("POW") && e.contains("profile"), "{e}");
}

#[test]
fn version_must_be_1_0() {
    let mut b = B::new();
    b.version = (0, 80);
    b.input("a", &[2], D::INT32).output("y", &[2], D::INT32).op(
        Op::IDENTITY,
        empty(Op::IDENTITY),
        &["a"],
        &["y"],
    );
    assert!(lower_err(&b.finish()).contains("0.80.0"));
}
