//! Data movement: CONCAT, SLICE, PAD, TILE, TRANSPOSE, REVERSE and constant-index GATHER as
//! NPU copies (`copy`), computed-index GATHER as a DMA in index mode (`gather_dma`) with its
//! indices clamped into the table (`gather_index_clamp`), and SCATTER as DMA copies
//! (`scatter`).

pub(crate) mod copy;
pub(super) mod gather_dma;
pub(super) mod gather_index_clamp;
pub(super) mod scatter;
