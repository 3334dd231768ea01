//! NPU_OP_DMA_START (TRM 3.10.4): the functional memory-to-memory copy, executed at once
//! (the simulator runs commands in stream order; DMA_WAIT is then a no-op).

use super::error::{check, Fault};
use super::fm::{addr40, saddr40};
use super::state::State;
use crate::isa::{DmaIdxMode, DmaRegionMode, DmaStrideMode, RegisterFile};

const S: &str = "3.10.4";

/// Bytes moved by one DMA.
#[derive(Debug, Clone, Copy, Default)]
pub struct DmaCounts {
    /// Bytes copied.
    pub bytes: u64,
}

/// Executes NPU_OP_DMA_START.
pub fn dma(regs: &RegisterFile, st: &mut State) -> Result<DmaCounts, Fault> {
    let sr = regs.dma0_src_region;
    let dr = regs.dma0_dst_region;
    check(
        sr.region_mode == DmaRegionMode::External,
        S,
        "src_region_mode == external",
        String::new,
    )?;
    let src_idx = sr.idx_mode == DmaIdxMode::Enabled;
    let dst_idx = dr.idx_mode == DmaIdxMode::Enabled;
    check(
        !(src_idx && dst_idx),
        S,
        "!(src_idx_mode == enabled && dst_idx_mode == enabled)",
        String::new,
    )?;
    let internal = dr.region_mode == DmaRegionMode::Internal;
    let length = addr40(regs.dma0_len.addr_hi, regs.dma0_len.addr_lo);
    let mut width = u64::from(regs.dma0_size0.size);
    let mut height = u64::from(regs.dma0_size1.size);
    let mut src_p = addr40(regs.dma0_src.addr_hi, regs.dma0_src.addr_lo) as i64;
    let mut dst_p = addr40(regs.dma0_dst.addr_hi, regs.dma0_dst.addr_lo) as i64;
    let mut idx_p = addr40(regs.dma0_idx.addr_hi, regs.dma0_idx.addr_lo) as i64;
    let idx_region = regs.dma0_idx_region.region;
    let idx_max = i64::from(regs.dma0_idx_max.idx_max);
    let s0 = saddr40(regs.dma0_src_stride0.addr_hi, regs.dma0_src_stride0.addr_lo);
    let s1 = saddr40(regs.dma0_src_stride1.addr_hi, regs.dma0_src_stride1.addr_lo);
    let d0 = saddr40(regs.dma0_dst_stride0.addr_hi, regs.dma0_dst_stride0.addr_lo);
    let d1 = saddr40(regs.dma0_dst_stride1.addr_hi, regs.dma0_dst_stride1.addr_lo);
    let skip1 = saddr40(regs.dma0_idx_skip1.addr_hi, regs.dma0_idx_skip1.addr_lo);
    if sr.stride_mode == DmaStrideMode::D1 {
        width = 1;
    }
    if sr.stride_mode != DmaStrideMode::D3 {
        height = 1;
    }
    let mut counts = DmaCounts::default();
    let mut buf = Vec::new();
    for _ in 0..height {
        for x in 0..width {
            let mut valid = true;
            let (mut si, mut di) = (x as i64, x as i64);
            if src_idx || dst_idx {
                let idx = st.mem.read_elem(idx_region, idx_p as u64, 4, true)?;
                idx_p += 4;
                if idx < 0 || idx > idx_max {
                    valid = false;
                }
                if src_idx {
                    si = idx;
                } else {
                    di = idx;
                }
            }
            if valid {
                let src = src_p.wrapping_add(si.wrapping_mul(s0));
                let dst = dst_p.wrapping_add(di.wrapping_mul(d0));
                check(src >= 0 && dst >= 0, S, "addresses non-negative", || {
                    format!("src {src:#x} dst {dst:#x}")
                })?;
                if internal {
                    check(
                        dst & 15 == 0 && length & 15 == 0,
                        "3.6.3",
                        "copy_bytes to LUT RAM: 16-byte aligned address and length",
                        || format!("dst {dst:#x}, length {length:#x}"),
                    )?;
                }
                buf.clear();
                buf.extend_from_slice(st.mem.read_bytes(sr.region, src as u64, length)?);
                st.mem
                    .write_bytes((!internal).then_some(dr.region), dst as u64, &buf)?;
                counts.bytes += length;
            }
        }
        src_p = src_p.wrapping_add(s1);
        dst_p = dst_p.wrapping_add(d1);
        if src_idx || dst_idx {
            idx_p = idx_p.wrapping_add(skip1);
        }
    }
    Ok(counts)
}
