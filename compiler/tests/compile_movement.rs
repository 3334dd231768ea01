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
    let transposes: Vec<ActivationTranspose> = decode_stream(&m.command_stream)
        .unwrap()
        .iter()
        .filter_map(|d| match d.command {
            Command::SetOfmPrecision(p) => Some(p.activation_transpose),
            _ => None,
        })
        .collect();
    assert_eq!(transposes, [ActivationTranspose::Chw]);
}
