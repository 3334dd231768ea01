//! Loading lookup tables into the LUT RAM (TRM 2.6.2, 3.6.7, 3.10.4 NPU_OP_DMA_START).
//!
//! The 2048-byte LUT RAM is managed as eight 256-byte slots. An 8-bit table (`lut_s8_s8`)
//! takes one slot (`table` 0..7 of NPU_SET_ACTIVATION); an 8-bit index into 32-bit values
//! (`lut_s8_s32`, 1024 bytes) four aligned slots (`table` 0..1); a 16-bit table
//! (`lut_s16_s16`, `lut_s16_s32`, `lut_tanh`, `lut_sigmoid`: 512 base/slope pairs, `table`
//! 0) all eight. Each distinct table is stored once in the read-only region (with the constant
//! feature maps, and copied with them into the staging memory when staging says so, S9);
//! before an operation whose table is not resident, a DMA copies it from there into the
//! least recently used slot (or the whole RAM), and NPU_OP_DMA_WAIT 0 precedes the
//! operation's kernel command.
//!
//! At most two kernel operations are outstanding when a command is issued (TRM 3.10.8), so
//! a DMA must not overwrite slots the previous two operations read: an 8-bit table normally
//! goes to a slot neither of them used (eight slots, least recently used); when the slots to
//! overwrite were used by the previous operation NPU_OP_KERNEL_WAIT 0 precedes the DMA, when
//! only by the one before it NPU_OP_KERNEL_WAIT 1.

use super::regs::align16;
use npuc_backend::isa::DmaRegionMode;
use npuc_backend::writer::dma::write_copy;
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{Lowered, Lut};
use npuc_target::arch_interface::Target;
use npuc_target::arch_interface::REGION_READ_ONLY;
use std::collections::BTreeMap;

/// Bytes of one slot (one `lut_s8_s8` table).
const SLOT_BYTES: usize = 256;
/// Slots in the 2048-byte LUT RAM.
const SLOTS: usize = 8;

/// Resident tables and their read-only copies.
#[derive(Default)]
pub(super) struct LutSlots {
    /// Where each distinct table is read from: (region, offset) — its read-only copy, or
    /// its copy in the staging memory (S9).
    stored: BTreeMap<Vec<u8>, (u8, u64)>,
    /// Per slot: the table whose part it holds (first slot, table bytes) and when it was
    /// last used.
    slots: [Option<(usize, Vec<u8>, usize)>; SLOTS],
    /// Slot masks read by the previous operation and the one before it.
    recent: [u8; 2],
    clock: usize,
}

/// The distinct tables of `l`, in the order of first use.
pub(super) fn tables(l: &Lowered) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = Vec::new();
    for lut in l.luts.values() {
        if !out.contains(&lut.data.as_slice()) {
            out.push(&lut.data);
        }
    }
    out
}

/// Estimated cycles of loading a table of `bytes` from `region` into the LUT RAM.
pub(super) fn load_cycles(target: &dyn Target, region: u8, bytes: u64) -> u64 {
    let mut w = CommandWriter::default();
    dma_commands(&mut w, (region, 0), 0, bytes);
    target.estimate(&w.commands)
}

impl LutSlots {
    /// Tables laid out beforehand: each read from (region, offset).
    pub(super) fn with_tables(stored: BTreeMap<Vec<u8>, (u8, u64)>) -> Self {
        LutSlots {
            stored,
            ..LutSlots::default()
        }
    }

    /// Records the table (if any) of the next operation: makes it resident (emitting the DMA
    /// and any wait it needs) and returns the table number and whether a DMA was started (the
    /// caller waits for it before the kernel command).
    pub(super) fn next_op(
        &mut self,
        w: &mut CommandWriter,
        ro: &mut Vec<u8>,
        lut: Option<&Lut>,
    ) -> (u8, bool) {
        let (table, mask, dma) = match lut {
            Some(lut) => self.load(w, ro, lut),
            None => (0, 0, false),
        };
        self.recent = [mask, self.recent[0]];
        (table, dma)
    }

    fn load(&mut self, w: &mut CommandWriter, ro: &mut Vec<u8>, lut: &Lut) -> (u8, u8, bool) {
        self.clock += 1;
        let n = lut.data.len().div_ceil(SLOT_BYTES).clamp(1, SLOTS);
        let resident = (0..=SLOTS - n).step_by(n).find(|&first| {
            (first..first + n).all(|i| {
                self.slots[i]
                    .as_ref()
                    .is_some_and(|(f, d, _)| *f == first && *d == lut.data)
            })
        });
        let first = match resident {
            Some(first) => first,
            None => {
                // The least recently used aligned group of n slots (all of RAM for n = 8).
                let first = (0..=SLOTS - n)
                    .step_by(n)
                    .min_by_key(|&f| {
                        (f..f + n)
                            .map(|i| self.slots[i].as_ref().map_or(0, |s| s.2))
                            .max()
                    })
                    .expect("at least one group");
                let mask = group_mask(first, n);
                if self.recent[0] & mask != 0 {
                    w.kernel_wait(0);
                } else if self.recent[1] & mask != 0 {
                    w.kernel_wait(1);
                }
                self.dma(w, ro, lut, first);
                first
            }
        };
        for s in &mut self.slots[first..first + n] {
            *s = Some((first, lut.data.clone(), self.clock));
        }
        // `table` counts in units of the table's size (TRM 3.6.7: `lut[T*256 + index]`).
        ((first / n) as u8, group_mask(first, n), resident.is_none())
    }

    fn dma(&mut self, w: &mut CommandWriter, ro: &mut Vec<u8>, lut: &Lut, first: usize) {
        let src = *self.stored.entry(lut.data.clone()).or_insert_with(|| {
            align16(ro);
            let at = ro.len() as u64;
            ro.extend_from_slice(&lut.data);
            (REGION_READ_ONLY, at)
        });
        dma_commands(w, src, first, lut.data.len() as u64);
    }
}

/// The DMA of `len` table bytes from `(region, offset)` into the LUT RAM from slot `first`.
fn dma_commands(w: &mut CommandWriter, src: (u8, u64), first: usize, len: u64) {
    let dst = (0, (first * SLOT_BYTES) as u64);
    write_copy(w, src, dst, DmaRegionMode::Internal, len);
}

/// The slots `first..first + n` as a bit mask.
fn group_mask(first: usize, n: usize) -> u8 {
    (((1u16 << n) - 1) << first) as u8
}
