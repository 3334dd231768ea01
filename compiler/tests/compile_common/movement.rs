//! Data-movement test graphs: CONCAT, SLICE, PAD, TILE, TRANSPOSE, REVERSE and GATHER with
//! constant indices, int8 and int16, odd sizes, constants as operands.

use super::*;

fn exact_widen(zp: i64) -> RescaleAttrs {
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

/// CONCAT along depth of a graph input, a constant, a MUL result and the input again.
pub fn concat_const_and_computed(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("concat_const_and_computed");
    let x = b.input("x", DType::Int8, [1, 5, 6, 3]);
    let k = b.const_i8("k", [1, 5, 6, 2], &rng.i8s(60));
    let c = b.const_i8("c", [1, 1, 1, 3], &[5, -7, 100]);
    let xw = b.op("xw", Op::Rescale(exact_widen(-3)), &[x]);
    let cw = b.op("cw", Op::Rescale(exact_widen(9)), &[c]);
    let m = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[xw, cw]);
    let mut r =
        RescaleAttrs::per_tensor(DType::Int8, 1_500_000_000, 38, RescaleRounding::DoubleRound);
    r.output_zp = 4;
    let m = b.op("mul_out", Op::Rescale(r), &[m]);
    let y = b.op("concat", Op::Concat(AxisAttrs { axis: 3 }), &[x, k, m, x]);
    b.output(y);
    b.finish().unwrap()
}

/// CONCAT of three int16 tensors along width (odd widths), and one along height.
pub fn concat_i16_w_h(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("concat_i16_w_h");
    let x = b.input("x", DType::Int16, [1, 3, 5, 7]);
    let y = b.input("y", DType::Int16, [1, 3, 1, 7]);
    let z = b.input("z", DType::Int16, [1, 3, 3, 7]);
    let w = b.op("concat_w", Op::Concat(AxisAttrs { axis: 2 }), &[x, y, z]);
    let h = b.op("concat_h", Op::Concat(AxisAttrs { axis: 1 }), &[w, w]);
    b.output(w);
    b.output(h);
    b.finish().unwrap()
}

/// SLICE of an odd window in every axis, read by a max pool.
pub fn slice_window_then_pool(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("slice_window_then_pool");
    let x = b.input("x", DType::Int8, [1, 7, 9, 13]);
    let attrs = SliceAttrs {
        start: vec![0, 1, 2, 3],
        size: vec![1, 5, 6, 7],
    };
    let s = b.op("slice", Op::Slice(attrs), &[x]);
    let pool = PoolAttrs {
        kernel: [2, 2],
        stride: [1, 1],
        pad: [0; 4],
    };
    let y = b.op("pool", Op::MaxPool2d(pool), &[s]);
    b.output(s);
    b.output(y);
    b.finish().unwrap()
}

/// PAD of an int16 tensor in height, width and depth with a large negative value, and an
/// int8 depth pad whose output size (263) is prime.
pub fn pad_i16_hwc_and_prime(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("pad_i16_hwc_and_prime");
    let x = b.input("x", DType::Int16, [1, 3, 4, 5]);
    let attrs = PadAttrs {
        padding: vec![[0, 0], [2, 1], [0, 3], [1, 2]],
        pad_const: -30000,
    };
    let y = b.op("pad16", Op::Pad(attrs), &[x]);
    let z = b.input("z", DType::Int8, [1, 1, 1, 261]);
    let attrs = PadAttrs {
        padding: vec![[0, 0], [0, 0], [0, 0], [1, 1]],
        pad_const: 77,
    };
    let p = b.op("pad8", Op::Pad(attrs), &[z]);
    b.output(y);
    b.output(p);
    b.finish().unwrap()
}

/// TILE of a rank-3 tensor in two axes.
pub fn tile_rank3(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("tile_rank3");
    let x = b.input("x", DType::Int8, [3, 4, 5]);
    let attrs = TileAttrs {
        multiples: vec![2, 1, 3],
    };
    let y = b.op("tile", Op::Tile(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// TRANSPOSE of a rank-3 tensor by all six permutations, and an int16 NHWC -> NCHW.
pub fn transpose_all_perms(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("transpose_all_perms");
    let x = b.input("x", DType::Int8, [3, 5, 7]);
    for (i, perms) in [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ]
    .into_iter()
    .enumerate()
    {
        let attrs = TransposeAttrs {
            perms: perms.to_vec(),
        };
        let y = b.op(&format!("t{i}"), Op::Transpose(attrs), &[x]);
        b.output(y);
    }
    let z = b.input("z", DType::Int16, [1, 4, 6, 9]);
    let attrs = TransposeAttrs {
        perms: vec![0, 3, 1, 2],
    };
    let y = b.op("nchw", Op::Transpose(attrs), &[z]);
    b.output(y);
    // An axis above 128 (beyond the OFM transpose block limits): strided copies instead.
    let v = b.input("v", DType::Int8, [1, 3, 130, 2]);
    let attrs = TransposeAttrs {
        perms: vec![0, 2, 1, 3],
    };
    let y = b.op("wide", Op::Transpose(attrs), &[v]);
    b.output(y);
    b.finish().unwrap()
}

/// REVERSE along height, width and depth (int8) and width (int16).
pub fn reverse_each_axis(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("reverse_each_axis");
    let x = b.input("x", DType::Int8, [1, 5, 6, 19]);
    for axis in 1..4 {
        let y = b.op(&format!("r{axis}"), Op::Reverse(AxisAttrs { axis }), &[x]);
        b.output(y);
    }
    let z = b.input("z", DType::Int16, [1, 3, 7, 2]);
    let y = b.op("r16", Op::Reverse(AxisAttrs { axis: 2 }), &[z]);
    b.output(y);
    b.finish().unwrap()
}

/// GATHER with repeated, descending and scattered constant indices, per batch.
pub fn gather_irregular(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("gather_irregular");
    let v = b.input("v", DType::Int8, [2, 9, 3]);
    let idx = b.const_i32(
        "idx",
        [2, 9],
        &[8, 7, 6, 0, 0, 4, 2, 2, 2, 1, 2, 3, 3, 3, 8, 0, 5, 1],
    );
    let y = b.op("gather", Op::Gather, &[v, idx]);
    b.output(y);
    b.finish().unwrap()
}
