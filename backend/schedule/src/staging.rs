//! Weight and scale staging: copying an operation's stream block from region 0 into the
//! staging memory ([`Target::staging`]) by DMA while the previous operation runs.
//!
//! The DMA for operation `k` is issued right after the kernel command of operation `k - 1`.
//! Its buffer must not overlap anything live at `k - 1` or `k` ([`Item`] `k-1..=k`); operation
//! `k - 2` may still be running when the DMA is issued, so when the buffer overlaps bytes live
//! at `k - 2` a KERNEL_WAIT 1 precedes the DMA (after a chained pair `k-2, k-1`, which runs
//! interleaved, the buffer avoids everything live from `k - 2` instead). An operation whose
//! whole block does not fit (or whose DMA the previous operation cannot hide) may instead run
//! as OFM-depth slices ([`slice`]), each slice's block copied into one of two buffers while
//! the previous slice runs (a KERNEL_WAIT 1 before each such DMA makes sure the slice that
//! last read that buffer has finished). Operation by operation, in order, the cheapest of
//! direct, whole and sliced (2, 3, 4, 6 or 8 slices of a multiple of the microblock depth,
//! the block depth clamped to the slice) is taken, staged when the cost model says it pays:
//! the operation's cycles with its streams in the staging memory, plus the part of the DMA's
//! cycles the previous operation does not hide, plus the priced off-chip bytes of both
//! (decision S11), must be below the objective of reading region 0; and when a buffer fits ([`alloc::fit`]) in the staging memory beside the feature maps.
//! Staging is for speed (nothing is staged optimising for size), so buffers may raise the
//! peak memory use above the feature maps' within the region's capacity when the memory mode
//! gives one (`arena_cache_size`); without one they stay below the feature maps' peak.

use super::plan::{estimate_traffic, OpPlan};
use super::regs::{locs, Consts};
use super::{cascade, chain, const_operands, lut, slice, weights};
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{Kernel, Lowered, NpuOp};
use npuc_target::alloc::{self, Item, Placement};
use npuc_target::arch_interface::REGION_READ_ONLY;
use npuc_target::arch_interface::{BlockConfig, Target};
use npuc_target::objective;
use npuc_target::parallel;
use std::collections::BTreeMap;

/// How an operation's streams are read.
#[derive(Clone)]
pub(super) enum Staged {
    /// From region 0.
    Direct,
    /// Copied whole into `region` at `at`; `wait`: the DMA waits for the kernel before the
    /// previous one (KERNEL_WAIT 1), whose buffers the copy overwrites.
    Whole { region: u8, at: u64, wait: bool },
    /// The first operation of a cascade ([`cascade`]): the streams of every operation of the
    /// cascade, each copied whole into `region` at its offset (operation, offset) by DMAs
    /// issued together, live until the cascade's last band.
    Cascade {
        region: u8,
        blocks: Vec<(usize, u64)>,
        wait: bool,
        /// The first operation's IFM read through a ring filled band by band (S23).
        input: Option<cascade::InputRing>,
    },
    /// In OFM-depth slices, each copied into `bufs[j % 2]` of `region` (double buffering).
    Sliced {
        region: u8,
        bufs: [u64; 2],
        slices: Vec<slice::Slice>,
        /// The slices' block (the operation's, its depth at most the slice depth).
        block: BlockConfig,
        /// The first slice's DMA waits for the kernel before the previous one.
        wait: bool,
    },
}

/// An operation's IFM buffer copied whole into the staging memory by a DMA issued with (before)
/// its streams' DMA: reading a narrow NHWC feature map from DRAM position by position is
/// latency-bound, the copy moves it in long bursts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IfmCopy {
    /// Where the buffer is: (region, offset).
    pub src: (u8, u64),
    /// Where the copy goes: (region, offset).
    pub dst: (u8, u64),
    pub size: u64,
    /// The DMA waits for the kernel before the previous one (KERNEL_WAIT 1).
    pub wait: bool,
}

/// One DMA at the start copying the constant feature maps (`consts`) and/or the lookup
/// tables (`tables`), laid out in that order in the read-only region, into `region` at `at`.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConstCopy {
    pub region: u8,
    pub at: u64,
    pub consts: bool,
    pub tables: bool,
}

/// The staging decisions.
pub(super) struct Staging {
    /// How each operation's streams are read.
    pub how: Vec<Staged>,
    /// Each operation's IFM copy, if any.
    pub copies: Vec<Option<IfmCopy>>,
    /// The copy of the constant feature maps and/or the lookup tables, if any.
    pub consts: Option<ConstCopy>,
    /// One past the last byte of the staging region a buffer uses.
    pub end: u64,
}

/// Slice counts tried when the whole block does not pay or does not fit.
const SLICE_COUNTS: [u32; 5] = [2, 3, 4, 6, 8];

/// The operations during which operation `k`'s staging buffers live, and when a buffer must
/// wait for the operation before the previous one (S2): the DMA filling it is issued after the
/// previous operation's kernel command, while the one before may still run, so the buffer lives
/// from the previous operation on and waits (KERNEL_WAIT 1) for the one before when it overlaps
/// what that one uses. After a chain the pair runs interleaved: the buffer then avoids both.
#[derive(Debug, Clone, Copy)]
pub(super) struct StagingSpan {
    k: usize,
    after_chain: bool,
}

impl StagingSpan {
    /// Operation `k`'s span; `after_chain`: operations `k - 2` and `k - 1` are a chained pair.
    pub(super) fn new(k: usize, after_chain: bool) -> StagingSpan {
        StagingSpan { k, after_chain }
    }

    /// A buffer of `size` bytes live over the span.
    pub(super) fn item(&self, size: u64) -> Item {
        let first = if self.after_chain {
            self.k.saturating_sub(2)
        } else {
            self.k.saturating_sub(1)
        };
        Item {
            size,
            start: first,
            end: self.k,
        }
    }

    /// Whether a buffer of `size` bytes at `off` overlaps what operation `k - 2` uses among
    /// `occupied`, so that its DMA waits for that operation.
    pub(super) fn waits(&self, occupied: &[(Item, u64)], off: u64, size: u64) -> bool {
        let k = self.k;
        !self.after_chain
            && k >= 2
            && occupied.iter().any(|(o, at)| {
                o.start <= k - 2
                    && k - 2 <= o.end
                    && *at < off + size.next_multiple_of(alloc::ALIGN)
                    && off < at + o.size.next_multiple_of(alloc::ALIGN)
            })
    }
}

/// The slice depths tried for `op` planned with `block` (one per count of [`SLICE_COUNTS`]
/// giving a new depth below the OFM's), each with its block (OFM block depth clamped).
fn slice_candidates(op: &NpuOp, block: &BlockConfig) -> Vec<(u32, BlockConfig)> {
    let od = op.ofm.shape.2;
    let md = block.microblock.2.max(1);
    let mut out: Vec<(u32, BlockConfig)> = Vec::new();
    for n in SLICE_COUNTS {
        let depth = od.div_ceil(n).next_multiple_of(md);
        if depth >= od || out.iter().any(|&(d, _)| d == depth) {
            continue;
        }
        let clamped = BlockConfig {
            ofm_block: (
                block.ofm_block.0,
                block.ofm_block.1,
                block.ofm_block.2.min(depth),
            ),
            ..*block
        };
        out.push((depth, clamped));
    }
    out
}

/// The slice candidates of one operation: (block, slices; `None` when they cannot be encoded).
pub(super) type SliceCands = Vec<(BlockConfig, Option<Vec<slice::Slice>>)>;

/// The slice candidates of every operation planned as `plans` that may be sliced (not in a
/// cascade, not chained, with streams), their SWD stream lengths estimated from the plan's
/// streams ([`slice::Lengths::Estimated`]; [`count_slices`] counts the ones a staging takes),
/// on every thread available: each slice depth of each operation on its own, the largest
/// weight sets first (a large operation's depths are the longest jobs).
pub(super) fn slice_all(
    target: &dyn Target,
    l: &Lowered,
    plans: &[&OpPlan],
    chains: &[Option<chain::Operand>],
    cascades: &[cascade::Cascade],
) -> Vec<SliceCands> {
    let in_cascade: Vec<bool> = cascade::members(cascades, l.ops.len());
    let jobs: Vec<(usize, u32, BlockConfig)> = l
        .ops
        .iter()
        .enumerate()
        .filter(|&(k, op)| {
            !in_cascade[k] && plans[k].enc.is_some() && slice::sliceable(op) && chains[k].is_none()
        })
        .flat_map(|(k, op)| {
            slice_candidates(op, &plans[k].block)
                .into_iter()
                .map(move |(depth, block)| (k, depth, block))
        })
        .collect();
    let weight = |&(k, _, _): &(usize, u32, BlockConfig)| weight_count(&l.ops[k]);
    let done = parallel::map_heaviest_first(&jobs, weight, |_, &(k, depth, block)| {
        let lengths = match &plans[k].enc {
            Some(whole) => slice::Lengths::Estimated(whole),
            None => slice::Lengths::Counted,
        };
        (
            block,
            slice::slices(target, &l.ops[k], &block, depth, lengths),
        )
    });
    let mut out: Vec<SliceCands> = (0..l.ops.len()).map(|_| Vec::new()).collect();
    for (&(k, _, _), cand) in jobs.iter().zip(done) {
        out[k].push(cand);
    }
    out
}

/// How many weights `op` has: what its slice candidates take to count (the heaviest first).
fn weight_count(op: &NpuOp) -> u64 {
    op.weights.as_ref().map_or(0, |w| w.values().len() as u64)
}

/// The slice candidates (operation, index in its [`SliceCands`]) `s` stages operations in.
pub(super) fn sliced_taken<'a>(
    s: &'a Staging,
    sliced: &'a [SliceCands],
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let depth = |slices: &[slice::Slice]| slices.first().map(|f| f.op.ofm.shape.2);
    s.how.iter().enumerate().filter_map(move |(k, how)| {
        let Staged::Sliced { slices, .. } = how else {
            return None;
        };
        let i = sliced
            .get(k)?
            .iter()
            .position(|(_, c)| c.as_deref().is_some_and(|c| depth(c) == depth(slices)))?;
        Some((k, i))
    })
}

/// Slice candidates counted ([`count_slices`]): (operation, index) and the slices, `None`
/// where they cannot be encoded.
pub(super) type Counted = Vec<((usize, usize), Option<Vec<slice::Slice>>)>;

/// The slice candidates `taken` (operation, index; from [`sliced_taken`]) of `sliced`
/// counted exactly, on every thread available: each with its slices, or `None` where they
/// cannot be encoded ([`keep_counted`] puts them in place).
pub(super) fn count_slices(
    target: &dyn Target,
    l: &Lowered,
    sliced: &[SliceCands],
    taken: &std::collections::BTreeSet<(usize, usize)>,
) -> Counted {
    let jobs: Vec<(usize, usize, BlockConfig, u32)> = taken
        .iter()
        .filter_map(|&(k, i)| {
            let (block, slices) = sliced.get(k)?.get(i)?;
            Some((k, i, *block, slices.as_ref()?.first()?.op.ofm.shape.2))
        })
        .collect();
    let weight = |&(k, _, _, _): &(usize, usize, BlockConfig, u32)| weight_count(&l.ops[k]);
    let counted = parallel::map_heaviest_first(&jobs, weight, |_, &(k, _, block, depth)| {
        slice::slices(target, &l.ops[k], &block, depth, slice::Lengths::Counted)
    });
    jobs.iter()
        .map(|&(k, i, _, _)| (k, i))
        .zip(counted)
        .collect()
}

/// Keeps the slice candidates `counted` ([`count_slices`]) in place of theirs and drops
/// every other candidate of [`slice_all`]'s: what stays is costed exactly (decision S24).
pub(super) fn keep_counted(sliced: &mut [SliceCands], counted: Counted) {
    for cands in sliced.iter_mut() {
        for (_, c) in cands.iter_mut() {
            *c = None;
        }
    }
    for ((k, i), c) in counted {
        sliced[k][i].1 = c;
    }
}

/// The feature maps in the staging `region` as placed items, and what buffers may fill
/// ([`stage`]'s high-water mark). Staging is for speed (`--optimise performance`; nothing
/// is staged optimising for size): buffers may use the whole staging memory, above the
/// feature maps' peak, when the memory mode gives its size (`arena_cache_size`, `capacity`);
/// without one they stay below the feature maps' high-water mark.
pub(super) fn occupancy(
    l: &Lowered,
    p: &Placement,
    region: u8,
    capacity: u64,
) -> (Vec<(Item, u64)>, u64) {
    let occupied: Vec<(Item, u64)> = (0..l.buffers.len())
        .filter(|&i| p.regions[i] == region)
        .map(|i| (alloc::buffer_item(l, i), p.offsets[i]))
        .collect();
    let fm_size = if region == npuc_target::arch_interface::REGION_FAST {
        p.fast_size
    } else {
        p.arena_size
    };
    let hwm = if capacity == u64::MAX {
        fm_size
    } else {
        capacity
    };
    (occupied, hwm)
}

/// The cycles and off-chip bytes of a DMA copying `size` bytes from `from` into the staging
/// `region`, costed as a copy between offsets 0 of the two regions.
pub(super) fn copy_traffic(
    target: &dyn Target,
    region: u8,
) -> impl Fn(u8, u64) -> (u64, u64) + Sync + '_ {
    move |from, size| {
        let mut w = CommandWriter::default();
        weights::copy_commands(&mut w, (from, 0), (region, 0), size);
        target.estimate_traffic(&w.commands)
    }
}

/// How each operation's streams are staged, and the size the staging region needs, chosen
/// operation by operation in order (the greedy of S2, S7, S9); `sliced`: [`slice_all`]'s.
pub(super) fn stage(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    chains: &[Option<chain::Operand>],
    cascades: &[cascade::Cascade],
    sliced: &[SliceCands],
) -> Staging {
    let mut out: Vec<Staged> = (0..l.ops.len()).map(|_| Staged::Direct).collect();
    let mut copies: Vec<Option<IfmCopy>> = vec![None; l.ops.len()];
    let Some((region, capacity)) = target.staging() else {
        return Staging {
            how: out,
            copies,
            consts: None,
            end: 0,
        };
    };
    let (mut occupied, hwm) = occupancy(l, p, region, capacity);
    let none = BTreeMap::new();
    // A stream block's DMA from region 0: (cycles, off-chip bytes).
    let dma_traffic = |size: u64| {
        let mut w = CommandWriter::default();
        weights::dma_commands(&mut w, 0, region, 0, size);
        target.estimate_traffic(&w.commands)
    };
    let copy_traffic = copy_traffic(target, region);
    let mut in_cascade: Vec<Option<&cascade::Cascade>> = vec![None; l.ops.len()];
    for c in cascades {
        for slot in &mut in_cascade[c.first..=c.last] {
            *slot = Some(c);
        }
    }
    // The constant feature maps and the lookup tables, copied together at the start into a
    // buffer that lives throughout, when the cycles the operations reading them and the
    // tables' loads save exceed the copy's.
    let consts = stage_consts(
        target,
        l,
        plans,
        p,
        region,
        hwm,
        &mut occupied,
        &copy_traffic,
    );
    let mut prev_cycles = 0u64;
    for (k, (op, plan)) in l.ops.iter().zip(plans).enumerate() {
        // The streams of a cascade's operations are read in every band: they are copied
        // together, after the operation before the cascade, into buffers that live until
        // its last band (when they fit; else read from region 0). The DMA of the operation
        // after a cascade is hidden only by the cascade's last band (counted as 0).
        if let Some(c) = in_cascade[k] {
            if k == c.first && c.staged {
                if let Some(how) =
                    stage_cascade(target, l, p, plans, c, chains, &mut occupied, hwm, region)
                {
                    out[k] = how;
                }
            }
            prev_cycles = 0;
            continue;
        }
        // The DMA is issued after the previous operation's kernel command, when the one
        // before may still run: its buffer lives from the previous operation on, and waits
        // (KERNEL_WAIT 1) for the one before when it overlaps what that one uses. After a
        // chain the pair runs interleaved: the buffer then avoids both.
        let span = StagingSpan::new(k, k >= 2 && chains[k - 2].is_some());
        let item = |size: u64| span.item(size);
        let second = |size: u64| Item {
            size,
            start: k,
            end: k,
        };
        let waits = |occupied: &[(Item, u64)], off: u64, size: u64| span.waits(occupied, off, size);
        let mut at = locs(op, p, l, &none);
        // The IFM copied first, when that pays with the streams read as planned. `base` is
        // the objective of the choice so far, `copied` the copy's DMA (cycles, off-chip bytes).
        let mut base = objective::cost((plan.cycles, plan.offchip));
        let mut direct = plan.cycles;
        let mut copied = (0, 0);
        let buf = op.ifm.buffer;
        let copyable = matches!(
            op.kernel,
            Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_)
        ) && chains[k].is_none()
            && !(k > 0 && chains[k - 1].is_some())
            && !l.constants.contains_key(&buf)
            && p.regions[buf] != region
            && p.regions[buf] != alloc::CHAINED;
        if copyable {
            let size = l.buffers[buf].size;
            if let Some(off) = alloc::fit(&occupied, item(size), hwm) {
                let mut moved = locs(op, p, l, &none);
                moved.ifm = (region, off + op.ifm.view.offset);
                let layout = plan.enc.as_ref().map(weights::Encoded::layout);
                let (c, cb) = estimate_traffic(
                    target,
                    op,
                    &plan.block,
                    layout.as_ref(),
                    REGION_READ_ONLY,
                    &moved,
                );
                let (d, db) = copy_traffic(p.regions[buf], size);
                let cost = objective::cost((c + d.saturating_sub(prev_cycles), cb + db));
                if cost < base {
                    base = cost;
                    direct = c;
                    copied = (d, db);
                    at = moved;
                    copies[k] = Some(IfmCopy {
                        src: (p.regions[buf], p.offsets[buf]),
                        dst: (region, off),
                        size,
                        wait: waits(&occupied, off, size),
                    });
                    occupied.push((item(size), off));
                }
            }
        }
        let Some(enc) = &plan.enc else {
            prev_cycles = direct;
            continue;
        };
        // The streams' DMA follows the copy's on the DMA channel.
        let exposed = |dma: u64| (copied.0 + dma).saturating_sub(prev_cycles);
        let (staged, staged_bytes) =
            estimate_traffic(target, op, &plan.block, Some(&enc.layout()), region, &at);
        let (dma, dma_bytes) = dma_traffic(enc.size());
        let cost = objective::cost((staged + exposed(dma), staged_bytes + dma_bytes + copied.1));
        let mut best = (base, Staged::Direct, direct);
        if cost < best.0 {
            if let Some(off) = alloc::fit(&occupied, item(enc.size()), hwm) {
                let wait = waits(&occupied, off, enc.size());
                best = (
                    cost,
                    Staged::Whole {
                        region,
                        at: off,
                        wait,
                    },
                    staged,
                );
            }
        }
        // Slices: only the first slice's DMA waits for the previous operation; slice j + 1's
        // DMA runs alongside slice j.
        if slice::sliceable(op) && chains[k].is_none() {
            // Candidates that pay: (cost, buffer size, last slice's cycles, slices, block).
            let mut cands = Vec::new();
            for (block, slices) in &sliced[k] {
                let block = *block;
                let Some(slices) = slices else {
                    continue;
                };
                let mut cycles = 0u64;
                let mut bytes = copied.1;
                let mut last = None;
                for s in slices {
                    let mut at = locs(&s.op, p, l, &none);
                    let (c, cb) = match &copies[k] {
                        Some(c) => {
                            at.ifm = (c.dst.0, c.dst.1 + s.op.ifm.view.offset);
                            let layout = s.enc.layout();
                            estimate_traffic(target, &s.op, &block, Some(&layout), region, &at)
                        }
                        None => s.staged_traffic(target, &block, region, &at),
                    };
                    let (d, db) = dma_traffic(s.enc.size());
                    cycles += c + last.map_or_else(|| exposed(d), |l| d.saturating_sub(l));
                    bytes += cb + db;
                    last = Some(c);
                }
                let cost = objective::cost((cycles, bytes));
                let last = last.unwrap_or(prev_cycles);
                let size = slices.iter().map(|s| s.enc.size()).max().unwrap_or(0);
                if cost < base {
                    cands.push((cost, size, last, slices, block));
                }
            }
            // The second buffer is first written after KERNEL_WAIT 1 behind slice 0: the
            // operations before have finished.
            let place = |size: u64, cap: u64| {
                let a = alloc::fit(&occupied, item(size), cap)?;
                let mut with_a = occupied.clone();
                with_a.push((item(size), a));
                Some([a, alloc::fit(&with_a, second(size), cap)?])
            };
            // The cheapest that fits below the high-water mark.
            let pick = cands
                .iter()
                .enumerate()
                .filter(|(_, c)| c.0 < best.0)
                .filter_map(|(i, c)| place(c.1, hwm).map(|b| (c.0, i, b)))
                .min_by_key(|&(cost, i, _)| (cost, i))
                .map(|(_, i, b)| (i, b));
            if let Some((i, bufs)) = pick {
                let (cost, size, last, slices, block) = cands.swap_remove(i);
                let wait = waits(&occupied, bufs[0], size);
                best = (
                    cost,
                    Staged::Sliced {
                        region,
                        bufs,
                        slices: slices.clone(),
                        block,
                        wait,
                    },
                    last,
                );
            }
        }
        let (_, how, last) = best;
        match &how {
            Staged::Direct | Staged::Cascade { .. } => {}
            Staged::Whole { at, .. } => occupied.push((item(enc.size()), *at)),
            Staged::Sliced { bufs, slices, .. } => {
                let size = slices.iter().map(|s| s.enc.size()).max().unwrap_or(0);
                occupied.push((item(size), bufs[0]));
                occupied.push((second(size), bufs[1]));
            }
        }
        prev_cycles = last;
        out[k] = how;
    }
    // One past the last byte a staging buffer uses (the region must be at least that big).
    let end = occupied
        .iter()
        .map(|(it, off)| off + it.size.next_multiple_of(alloc::ALIGN))
        .max()
        .unwrap_or(0);
    Staging {
        how: out,
        copies,
        consts,
        end,
    }
}

/// Whether and where the constant feature maps and the lookup tables are copied: each part
/// when what it saves exceeds what it adds to the copy (cycles and priced off-chip bytes, S11).
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_consts(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    region: u8,
    cap: u64,
    occupied: &mut Vec<(Item, u64)>,
    copy_traffic: &dyn Fn(u8, u64) -> (u64, u64),
) -> Option<ConstCopy> {
    let bufs = const_operands(l);
    let tables = lut::tables(l);
    let const_size: u64 = bufs
        .iter()
        .map(|b| (l.constants[b].len() as u64).next_multiple_of(16))
        .sum();
    let table_size: u64 = tables
        .iter()
        .map(|t| (t.len() as u64).next_multiple_of(16))
        .sum();
    // The operations reading a constant, each estimated with its constants in the copy.
    let moved: Consts = bufs.iter().map(|&b| (b, (region, 0))).collect();
    let mut const_saved = 0u64;
    for (op, plan) in l.ops.iter().zip(plans) {
        let reads = std::iter::once(&op.ifm)
            .chain(op.ifm2.as_ref())
            .any(|f| l.constants.contains_key(&f.buffer));
        if !reads || matches!(op.kernel, Kernel::Dma(_)) {
            continue;
        }
        let at = locs(op, p, l, &moved);
        let layout = plan.enc.as_ref().map(weights::Encoded::layout);
        let moved = estimate_traffic(
            target,
            op,
            &plan.block,
            layout.as_ref(),
            REGION_READ_ONLY,
            &at,
        );
        const_saved +=
            objective::cost((plan.cycles, plan.offchip)).saturating_sub(objective::cost(moved));
    }
    // Each table is loaded into the LUT RAM at least once, before the first operation using
    // it, from the copy instead of region 0; the previous operation's kernel hides the load's
    // first cycles.
    let mut table_saved = 0u64;
    let mut seen: Vec<&[u8]> = Vec::new();
    for (&k, t) in &l.luts {
        if seen.contains(&t.data.as_slice()) {
            continue;
        }
        seen.push(&t.data);
        let bytes = t.data.len() as u64;
        let hidden = k.checked_sub(1).map_or(0, |j| plans[j].cycles);
        let exposed = |from: u8| lut::load_cycles(target, from, bytes).saturating_sub(hidden);
        // Its first load reads the table off-chip, as the copy does (the bytes cancel out).
        table_saved +=
            exposed(REGION_READ_ONLY).saturating_sub(exposed(region)) + objective::cost((0, bytes));
    }
    let copy = |size: u64| {
        if size == 0 {
            0
        } else {
            objective::cost(copy_traffic(REGION_READ_ONLY, size))
        }
    };
    let consts = const_size > 0 && const_saved > copy(const_size);
    let base = if consts { const_size } else { 0 };
    let tables = table_size > 0 && table_saved > copy(base + table_size) - copy(base);
    if !consts && !tables {
        return None;
    }
    let item = Item {
        size: if consts { const_size } else { 0 } + if tables { table_size } else { 0 },
        start: 0,
        end: l.ops.len().saturating_sub(1),
    };
    let at = alloc::fit(occupied, item, cap)?;
    occupied.push((item, at));
    Some(ConstCopy {
        region,
        at,
        consts,
        tables,
    })
}

/// Buffers for the streams of every operation of cascade `c` (live from the DMAs' issue
/// after the operation before it to its last band), when they all fit below `cap`; then,
/// when its first operation reads an off-chip IFM and a ring for it fits too, the ring
/// ([`cascade::InputRing`], S23) when it pays: the first operation's pieces reading the ring,
/// plus the first band's fill (the later fills run alongside the band before's other
/// operations) and every fill's off-chip bytes, against its pieces reading the IFM in place.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_cascade(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    c: &cascade::Cascade,
    chains: &[Option<chain::Operand>],
    occupied: &mut Vec<(Item, u64)>,
    cap: u64,
    region: u8,
) -> Option<Staged> {
    let k = c.first;
    let after_chain = k >= 2 && chains[k - 2].is_some();
    let start = if after_chain {
        k.saturating_sub(2)
    } else {
        k.saturating_sub(1)
    };
    let mut placed = occupied.clone();
    let mut blocks = Vec::new();
    for (j, plan) in plans.iter().enumerate().take(c.last + 1).skip(c.first) {
        let Some(enc) = &plan.enc else {
            continue;
        };
        let item = Item {
            size: enc.size(),
            start,
            end: c.last,
        };
        let at = alloc::fit(&placed, item, cap)?;
        placed.push((item, at));
        blocks.push((j, at));
    }
    let input = input_ring(target, l, p, plans, c, &mut placed, (start, cap), region);
    let mut buffers: Vec<(u64, u64)> = blocks
        .iter()
        .map(|&(j, off)| (off, plans[j].enc.as_ref().map_or(0, |e| e.size())))
        .collect();
    buffers.extend(input.map(|r| (r.at, cascade::input_ring_bytes(l, c, r.rows))));
    let wait = !after_chain
        && k >= 2
        && buffers.iter().any(|&(off, size)| {
            occupied.iter().any(|(o, at)| {
                o.start <= k - 2
                    && k - 2 <= o.end
                    && *at < off + size.next_multiple_of(alloc::ALIGN)
                    && off < at + o.size.next_multiple_of(alloc::ALIGN)
            })
        });
    *occupied = placed;
    Some(Staged::Cascade {
        region,
        blocks,
        wait,
        input,
    })
}

/// The input ring of cascade `c` ([`stage_cascade`]), placed among `placed` (live from
/// `start` to the cascade's last band, below `cap`) when it fits and pays.
#[allow(clippy::too_many_arguments)]
fn input_ring(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    plans: &[OpPlan],
    c: &cascade::Cascade,
    placed: &mut Vec<(Item, u64)>,
    (start, cap): (usize, u64),
    region: u8,
) -> Option<cascade::InputRing> {
    let rows = cascade::input_ring_rows(target, l, p, c, region)?;
    let item = Item {
        size: cascade::input_ring_bytes(l, c, rows),
        start,
        end: c.last,
    };
    let at = alloc::fit(placed, item, cap)?;
    let ring = cascade::InputRing { region, at, rows };
    let plan = (&plans[c.first], region);
    let direct = objective::cost(cascade::first_traffic(target, l, p, c, plan, None));
    let with = cascade::ring_objective(target, l, p, c, plan, &ring);
    (with < direct).then(|| {
        placed.push((item, at));
        ring
    })
}

#[cfg(test)]
mod tests {
    use super::{count_slices, keep_counted, slice_all, Staged};
    use crate::decide::{decide, u85};
    use crate::plan::{self, OpPlan};
    use crate::slice::{self, Lengths};
    use npuc_backend::arch::Accelerator;
    use npuc_target::alloc;
    use std::collections::BTreeSet;

    /// The weight stream lengths of each slice.
    fn lens(slices: &[slice::Slice]) -> Vec<Vec<u64>> {
        slices.iter().map(|s| s.enc.stream_lens.clone()).collect()
    }

    #[test]
    fn estimated_slices_are_counted_only_where_taken() {
        // DS-CNN 16x8: every operation but the first may be sliced. Taking every other
        // operation's first slice depth: those are counted exactly (what counting that depth
        // afresh gives), every other candidate is dropped.
        let l = crate::test_models::lowered("tflite/ds_cnn_16x8");
        let target = crate::test_models::target(Accelerator::U85_256);
        let target = target.as_ref();
        let p = alloc::allocate(&l, target.fast_storage(), &[]);
        let plans = plan::plan(target, &l, &p, None).unwrap();
        let refs: Vec<&OpPlan> = plans.iter().collect();
        let chains = vec![None; l.ops.len()];
        let mut sliced = slice_all(target, &l, &refs, &chains, &[]);
        let taken: BTreeSet<(usize, usize)> = (0..sliced.len())
            .filter(|&k| k % 2 == 1 && !sliced[k].is_empty())
            .map(|k| (k, 0))
            .collect();
        assert!(
            taken.len() >= 4,
            "{} operations with slice candidates",
            taken.len()
        );
        let depth = |c: &Option<Vec<slice::Slice>>| c.as_ref().unwrap()[0].op.ofm.shape.2;
        let depths: Vec<(usize, u32)> = taken
            .iter()
            .map(|&(k, i)| (k, depth(&sliced[k][i].1)))
            .collect();
        let counted = count_slices(target, &l, &sliced, &taken);
        keep_counted(&mut sliced, counted);
        let mut estimates_differ = false;
        for (k, cands) in sliced.iter().enumerate() {
            for (i, (block, c)) in cands.iter().enumerate() {
                if !taken.contains(&(k, i)) {
                    assert!(c.is_none(), "operation {k} candidate {i} kept");
                    continue;
                }
                let (_, d) = depths.iter().find(|(j, _)| *j == k).unwrap();
                let counted =
                    slice::slices(target, &l.ops[k], block, *d, Lengths::Counted).unwrap();
                let kept = c.as_ref().unwrap();
                assert_eq!(lens(kept), lens(&counted), "operation {k}");
                let whole = plans[k].enc.as_ref().unwrap();
                let estimated =
                    slice::slices(target, &l.ops[k], block, *d, Lengths::Estimated(whole)).unwrap();
                estimates_differ |= lens(&estimated) != lens(&counted);
            }
        }
        // (Else the test would not tell counting from estimating.)
        assert!(estimates_differ);
    }

    #[test]
    fn every_slice_a_schedule_stages_is_as_long_as_its_stream() {
        // Networks whose schedules stage operations in slices: the streams written are the
        // lengths the schedule was costed with (the estimate never reaches a schedule).
        let mut sliced_ops = 0;
        for (name, accelerator) in [
            ("tflite/ds_cnn_16x8", Accelerator::U85_128),
            ("tflite/ds_cnn_16x8", Accelerator::U85_256),
            ("tflite/ds_cnn", Accelerator::U85_128),
            (
                "tflite/mobilenet_v1_050_128_clustered",
                Accelerator::U85_128,
            ),
        ] {
            let l = crate::test_models::lowered(name);
            let target = crate::test_models::target(accelerator);
            let npuc_target::arch_interface::Decided {
                decisions: mut d,
                alternatives,
            } = decide(target.as_ref(), &l).unwrap();
            let mut alternatives = alternatives.into_iter();
            loop {
                for o in &u85(&l, &d).unwrap().ops {
                    if let Staged::Sliced { slices, .. } = o.staged {
                        for s in slices {
                            let made: Vec<u64> =
                                s.enc.streams.iter().map(|w| w.len() as u64).collect();
                            assert_eq!(made, s.enc.stream_lens, "{name} {accelerator:?}");
                        }
                        sliced_ops += 1;
                    }
                }
                let Some(alt) = alternatives.next() else {
                    break;
                };
                d.ops = alt.ops;
            }
        }
        assert!(sliced_ops >= 3, "{sliced_ops} operations staged in slices");
    }
}
