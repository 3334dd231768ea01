//! Reductions through `npuc::compile`: MEAN as a unit-weight depthwise / convolution and
//! REDUCE_MAX / REDUCE_MIN as a max / min pool, large
//! AVG_POOL2D windows as a unit-weight depthwise with a per-channel division, bit-exact against the reference interpreter on
//! all five configurations.

mod compile_common;

use compile_common::*;

macro_rules! reduce_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name), compile_common::$name); })*
    };
}

reduce_tests!(
    mean_hw,
    mean_h,
    mean_c,
    mean_hwc,
    reduce_max_c,
    reduce_min_hw,
    reduce_max_hwc,
    reduce_min_h3,
    avgpool_25x5_tflite,
    avgpool_10x4_s2_tflite,
    avgpool_16x16_tflite,
    avgpool_9x12_tosa,
    avgpool_8x8_s8,
);
