//! Shapes outside the natural (H, W, C) view of a batch-1 tensor of rank 4 or less: rank 5,
//! batches above 1, reductions whose axes alternate with kept ones, ARG_MAX into i64,
//! bit-exact against the reference interpreter on all five configurations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

fn widen(zp: i64) -> RescaleAttrs {
    RescaleAttrs {
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
    }
}

/// A rank-5 requantization (RESCALE + CLAMP) and a batch-3 TABLE: the leading axes fold.
fn unary_rank5_and_batch(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("unary_rank5_and_batch");
    let x = b.input("x", DType::Int8, [2, 3, 4, 5, 6]);
    let w = b.op("widen", Op::Rescale(widen(7)), &[x]);
    let mut r =
        RescaleAttrs::per_tensor(DType::Int8, 1_300_000_000, 31, RescaleRounding::DoubleRound);
    r.output_zp = -5;
    let y = b.op("rescale", Op::Rescale(r), &[w]);
    let y = b.op("clamp", Op::Clamp(ClampAttrs { min: -5, max: 90 }), &[y]);
    let z = b.input("z", DType::Int8, [3, 5, 7, 9]);
    let table: Vec<i8> = rng.i8s(256);
    let t = b.op(
        "table",
        Op::Table(TableAttrs {
            table: TableData::I8(table),
        }),
        &[z],
    );
    b.output(y);
    b.output(t);
    b.finish().unwrap()
}

/// REDUCE_MAX over H and C of a [1, H, W, C] tensor (no single pool: C, then H), REDUCE_MIN
/// over axes 1 and 3 of a rank-5 tensor (two pools), REDUCE_ANY over the batch.
fn reductions_in_steps(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("reductions_in_steps");
    let x = b.input("x", DType::Int8, [1, 5, 6, 7]);
    let m = b.op("max_h", Op::ReduceMax(AxisAttrs { axis: 1 }), &[x]);
    let m = b.op("max_c", Op::ReduceMax(AxisAttrs { axis: 3 }), &[m]);
    let y = b.input("y", DType::Int16, [2, 3, 4, 5, 3]);
    let n = b.op("min_1", Op::ReduceMin(AxisAttrs { axis: 1 }), &[y]);
    let n = b.op("min_3", Op::ReduceMin(AxisAttrs { axis: 3 }), &[n]);
    let z = b.input("z", DType::Bool, [3, 4, 5, 2]);
    let a = b.op("any_n", Op::ReduceAny(AxisAttrs { axis: 0 }), &[z]);
    b.output(m);
    b.output(n);
    b.output(a);
    b.finish().unwrap()
}

/// ARG_MAX over the batch of a rank-5 tensor, into i64 (the TFLite default output type), and
/// a CAST of signed i32 values to i64 (sign words by a shift).
fn arg_max_and_i64(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("arg_max_and_i64");
    let x = b.input("x", DType::Int8, [3, 2, 4, 5, 2]);
    let a = b.op("argmax", Op::ArgMax(AxisAttrs { axis: 0 }), &[x]);
    let a = b.op("to_i64", Op::Cast(CastAttrs { to: DType::Int64 }), &[a]);
    let y = b.input("y", DType::Int8, [4, 9]);
    let w = b.op("widen", Op::Rescale(widen(0)), &[y]);
    let k = b.const_i32("k", [1, 1], &[-1000]);
    let w = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[w, k]);
    let c = b.op("cast", Op::Cast(CastAttrs { to: DType::Int64 }), &[w]);
    b.output(a);
    b.output(c);
    b.finish().unwrap()
}

/// A nearest-neighbour RESIZE of a batch of 3 images.
fn resize_batch(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("resize_batch");
    let x = b.input("x", DType::Int8, [3, 4, 5, 6]);
    let attrs = ResizeAttrs {
        mode: ResizeMode::NearestNeighbor,
        scale: [2, 1, 2, 1],
        offset: [0, 0],
        border: [1, 1],
    };
    let y = b.op("resize", Op::Resize(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn unary_rank5_and_batch_fold() {
    check("unary_rank5_and_batch", unary_rank5_and_batch);
}

#[test]
fn reductions_take_one_pool_per_axis_group() {
    check("reductions_in_steps", reductions_in_steps);
}

#[test]
fn arg_max_of_any_axis_into_i64() {
    check("arg_max_and_i64", arg_max_and_i64);
}

#[test]
fn resize_runs_per_image() {
    check("resize_batch", resize_batch);
}
