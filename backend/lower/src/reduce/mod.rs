//! Reductions: MEAN, REDUCE_SUM / MAX / MIN and REDUCE_ANY / ALL (`reduction`).

pub(super) mod reduction;
