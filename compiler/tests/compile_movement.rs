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
