//! Which contiguous runs of bytes an operation reads and writes (decision P14 in
//! `docs/decisions.md`): feature-map boxes per block, weight and scale streams, DMA copies.
//!
//! The NPU moves feature maps in words of 16 channels per (x, y) position (TRM 2.3.4: the
//! input buffer stores "activations from different x,y coordinates in different words"), and
//! an AXI burst is a sequence of whole words at consecutive addresses. So:
//! - NHCWB16: a box row of one brick is `width x 16 x element size` contiguous bytes; bricks
//!   follow each other when the row of one brick is exactly STRIDE_C (the box spans the whole
//!   stored width from x = 0), and rows follow each other when the bricks of a row are exactly
//!   STRIDE_Y (the box starts at brick 0);
//! - NHWC: a position's channels are `depth x element size` contiguous bytes; positions
//!   coalesce only when that is exactly STRIDE_X and the words split into whole positions (the
//!   position is a whole number of aligned 16-byte words, or divides the word: 1, 2, 4 or 8
//!   bytes), so the DMA can unpack a burst of words into positions; otherwise positions
//!   straddle words and each is its own short transaction (a 3-channel input image); rows
//!   coalesce when the positions of a row are exactly STRIDE_Y (the box starts at x = 0).

use super::axi::{alignment, gcd, Access};
use crate::isa::ActivationFormat;
use crate::sim::fm::Fm;

/// A box of a feature map: `h` rows from `y`, `w` columns from `x`, `d` channels from `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FmBox {
    /// First row.
    pub y: u64,
    /// Rows.
    pub h: u64,
    /// First column.
    pub x: u64,
    /// Columns.
    pub w: u64,
    /// First channel.
    pub c: u64,
    /// Channels.
    pub d: u64,
}

/// Bytes of a port-width word.
const WORD: u64 = 16;

/// Adds the runs of `times` reads (or writes) of box `b` of `fm` to `acc`.
pub fn fm_box(fm: &Fm, b: FmBox, times: u64, acc: &mut Access) {
    fm_box_in(fm, b, times, WORD, acc);
}

/// [`fm_box`], an NHWC position within one word costing its share of a burst against `unit`
/// bytes instead of the word (a kernel's IFM read, P26).
pub fn fm_box_in(fm: &Fm, b: FmBox, times: u64, unit: u64, acc: &mut Access) {
    if b.h == 0 || b.w == 0 || b.d == 0 || times == 0 {
        return;
    }
    let e = fm.esize();
    let base = fm.base[0];
    let (sy, sx, sc) = (fm.stride_y, fm.stride_x, fm.stride_c);
    // The box's offsets from the base, as separate terms: the alignment of their sum over a
    // group of boxes (starts given as the gcd of the group's starts) is at least their gcd.
    let (len, count, offsets, steps): (u64, u64, [u64; 3], [u64; 2]) =
        if fm.format == ActivationFormat::Nhcwb16 {
            let (b0, b1) = (b.c / 16, (b.c + b.d).div_ceil(16));
            let bricks = b1 - b0;
            let offsets = [b.y * sy, b0 * sc, b.x * 16 * e];
            let row = b.w * 16 * e;
            if b.x == 0 && row == sc {
                let run = row * bricks;
                if b0 == 0 && run == sy {
                    (run * b.h, 1, offsets, [0, 0])
                } else {
                    (run, b.h, offsets, [sy, 0])
                }
            } else {
                (row, b.h * bricks, offsets, [sy, sc])
            }
        } else {
            let offsets = [b.y * sy, b.x * sx, b.c * e];
            let pixel = b.d * e;
            // Whole words, or whole positions in every word: the position size divides the
            // word and the positions are aligned to it.
            let align = alignment(base, &[offsets[0], offsets[1], offsets[2], sx, sy]);
            let packs = if pixel % WORD == 0 {
                align % WORD == 0
            } else {
                WORD % pixel == 0 && align % pixel == 0
            };
            if pixel == sx && packs {
                let row = pixel * b.w;
                if b.x == 0 && row == sy {
                    (row * b.h, 1, offsets, [0, 0])
                } else {
                    (row, b.h, offsets, [sy, 0])
                }
            } else {
                (pixel, b.h * b.w, offsets, [sy, sx])
            }
        };
    let align = alignment(
        base,
        &[offsets[0], offsets[1], offsets[2], steps[0], steps[1]],
    );
    acc.add_in(len, align, count * times, unit);
}

/// Spans grouped by length, as (gcd of their starts, length, number of spans): a group stands
/// for all its spans in [`fm_box`] (a start of 0 only when every start is 0).
pub fn groups(spans: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    for &(start, len) in spans {
        match out.iter_mut().find(|g| g.1 == len) {
            Some(g) => {
                g.0 = gcd(g.0, start);
                g.2 += 1;
            }
            None => out.push((start, len, 1)),
        }
    }
    out
}

/// A group of paired spans: (gcd of window starts, window length), (gcd of block starts,
/// block length), number of pairs.
pub type PairGroup = ((u64, u64), (u64, u64), u64);

/// Paired spans (an IFM window and its OFM block) grouped by both lengths.
pub fn pair_groups(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<PairGroup> {
    let mut out: Vec<PairGroup> = Vec::new();
    for (&(sa, la), &(sb, lb)) in a.iter().zip(b) {
        match out.iter_mut().find(|g| g.0 .1 == la && g.1 .1 == lb) {
            Some(g) => {
                g.0 .0 = gcd(g.0 .0, sa);
                g.1 .0 = gcd(g.1 .0, sb);
                g.2 += 1;
            }
            None => out.push(((sa, la), (sb, lb), 1)),
        }
    }
    out
}

/// Blocks of `block` outputs along a dimension of `n`: (first output, outputs) of each.
pub fn spans(n: u64, block: u64) -> Vec<(u64, u64)> {
    let block = block.clamp(1, n.max(1));
    (0..n.div_ceil(block))
        .map(|i| (i * block, block.min(n - i * block)))
        .collect()
}

/// The input window of each block of `block` outputs along a dimension of `n` outputs with
/// stride `s`, (dilated) kernel `k` and leading padding `pad` over an input of `len` (in the
/// upscaled input when `up` is 2): inputs `[o*s - pad, (o+b-1)*s - pad + k)` clipped to
/// `[0, len)`, as (first stored input, stored inputs) with the upscaling undone.
pub fn windows(n: u64, block: u64, s: u64, k: u64, pad: u64, len: u64, up: u64) -> Vec<(u64, u64)> {
    spans(n, block)
        .into_iter()
        .map(|(o, b)| {
            let lo = (o * s).saturating_sub(pad).min(len);
            let hi = ((o + b - 1) * s + k).saturating_sub(pad).min(len).max(lo);
            let up = up.max(1);
            (lo / up, hi.div_ceil(up) - lo / up)
        })
        .collect()
}

/// Adds `times` reads of a contiguous stream of `len` bytes at `base`, in `pieces` equal
/// consecutive pieces each read separately (a weight stream's OFM-depth slices).
pub fn stream(base: u64, len: u64, pieces: u64, times: u64, acc: &mut Access) {
    if len == 0 || times == 0 {
        return;
    }
    let pieces = pieces.clamp(1, len);
    let piece = len.div_ceil(pieces);
    // Piece boundaries fall anywhere in a compressed stream: aligned as the stream is only for
    // a single piece.
    let align = if pieces == 1 { alignment(base, &[]) } else { 1 };
    acc.add(piece, align, pieces * times);
}

/// Adds a DMA side: `h` x `w` copies of `len` bytes at `addr + j*s1 + i*s0`.
pub fn dma_side(addr: u64, len: u64, (w, s0): (u64, i64), (h, s1): (u64, i64), acc: &mut Access) {
    if len == 0 || w == 0 || h == 0 {
        return;
    }
    let (s0u, s1u) = (s0.unsigned_abs(), s1.unsigned_abs());
    if w == 1 || s0u == len {
        let row = len * w;
        if h == 1 || s1u == row {
            acc.add(row * h, alignment(addr, &[]), 1);
        } else {
            acc.add(row, alignment(addr, &[s1u]), h);
        }
    } else {
        acc.add(len, alignment(addr, &[s0u, s1u]), w * h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_group_by_length() {
        // 10 outputs in blocks of 4: two of 4 (starts 0 and 4), one of 2 (start 8).
        let s = spans(10, 4);
        assert_eq!(groups(&s), vec![(4, 4, 2), (8, 2, 1)]);
        assert_eq!(groups(&[(0, 5)]), vec![(0, 5, 1)]);
        let w = windows(10, 4, 1, 3, 1, 10, 1);
        assert_eq!(
            pair_groups(&w, &s),
            vec![
                ((0, 5), (0, 4), 1),
                ((3, 6), (4, 4), 1),
                ((7, 3), (8, 2), 1)
            ]
        );
    }

    #[test]
    fn windows_count_halos_once_per_block_and_skip_padding() {
        let sum = |v: Vec<(u64, u64)>| v.iter().map(|w| w.1).sum::<u64>();
        // 8 outputs, stride 1, 3-tap kernel, pad 1, IFM 8: one block reads the 8 rows.
        assert_eq!(windows(8, 8, 1, 3, 1, 8, 1), vec![(0, 8)]);
        // Blocks of 4: [0..5) and [3..8): the 2-row halo is read twice.
        assert_eq!(windows(8, 4, 1, 3, 1, 8, 1), vec![(0, 5), (3, 5)]);
        // Stride 2, 1x1 kernel: only every other row is needed, but the span is counted.
        assert_eq!(sum(windows(4, 4, 2, 1, 0, 7, 1)), 7);
        // Upscaled x2: 8 upscaled rows are 4 stored ones.
        assert_eq!(windows(8, 8, 1, 1, 0, 8, 2), vec![(0, 4)]);
    }
    use crate::isa::{ActivationPrecision, ActivationStorage};
    use crate::sim::fm::Which;

    fn fm(format: ActivationFormat, (sy, sx, sc): (u64, u64, u64)) -> Fm {
        Fm {
            which: Which::Ifm,
            region: 1,
            base: [0; 4],
            stride_x: sx,
            stride_y: sy,
            stride_c: sc,
            width0: 96,
            height: [96, 96],
            storage: ActivationStorage::Tile2x2,
            precision: ActivationPrecision::B8,
            signed: true,
            format,
            zero_point_raw: 0,
        }
    }

    #[test]
    fn a_shallow_nhwc_input_is_read_one_position_at_a_time() {
        // 96x96x3: 9 rows x 49 columns of 3-byte pixels.
        let f = fm(ActivationFormat::Nhwc, (288, 3, 1));
        let mut a = Access::default();
        let b = FmBox {
            y: 0,
            h: 9,
            x: 0,
            w: 49,
            c: 0,
            d: 3,
        };
        fm_box(&f, b, 1, &mut a);
        assert_eq!(a.runs().len(), 1);
        assert_eq!(a.runs()[0].len, 3);
        assert_eq!(a.runs()[0].count, 9 * 49);
        // 4 channels divide the word: a row of 49 positions is one run.
        let f4 = fm(ActivationFormat::Nhwc, (96 * 4, 4, 1));
        let mut a = Access::default();
        fm_box(&f4, FmBox { d: 4, ..b }, 1, &mut a);
        assert_eq!((a.runs()[0].len, a.runs()[0].count), (49 * 4, 9));
        // 16 channels: whole words, a row of 49 positions is one run.
        let f = fm(ActivationFormat::Nhwc, (96 * 16, 16, 1));
        let mut a = Access::default();
        fm_box(&f, FmBox { d: 16, ..b }, 1, &mut a);
        assert_eq!((a.runs()[0].len, a.runs()[0].count), (49 * 16, 9));
    }

    #[test]
    fn brick_rows_coalesce_over_the_whole_stored_width() {
        // 48x48x48 NHCWB16: STRIDE_C = 48*16, STRIDE_Y = 3 bricks.
        let f = fm(ActivationFormat::Nhcwb16, (3 * 768, 16, 768));
        let whole = FmBox {
            y: 0,
            h: 5,
            x: 0,
            w: 48,
            c: 0,
            d: 48,
        };
        let mut a = Access::default();
        fm_box(&f, whole, 1, &mut a);
        assert_eq!((a.runs()[0].len, a.runs()[0].count), (5 * 3 * 768, 1));
        // 8 columns: one run per row and brick.
        let mut a = Access::default();
        fm_box(
            &f,
            FmBox {
                x: 8,
                w: 8,
                ..whole
            },
            1,
            &mut a,
        );
        assert_eq!((a.runs()[0].len, a.runs()[0].count), (128, 15));
        assert_eq!(a.runs()[0].align, 128);
    }
}
