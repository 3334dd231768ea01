//! Memory-to-memory DMA operations (TRM 3.10.4 NPU_OP_DMA_START): a SCATTER's copies and a
//! GATHER's table lookups (destination and source index modes).
//!
//! A DMA runs alongside kernel operations, so it is fenced on both sides: NPU_OP_KERNEL_WAIT 0
//! before it (the kernel writing its source or reading its destination has finished) unless
//! no kernel can be outstanding, and NPU_OP_DMA_WAIT 0 right after it (the next operation sees
//! its result, and no later DMA reorders against it).

//!
//! [`write_copy`] is the plain 1-D copy (weight and scale blocks into the staging memory,
//! lookup tables into the LUT RAM).

use super::{addr, CommandWriter};
use crate::isa::{
    Command, DmaIdxMode, DmaRegionMode, DmaStrideMode, OpDmaStart, SetDma0Dst, SetDma0DstRegion,
    SetDma0DstStride0, SetDma0DstStride1, SetDma0Idx, SetDma0IdxMax, SetDma0IdxRegion,
    SetDma0IdxSkip1, SetDma0Len, SetDma0Size0, SetDma0Size1, SetDma0Src, SetDma0SrcRegion,
    SetDma0SrcStride0, SetDma0SrcStride1,
};

/// Bytes per cycle assumed by the compile-time estimate of a DMA.
const BYTES_PER_CYCLE: u64 = 16;

/// One DMA: `size1` rows of `size0` transfers of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaTransfer {
    /// Bytes per transfer (DMA0_LEN).
    pub len: u64,
    /// Transfers per row (DMA0_SIZE0) and rows (DMA0_SIZE1).
    pub size0: u32,
    pub size1: u32,
    /// Source byte steps per transfer and per row.
    pub src_stride: (i64, i64),
    /// Destination byte steps per transfer and per row.
    pub dst_stride: (i64, i64),
    /// Index mode, with the largest valid index (IDX_MAX).
    pub index: Option<DmaIndex>,
}

/// Which end of a DMA an index table addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaIndex {
    /// Destination index mode: transfer `x` goes to `dst + idx[x] * dst_stride.0`.
    Scatter(u32),
    /// Source index mode: transfer `x` comes from `src + idx[x] * src_stride.0`.
    Gather(u32),
}

/// The register commands of one DMA; `src`, `dst`, `idx` are (region, byte address).
pub fn write_dma(
    w: &mut CommandWriter,
    d: &DmaTransfer,
    src: (u8, u64),
    dst: (u8, u64),
    idx: Option<(u8, u64)>,
) {
    let stride_mode = if d.size1 > 1 {
        DmaStrideMode::D3
    } else if d.size0 > 1 || d.index.is_some() {
        DmaStrideMode::D2
    } else {
        DmaStrideMode::D1
    };
    let mode = |end: fn(&DmaIndex) -> bool| {
        if idx.is_some() && d.index.as_ref().is_some_and(end) {
            DmaIdxMode::Enabled
        } else {
            DmaIdxMode::Disabled
        }
    };
    let gather = mode(|i| matches!(i, DmaIndex::Gather(_)));
    let scatter = mode(|i| matches!(i, DmaIndex::Scatter(_)));
    w.set(Command::SetDma0SrcRegion(SetDma0SrcRegion {
        region: src.0,
        region_mode: DmaRegionMode::External,
        stride_mode,
        idx_mode: gather,
    }));
    let a = |v: u64| addr(v);
    // Signed 40-bit strides: the high byte is bits 39:32 of the two's complement value.
    let sa = |v: i64| ((v >> 32) as i8, v as u32);
    let (hi, lo) = a(src.1);
    w.set(Command::SetDma0Src(SetDma0Src {
        addr_hi: hi,
        addr_lo: lo,
    }));
    w.set(Command::SetDma0DstRegion(SetDma0DstRegion {
        region: dst.0,
        region_mode: DmaRegionMode::External,
        idx_mode: scatter,
    }));
    let (hi, lo) = a(dst.1);
    w.set(Command::SetDma0Dst(SetDma0Dst {
        addr_hi: hi,
        addr_lo: lo,
    }));
    let (hi, lo) = a(d.len);
    w.set(Command::SetDma0Len(SetDma0Len {
        addr_hi: hi,
        addr_lo: lo,
    }));
    if stride_mode != DmaStrideMode::D1 {
        w.set(Command::SetDma0Size0(SetDma0Size0 {
            size: d.size0 as u16,
        }));
        let (hi, lo) = sa(d.src_stride.0);
        w.set(Command::SetDma0SrcStride0(SetDma0SrcStride0 {
            addr_hi: hi,
            addr_lo: lo,
        }));
        let (hi, lo) = sa(d.dst_stride.0);
        w.set(Command::SetDma0DstStride0(SetDma0DstStride0 {
            addr_hi: hi,
            addr_lo: lo,
        }));
    }
    if stride_mode == DmaStrideMode::D3 {
        w.set(Command::SetDma0Size1(SetDma0Size1 {
            size: d.size1 as u16,
        }));
        let (hi, lo) = sa(d.src_stride.1);
        w.set(Command::SetDma0SrcStride1(SetDma0SrcStride1 {
            addr_hi: hi,
            addr_lo: lo,
        }));
        let (hi, lo) = sa(d.dst_stride.1);
        w.set(Command::SetDma0DstStride1(SetDma0DstStride1 {
            addr_hi: hi,
            addr_lo: lo,
        }));
        if d.index.is_some() && idx.is_some() {
            // The indices of consecutive rows are contiguous.
            w.set(Command::SetDma0IdxSkip1(SetDma0IdxSkip1::default()));
        }
    }
    if let (Some(DmaIndex::Scatter(max) | DmaIndex::Gather(max)), Some((region, at))) =
        (d.index, idx)
    {
        w.set(Command::SetDma0IdxRegion(SetDma0IdxRegion { region }));
        w.set(Command::SetDma0IdxMax(SetDma0IdxMax { idx_max: max }));
        let (hi, lo) = a(at);
        w.set(Command::SetDma0Idx(SetDma0Idx {
            addr_hi: hi,
            addr_lo: lo,
        }));
    }
    w.op(Command::OpDmaStart(OpDmaStart {}));
    w.dma_wait(0);
}

/// Compile-time cycle estimate of a DMA moving `bytes`.
pub fn estimate_cycles(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_CYCLE).max(1)
}

/// Starts a 1-D DMA of `len` bytes from `(region, address)` `src` to `dst`; `dst_mode`
/// internal addresses the LUT RAM (region ignored). No wait follows.
pub fn write_copy(
    w: &mut CommandWriter,
    (sr, src): (u8, u64),
    (region, dst): (u8, u64),
    dst_mode: DmaRegionMode,
    len: u64,
) {
    let (shi, slo) = addr(src);
    let (dhi, dlo) = addr(dst);
    let (lhi, llo) = addr(len);
    w.set(Command::SetDma0SrcRegion(SetDma0SrcRegion {
        region: sr,
        region_mode: DmaRegionMode::External,
        stride_mode: DmaStrideMode::D1,
        idx_mode: DmaIdxMode::Disabled,
    }));
    w.set(Command::SetDma0Src(SetDma0Src {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetDma0DstRegion(SetDma0DstRegion {
        region,
        region_mode: dst_mode,
        idx_mode: DmaIdxMode::Disabled,
    }));
    w.set(Command::SetDma0Dst(SetDma0Dst {
        addr_hi: dhi,
        addr_lo: dlo,
    }));
    w.set(Command::SetDma0Len(SetDma0Len {
        addr_hi: lhi,
        addr_lo: llo,
    }));
    w.op(Command::OpDmaStart(OpDmaStart {}));
}
