//! MAXIMUM, MINIMUM and the comparisons as single NPU elementwise operations (decision L11):
//! every graph on all five configurations, simulator against interpreter byte for byte.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_ir::*;

/// RESCALE of an i8 tensor to i32 with a zero point (multiplier `2^30 >> 30`, exact).
fn widen(b: &mut GraphBuilder, name: &str, x: TensorId, zp: i64) -> TensorId {
    b.op(name, Op::Rescale(rescale_i32(1 << 30, 30, zp, false)), &[x])
}

fn rescale_i32(m: i32, shift: i8, zp: i64, double: bool) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![m],
        shift: vec![shift],
        scale32: true,
        rounding: if double {
            RescaleRounding::DoubleRound
        } else {
            RescaleRounding::SingleRound
        },
        per_channel: false,
        input_zp: zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// The TFLite comparison operand: widen, shift left by `k`, rescale by `m >> shift`.
fn tflite_operand(
    b: &mut GraphBuilder,
    name: &str,
    x: TensorId,
    zp: i64,
    k: i32,
    m: i32,
    shift: i8,
) -> TensorId {
    let w = widen(b, &format!("{name}_widen"), x, zp);
    let kt = b.const_i32(&format!("{name}_k"), [1, 1, 1, 1], &[k]);
    let s = b.op(&format!("{name}_shl"), Op::LogicalLeftShift, &[w, kt]);
    b.op(
        &format!("{name}_rescale"),
        Op::Rescale(rescale_i32(m, shift, 0, true)),
        &[s],
    )
}

/// MAXIMUM of i8 tensors, the second broadcast over height, then a CLAMP.
pub fn maximum_bcast_clamp(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("maximum_bcast_clamp");
    let x = b.input("x", DType::Int8, [1, 5, 3, 9]);
    let y = b.input("y", DType::Int8, [1, 1, 3, 9]);
    let m = b.op("max", Op::Maximum, &[x, y]);
    let c = b.op("clamp", Op::Clamp(ClampAttrs { min: -30, max: 100 }), &[m]);
    b.output(c);
    b.finish().unwrap()
}

/// MINIMUM of i16 tensors, the first broadcast over depth, rank 3.
pub fn minimum_i16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("minimum_i16");
    let x = b.input("x", DType::Int16, [4, 7, 1]);
    let y = b.input("y", DType::Int16, [4, 7, 6]);
    let m = b.op("min", Op::Minimum, &[x, y]);
    b.output(m);
    b.finish().unwrap()
}

/// GREATER in the TFLite scheme; the first operand broadcasts over width.
pub fn greater_tflite(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("greater_tflite");
    let x = b.input("x", DType::Int8, [1, 4, 1, 5]);
    let y = b.input("y", DType::Int8, [1, 4, 6, 5]);
    let a = tflite_operand(&mut b, "a", x, -3, 8, 1_077_952_640, 37);
    let c = tflite_operand(&mut b, "b", y, 11, 8, 1_969_152_512, 38);
    let g = b.op("gt", Op::Greater, &[a, c]);
    b.output(g);
    b.finish().unwrap()
}

/// GREATER_EQUAL of raw i8 tensors (odd sizes).
pub fn greater_equal_raw(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("greater_equal_raw");
    let x = b.input("x", DType::Int8, [1, 3, 5, 7]);
    let y = b.input("y", DType::Int8, [1, 3, 5, 7]);
    let g = b.op("ge", Op::GreaterEqual, &[x, y]);
    b.output(g);
    b.finish().unwrap()
}

/// EQUAL after coarse input rescales (values / 32, so equal results are frequent), the
/// second operand broadcast over depth.
pub fn equal_coarse(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("equal_coarse");
    let x = b.input("x", DType::Int8, [1, 6, 4, 8]);
    let y = b.input("y", DType::Int8, [1, 6, 4, 1]);
    let a = tflite_operand(&mut b, "a", x, 0, 4, 1 << 30, 39);
    let c = tflite_operand(&mut b, "b", y, -5, 4, 1 << 30, 39);
    let e = b.op("eq", Op::Equal, &[a, c]);
    b.output(e);
    b.finish().unwrap()
}

/// GREATER on i8 feeding nothing but the output, next to MAXIMUM of the same inputs (two
/// outputs, one bool and one i8).
pub fn compare_and_max(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("compare_and_max");
    let x = b.input("x", DType::Int8, [1, 2, 9, 3]);
    let y = b.input("y", DType::Int8, [1, 2, 9, 3]);
    let g = b.op("gt", Op::Greater, &[x, y]);
    let m = b.op("max", Op::Maximum, &[x, y]);
    b.output(g);
    b.output(m);
    b.finish().unwrap()
}

/// TFLite RELU requantization: exact widening with the zero point, RESCALE to i8 (shift 29,
/// double rounding), CLAMP.
pub fn rescale_relu(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("rescale_relu");
    let x = b.input("x", DType::Int8, [1, 7, 6, 5]);
    let w = widen(&mut b, "widen", x, -1);
    let mut r = rescale_i32(1_610_612_736, 29, 0, true);
    r.output_dtype = DType::Int8;
    r.output_zp = -128;
    let y = b.op("rescale", Op::Rescale(r), &[w]);
    let c = b.op(
        "relu",
        Op::Clamp(ClampAttrs {
            min: -128,
            max: 127,
        }),
        &[y],
    );
    b.output(c);
    b.finish().unwrap()
}

/// A direct i8 -> i8 RESCALE with an input zero point and single rounding, shift 36.
pub fn rescale_direct(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("rescale_direct");
    let x = b.input("x", DType::Int8, [3, 5, 9]);
    let mut r = rescale_i32(1_234_567_890, 36, 17, false);
    r.output_dtype = DType::Int8;
    r.output_zp = 9;
    let y = b.op("rescale", Op::Rescale(r), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// RELU on i16: exact widening, RESCALE to i16, CLAMP at 0.
pub fn rescale_relu_i16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("rescale_relu_i16");
    let x = b.input("x", DType::Int16, [1, 5, 6, 4]);
    let w = widen(&mut b, "widen", x, 0);
    let mut r = rescale_i32(1_500_000_000, 31, 0, true);
    r.output_dtype = DType::Int16;
    let y = b.op("rescale", Op::Rescale(r), &[w]);
    let c = b.op("relu", Op::Clamp(ClampAttrs { min: 0, max: 32767 }), &[y]);
    b.output(c);
    b.finish().unwrap()
}

macro_rules! compare_tests {
    ($($name:ident),* $(,)?) => {
        mod sim_equals_interpreter {
            use super::*;
            $(#[test] fn $name() { check(stringify!($name), super::$name); })*
        }
    };
}

compare_tests!(
    maximum_bcast_clamp,
    minimum_i16,
    greater_tflite,
    greater_equal_raw,
    equal_coarse,
    compare_and_max,
    rescale_relu,
    rescale_direct,
    rescale_relu_i16,
);

#[test]
fn each_comparison_is_one_elementwise_operation_with_its_rescales_fused() {
    for g in [
        greater_tflite(&mut Rng(1)),
        equal_coarse(&mut Rng(1)),
        greater_equal_raw(&mut Rng(1)),
    ] {
        let m = compile(&g, &Options::default()).unwrap();
        assert_eq!(m.operators.len(), 1, "{}", g.name());
        assert_eq!(m.operators[0].kernel, "ELEMENTWISE");
    }
}

#[test]
fn equal_coarse_really_has_equal_elements() {
    // The test above is only meaningful if both outcomes occur.
    let g = equal_coarse(&mut Rng(1));
    let inputs = random_inputs(&g, &mut Rng(5));
    let out = npuc_ir::run_outputs(&g, inputs).unwrap();
    let bytes = out[0].to_le_bytes();
    assert!(bytes.contains(&0) && bytes.contains(&1));
}
