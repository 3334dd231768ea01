//! Data movement through `npuc::compile` (strided NPU copies between buffer windows, OFM
//! reverse for descending reads, zero steps for repeats and fills), bit-exact against the
//! reference interpreter on all five configurations.

mod compile_common;

use compile_common::*;

macro_rules! movement_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name), compile_common::$name); })*
    };
}

movement_tests!(
    concat_const_and_computed,
    concat_i16_w_h,
    slice_window_then_pool,
    pad_i16_hwc_and_prime,
    tile_rank3,
    transpose_all_perms,
    reverse_each_axis,
    gather_irregular,
);

/// The MUL feeding only the CONCAT writes its slot of the concatenation directly; the
/// graph input (read twice) and the constant are copied: 1 + 3 NPU operations, not 5.
#[test]
fn concat_operand_written_in_place() {
    use npuc::compile::{compile, Options};
    let g = compile_common::concat_const_and_computed(&mut Rng(1));
    let m = compile(&g, &Options::default()).unwrap();
    let kernels: Vec<&str> = m.operators.iter().map(|o| o.kernel.as_str()).collect();
    assert_eq!(kernels, ["ELEMENTWISE", "POOL", "POOL", "POOL"]);
}

/// A small TRANSPOSE is one 1x1 pool whose OFM is written transposed (NHWC -> NCHW of a
/// [1, 4, 6, 9] tensor: the (H, W, C) -> (C, H, W) permutation, OFM transpose CHW).
#[test]
fn small_transpose_uses_the_ofm_transpose() {
    use npuc::compile::{compile, Options};
    use npuc_backend::isa::{decode_stream, ActivationTranspose, Command};
    use npuc_ir::*;
    let mut b = GraphBuilder::new("nchw");
    let x = b.input("x", DType::Int8, [1, 4, 6, 9]);
    let attrs = TransposeAttrs {
        perms: vec![0, 3, 1, 2],
    };
    let y = b.op("t", Op::Transpose(attrs), &[x]);
    b.output(y);
    let m = compile(&b.finish().unwrap(), &Options::default()).unwrap();
    assert_eq!(m.operators.len(), 1);
    let transposes: Vec<ActivationTranspose> = decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .iter()
        .filter_map(|d| match d.command {
            Command::SetOfmPrecision(p) => Some(p.activation_transpose),
            _ => None,
        })
        .collect();
    assert_eq!(transposes, [ActivationTranspose::Chw]);
}

/// Copies longer than a feature-map axis (65536): the contiguous rows of a SLICE split into
/// steps of the largest factor that fits (140000 = 4 x 35000 bytes), or, for a prime length
/// (65537 int8 elements), a part of 65536 and a remainder.
fn long_contiguous_slices(_rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let mut b = GraphBuilder::new("long_contiguous_slices");
    let x = b.input("x", DType::Int16, [3, 70000]);
    let a = SliceAttrs {
        start: vec![1, 0],
        size: vec![1, 70000],
    };
    let y = b.op("rows", Op::Slice(a), &[x]);
    let p = b.input("p", DType::Int8, [2, 65537]);
    let a = SliceAttrs {
        start: vec![1, 0],
        size: vec![1, 65537],
    };
    let z = b.op("prime", Op::Slice(a), &[p]);
    b.output(y);
    b.output(z);
    b.finish().unwrap()
}

#[test]
fn long_contiguous_copies_are_split() {
    check("long_contiguous_slices", long_contiguous_slices);
}

/// A GATHER with constant indices that repeat for every leading index (TFLite GATHER on
/// the last axis of a [700, 6] int16 tensor with 20 indices): the output rows repeat with
/// period 20, so each of the (at most 20) copies covers all 700 periods.
fn gather_periodic(_rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let ind = [5, 0, 3, 3, 1, 2, 4, 0, 5, 5, 1, 3, 2, 0, 4, 4, 1, 5, 2, 3];
    let all: Vec<i32> = (0..700).flat_map(|_| ind).collect();
    let mut b = GraphBuilder::new("gather_periodic");
    let v = b.input("v", DType::Int16, [700, 6, 1]);
    let idx = b.const_i32("idx", [700, 20], &all);
    let y = b.op("gather", Op::Gather, &[v, idx]);
    b.output(y);
    b.finish().unwrap()
}

/// A GATHER with constant indices in no pattern (300 x 40 pseudo-random rows): one DMA
/// gather from the constant indices, not thousands of one-row copies.
fn gather_patternless(rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let all: Vec<i32> = (0..300 * 40).map(|_| rng.range(0, 8) as i32).collect();
    let mut b = GraphBuilder::new("gather_patternless");
    let v = b.input("v", DType::Int8, [300, 9, 3]);
    let idx = b.const_i32("idx", [300, 40], &all);
    let y = b.op("gather", Op::Gather, &[v, idx]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn constant_gathers_run_as_few_operations() {
    use npuc::compile::{compile, Options};
    check("gather_periodic", gather_periodic);
    check("gather_patternless", gather_patternless);
    let ops = |g: fn(&mut Rng) -> npuc_ir::Graph| {
        let m = compile(&g(&mut Rng(0x1234_5678_9abc_def1)), &Options::default()).unwrap();
        m.operators
            .iter()
            .map(|o| o.kernel.clone())
            .collect::<Vec<_>>()
    };
    let periodic = ops(gather_periodic);
    assert!(periodic.len() <= 20, "{periodic:?}");
    assert_eq!(ops(gather_patternless), ["DMA"]);
}

/// UNet's skip connection: a CONCAT of two 32x32x8 feature maps along the depth. Each
/// operand's box is 1024 contiguous positions of 8 channels (rows and columns merge); on the
/// 2048 its copy is folded back into a 32x32x8 feature map (decision L53), not a 1x1024x8
/// one that only the 1x4 microblock (64 channels deep there) covers, an eighth used. Bit-exact
/// on all five configurations; on the 2048 both copies are 32x32x8 POOLs whose OFM block is
/// at least four rows high (a 1x1024x8 copy's is one).
fn concat_skip_connection(_rng: &mut Rng) -> npuc_ir::Graph {
    use npuc_ir::*;
    let mut b = GraphBuilder::new("concat_skip_connection");
    let x = b.input("x", DType::Int8, [1, 32, 32, 8]);
    let y = b.input("y", DType::Int8, [1, 32, 32, 8]);
    let z = b.op("concat", Op::Concat(AxisAttrs { axis: 3 }), &[x, y]);
    b.output(z);
    b.finish().unwrap()
}

#[test]
fn a_concat_of_shallow_maps_copies_them_as_maps_not_rows() {
    use npuc::compile::compile;
    use npuc_backend::arch::Accelerator;
    use npuc_backend::isa::{decode_stream, Command, RegisterFile};
    check("concat_skip_connection", concat_skip_connection);
    let g = concat_skip_connection(&mut Rng(0));
    let m = compile(&g, &options(Accelerator::U85_2048)).unwrap();
    let mut regs = RegisterFile::default();
    let mut pools = vec![];
    for d in decode_stream(&m.payload.command_words().unwrap()).unwrap() {
        regs.apply(&d.command);
        if let Command::OpPool(_) = d.command {
            pools.push((
                regs.ofm_height_m1.height_m1 + 1,
                regs.ofm_width_m1.width_m1 + 1,
                regs.ofm_depth_m1.depth_m1 + 1,
                regs.ofm_blk_height_m1.height_m1 + 1,
            ));
        }
    }
    assert_eq!(pools.len(), 2);
    for (h, w, c, block_h) in pools {
        assert_eq!((h, w, c), (32, 32, 8));
        assert!(block_h >= 4, "block height {block_h}");
    }
}
