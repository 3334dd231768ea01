//! What several operator families share: constant subgraphs evaluated at compile time
//! (`constant`), matrix products in contraction parts (`contraction`), value ranges of integer tensors (`range`), the rejection of float operators
//! (`float`), and window operations beyond the hardware's limits and over batches (`window`).

pub(super) mod constant;
pub(super) mod contraction;
pub(super) mod float;
pub(super) mod range;
pub(super) mod window;
