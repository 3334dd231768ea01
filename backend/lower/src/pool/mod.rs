//! Pooling: MAX_POOL2D, AVG_POOL2D and a standalone CLAMP as NPU pooling (`pooling`), and
//! average pools beyond the NPU's as a depthwise convolution (`avg_as_depthwise`), and as
//! window sums divided per rectangle of equal counts when padded (`avg_padded`).

pub(super) mod avg_as_depthwise;
pub(super) mod avg_padded;
pub(super) mod pooling;
