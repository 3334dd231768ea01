//! Loading lookup tables into the LUT RAM (TRM 2.6.2, 3.10.4 NPU_OP_DMA_START).
//!
//! The 2048-byte LUT RAM holds eight 256-byte `lut_s8_s8` tables (`table` 0..7 of
//! NPU_SET_ACTIVATION). Each distinct table is stored once in the read-only region; before an
//! operation that needs a table not resident in a slot, a DMA copies it from region 0 into the
//! least recently used slot, and NPU_OP_DMA_WAIT 0 precedes the operation's kernel command.
//! The slot the previous operations use is never the least recently used one (eight slots,
//! at most two kernels outstanding), so a DMA never overwrites a table still being read.

use super::*;
use crate::compile::lower::Lut;

/// Bytes of one `lut_s8_s8` table slot.
const SLOT_BYTES: u64 = 256;
/// Slots in the 2048-byte LUT RAM.
const SLOTS: usize = 8;

/// Resident tables and their read-only copies.
#[derive(Default)]
pub(super) struct LutSlots {
    /// Read-only offset of each distinct table.
    stored: BTreeMap<Vec<u8>, u64>,
    /// Per slot: the table it holds and when it was last used.
    slots: [Option<(Vec<u8>, usize)>; SLOTS],
    clock: usize,
}

impl LutSlots {
    /// Makes `lut` resident (emitting the DMA if needed); returns the slot index and whether
    /// a DMA was started (the caller waits for it before the kernel command).
    pub(super) fn load(&mut self, w: &mut Writer, ro: &mut Vec<u8>, lut: &Lut) -> (u8, bool) {
        self.clock += 1;
        if let Some(i) = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|(d, _)| *d == lut.data))
        {
            self.slots[i].as_mut().expect("resident").1 = self.clock;
            return (i as u8, false);
        }
        let src = *self.stored.entry(lut.data.clone()).or_insert_with(|| {
            align16(ro);
            let at = ro.len() as u64;
            ro.extend_from_slice(&lut.data);
            at
        });
        let slot = (0..SLOTS)
            .min_by_key(|&i| self.slots[i].as_ref().map_or(0, |(_, t)| *t))
            .expect("eight slots");
        self.slots[slot] = Some((lut.data.clone(), self.clock));
        let (shi, slo) = addr(src);
        let (dhi, dlo) = addr(slot as u64 * SLOT_BYTES);
        let (lhi, llo) = addr(lut.data.len() as u64);
        w.set(Command::SetDma0SrcRegion(SetDma0SrcRegion {
            region: REGION_READ_ONLY,
            region_mode: DmaRegionMode::External,
            stride_mode: DmaStrideMode::D1,
            idx_mode: DmaIdxMode::Disabled,
        }));
        w.set(Command::SetDma0Src(SetDma0Src {
            addr_hi: shi,
            addr_lo: slo,
        }));
        w.set(Command::SetDma0DstRegion(SetDma0DstRegion {
            region: 0,
            region_mode: DmaRegionMode::Internal,
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
        (slot as u8, true)
    }
}
