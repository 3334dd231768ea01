//! Feature-map placement by liveness, in the fast memory where the memory mode has one.
//!
//! Each buffer is live from the operation that writes it (graph inputs: from the start) to the
//! last operation that reads it (graph outputs: to the end). An operation's inputs and output
//! are live at the same time, so an OFM never overlaps its IFMs. Within one region, buffers
//! are placed largest first (ties by index, so the result is deterministic) at the lowest
//! 16-byte aligned offset that does not overlap any already placed buffer with an overlapping
//! lifetime. Constant buffers live in region 0 (placed by emit) and take no space here.
//!
//! Memory modes with a separate fast memory ([`Target::fast_storage`]: the `Dedicated_Sram`
//! modes, where the arena is in DRAM and the staging area in SRAM) get a second area, region 2:
//! every intermediate feature map goes there, and while the area exceeds its capacity the
//! largest buffer reaching past the capacity is spilled to the arena (region 1). Graph inputs
//! and outputs always stay in the arena, where the runtime puts them. Staging buffers are
//! fitted afterwards into what the feature maps leave free ([`fit`]).
//!
//! [`Target::fast_storage`]: crate::arch_interface::Target::fast_storage

use crate::arch_interface::{LoweredView, REGION_ARENA, REGION_FAST, REGION_READ_ONLY};
pub use crate::arch_interface::{Placement, CHAINED};

/// Alignment of every feature map.
pub const ALIGN: u64 = 16;

/// Something to place: its size and the operations during which it is live (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub size: u64,
    pub start: usize,
    pub end: usize,
}

fn lifetime(l: &(impl LoweredView + ?Sized), i: usize) -> (usize, usize) {
    let b = l.buffer(i);
    let start = b.producer.unwrap_or(0);
    let end = if b.is_output {
        usize::MAX
    } else {
        b.last_use.unwrap_or(start).max(start)
    };
    (start, end)
}

fn aligned(size: u64) -> u64 {
    size.max(1).next_multiple_of(ALIGN)
}

/// Places `items` (largest first, ties by index) at the lowest aligned offset free during
/// their lifetime; returns the offsets and the area size.
pub fn pack(items: &[Item]) -> (Vec<u64>, u64) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(items[i].size), i));
    let mut offsets = vec![0u64; items.len()];
    let mut placed: Vec<usize> = Vec::new();
    let mut total = 0u64;
    for i in order {
        let it = items[i];
        let size = aligned(it.size);
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| it.start <= items[j].end && items[j].start <= it.end)
            .map(|&j| (offsets[j], offsets[j] + aligned(items[j].size)))
            .collect();
        busy.sort_unstable();
        let mut off = 0u64;
        for (a, b) in busy {
            if off + size <= a {
                break;
            }
            off = off.max(b);
        }
        offsets[i] = off;
        total = total.max(off + size);
        placed.push(i);
    }
    (offsets, total)
}

/// The lowest aligned offset at which `item` overlaps none of the `occupied` items live at the
/// same time and ends within `capacity`.
pub fn fit(occupied: &[(Item, u64)], item: Item, capacity: u64) -> Option<u64> {
    let size = aligned(item.size);
    let mut busy: Vec<(u64, u64)> = occupied
        .iter()
        .filter(|(o, _)| item.start <= o.end && o.start <= item.end)
        .map(|&(o, off)| (off, off + aligned(o.size)))
        .collect();
    busy.sort_unstable();
    let mut off = 0u64;
    for (a, b) in busy {
        if off + size <= a {
            break;
        }
        off = off.max(b);
    }
    (off.checked_add(size)? <= capacity).then_some(off)
}

/// The live range of buffer `i`.
pub fn buffer_item(l: &(impl LoweredView + ?Sized), i: usize) -> Item {
    let (start, end) = lifetime(l, i);
    Item {
        size: l.buffer(i).size,
        start,
        end,
    }
}

/// Places the buffers of a lowered graph. `fast`: the capacity of the fast area when the
/// memory mode has one; `chained`: buffers that live in a chaining FIFO (region [`CHAINED`]).
pub fn allocate(
    l: &(impl LoweredView + ?Sized),
    fast: Option<u64>,
    chained: &[usize],
) -> Placement {
    let n = l.buffer_count();
    let mut regions = vec![REGION_ARENA; n];
    for (c, region) in regions.iter_mut().enumerate() {
        if l.buffer(c).constant {
            *region = REGION_READ_ONLY;
        }
    }
    for &c in chained {
        regions[c] = CHAINED;
    }
    let item = |i: usize| buffer_item(l, i);
    let mut offsets = vec![0u64; n];
    let mut fast_size = 0;
    if let Some(capacity) = fast {
        let mut fast_bufs: Vec<usize> = (0..n)
            .filter(|&i| {
                let b = l.buffer(i);
                regions[i] == REGION_ARENA && !b.is_input && !b.is_output
            })
            .collect();
        loop {
            let items: Vec<Item> = fast_bufs.iter().map(|&i| item(i)).collect();
            let (offs, size) = pack(&items);
            if size <= capacity || fast_bufs.is_empty() {
                for (k, &i) in fast_bufs.iter().enumerate() {
                    regions[i] = REGION_FAST;
                    offsets[i] = offs[k];
                }
                fast_size = if items.is_empty() { 0 } else { size };
                break;
            }
            // Spill the largest buffer reaching past the capacity (ties: lowest index).
            let (k, _) = fast_bufs
                .iter()
                .enumerate()
                .filter(|&(k, &i)| offs[k] + aligned(l.buffer(i).size) > capacity)
                .max_by_key(|&(_, &i)| (l.buffer(i).size, std::cmp::Reverse(i)))
                .unwrap_or((0, &fast_bufs[0]));
            fast_bufs.remove(k);
        }
    }
    let arena: Vec<usize> = (0..n).filter(|&i| regions[i] == REGION_ARENA).collect();
    let items: Vec<Item> = arena.iter().map(|&i| item(i)).collect();
    let (offs, arena_size) = pack(&items);
    for (k, &i) in arena.iter().enumerate() {
        offsets[i] = offs[k];
    }
    Placement {
        regions,
        offsets,
        arena_size,
        fast_size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_lifetimes_get_disjoint_bytes() {
        let items = [
            Item {
                size: 100,
                start: 0,
                end: 1,
            },
            Item {
                size: 50,
                start: 1,
                end: 2,
            },
            Item {
                size: 60,
                start: 2,
                end: 3,
            },
        ];
        let (offs, total) = pack(&items);
        // 100 at 0 (112 aligned); 60 at 0 (lives after the 100); 50 overlaps both.
        assert_eq!(offs, vec![0, 112, 0]);
        assert_eq!(total, 112 + 64);
    }
}
