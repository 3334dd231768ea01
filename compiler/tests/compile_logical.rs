//! Booleans, logical and bitwise operators, CAST, SELECT and constant operands (decisions
//! L12, L13): every graph on all five configurations, simulator against interpreter byte for
//! byte.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_ir::*;

/// LOGICAL_AND, OR and XOR of two bool inputs, the second broadcast over height and width;
/// three outputs.
pub fn logical_binary_bcast(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("logical_binary_bcast");
    let x = b.input("x", DType::Bool, [1, 4, 5, 6]);
    let y = b.input("y", DType::Bool, [1, 1, 1, 6]);
    for (name, op) in [
        ("and", Op::LogicalAnd),
        ("or", Op::LogicalOr),
        ("xor", Op::LogicalXor),
    ] {
        let z = b.op(name, op, &[x, y]);
        b.output(z);
    }
    b.finish().unwrap()
}

/// Both operands broadcast, along different axes: LOGICAL_XOR of [4, 1, 6] and [1, 5, 1]
/// bools, BITWISE_OR of [3, 1] and [1, 7] i16 tensors.
pub fn broadcast_both_ways(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("broadcast_both_ways");
    let x = b.input("x", DType::Bool, [1, 4, 1, 6]);
    let y = b.input("y", DType::Bool, [1, 1, 5, 1]);
    let p = b.input("p", DType::Int16, [3, 1]);
    let q = b.input("q", DType::Int16, [1, 7]);
    let z = b.op("xor", Op::LogicalXor, &[x, y]);
    let o = b.op("or", Op::BitwiseOr, &[p, q]);
    b.output(z);
    b.output(o);
    b.finish().unwrap()
}

/// LOGICAL_OR of comparisons, the first operand broadcast over depth, then LOGICAL_NOT.
pub fn comparisons_or_not(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("comparisons_or_not");
    let x = b.input("x", DType::Int8, [1, 3, 7, 1]);
    let y = b.input("y", DType::Int8, [1, 3, 7, 4]);
    let z = b.input("z", DType::Int8, [1, 3, 7, 4]);
    let g = b.op("gt", Op::Greater, &[x, y]);
    let e = b.op("eq", Op::Equal, &[y, z]);
    let o = b.op("or", Op::LogicalOr, &[e, g]);
    let n = b.op("not", Op::LogicalNot, &[o]);
    b.output(n);
    b.finish().unwrap()
}

/// LOGICAL_NOT after each comparison (fused: the comparison without its complement).
pub fn negated_comparisons(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("negated_comparisons");
    let x = b.input("x", DType::Int8, [1, 5, 4, 3]);
    let y = b.input("y", DType::Int8, [1, 5, 1, 3]);
    for (name, op) in [
        ("gt", Op::Greater),
        ("ge", Op::GreaterEqual),
        ("eq", Op::Equal),
    ] {
        let c = b.op(name, op, &[x, y]);
        let n = b.op(&format!("not_{name}"), Op::LogicalNot, &[c]);
        b.output(n);
    }
    b.finish().unwrap()
}

/// BITWISE_AND / OR / XOR / NOT of i8 tensors (broadcast over width) and of i16 tensors.
pub fn bitwise(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("bitwise");
    let x = b.input("x", DType::Int8, [2, 6, 5]);
    let y = b.input("y", DType::Int8, [2, 1, 5]);
    let p = b.input("p", DType::Int16, [3, 9]);
    let q = b.input("q", DType::Int16, [3, 9]);
    for (x, y, t) in [(x, y, "i8"), (p, q, "i16")] {
        for (name, op) in [
            ("and", Op::BitwiseAnd),
            ("or", Op::BitwiseOr),
            ("xor", Op::BitwiseXor),
        ] {
            let z = b.op(&format!("{name}_{t}"), op, &[x, y]);
            b.output(z);
        }
        let n = b.op(&format!("not_{t}"), Op::BitwiseNot, &[x]);
        b.output(n);
    }
    b.finish().unwrap()
}

/// CAST bool -> i8 (an alias), bool -> i16, i8 -> i16, i16 -> i8 (wraps), i8 -> bool and
/// i16 -> bool.
pub fn casts(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("casts");
    let c = b.input("c", DType::Bool, [1, 3, 4, 5]);
    let x = b.input("x", DType::Int8, [4, 7]);
    let h = b.input("h", DType::Int16, [2, 3, 8]);
    let cast = |to| Op::Cast(CastAttrs { to });
    for (name, t, to) in [
        ("c_i8", c, DType::Int8),
        ("c_i16", c, DType::Int16),
        ("x_i16", x, DType::Int16),
        ("h_i8", h, DType::Int8),
        ("x_bool", x, DType::Bool),
        ("h_bool", h, DType::Bool),
    ] {
        let y = b.op(name, cast(to), &[t]);
        b.output(y);
    }
    b.finish().unwrap()
}

/// SELECT of i8 tensors with the condition (a comparison) broadcast over width and the
/// second operand broadcast over height.
pub fn select_i8_bcast(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("select_i8_bcast");
    let x = b.input("x", DType::Int8, [1, 4, 1, 6]);
    let y = b.input("y", DType::Int8, [1, 4, 1, 6]);
    let a = b.input("a", DType::Int8, [1, 4, 5, 6]);
    let z = b.input("z", DType::Int8, [1, 1, 5, 6]);
    let c = b.op("ge", Op::GreaterEqual, &[x, y]);
    let s = b.op("select", Op::Select, &[c, a, z]);
    b.output(s);
    b.finish().unwrap()
}

/// SELECT of i16 tensors with a bool input condition broadcast over depth (the mask is
/// widened to i16 first).
pub fn select_i16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("select_i16");
    let c = b.input("c", DType::Bool, [3, 7, 1]);
    let a = b.input("a", DType::Int16, [3, 7, 4]);
    let z = b.input("z", DType::Int16, [3, 7, 4]);
    let s = b.op("select", Op::Select, &[c, a, z]);
    b.output(s);
    b.finish().unwrap()
}

/// A MAXIMUM and a GREATER with a per-channel constant operand, and a SELECT between the
/// input and the constant on the comparison (their minimum).
pub fn constant_operands(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("constant_operands");
    let x = b.input("x", DType::Int8, [1, 3, 4, 5]);
    let k = b.const_i8("k", [1, 1, 1, 5], &[-128, -3, 0, 9, 127]);
    let m = b.op("max", Op::Maximum, &[x, k]);
    let g = b.op("gt", Op::Greater, &[k, x]);
    let s = b.op("select", Op::Select, &[g, x, k]);
    b.output(s);
    b.output(g);
    b.output(m);
    b.finish().unwrap()
}

/// Constant subgraphs: a LOGICAL_NOT of a constant bool and a RESCALE of a constant are
/// evaluated at compile time and read from read-only buffers.
pub fn folded_constants(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("folded_constants");
    let x = b.input("x", DType::Bool, [1, 2, 3, 4]);
    let k = b.constant(
        "k",
        [1, 1, 1, 4],
        TensorData::Bool(vec![true, false, false, true]),
    );
    let nk = b.op("not_k", Op::LogicalNot, &[k]);
    let a = b.op("and", Op::LogicalAnd, &[x, nk]);
    b.output(a);
    b.finish().unwrap()
}

/// An exact widening read by two comparisons (folded into both), one of them against an
/// i32 constant zero (stored as i8), the other against another widening: TFLite's PRELU
/// condition.
pub fn shared_widening(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("shared_widening");
    let x = b.input("x", DType::Int8, [1, 4, 3, 5]);
    let y = b.input("y", DType::Int8, [1, 4, 3, 5]);
    let widen = |b: &mut GraphBuilder, name: &str, t, zp| {
        let r = RescaleAttrs {
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
        };
        b.op(name, Op::Rescale(r), &[t])
    };
    let wx = widen(&mut b, "wx", x, -3);
    let wy = widen(&mut b, "wy", y, 5);
    let zero = b.const_i32("zero", [1, 1, 1, 1], &[0]);
    let ge = b.op("ge", Op::GreaterEqual, &[wx, zero]);
    let gt = b.op("gt", Op::Greater, &[wy, wx]);
    b.output(ge);
    b.output(gt);
    b.finish().unwrap()
}

/// Rank-5 comparison and LOGICAL_AND with broadcasts folded into three axes.
pub fn rank5(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("rank5");
    let x = b.input("x", DType::Int8, [2, 3, 4, 5, 6]);
    let y = b.input("y", DType::Int8, [2, 3, 1, 1, 6]);
    let c = b.input("c", DType::Bool, [1, 1, 4, 5, 1]);
    let g = b.op("gt", Op::Greater, &[x, y]);
    let a = b.op("and", Op::LogicalAnd, &[g, c]);
    b.output(a);
    b.finish().unwrap()
}

fn rescale(m: i32, shift: i8, zp: (i64, i64), out: DType, double: bool) -> Op {
    Op::Rescale(RescaleAttrs {
        output_dtype: out,
        multiplier: vec![m],
        shift: vec![shift],
        scale32: true,
        rounding: if double {
            RescaleRounding::DoubleRound
        } else {
            RescaleRounding::SingleRound
        },
        per_channel: false,
        input_zp: zp.0,
        output_zp: zp.1,
        input_unsigned: false,
        output_unsigned: false,
    })
}

/// TFLite's PRELU: one exact widening read by the identity-branch RESCALE, the MUL by the
/// (widened constant) alpha and the GREATER_EQUAL against zero, then SELECT.
pub fn prelu_tflite(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("prelu_tflite");
    let x = b.input("x", DType::Int8, [1, 4, 5, 6]);
    let alpha = b.const_i8("alpha", [1, 1, 1, 6], &[-127, -60, -3, 0, 40, 127]);
    let w = b.op(
        "widen",
        rescale(1 << 30, 30, (-1, 0), DType::Int32, false),
        &[x],
    );
    let wa = b.op(
        "widen_alpha",
        rescale(1 << 30, 30, (0, 0), DType::Int32, false),
        &[alpha],
    );
    let pos = b.op(
        "pos",
        rescale(1 << 30, 29, (0, -128), DType::Int8, true),
        &[w],
    );
    let m = b.op("times_alpha", Op::Mul(MulAttrs { shift: 0 }), &[w, wa]);
    let neg = b.op(
        "neg",
        rescale(1_908_653_568, 38, (0, -128), DType::Int8, true),
        &[m],
    );
    let zero = b.const_i32("zero", [1, 1, 1, 1], &[0]);
    let c = b.op("non_negative", Op::GreaterEqual, &[w, zero]);
    let s = b.op("select", Op::Select, &[c, pos, neg]);
    b.output(s);
    b.finish().unwrap()
}

/// TOSA's PRELU: alpha is a RESCALE of a constant behind a RESHAPE (evaluated at compile
/// time and stored as i8 next to the folded widening).
pub fn prelu_tosa(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("prelu_tosa");
    let x = b.input("x", DType::Int8, [1, 3, 7, 5]);
    let alpha = b.const_i8("alpha", [1, 1, 5], &[-128, -7, 1, 64, 127]);
    let w = b.op(
        "widen",
        rescale(1 << 30, 30, (4, 0), DType::Int32, true),
        &[x],
    );
    let zero = b.const_i32("zero", [1, 1, 1, 1], &[0]);
    let c = b.op("ge", Op::GreaterEqual, &[w, zero]);
    let wa = b.op(
        "widen_alpha",
        rescale(1 << 30, 30, (0, 0), DType::Int32, true),
        &[alpha],
    );
    let ra = b.op(
        "reshape",
        Op::Reshape(ReshapeAttrs {
            shape: [1, 1, 1, 5].into(),
        }),
        &[wa],
    );
    let m = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[w, ra]);
    let neg = b.op(
        "neg",
        rescale(1_908_653_568, 37, (0, 3), DType::Int8, true),
        &[m],
    );
    let pos = b.op("pos", rescale(1 << 30, 30, (4, 3), DType::Int8, true), &[x]);
    let s = b.op("select", Op::Select, &[c, pos, neg]);
    b.output(s);
    b.finish().unwrap()
}

macro_rules! logical_tests {
    ($($name:ident),* $(,)?) => {
        mod sim_equals_interpreter {
            use super::*;
            $(#[test] fn $name() { check(stringify!($name), super::$name); })*
        }
    };
}

logical_tests!(
    logical_binary_bcast,
    broadcast_both_ways,
    comparisons_or_not,
    negated_comparisons,
    bitwise,
    casts,
    select_i8_bcast,
    select_i16,
    constant_operands,
    folded_constants,
    shared_widening,
    rank5,
    prelu_tflite,
    prelu_tosa,
);

fn kernels(g: &Graph) -> Vec<String> {
    let m = compile(g, &Options::default()).unwrap();
    m.operators.iter().map(|o| o.kernel.clone()).collect()
}

#[test]
fn a_negated_comparison_is_one_operation() {
    assert_eq!(kernels(&negated_comparisons(&mut Rng(1))).len(), 3);
}

#[test]
fn bool_to_i8_cast_is_free_and_select_is_three_operations() {
    let mut b = GraphBuilder::new("cast_only_after_compare");
    let x = b.input("x", DType::Int8, [1, 2, 2, 2]);
    let y = b.input("y", DType::Int8, [1, 2, 2, 2]);
    let c = b.op("gt", Op::Greater, &[x, y]);
    let z = b.op("cast", Op::Cast(CastAttrs { to: DType::Int8 }), &[c]);
    b.output(z);
    let g = b.finish().unwrap();
    assert_eq!(kernels(&g), ["ELEMENTWISE"]);
    assert_eq!(kernels(&select_i8_bcast(&mut Rng(1))).len(), 4);
    // i16: the mask is widened first.
    assert_eq!(
        kernels(&select_i16(&mut Rng(1))),
        ["POOL", "ELEMENTWISE", "ELEMENTWISE", "ELEMENTWISE"]
    );
}

#[test]
fn a_shared_widening_is_folded_into_every_comparison() {
    assert_eq!(
        kernels(&shared_widening(&mut Rng(1))),
        ["ELEMENTWISE", "ELEMENTWISE"]
    );
}

#[test]
fn prelu_needs_no_i32_feature_map() {
    // RESCALE, MUL, GREATER_EQUAL, SELECT's three: the widening is folded everywhere, the
    // TOSA alpha is an i8 constant.
    for g in [prelu_tflite(&mut Rng(1)), prelu_tosa(&mut Rng(1))] {
        let m = compile(&g, &Options::default()).unwrap();
        assert_eq!(m.operators.len(), 6, "{}: {:?}", g.name(), m.operators);
    }
}

#[test]
fn folded_constants_need_no_operation_of_their_own() {
    assert_eq!(kernels(&folded_constants(&mut Rng(1))), ["ELEMENTWISE"]);
}

#[test]
fn unsupported_forms_are_clear_errors() {
    // SELECT of u8 values.
    let mut b = GraphBuilder::new("select_u8");
    let c = b.input("c", DType::Bool, [4]);
    let x = b.input("x", DType::UInt8, [4]);
    let s = b.op("select", Op::Select, &[c, x, x]);
    b.output(s);
    let g = b.finish().unwrap();
    let e = compile(&g, &Options::default()).unwrap_err().to_string();
    assert!(e.contains("select") && e.contains("u8"), "{e}");
    // (CAST from i32 to bool compiles: compile_tosa_modes.rs.)
}
