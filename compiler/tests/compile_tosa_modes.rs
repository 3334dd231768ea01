//! TOSA operator modes that compile through graph rewrites before lowering
//! (`compile::lower::{broadcast_tile, argmax16, reduce_axis}`) or widened lowerings: operands
//! broadcasting in more than three alternating axis groups (tiled), CAST bool <-> i32, ARGMAX
//! of i16 (ties and all-negative lines), REDUCE_SUM over every axis; bit-exact against the
//! reference interpreter on all five configurations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

fn shr(b: &mut GraphBuilder, name: &str, x: TensorId, dtype: DType, k: i64) -> TensorId {
    let rank = b.graph().tensor(x).unwrap().ty.shape.0.len();
    let data = match dtype {
        DType::Int8 => TensorData::I8(vec![k as i8]),
        DType::Int16 => TensorData::I16(vec![k as i16]),
        _ => TensorData::I32(vec![k as i32]),
    };
    let c = b.constant(&format!("{name}_k"), vec![1; rank], data);
    let attrs = ArithmeticRightShiftAttrs { round: false };
    b.op(name, Op::ArithmeticRightShift(attrs), &[x, c])
}

fn alternating_broadcasts(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("alternating_broadcasts");
    // five alternating groups (TOSA ADD i32 rank 5)
    let a = b.input("a", DType::Int32, [2, 3, 1, 4, 5]);
    let c = b.input("c", DType::Int32, [1, 3, 2, 1, 5]);
    // halved: the sums stay inside i32
    let a = shr(&mut b, "a2", a, DType::Int32, 1);
    let c = shr(&mut b, "c2", c, DType::Int32, 1);
    let y = b.op("add", Op::Add, &[a, c]);
    b.output(y);
    let y = b.op("max", Op::Maximum, &[c, a]);
    b.output(y);
    // bool, batch 2, four groups
    let p = b.input("p", DType::Bool, [2, 3, 4, 5]);
    let q = b.input("q", DType::Bool, [1, 3, 1, 5]);
    let y = b.op("and", Op::LogicalAnd, &[p, q]);
    b.output(y);
    let y = b.op("select_bool", Op::Select, &[p, q, p]);
    b.output(y);
    // SELECT with all three operands broadcasting differently
    let cond = b.input("cond", DType::Bool, [1, 4, 1, 6]);
    for (k, dt) in [DType::Int8, DType::Int16, DType::Int32]
        .into_iter()
        .enumerate()
    {
        let x = b.input(&format!("x{k}"), dt, [2, 4, 5, 6]);
        let z = b.input(&format!("z{k}"), dt, [1, 1, 5, 1]);
        let y = b.op(&format!("select{k}"), Op::Select, &[cond, x, z]);
        b.output(y);
        let y = b.op(&format!("select_swapped{k}"), Op::Select, &[cond, z, x]);
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn operands_broadcasting_in_alternating_groups_are_tiled() {
    check("alternating_broadcasts", alternating_broadcasts);
}

fn casts_bool_i32(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("casts_bool_i32");
    let p = b.input("p", DType::Bool, [2, 3, 7]);
    let y = b.op(
        "bool_to_i32",
        Op::Cast(CastAttrs { to: DType::Int32 }),
        &[p],
    );
    b.output(y);
    // i32 values -2..=1 (x >> 30): zeros are frequent
    let x = b.input("x", DType::Int32, [2, 3, 7]);
    let small = shr(&mut b, "small", x, DType::Int32, 30);
    let y = b.op(
        "i32_to_bool",
        Op::Cast(CastAttrs { to: DType::Bool }),
        &[small],
    );
    b.output(y);
    let y = b.op(
        "full_to_bool",
        Op::Cast(CastAttrs { to: DType::Bool }),
        &[x],
    );
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn cast_between_bool_and_i32() {
    check("casts_bool_i32", casts_bool_i32);
}

fn argmax_i16(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("argmax_i16");
    // values -4..=3 (x >> 13): ties, all-negative lines and zero maxima are frequent
    let x = b.input("x", DType::Int16, [4, 6, 9]);
    let small = shr(&mut b, "small", x, DType::Int16, 13);
    for axis in 0..3 {
        let y = b.op(
            &format!("argmax{axis}"),
            Op::ArgMax(AxisAttrs { axis }),
            &[small],
        );
        b.output(y);
    }
    let y = b.op("argmax_full", Op::ArgMax(AxisAttrs { axis: 2 }), &[x]);
    b.output(y);
    let v = b.input("v", DType::Int16, [2, 3, 4, 5]);
    let small = shr(&mut b, "small4", v, DType::Int16, 14);
    for axis in 0..4 {
        let y = b.op(
            &format!("argmax4_{axis}"),
            Op::ArgMax(AxisAttrs { axis }),
            &[small],
        );
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn argmax_of_i16_takes_the_first_maximum() {
    check("argmax_i16", argmax_i16);
}

fn reduce_sum_axes(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("reduce_sum_axes");
    let x = b.input("x", DType::Int32, [2, 3, 4, 5]);
    // x >> 4 keeps the sums of up to 5 elements inside i32
    let x = shr(&mut b, "x16", x, DType::Int32, 4);
    for axis in 0..4 {
        let y = b.op(
            &format!("sum{axis}"),
            Op::ReduceSum(AxisAttrs { axis }),
            &[x],
        );
        b.output(y);
    }
    let z = b.input("z", DType::Int32, [3, 2, 7, 2, 3]);
    let z = shr(&mut b, "z16", z, DType::Int32, 4);
    for axis in [0, 2, 3] {
        let y = b.op(
            &format!("sum5_{axis}"),
            Op::ReduceSum(AxisAttrs { axis }),
            &[z],
        );
        b.output(y);
    }
    b.finish().unwrap()
}

#[test]
fn reduce_sum_over_any_axis() {
    check("reduce_sum_axes", reduce_sum_axes);
}
