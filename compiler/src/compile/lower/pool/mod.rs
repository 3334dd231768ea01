//! Pooling: MAX_POOL2D, AVG_POOL2D and a standalone CLAMP as NPU pooling (`pooling`), and
//! average pools beyond the NPU's as a depthwise convolution (`avg_as_depthwise`).

pub(super) mod avg_as_depthwise;
pub(super) mod pooling;
