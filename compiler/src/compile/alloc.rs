//! Feature-map placement in the arena (region 1) by liveness.
//!
//! Each buffer is live from the operation that writes it (graph inputs: from the start) to the
//! last operation that reads it (graph outputs: to the end). An operation's inputs and output
//! are live at the same time, so an OFM never overlaps its IFMs. Buffers are placed largest
//! first (ties by index, so the result is deterministic) at the lowest 16-byte aligned offset
//! that does not overlap any already placed buffer with an overlapping lifetime. Constant
//! buffers live in region 0 (placed by emit) and take no arena space.

use super::lower::Lowered;
use npuc_ir::Graph;

/// Alignment of every feature map in the arena.
pub const ALIGN: u64 = 16;

/// Where each buffer lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of each buffer in region 1.
    pub offsets: Vec<u64>,
    /// Arena size in bytes (a multiple of [`ALIGN`]).
    pub arena_size: u64,
}

fn lifetime(l: &Lowered, i: usize) -> (usize, usize) {
    let b = &l.buffers[i];
    let start = b.producer.unwrap_or(0);
    let end = if b.is_output {
        usize::MAX
    } else {
        b.last_use.unwrap_or(start).max(start)
    };
    (start, end)
}

/// Places the buffers of a lowered graph.
pub fn allocate(_g: &Graph, l: &Lowered) -> Placement {
    let n = l.buffers.len();
    let mut order: Vec<usize> = (0..n).filter(|i| !l.constants.contains_key(i)).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(l.buffers[i].size), i));
    let mut offsets = vec![0u64; n];
    let mut placed: Vec<usize> = Vec::new();
    let mut arena = 0u64;
    for i in order {
        let (s, e) = lifetime(l, i);
        let size = l.buffers[i].size.max(1).next_multiple_of(ALIGN);
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| {
                let (s2, e2) = lifetime(l, j);
                s <= e2 && s2 <= e
            })
            .map(|&j| {
                (
                    offsets[j],
                    offsets[j] + l.buffers[j].size.max(1).next_multiple_of(ALIGN),
                )
            })
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
        arena = arena.max(off + size);
        placed.push(i);
    }
    Placement {
        offsets,
        arena_size: arena,
    }
}
