//! Pooling: MAX_POOL2D, AVG_POOL2D and a standalone CLAMP as NPU pooling (`pooling`); average
//! pools beyond the NPU's as a POOL sum divided by OFM_SCALE (`avg_as_depthwise` holds the
//! division, decisions L6 and L52), and as window sums divided per rectangle of equal counts
//! when padded (`avg_padded`).

pub(super) mod avg_as_depthwise;
pub(super) mod avg_padded;
pub(super) mod pooling;
