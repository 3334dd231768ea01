//! Cascading: a run of operations computed band by band, each intermediate feature map kept in
//! a small ring buffer in the fast memory instead of whole (where it would not fit, and go to
//! the arena in DRAM).
//!
//! A cascade is a run of consecutive operations `first..=last` in which every operation's OFM
//! is read only by the next one, as its IFM (an ELEMENTWISE: as one operand, unbroadcast),
//! written and read plainly. CONV (with weights), DEPTHWISE, POOL and ELEMENTWISE operations
//! without LUT, IFM upscaling or chaining can take part. The last operation's OFM is computed
//! in bands of rows; working backwards, each operation computes just the rows the next one
//! needs for its band ([`RowMap::window`]: kernel height, stride and top padding) that it has
//! not computed yet, so every row of every operation is computed once. Operation `j`'s OFM
//! lives in a ring of `R` rows (row `r` in ring row `r mod R`), `R` the most rows that are
//! live at once: those the next operation reads in a band plus those `j` writes in it. Rows
//! that run past the end of the ring continue at its start: tile 2 of the feature map (TRM
//! 3.6.5 tile2x2: `HEIGHT0` rows at `BASE0`, the rest at `BASE2`). A band of a CONV, DEPTHWISE
//! or POOL reads its IFM window with the padding of the whole operation at the top and bottom
//! edges only (the IFM extent the hardware derives covers exactly the window), so each band
//! computes what the whole operation computes for its rows.
//!
//! Which runs are cascaded, and in which band height, is decided by the cost model: when some
//! intermediate feature map does not fit the fast memory ([`npuc_target::alloc`] spilled it to
//! the arena), every part of a run that holds one is estimated band by band (band heights 1 to
//! 64 whose rings fit beside the other feature maps live at the time) against the operations'
//! estimates as placed; the set of non-overlapping cascades with the largest saving is taken.

use super::chain;
use super::plan::{estimate_traffic, Costing, OpPlan};
use super::regs::{locs_with, Consts, Locs, Wrap};
use super::weights::{self, Layout};
use npuc_backend::isa::{ActivationReverse, ActivationTranspose, IfmUpscaleMode};
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{Fm, Kernel, Lowered, NpuOp, RowMap, View};
use npuc_target::alloc;
use npuc_target::alloc::Placement;
use npuc_target::arch_interface::{BlockConfig, Target, WeightStreams};
use npuc_target::arch_interface::{REGION_ARENA, REGION_FAST, REGION_READ_ONLY};
use npuc_target::objective;
use npuc_target::parallel;
use std::collections::{BTreeMap, HashMap};

/// Band heights (rows of the last operation's OFM) tried.
const BAND_HEIGHTS: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/// A part of a cascade: an operation and the OFM rows `r0..r1` it computes.
pub(super) type Piece = (usize, u32, u32);

/// One cascade: operations `first..=last`, their bands and the ring of each intermediate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cascade {
    pub first: usize,
    pub last: usize,
    /// The pieces in execution order, band by band: (operation, OFM rows `r0..r1`).
    pub pieces: Vec<Piece>,
    /// Ring rows of the OFM of each operation but the last (index `j - first`).
    pub rings: Vec<u32>,
    /// The operations' weight and scale streams are copied into the staging memory before
    /// the first band (else every band reads them from region 0).
    pub staged: bool,
    /// The global program's choice (decision S20): this cascade's objective and the cheapest
    /// other way to run its operations, for `explain` (`None`: chosen by the greedy).
    pub choice: Option<super::optimise::Choice>,
}

/// For each of `n` operations, whether it belongs to one of `cascades`.
pub(super) fn members(cascades: &[Cascade], n: usize) -> Vec<bool> {
    (0..n)
        .map(|k| cascades.iter().any(|c| (c.first..=c.last).contains(&k)))
        .collect()
}

impl Cascade {
    /// Whether operation `j`'s OFM lives in a ring of this cascade.
    fn ring_of(&self, j: usize) -> Option<u32> {
        (self.first..self.last)
            .contains(&j)
            .then(|| self.rings[j - self.first])
    }
}

/// The band schedule of operations with `maps` for bands of `band` rows of the last OFM:
/// the pieces and the ring rows of each intermediate; `None` if some band would read no IFM
/// row at all.
fn schedule(maps: &[RowMap], band: u32) -> Option<(Vec<Piece>, Vec<u32>)> {
    let n = maps.len();
    let mut done = vec![0u32; n];
    let mut rings = vec![0u32; n - 1];
    let mut pieces = Vec::new();
    let last_ho = maps[n - 1].ho;
    while done[n - 1] < last_ho {
        let mut target = done.clone();
        target[n - 1] = (done[n - 1] + band).min(last_ho);
        for j in (0..n - 1).rev() {
            if target[j + 1] == done[j + 1] {
                continue;
            }
            let (lo, hi) = maps[j + 1].window(done[j + 1], target[j + 1]);
            if hi <= lo {
                return None;
            }
            target[j] = done[j].max(hi);
            rings[j] = rings[j].max(target[j] - lo.min(done[j]));
        }
        for j in 0..n {
            if target[j] > done[j] {
                pieces.push((j, done[j], target[j]));
                done[j] = target[j];
            }
        }
    }
    Some((pieces, rings))
}

/// Whether operation `k` can take part in a cascade.
fn cascadable(l: &Lowered, k: usize, chains: &[Option<chain::Operand>]) -> bool {
    let op = &l.ops[k];
    let kind = match op.kernel {
        // (An IFM2 of a CONV, DEPTHWISE or POOL is a matrix or an initial accumulator.)
        Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_) => {
            op.ifm2.is_none() && (op.weights.is_some() || op.kernel != Kernel::Conv)
        }
        Kernel::Elementwise(_) => true,
        Kernel::Resize(_) | Kernel::Dma(_) => false,
    };
    kind && op.upscale == IfmUpscaleMode::None
        && !l.luts.contains_key(&k)
        && chains[k].is_none()
        && !(k > 0 && chains[k - 1].is_some())
        && op.ofm.view.transpose == ActivationTranspose::Hwc
        && op.ofm.view.reverse == ActivationReverse::None
        && op.ofm.shape.0 > 1
}

/// Whether operations `k` and `k + 1` can be consecutive in a cascade.
fn link(l: &Lowered, k: usize, chains: &[Option<chain::Operand>]) -> bool {
    if !cascadable(l, k, chains) || !cascadable(l, k + 1, chains) {
        return false;
    }
    let (p, c) = (&l.ops[k], &l.ops[k + 1]);
    let buf = p.ofm.buffer;
    let b = &l.buffers[buf];
    if b.is_output
        || b.is_input
        || b.producer != Some(k)
        || b.last_use != Some(k + 1)
        || l.constants.contains_key(&buf)
        || p.ofm.view != View::default()
    {
        return false;
    }
    let reads = |f: &Fm| f.buffer == buf;
    let exact = |f: &Fm| {
        f.view == View::default()
            && f.broadcast == (false, false, false)
            && f.shape == p.ofm.shape
            && f.dtype == p.ofm.dtype
    };
    let on_ifm = reads(&c.ifm);
    let on_ifm2 = c.ifm2.as_ref().is_some_and(reads);
    match c.kernel {
        Kernel::Elementwise(_) => match (on_ifm, on_ifm2) {
            (true, false) => exact(&c.ifm),
            (false, true) => c.ifm2.as_ref().is_some_and(exact),
            _ => false,
        },
        _ => on_ifm && !on_ifm2 && exact(&c.ifm),
    }
}

fn row_bytes(fm: &Fm) -> u64 {
    u64::from(fm.shape.1) * u64::from(fm.shape.2) * u64::from(fm.elem_bytes())
}

/// The block of a piece of `rows` OFM rows: the operation's, its height at most the rows
/// (rounded up to the microblock height), and shared evenly among the block rows the piece
/// needs at that height (S15: 8 rows with a 7-row block take two blocks of 4 rows, not one of
/// 7 and one of 1, so each block keeps the pipeline's overheads behind more work).
pub(super) fn piece_block(block: &BlockConfig, rows: u32) -> BlockConfig {
    let mh = block.microblock.0.max(1);
    let h = block.ofm_block.0.min(rows.next_multiple_of(mh)).max(1);
    let even = rows.div_ceil(rows.div_ceil(h)).next_multiple_of(mh).min(h);
    BlockConfig {
        ofm_block: (even, block.ofm_block.1, block.ofm_block.2),
        ..*block
    }
}

/// The first operation's IFM, a feature map off-chip, read through a ring of `rows` rows at
/// `at` in the staging memory `region` (S23): before each of the operation's pieces a DMA
/// brings the rows it reads that the ring does not hold yet ([`input_fills`]), so the kernel
/// reads its IFM from the staging memory and every IFM row crosses off-chip once, in long
/// runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InputRing {
    pub region: u8,
    pub at: u64,
    pub rows: u32,
}

/// The rows of a ring for the first operation's IFM of `c` (the most any of its pieces
/// reads), when that IFM may be read through one: a CONV, DEPTHWISE or POOL reading all of a
/// dense NHWC graph input (which no operation writes, so a fill never waits for a kernel),
/// placed (`p`) in a memory other than `staging`'s.
pub(super) fn input_ring_rows(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    staging: u8,
) -> Option<u32> {
    let op = &l.ops[c.first];
    let buf = op.ifm.buffer;
    let whole = op.ifm.view == View::default()
        && op.ifm.broadcast == (false, false, false)
        && row_bytes(&op.ifm) * u64::from(op.ifm.shape.0) == l.buffers[buf].size;
    let memory = |r: u8| target.region_memory(r);
    let eligible = matches!(
        op.kernel,
        Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_)
    ) && op.ifm2.is_none()
        && whole
        && l.buffers[buf].is_input
        && !l.constants.contains_key(&buf)
        && p.regions[buf] != alloc::CHAINED
        && p.regions[buf] != REGION_READ_ONLY
        && memory(p.regions[buf]) != memory(staging);
    if !eligible {
        return None;
    }
    let map = RowMap::of(op);
    c.pieces
        .iter()
        .filter(|q| q.0 == c.first)
        .map(|&(_, r0, r1)| {
            let (lo, hi) = map.window(r0, r1);
            hi - lo
        })
        .max()
}

/// The DMAs filling the input ring of `c` (`ring` rows): per piece of the first operation,
/// in order, the IFM rows `r0..r1` it reads that no earlier piece read.
pub(super) fn input_fills(l: &Lowered, c: &Cascade) -> Vec<(u32, u32)> {
    let map = RowMap::of(&l.ops[c.first]);
    fills_of(
        c.pieces
            .iter()
            .filter(|q| q.0 == c.first)
            .map(|&(_, r0, r1)| map.window(r0, r1)),
    )
}

/// Per IFM window `lo..hi` read in turn, the rows `r0..r1` it reads that no earlier one did.
fn fills_of(windows: impl Iterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut done = 0;
    windows
        .map(|(_, hi)| {
            let fill = (done, hi.max(done));
            done = fill.1;
            fill
        })
        .collect()
}

/// The copies (source offset from the IFM buffer's start, offset in the ring from its
/// start, bytes) bringing IFM rows `r0..r1` of `c`'s first operation into a ring of `rows`
/// rows: one, or two where the rows wrap past the ring's end.
pub(super) fn fill_copies(
    l: &Lowered,
    c: &Cascade,
    rows: u32,
    (r0, r1): (u32, u32),
) -> Vec<(u64, u64, u64)> {
    ring_spans(rows, (r0, r1), row_bytes(&l.ops[c.first].ifm))
}

/// [`fill_copies`] for rows of `rb` bytes.
fn ring_spans(rows: u32, (r0, r1): (u32, u32), rb: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let mut r = r0;
    while r < r1 {
        let slot = r % rows;
        let n = (r1 - r).min(rows - slot);
        out.push((u64::from(r) * rb, u64::from(slot) * rb, u64::from(n) * rb));
        r += n;
    }
    out
}

/// The bytes of a ring of `rows` rows of the first operation's IFM of `c`.
pub(super) fn input_ring_bytes(l: &Lowered, c: &Cascade, rows: u32) -> u64 {
    u64::from(rows) * row_bytes(&l.ops[c.first].ifm)
}

/// Operation `j` of cascade `c` restricted to OFM rows `r0..r1`, and its locations; the first
/// operation reads its IFM through `input` when there is one.
pub(super) fn piece(
    l: &Lowered,
    p: &Placement,
    consts: &Consts,
    c: &Cascade,
    (j, r0, r1): Piece,
    input: Option<&InputRing>,
) -> (NpuOp, Locs) {
    let op = &l.ops[j];
    let map = RowMap::of(op);
    let elementwise = matches!(op.kernel, Kernel::Elementwise(_));
    let (lo, hi) = if elementwise {
        (r0, r1)
    } else {
        map.window(r0, r1)
    };
    let mut pad = op.pad;
    if !elementwise {
        let (top, bottom) = map.pads(r0, r1, (lo, hi));
        pad[0] = top;
        pad[1] = bottom;
    }
    // The ring that `fm` (read or written at `row`, `rows` rows) lives in, if any: its slot
    // offset and wrap.
    let ring = |fm: &Fm, owner: Option<usize>, row: u32, rows: u32| -> Option<(u64, Wrap)> {
        let r = c.ring_of(owner?)?;
        let slot = row % r;
        let start = p.offsets[fm.buffer];
        let wrap = (slot + rows > r).then_some((r - slot, start));
        Some((u64::from(slot) * row_bytes(fm), wrap))
    };
    // A window of rows of a whole buffer.
    let rows_of = |fm: &Fm, row: u32, rows: u32| -> Fm {
        let mut f = *fm;
        if fm.broadcast.0 {
            return f;
        }
        let (sy, sx) = fm.strides();
        f.view.strides = Some((sy, sx));
        f.view.offset += u64::from(row) * sy;
        f.shape.0 = rows;
        f
    };
    let producer = |fm: &Fm| {
        (j > c.first
            && fm.buffer == l.ops[j - 1].ofm.buffer
            && !l.constants.contains_key(&fm.buffer))
        .then(|| j - 1)
    };
    let mut wrap: [Wrap; 3] = [None; 3];
    let mut operand = |fm: &Fm, slot: usize| -> Fm {
        match ring(fm, producer(fm), lo, hi - lo) {
            Some((off, w)) => {
                wrap[slot] = w;
                let mut f = *fm;
                f.view.offset = off;
                f.shape.0 = hi - lo;
                f
            }
            None => rows_of(fm, lo, hi - lo),
        }
    };
    let ifm = operand(&op.ifm, 0);
    let ifm2 = op.ifm2.as_ref().map(|f| operand(f, 1));
    let ofm = match ring(&op.ofm, Some(j), r0, r1 - r0) {
        Some((off, w)) => {
            wrap[2] = w;
            let mut f = op.ofm;
            f.view.offset = off;
            f.shape.0 = r1 - r0;
            f
        }
        None => rows_of(&op.ofm, r0, r1 - r0),
    };
    let (ifm, ring_at) = match input.filter(|_| j == c.first) {
        Some(r) => {
            let slot = lo % r.rows;
            let mut f = rows_of(&op.ifm, lo, hi - lo);
            f.view = View::default();
            f.view.offset = u64::from(slot) * row_bytes(&op.ifm);
            wrap[0] = (slot + (hi - lo) > r.rows).then_some((r.rows - slot, r.at));
            (f, Some((r.region, r.at + f.view.offset)))
        }
        None => (ifm, None),
    };
    let s = op.piece(ifm, ifm2, ofm).with_pad(pad);
    let scalar = l.scalars.get(&j).copied();
    let mut at = locs_with(&s, scalar, p, l, consts);
    if let Some(a) = ring_at {
        at.ifm = a;
    }
    at.wrap = wrap;
    (s, at)
}

/// The plans a cascade member may run with: its plan, the cheapest SWD plan where an FWD one
/// won (`alt`) and the cheapest SWD plan with its streams in the staging memory (`staged`),
/// each with its own encoded streams.
fn candidates(plan: &OpPlan) -> impl Iterator<Item = &OpPlan> {
    std::iter::once(plan)
        .chain(plan.alt.as_deref())
        .chain(plan.staged.as_deref())
}

/// The cost model of one operation's pieces in a cascade, its streams read from `region`,
/// for any plan and block: each piece (or each distinct piece: rows, IFM rows, padding, the
/// first of its kind) with the registers no block changes written once ([`Costing`]), how
/// many pieces it stands for, and the figures costed so far by (piece, piece block,
/// streams' layout): blocks that differ share a piece block where the piece is lower than
/// both (S15 shares the rows among its block rows), reshapes of one width most often.
struct MemberCosting<'a> {
    costings: Vec<(Costing<'a>, u32, u64)>,
    region: u8,
    layouts: Vec<Option<Layout>>,
    done: HashMap<CostKey, u64>,
}

/// (piece, piece block's fields, layout) of a figure [`MemberCosting`] has costed.
type CostKey = (
    usize,
    (u32, u32, u32),
    (u32, u32, u32),
    bool,
    bool,
    u32,
    usize,
);

/// The key of `block`'s figure for piece `si` with layout `li` (every field of the block).
fn cost_key(si: usize, b: &BlockConfig, li: usize) -> CostKey {
    let single = b.weight_streams == WeightStreams::Single;
    (
        si,
        b.ofm_block,
        b.microblock,
        single,
        b.sparse,
        b.private,
        li,
    )
}

impl<'a> MemberCosting<'a> {
    /// The pieces `shapes` (each with how many pieces it stands for; [`piece_shapes`]),
    /// their streams read from `region`; `block` is any.
    fn new(
        target: &'a dyn Target,
        shapes: &'a [(PieceKey, NpuOp, Locs, u64)],
        block: &BlockConfig,
        region: u8,
    ) -> MemberCosting<'a> {
        let costings = shapes
            .iter()
            .map(|(key, s, at, n)| (Costing::new(target, s, block, at), key.0, *n))
            .collect();
        MemberCosting {
            costings,
            region,
            layouts: Vec::new(),
            done: HashMap::new(),
        }
    }

    /// Estimated cycles of the pieces with `block` (shared per piece, S15) and streams laid
    /// out as `layout`: [`estimate_traffic`]'s figures, each distinct piece estimated once.
    fn cycles(&mut self, block: &BlockConfig, layout: Option<&Layout>) -> u64 {
        let li = match self.layouts.iter().position(|x| x.as_ref() == layout) {
            Some(i) => i,
            None => {
                self.layouts.push(layout.cloned());
                self.layouts.len() - 1
            }
        };
        let mut sum = 0;
        for (si, (costing, rows, n)) in self.costings.iter().enumerate() {
            let b = piece_block(block, *rows);
            let cy = *self
                .done
                .entry(cost_key(si, &b, li))
                .or_insert_with(|| costing.traffic(&b, layout, self.region).0);
            sum += n * cy;
        }
        sum
    }
}

/// A piece's rows, IFM rows and padding: pieces that share them are estimated alike.
type PieceKey = (u32, u32, [u32; 4]);

/// The distinct pieces of operation `j` in cascade `c`, in order of first appearance: the
/// key, the first such piece and its locations, and how many pieces share the key.
fn piece_shapes(
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    j: usize,
) -> Vec<(PieceKey, NpuOp, Locs, u64)> {
    let none = BTreeMap::new();
    let mut out: Vec<(PieceKey, NpuOp, Locs, u64)> = Vec::new();
    for &(i, r0, r1) in c.pieces.iter().filter(|q| q.0 == j) {
        let (s, at) = piece(l, p, &none, c, (i, r0, r1), None);
        let key = (r1 - r0, s.ifm.shape.0, s.pad);
        match out.iter_mut().find(|x| x.0 == key) {
            Some(x) => x.3 += 1,
            None => out.push((key, s, at, 1)),
        }
    }
    out
}

/// Estimated (cycles, off-chip bytes) of the first operation's pieces in cascade `c`, run
/// with `plan` (its block shared per piece, S15) and its streams read from `region`, its IFM
/// read in place or through `input`.
pub(super) fn first_traffic(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    (plan, region): (&OpPlan, u8),
    input: Option<&InputRing>,
) -> (u64, u64) {
    let none = BTreeMap::new();
    let layout = plan.enc.as_ref().map(weights::Encoded::layout);
    let mut sum = (0, 0);
    for &q in c.pieces.iter().filter(|q| q.0 == c.first) {
        let (s, at) = piece(l, p, &none, c, q, input);
        let block = piece_block(&plan.block, q.2 - q.1);
        let (cy, by) = estimate_traffic(target, &s, &block, layout.as_ref(), region, &at);
        sum = (sum.0 + cy, sum.1 + by);
    }
    sum
}

/// The other OFM block shapes `block` of operation `op` may take in a cascade (S22): the same
/// depth, microblock, weight order and streams (TRM 3.9.2: the weight stream is ordered for
/// one block depth and microblock, so the encoded streams stay valid), heights and widths in
/// multiples of the microblock within the target's maximum and the OFM (rounded up to the
/// microblock), no more OFM positions than `block` (so its accumulators and output bytes fit
/// where `block`'s did) and an IFM footprint, `((h - 1) x stride + kernel) x ((w - 1) x
/// stride + kernel)` positions of the same IFM block depth, no larger than `block`'s (so it
/// fits the IFM RAM where `block`'s did); per height the widest such block.
fn reshapes(target: &dyn Target, op: &NpuOp, block: &BlockConfig) -> Vec<BlockConfig> {
    let g = super::geometry(op);
    let (max_h, max_w, _) = target.ofm_block_max();
    reshapes_within(
        block,
        (g.ofm.0, g.ofm.1),
        g.stride,
        g.kernel,
        (max_h, max_w),
    )
}

/// [`reshapes`] of `block` for an OFM of `ofm` (height, width), `stride` and (dilated)
/// `kernel`, within `max` (the target's largest block height and width).
fn reshapes_within(
    block: &BlockConfig,
    ofm: (u32, u32),
    stride: (u32, u32),
    kernel: (u32, u32),
    max: (u32, u32),
) -> Vec<BlockConfig> {
    let (h, w, _) = block.ofm_block;
    let (mh, mw, _) = block.microblock;
    if mh == 0 || mw == 0 || h == 0 || w == 0 {
        return Vec::new();
    }
    let lim_h = ofm.0.next_multiple_of(mh).min(max.0);
    let lim_w = ofm.1.next_multiple_of(mw).min(max.1);
    let foot = |h: u32, w: u32| {
        u64::from((h - 1) * stride.0 + kernel.0) * u64::from((w - 1) * stride.1 + kernel.1)
    };
    let (area, ifm) = (u64::from(h) * u64::from(w), foot(h, w));
    let mut out = Vec::new();
    for h2 in (mh..=lim_h).step_by(mh as usize) {
        let widest = (mw..=lim_w)
            .step_by(mw as usize)
            .filter(|&w2| u64::from(h2) * u64::from(w2) <= area && foot(h2, w2) <= ifm)
            .last();
        if let Some(w2) = widest.filter(|&w2| (h2, w2) != (h, w)) {
            out.push(BlockConfig {
                ofm_block: (h2, w2, block.ofm_block.2),
                ..*block
            });
        }
    }
    out
}

/// For every operation of `cascades` with weights, the plan among [`candidates`] and their
/// [`reshapes`] whose pieces take the fewest cycles with the streams where the cascade reads
/// them (S16: a band a few rows high is computed fastest with another block than the one
/// chosen for the whole operation with its streams in region 0; S22: a block of another
/// height and width repeats fewer IFM rows and columns over a band; ties keep the plan); the
/// others are dropped. Streams that no longer fit beside the rings are read from region 0
/// (`stage_cascade`).
pub(super) fn member_plans(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    cascades: &[Cascade],
    plans: &mut [OpPlan],
) {
    // Each member's choice depends on its own plan and its cascade alone: on every thread
    // available, in order.
    let members: Vec<(&Cascade, usize)> = cascades
        .iter()
        .flat_map(|c| (c.first..=c.last).map(move |j| (c, j)))
        .collect();
    let chosen = {
        let plans: &[OpPlan] = plans;
        parallel::map(&members, |_, &(c, j)| {
            member_plan(target, l, p, c, j, &plans[j])
        })
    };
    let mut chosen = chosen.into_iter();
    for c in cascades {
        for plan in &mut plans[c.first..=c.last] {
            if let Some(q) = chosen.next().flatten() {
                *plan = q;
            }
        }
        if let Some(q) = ring_plan(target, l, p, c, plans) {
            plans[c.first] = q;
        }
    }
}

/// [`member_plans`]'s choice for operation `j` of cascade `c` planned as `plan`: `None`
/// where it keeps `plan`.
fn member_plan(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    j: usize,
    plan: &OpPlan,
) -> Option<OpPlan> {
    plan.enc.as_ref()?;
    let region = match target.staging() {
        Some((region, _)) if c.staged => region,
        _ => REGION_READ_ONLY,
    };
    let shapes = piece_shapes(l, p, c, j);
    let mut costing = MemberCosting::new(target, &shapes, &plan.block, region);
    // (candidate, its block or a reshape of it): the plan's own block first.
    let mut best: Option<(u64, usize, BlockConfig)> = None;
    for (i, q) in candidates(plan).enumerate() {
        let layout = q.enc.as_ref().map(weights::Encoded::layout);
        let blocks = std::iter::once(q.block).chain(reshapes(target, &l.ops[j], &q.block));
        for block in blocks {
            let cycles = costing.cycles(&block, layout.as_ref());
            if best.as_ref().is_none_or(|b| cycles < b.0) {
                best = Some((cycles, i, block));
            }
        }
    }
    let (_, i, block) = best.filter(|b| b.1 > 0 || b.2 != plan.block)?;
    let mut q = candidates(plan).nth(i).cloned().expect("a candidate");
    q.alt = None;
    q.staged = None;
    q.block = block;
    Some(q)
}

/// Whether cascade `c`'s streams (as `plans` has them, the first operation's with `first`'s)
/// and then a ring of `bytes` fit the staging memory `region` of `capacity` beside the
/// feature maps placed as `p`, exactly as [`super::staging::stage_cascade`] places them in
/// both stagings (the greedy's and the program's, each with the constant copy the greedy's
/// rule takes and without it, S14): `c` is the first cascade, from operation 0, so nothing
/// but the feature maps and that copy is placed before it; else `false`.
fn ring_fits(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    (plans, first): (&[OpPlan], &OpPlan),
    (region, capacity): (u8, u64),
    bytes: u64,
) -> bool {
    if c.first != 0 {
        return false;
    }
    let copy = super::staging::copy_traffic(target, region);
    [true, false].into_iter().all(|consts| {
        let (mut placed, cap) = super::staging::occupancy(l, p, region, capacity);
        if consts {
            super::staging::stage_consts(target, l, plans, p, region, cap, &mut placed, &copy);
        }
        let sizes = std::iter::once(first)
            .chain(&plans[c.first + 1..=c.last])
            .filter_map(|q| q.enc.as_ref().map(weights::Encoded::size))
            .chain(std::iter::once(bytes));
        sizes.into_iter().all(|size| {
            let item = alloc::Item {
                size,
                start: 0,
                end: c.last,
            };
            alloc::fit(&placed, item, cap).is_some_and(|at| {
                placed.push((item, at));
                true
            })
        })
    })
}

/// The objective (S11) of cascade `c`'s first operation run with `plan`, its streams in
/// `region`, reading its IFM through `ring` (S23): its pieces, the first band's fill (the
/// later fills run alongside the band before's other operations) and every fill's off-chip
/// bytes.
pub(super) fn ring_objective(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    (plan, region): (&OpPlan, u8),
    ring: &InputRing,
) -> u64 {
    let (cycles, bytes) = first_traffic(target, l, p, c, (plan, region), Some(ring));
    let from = p.regions[l.ops[c.first].ifm.buffer];
    let copy = super::staging::copy_traffic(target, ring.region);
    let mut fills = (0, 0);
    for (i, rows) in input_fills(l, c).into_iter().enumerate() {
        for (_, _, len) in fill_copies(l, c, ring.rows, rows) {
            let (cy, by) = copy(from, len);
            fills = (fills.0 + if i == 0 { cy } else { 0 }, fills.1 + by);
        }
    }
    objective::cost((cycles + fills.0, bytes + fills.1))
}

/// Where cascade `c`'s first operation may read its IFM through a ring in the staging memory
/// `region` (S23), the plan that does best so: among every block candidate the target offers
/// and their reshapes (S22), costed with the streams' lengths of `plan` (an FWD candidate
/// with the target's FWD length estimate), the one whose pieces cost least through the ring,
/// encoded; taken when, through the ring, it costs less than `plan` reading the IFM in place
/// and than `plan` through the ring, and only where [`ring_fits`] shows that the staging
/// will place the ring, so that a plan chosen for the ring never runs without it. (With
/// another weight order than the plan's: a narrow input image is NPU-bound depth first,
/// eight IFM channels a step of which it has three.)
fn ring_plan(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    c: &Cascade,
    plans: &[OpPlan],
) -> Option<OpPlan> {
    let staging = target.staging().filter(|_| c.staged)?;
    let region = staging.0;
    let rows = input_ring_rows(target, l, p, c, region)?;
    let plan = &plans[c.first];
    let bytes = input_ring_bytes(l, c, rows);
    if !ring_fits(target, l, p, c, (plans, plan), staging, bytes) {
        return None;
    }
    let ring = InputRing {
        region,
        at: 0,
        rows,
    };
    let op = &l.ops[c.first];
    let enc = plan.enc.as_ref()?;
    let wt = op.weights.as_ref()?;
    let direct = objective::cost(first_traffic(target, l, p, c, (plan, region), None));
    let kept = ring_objective(target, l, p, c, (plan, region), &ring);
    let swd = candidates(plan)
        .filter_map(|q| q.enc.as_ref())
        .find(|e| e.format == WeightStreams::PerDecoder)
        .map(weights::Encoded::layout);
    let fwd = target.fwd_length_estimate(wt).map(|len| {
        weights::Layout::new(WeightStreams::Single, false, [enc.scales.len() as u64, len])
    });
    // Every piece of the first operation through the ring (each reads its own ring rows).
    let pieces: Vec<(PieceKey, NpuOp, Locs, u64)> = c
        .pieces
        .iter()
        .filter(|q| q.0 == c.first)
        .map(|&q| {
            let (s, at) = piece(l, p, &BTreeMap::new(), c, q, Some(&ring));
            ((q.2 - q.1, s.ifm.shape.0, s.pad), s, at, 1)
        })
        .collect();
    // The candidates in runs, costed on every thread available (each run with its own
    // registers and figures), their sums in order.
    let cands = target.block_candidates(&super::geometry(op));
    let runs: Vec<&[BlockConfig]> = cands.chunks(cands.len().div_ceil(8).max(1)).collect();
    let sums = parallel::map(&runs, |_, run| {
        let mut costing = MemberCosting::new(target, &pieces, &plan.block, region);
        let mut out = Vec::new();
        for cand in run.iter() {
            let layout = match cand.weight_streams {
                WeightStreams::Single => fwd.clone(),
                WeightStreams::PerDecoder => swd.clone(),
            };
            let Some(layout) = layout.map(|x| weights::Layout {
                sparse: cand.sparse,
                ..x
            }) else {
                continue;
            };
            for block in std::iter::once(*cand).chain(reshapes(target, op, cand)) {
                out.push((costing.cycles(&block, Some(&layout)), block));
            }
        }
        out
    });
    let mut best: Option<(u64, BlockConfig)> = None;
    for (sum, block) in sums.into_iter().flatten() {
        if best.as_ref().is_none_or(|b| sum < b.0) {
            best = Some((sum, block));
        }
    }
    let (_, block) = best?;
    // Counted: `decide` makes the streams if the plan is chosen.
    let enc = weights::count(target, op, &super::geometry(op), &block).ok()??;
    let at = super::regs::locs(op, p, l, &BTreeMap::new());
    let (cycles, offchip) = estimate_traffic(
        target,
        op,
        &block,
        Some(&enc.layout()),
        REGION_READ_ONLY,
        &at,
    );
    let q = OpPlan {
        block,
        enc: Some(enc),
        cycles,
        offchip,
        alt: None,
        staged: None,
        micro: Vec::new(),
    };
    let with = ring_objective(target, l, p, c, (&q, region), &ring);
    // With its own streams the ring must still fit: the plan is taken only with the ring.
    (with < kept && with < direct && ring_fits(target, l, p, c, (plans, &q), staging, bytes))
        .then_some(q)
}

/// Shrinks each cascade's intermediates to their rings and makes every buffer a cascade
/// touches live from its first operation to its last (the bands interleave them).
pub(super) fn apply(l: &mut Lowered, cascades: &[Cascade]) {
    for c in cascades {
        for j in c.first..=c.last {
            let (ifm, ifm2, ofm) = (l.ops[j].ifm, l.ops[j].ifm2, l.ops[j].ofm);
            let b = &mut l.buffers[ofm.buffer];
            b.producer = Some(c.first);
            if let Some(r) = c.ring_of(j) {
                b.size = u64::from(r) * row_bytes(&ofm);
                b.last_use = Some(c.last);
            }
            for f in std::iter::once(&ifm).chain(ifm2.as_ref()) {
                let b = &mut l.buffers[f.buffer];
                b.last_use = Some(b.last_use.map_or(c.last, |u| u.max(c.last)));
            }
        }
    }
}

/// The cascades that pay, given the feature maps placed as `p` (without cascades) and the
/// operations planned as `plans` there.
pub(super) fn choose(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    chains: &[Option<chain::Operand>],
) -> Vec<Cascade> {
    let Some(capacity) = target.fast_storage() else {
        return Vec::new();
    };
    let spilled = spilled_at(l, p);
    if !(0..l.ops.len()).any(&spilled) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, e) in runs(l, chains) {
        if e > k && (k..e).any(&spilled) {
            out.extend(choose_in_run(
                target,
                l,
                p,
                plans,
                (k, e),
                capacity,
                &spilled,
            ));
        }
    }
    out
}

/// Whether operation `k`'s OFM, not a graph output, was spilled to the arena by `p`.
fn spilled_at<'a>(l: &'a Lowered, p: &'a Placement) -> impl Fn(usize) -> bool + 'a {
    move |k| {
        let b = l.ops[k].ofm.buffer;
        p.regions[b] == REGION_ARENA && !l.buffers[b].is_output
    }
}

/// The maximal runs `(first, last)` of operations each linked to the next ([`link`]), in
/// order; an unlinked operation is a run of its own.
fn runs(l: &Lowered, chains: &[Option<chain::Operand>]) -> Vec<(usize, usize)> {
    let n = l.ops.len();
    let mut out = Vec::new();
    let mut k = 0;
    while k < n {
        let mut e = k;
        while e + 1 < n && link(l, e, chains) {
            e += 1;
        }
        out.push((k, e));
        k = e + 1;
    }
    out
}

/// The best non-overlapping cascades within the run of operations `a0..=b0`: the largest
/// saving in the objective (S11), then of off-chip bytes.
fn choose_in_run(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    (a0, b0): (usize, usize),
    capacity: u64,
    spilled: &dyn Fn(usize) -> bool,
) -> Vec<Cascade> {
    // best[i]: the largest (objective, bytes) saving over operations a0..a0 + i, its cascades.
    let m = b0 - a0 + 1;
    let mut best: Vec<((u64, u64), Vec<Cascade>)> = vec![((0, 0), Vec::new()); m + 1];
    for i in 1..=m {
        best[i] = best[i - 1].clone();
        for a in a0..a0 + i - 1 {
            let b = a0 + i - 1;
            if !(a..b).any(spilled) {
                continue;
            }
            let Some((gain, c)) = evaluate(target, l, p, plans, (a, b), capacity, spilled) else {
                continue;
            };
            let prior = best[a - a0].0;
            let total = (prior.0 + gain.0, prior.1 + gain.1);
            if total > best[i].0 {
                let mut cs = best[a - a0].1.clone();
                cs.push(c);
                best[i] = (total, cs);
            }
        }
    }
    best.pop().map(|b| b.1).unwrap_or_default()
}

/// Bytes of fast memory (`p`, region 2) in use while operation `t` runs by the live buffers
/// for which `counted` holds.
fn in_use(l: &Lowered, p: &Placement, t: usize, counted: &dyn Fn(usize) -> bool) -> u64 {
    let mut sum = 0;
    for i in 0..l.buffers.len() {
        if p.regions[i] != REGION_FAST || !counted(i) {
            continue;
        }
        let it = alloc::buffer_item(l, i);
        if it.start <= t && t <= it.end {
            sum += it.size.next_multiple_of(alloc::ALIGN);
        }
    }
    sum
}

/// One band height of cascading operations `a..=b` whose rings (and staged streams) fit.
#[derive(Debug, Clone)]
pub(super) struct Band {
    pub cascade: Cascade,
    /// Cycles of its pieces.
    pub cycles: u64,
    /// Off-chip bytes of its pieces, and of the stream copies when they are staged.
    pub offchip: u64,
    /// Cycles of the stream copies before the first band (0 unless staged).
    pub dma: u64,
    /// Fast-memory bytes of its rings and staged streams, live over its whole span.
    pub bytes: u64,
}

/// Every band height of cascading operations `a..=b` whose rings (and, when staged, streams)
/// fit in the fast memory the other feature maps leave over its span (`capacity` minus the
/// most any step of it holds).
pub(super) fn bands(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    (a, b): (usize, usize),
    capacity: u64,
) -> Vec<Band> {
    let maps: Vec<RowMap> = (a..=b).map(|j| RowMap::of(&l.ops[j])).collect();
    let inner: Vec<usize> = (a..b).map(|j| l.ops[j].ofm.buffer).collect();
    let outer = |i: usize| !inner.contains(&i);
    // The fast memory the rest of the feature maps leave while the cascade runs: the ones
    // its operations read or write live throughout it (`apply`), the others as placed.
    let touched: Vec<usize> = (a..=b)
        .flat_map(|j| {
            let o = &l.ops[j];
            [
                Some(o.ifm.buffer),
                o.ifm2.map(|f| f.buffer),
                Some(o.ofm.buffer),
            ]
        })
        .flatten()
        .filter(|&i| outer(i) && !l.constants.contains_key(&i) && p.regions[i] == REGION_FAST)
        .collect::<std::collections::BTreeSet<usize>>()
        .into_iter()
        .collect();
    let whole: u64 = touched
        .iter()
        .map(|&i| l.buffers[i].size.next_multiple_of(alloc::ALIGN))
        .sum();
    let busy = whole
        + (a..=b)
            .map(|t| in_use(l, p, t, &|i| outer(i) && !touched.contains(&i)))
            .max()
            .unwrap_or(0);
    let free = capacity.saturating_sub(busy);
    // The rings, estimated in the fast memory.
    let mut pe = p.clone();
    for &i in &inner {
        pe.regions[i] = REGION_FAST;
        pe.offsets[i] = 0;
    }
    let none = BTreeMap::new();
    // The streams, read in every band, are copied into the staging memory once when they
    // fit beside the rings.
    let stream_bytes: u64 = (a..=b)
        .filter_map(|j| plans[j].enc.as_ref())
        .map(|e| e.size().next_multiple_of(alloc::ALIGN))
        .sum();
    let copied: u64 = (a..=b)
        .filter_map(|j| plans[j].enc.as_ref())
        .map(|e| e.size())
        .sum();
    let staging = target.staging().map(|(region, _)| region);
    let copy_cycles: u64 = match staging {
        Some(region) => (a..=b)
            .filter_map(|j| plans[j].enc.as_ref())
            .map(|e| {
                let mut w = CommandWriter::default();
                weights::dma_commands(&mut w, 0, region, 0, e.size());
                target.estimate(&w.commands)
            })
            .sum(),
        None => 0,
    };
    // (operation, rows, IFM rows, padding, staged) -> (cycles, off-chip bytes).
    type Key = (usize, u32, u32, [u32; 4], bool);
    let mut cache: BTreeMap<Key, (u64, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for band in BAND_HEIGHTS {
        if band >= maps[maps.len() - 1].ho {
            break;
        }
        let Some((pieces, rings)) = schedule(&maps, band) else {
            continue;
        };
        let bytes: u64 = (a..b)
            .map(|j| {
                (u64::from(rings[j - a]) * row_bytes(&l.ops[j].ofm)).next_multiple_of(alloc::ALIGN)
            })
            .sum();
        if bytes > free {
            continue;
        }
        let staged = staging.is_some() && stream_bytes > 0 && bytes + stream_bytes <= free;
        let streams_in = match staging {
            Some(region) if staged => region,
            _ => REGION_READ_ONLY,
        };
        let c = Cascade {
            first: a,
            last: b,
            pieces: pieces.iter().map(|&(j, r0, r1)| (a + j, r0, r1)).collect(),
            rings,
            staged,
            choice: None,
        };
        let (mut cycles, mut offchip) = (0, if staged { copied } else { 0 });
        for &(j, r0, r1) in &c.pieces {
            let (s, at) = piece(l, &pe, &none, &c, (j, r0, r1), None);
            let key = (j, r1 - r0, s.ifm.shape.0, s.pad, staged);
            let (pc, pb) = *cache.entry(key).or_insert_with(|| {
                let block = piece_block(&plans[j].block, r1 - r0);
                let layout = plans[j].enc.as_ref().map(weights::Encoded::layout);
                estimate_traffic(target, &s, &block, layout.as_ref(), streams_in, &at)
            });
            cycles += pc;
            offchip += pb;
        }
        out.push(Band {
            cascade: c,
            cycles,
            offchip,
            dma: if staged { copy_cycles } else { 0 },
            bytes: if staged { bytes + stream_bytes } else { bytes },
        });
    }
    out
}

/// Cascading operations `a..=b`: its saving in the objective (cycles plus the spilled
/// intermediates' off-chip bytes, written and read once, priced as in S11) and of off-chip
/// bytes, and the cascade, when the objective drops. The band height is the cheapest; among
/// equally cheap ones the one whose rings take the fewest bytes.
fn evaluate(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    (a, b): (usize, usize),
    capacity: u64,
    spilled: &dyn Fn(usize) -> bool,
) -> Option<((u64, u64), Cascade)> {
    let saved: u64 = (a..b)
        .filter(|&j| spilled(j))
        .map(|j| 2 * l.buffers[l.ops[j].ofm.buffer].size)
        .sum();
    let before: u64 = (a..=b).map(|j| plans[j].cycles).sum();
    // The copies' time the operation before does not hide counts.
    let hidden = if a > 0 { plans[a - 1].cycles } else { 0 };
    let (cost, _, c) = bands(target, l, p, plans, (a, b), capacity)
        .into_iter()
        .map(|o| (o.cycles + o.dma.saturating_sub(hidden), o.bytes, o.cascade))
        .min_by_key(|o| (o.0, o.1))?;
    // Taken when the objective (S11: cycles plus the spilled bytes priced) drops.
    let uncascaded = objective::cost((before, saved));
    (cost < uncascaded).then(|| ((uncascaded - cost, saved), c))
}

/// The windows `(a, b)` of operations that may be cascaded given the feature maps placed as
/// `p` (without cascades): within runs of linked operations, holding a spilled intermediate.
pub(super) fn windows(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    chains: &[Option<chain::Operand>],
) -> Vec<(usize, usize)> {
    if target.fast_storage().is_none() {
        return Vec::new();
    }
    let spilled = spilled_at(l, p);
    let mut out = Vec::new();
    for (k, e) in runs(l, chains) {
        for b in k..=e {
            for a in k..b {
                if (a..b).any(&spilled) {
                    out.push((a, b));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fills_of, piece_block, reshapes_within, ring_spans};
    use super::{
        piece, piece_shapes, reshapes, schedule, windows, Cascade, InputRing, MemberCosting,
        PieceKey,
    };
    use crate::plan::estimate_traffic;
    use crate::weights::Layout;
    use npuc_backend::arch::Accelerator;
    use npuc_backend_lower::RowMap;
    use npuc_target::alloc;
    use npuc_target::arch_interface::REGION_READ_ONLY;
    use npuc_target::arch_interface::{BlockConfig, WeightStreams};
    use std::collections::BTreeMap;

    #[test]
    fn a_members_pieces_costed_once_per_shape_cost_what_each_piece_costs_in_full() {
        // MobileNetV2 224 (the corpus network whose feature maps spill from the 384 KB SRAM):
        // cascades of the windows that hold a spilled intermediate, in bands of 1, 3 and 8
        // rows; for every member with weights, its block candidates and their reshapes, SWD
        // and FWD layouts, streams in region 0 and the staging memory, and the first
        // operation's pieces through an input ring: `MemberCosting`'s cycles are the sum of
        // `estimate_traffic` over every piece (each distinct piece once, as `member_plans`
        // costed them before).
        let l = crate::test_models::lowered("large/tflite/mobilenet_v2_100_224");
        let target = crate::test_models::target(Accelerator::U85_256);
        let target = target.as_ref();
        let p = alloc::allocate(&l, target.fast_storage(), &[]);
        let chains = vec![None; l.ops.len()];
        let staging = target.staging().map(|(r, _)| r).unwrap();
        let mut compared = 0;
        for (a, b) in windows(target, &l, &p, &chains).into_iter().step_by(7) {
            let maps: Vec<RowMap> = (a..=b).map(|j| RowMap::of(&l.ops[j])).collect();
            for band in [1, 3, 8] {
                let Some((pieces, rings)) = schedule(&maps, band) else {
                    continue;
                };
                let c = Cascade {
                    first: a,
                    last: b,
                    pieces: pieces.iter().map(|&(j, r0, r1)| (a + j, r0, r1)).collect(),
                    rings,
                    staged: true,
                    choice: None,
                };
                for j in a..=b {
                    let op = &l.ops[j];
                    let Some(wt) = &op.weights else { continue };
                    let n = wt.values().len() as u64;
                    let layouts = [
                        Layout::new(WeightStreams::PerDecoder, false, [160, n / 3, n / 4]),
                        Layout::new(WeightStreams::Single, false, [160, n]),
                    ];
                    let cands = target.block_candidates(&super::super::geometry(op));
                    let ring = InputRing {
                        region: staging,
                        at: 0,
                        rows: 40,
                    };
                    for input in [None, Some(&ring)]
                        .into_iter()
                        .take(if j == a { 2 } else { 1 })
                    {
                        let none = BTreeMap::new();
                        let shapes = match input {
                            None => piece_shapes(&l, &p, &c, j),
                            Some(r) => c
                                .pieces
                                .iter()
                                .filter(|q| q.0 == j)
                                .map(|&q| {
                                    let (s, at) = piece(&l, &p, &none, &c, q, Some(r));
                                    ((q.2 - q.1, s.ifm.shape.0, s.pad), s, at, 1)
                                })
                                .collect::<Vec<(PieceKey, _, _, u64)>>(),
                        };
                        for region in [REGION_READ_ONLY, staging] {
                            let mut costing =
                                MemberCosting::new(target, &shapes, &cands[0], region);
                            for cand in cands.iter().step_by(3) {
                                let layout = &layouts
                                    [usize::from(cand.weight_streams == WeightStreams::Single)];
                                let layout = Layout {
                                    sparse: cand.sparse,
                                    ..layout.clone()
                                };
                                for block in
                                    std::iter::once(*cand).chain(reshapes(target, op, cand))
                                {
                                    // Every piece in full, the first of each shape standing
                                    // for the others ring-free (as before).
                                    let mut cache = BTreeMap::new();
                                    let mut full = 0;
                                    for &q in c.pieces.iter().filter(|q| q.0 == j) {
                                        let (s, at) = piece(&l, &p, &none, &c, q, input);
                                        let key = (q.2 - q.1, s.ifm.shape.0, s.pad);
                                        let key = (key, input.map(|_| q.1));
                                        full += *cache.entry(key).or_insert_with(|| {
                                            let b = piece_block(&block, q.2 - q.1);
                                            estimate_traffic(
                                                target,
                                                &s,
                                                &b,
                                                Some(&layout),
                                                region,
                                                &at,
                                            )
                                            .0
                                        });
                                    }
                                    assert_eq!(
                                        costing.cycles(&block, Some(&layout)),
                                        full,
                                        "{}..={} band {band} op {j} {block:?}",
                                        a,
                                        b
                                    );
                                    compared += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(compared > 500, "{compared} compared");
    }

    fn block(h: u32, mh: u32) -> BlockConfig {
        BlockConfig {
            ofm_block: (h, 16, 24),
            microblock: (mh, 4, 8),
            weight_streams: WeightStreams::PerDecoder,
            sparse: false,
            private: 0,
        }
    }

    #[test]
    fn an_input_ring_is_filled_with_each_row_once_before_the_piece_that_reads_it() {
        // MobileNetV2 224's first convolution (3x3, stride 2, top padding 1, 224 IFM rows)
        // in bands of 10 OFM rows: band r0..r1 reads IFM rows 2 r0 - 1 .. 2 r1 (RowMap).
        let windows: Vec<(u32, u32)> = (0..112)
            .step_by(10)
            .map(|r0: u32| {
                let r1 = (r0 + 10).min(112);
                ((2 * r0).saturating_sub(1), ((r1 - 1) * 2 + 3 - 1).min(224))
            })
            .collect();
        let ring = windows.iter().map(|w| w.1 - w.0).max().expect("a piece");
        let fills = fills_of(windows.iter().copied());
        // Every row once, in order, and all a piece reads is in the ring after its fill
        // (the rows its window shares with the one before are still there).
        let mut next = 0;
        for (w, f) in windows.iter().zip(&fills) {
            assert_eq!(f.0, next);
            assert_eq!(f.1, w.1);
            assert!(w.0 <= f.0 && w.1 - w.0 <= ring);
            next = f.1;
        }
        assert_eq!(next, 224);
        assert_eq!((ring, fills[1]), (21, (20, 40)));
        // A fill past the ring's end continues at its start: in a ring of 21 rows of 672
        // bytes, the second band's rows 20..40 go to slot 20 and slots 0..19.
        assert_eq!(
            ring_spans(21, (20, 40), 672),
            vec![(20 * 672, 20 * 672, 672), (21 * 672, 0, 19 * 672)]
        );
        assert_eq!(ring_spans(21, (0, 20), 672), vec![(0, 0, 20 * 672)]);
    }

    #[test]
    fn a_piece_shares_its_rows_evenly_among_its_block_rows() {
        // 8 rows with a 7-row block: two blocks of 4 rows, not 7 and 1.
        assert_eq!(piece_block(&block(7, 1), 8).ofm_block, (4, 16, 24));
        // 14 rows: two full blocks; 3 rows: one block of 3.
        assert_eq!(piece_block(&block(7, 1), 14).ofm_block.0, 7);
        assert_eq!(piece_block(&block(7, 1), 3).ofm_block.0, 3);
        // Heights stay multiples of the microblock's: 5 rows with 2-row microblocks and a
        // 4-row block take two blocks of 4 (3 rounded up), never above the block's height.
        assert_eq!(piece_block(&block(4, 2), 5).ofm_block.0, 4);
        assert_eq!(piece_block(&block(8, 2), 9).ofm_block.0, 6);
        // Only the height changes.
        let b = piece_block(&block(7, 1), 8);
        assert_eq!(
            (b.microblock, b.weight_streams),
            ((1, 4, 8), WeightStreams::PerDecoder)
        );
    }

    #[test]
    fn a_reshaped_block_keeps_its_depth_and_fits_where_the_block_fit() {
        // MobileNetV2 224's first convolution: 3x3 stride 2, 112x112 OFM, block 2x24x32 on
        // 2x2x8 microblocks.
        let b = BlockConfig {
            ofm_block: (2, 24, 32),
            microblock: (2, 2, 8),
            ..block(2, 2)
        };
        let shapes = reshapes_within(&b, (112, 112), (2, 2), (3, 3), (64, 64));
        let dims: Vec<(u32, u32)> = shapes
            .iter()
            .map(|s| (s.ofm_block.0, s.ofm_block.1))
            .collect();
        // Per height the widest with at most 48 positions and an IFM footprint of at most
        // 5 x 49 positions; the block itself is not repeated.
        assert_eq!(
            dims,
            [
                (4, 12),
                (6, 8),
                (8, 6),
                (10, 4),
                (12, 4),
                (14, 2),
                (16, 2),
                (18, 2),
                (20, 2),
                (22, 2),
                (24, 2)
            ]
        );
        for s in &shapes {
            let (h, w, d) = s.ofm_block;
            assert!(
                h * w <= 48 && (2 * h + 1) * (2 * w + 1) <= 5 * 49,
                "{h}x{w}"
            );
            assert_eq!((d, s.microblock, s.private), (32, (2, 2, 8), b.private));
        }
        // A 1x1 block on 1x1 microblocks has nothing else to become.
        let one = BlockConfig {
            ofm_block: (1, 1, 8),
            microblock: (1, 1, 8),
            ..b
        };
        assert!(reshapes_within(&one, (8, 8), (1, 1), (1, 1), (64, 64)).is_empty());
    }
}
