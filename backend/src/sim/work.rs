//! How much work a kernel operation or DMA asks for, known from its registers before it runs.
//!
//! The simulator charges every operation to a work budget before executing it (decision H2
//! in `docs/decisions.md`), so that neither a branch loop over a kernel operation nor one
//! operation of absurd size can keep it busy for long, and no array is allocated for an
//! operation that could not finish. The figure is an upper bound of what the operation
//! touches, in saturating arithmetic (registers of 16 and 40 bits multiply past u64):
//!
//! * a fixed [`WORK_PER_OPERATION`];
//! * kernel operations: every OFM element, every IFM/IFM2 element read (the padded IFM extent
//!   the kernel geometry derives), and the MACs (OFM elements x kernel taps x IFM depth for
//!   CONV, x taps for DEPTHWISE and POOL);
//! * DMA: the bytes it copies (`LEN` per row and plane).
//!
//! A second rule needs no budget: an OFM written to memory is a tensor whose elements all
//! have bytes of their own, so `height x width x depth x element size` must fit in the memory
//! mapped to its region ([`check_ofm_fits`]). Without it, zero OFM strides make an OFM of any
//! size "fit" in one element.

use super::error::{check, Fault};
use super::fm::{addr40, Fm};
use super::memory::Memory;
use crate::isa::{AccOutput, ActivationStorage, Command, DmaStrideMode, RegisterFile};

/// Work charged for any kernel operation or DMA on top of its elements and bytes: the cost
/// of setting it up, in the same units (roughly what the simulator does per element).
pub const WORK_PER_OPERATION: u64 = 4096;

fn m1(v: impl Into<u64>) -> u64 {
    v.into().saturating_add(1)
}

fn mul(values: &[u64]) -> u64 {
    values.iter().fold(1u64, |a, &b| a.saturating_mul(b))
}

fn stride(lsb: u8, msb: u8) -> u64 {
    2 * u64::from(msb) + u64::from(lsb) + 1
}

/// What an operation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Work units: elements, MACs and bytes, plus [`WORK_PER_OPERATION`].
    pub total: u64,
    /// Feature-map elements the simulator holds at once for it (IFM, IFM2 and OFM as dense
    /// arrays of i64): what its memory grows with.
    pub elements: u64,
}

/// The most elements one operation may hold at once ([`Work::elements`]): 2^28, 2 GiB of
/// i64 values (decision H2).
pub const MAX_OPERATION_ELEMENTS: u64 = 1 << 28;

/// Upper bound of the work of the operation `command` with registers `regs` (see the module
/// documentation); 0 for a command that is not an operation.
pub fn operation_work(regs: &RegisterFile, command: &Command) -> Work {
    let ofm = [
        m1(regs.ofm_height_m1.height_m1),
        m1(regs.ofm_width_m1.width_m1),
        m1(regs.ofm_depth_m1.depth_m1),
    ];
    let ofm_elems = mul(&ofm);
    let kh = m1(regs.kernel_height_m1.height_m1);
    let kw = m1(regs.kernel_width_m1.width_m1);
    let ks = regs.kernel_stride;
    let (sy, sx) = (
        stride(ks.stride_y_lsb, ks.stride_y_msb),
        stride(ks.stride_x_lsb, ks.stride_x_msb),
    );
    let padded_ifm = |depth: u64| {
        let h = (ofm[0] - 1).saturating_mul(sy).saturating_add(kh);
        let w = (ofm[1] - 1).saturating_mul(sx).saturating_add(kw);
        mul(&[h, w, depth])
    };
    let ifm_d = m1(regs.ifm_depth_m1.depth_m1);
    let (elements, macs) = match command {
        Command::OpConv(_) => {
            // IFM, IFM2 (matrix multiply or accumulator input), OFM and the MACs.
            let elements = padded_ifm(ifm_d)
                .saturating_add(mul(&[ofm[2], ifm_d]))
                .saturating_add(ofm_elems.saturating_mul(2));
            (elements, mul(&[ofm_elems, kh, kw, ifm_d]))
        }
        Command::OpDepthwise(_) | Command::OpPool(_) => {
            let elements =
                padded_ifm(ofm[2].max(ifm_d)).saturating_add(ofm_elems.saturating_mul(2));
            (elements, mul(&[ofm_elems, kh, kw]))
        }
        Command::OpElementwise(_) => (ofm_elems.saturating_mul(3), 0),
        // RESIZE reads an IFM of KERNEL_HEIGHT x KERNEL_WIDTH (TRM 3.10.11).
        Command::OpResize(_) => (mul(&[kh, kw, ofm[2]]).saturating_add(ofm_elems), 0),
        Command::OpDmaStart(_) => {
            let sr = regs.dma0_src_region;
            let len = addr40(regs.dma0_len.addr_hi, regs.dma0_len.addr_lo);
            let width = if sr.stride_mode == DmaStrideMode::D1 {
                1
            } else {
                u64::from(regs.dma0_size0.size)
            };
            let height = if sr.stride_mode == DmaStrideMode::D3 {
                u64::from(regs.dma0_size1.size)
            } else {
                1
            };
            (0, mul(&[width, height, len.saturating_add(1)]))
        }
        _ => {
            return Work {
                total: 0,
                elements: 0,
            }
        }
    };
    Work {
        total: elements
            .saturating_add(macs)
            .saturating_add(WORK_PER_OPERATION),
        elements,
    }
}

/// The OFM of a kernel operation, when it is written to memory, fits in its region: its
/// `height x width x depth` elements need that many elements' bytes (TRM 3.6.3: an access
/// outside the region is UNPREDICTABLE; every element of a tensor has its own address).
pub fn check_ofm_fits(regs: &RegisterFile, mem: &Memory) -> Result<(), Fault> {
    let fm = Fm::ofm(regs);
    if regs.acc_format.acc_output == AccOutput::Disable
        || !matches!(
            fm.storage,
            ActivationStorage::Tile2x2 | ActivationStorage::Tile3x1
        )
    {
        return Ok(());
    }
    let bytes = mul(&[
        m1(regs.ofm_height_m1.height_m1),
        m1(regs.ofm_width_m1.width_m1),
        m1(regs.ofm_depth_m1.depth_m1),
        fm.esize(),
    ]);
    let size = mem
        .region_size(fm.region)
        .ok_or(Fault::UnmappedRegion { region: fm.region })?;
    check(
        bytes <= size,
        "3.6.3",
        "the OFM's elements fit in the memory of its region",
        || {
            format!(
                "OFM of {bytes} bytes in region {} of {size} bytes",
                fm.region
            )
        },
    )
}
