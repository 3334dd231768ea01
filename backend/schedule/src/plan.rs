//! Per-operation choices by the target's cost model: microblock, OFM block and weight order.
//!
//! The target offers the valid candidates ([`Target::block_candidates`], preferred first); each
//! is written out as the operation's complete register state (feature maps where the
//! placement put them, weights read from region 0 with the lengths of the preferred
//! candidate's encoding; for FWD candidates the target's FWD length estimate) and estimated
//! ([`Target::estimate_traffic`]); the cheapest by the objective (cycles plus priced off-chip
//! bytes, decision S11) wins, ties going to the earlier candidate (where the feature maps are
//! in SRAM, the one with the fewest off-chip bytes among those within 1/16 of the fewest
//! cycles, decision S10). The winner's streams are then counted exactly (their lengths, as
//! the encoder would make them, without making them: [`count`]): an FWD winner is kept only
//! if, counted, it still beats the cheapest SWD candidate; a stream that cannot be encoded
//! falls back to the preferred candidate. The plans' streams are made once the scheduling
//! passes have chosen among them ([`super::weights::encode_counted`]).

use super::geometry;
use super::regs::{block_commands, locs, op_commands, Locs};
use super::weights::{count, Encoded, Layout};
use npuc_backend::isa::{ActivationFunction, Command};
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{Kernel, Lowered, NpuOp};
use npuc_target::alloc::Placement;
use npuc_target::arch_interface::{BlockConfig, Registers, Target, WeightStreams};
use npuc_target::arch_interface::{TargetError, REGION_READ_ONLY};
use npuc_target::objective;
use npuc_target::parallel;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// What is decided about one operation before emission.
#[derive(Clone)]
pub(super) struct OpPlan {
    /// Microblock, OFM block, weight order.
    pub block: BlockConfig,
    /// Its scale stream and its weight streams' lengths, the streams themselves once chosen
    /// (`None`: the operation has no weight stream).
    pub enc: Option<Encoded>,
    /// Estimated cycles with the streams read from region 0.
    pub cycles: u64,
    /// Its off-chip (DRAM, flash) bytes with the streams read from region 0.
    pub offchip: u64,
    /// When an FWD candidate won: the cheapest SWD candidate's plan, which the global
    /// optimisation (decision S13) may take instead (staging the FWD stream may cost more
    /// than reading the SWD streams in place).
    pub alt: Option<Box<OpPlan>>,
    /// Where there is a staging memory: the cheapest SWD candidate with its streams read from
    /// it, when that is another block than the plan's and `alt`'s (decision S14: a block a
    /// whole OFM deep fetches the scales once, which staging repays and reading the streams
    /// in place may not). The global optimisation may take it, staged.
    pub staged: Option<Box<OpPlan>>,
    /// Where there is a staging memory: per microblock that neither the plan's block nor
    /// `alt`'s nor `staged`'s has, its best SWD candidate by the objective with the streams
    /// staged, not encoded (decision S20): the block, its (cycles, off-chip bytes) with the
    /// streams read in place and staged, and the streams' estimated bytes (the preferred
    /// candidate's lengths). The global optimisation may take one, and then encodes it.
    pub micro: Vec<Micro>,
}

/// A microblock's best candidate ([`OpPlan::micro`]).
#[derive(Clone, Debug)]
pub(super) struct Micro {
    pub block: BlockConfig,
    pub direct: (u64, u64),
    pub staged: (u64, u64),
    pub bytes: u64,
}

/// Estimated cycles of `op` with `block`, its streams laid out as `layout` in `region`, and
/// its off-chip (DRAM, flash) bytes.
pub(super) fn estimate_traffic(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
    layout: Option<&Layout>,
    region: u8,
    at: &Locs,
) -> (u64, u64) {
    target.estimate_traffic(&full_commands(op, block, layout, region, at))
}

/// The compute cycles ([`Target::estimate_compute`]) of `op` with `block`, its streams laid
/// out as `layout` in `region`.
pub(super) fn estimate_compute(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
    layout: Option<&Layout>,
    region: u8,
    at: &Locs,
) -> u64 {
    target.estimate_compute(&full_commands(op, block, layout, region, at))
}

/// `op`'s complete commands with `block`, its streams laid out as `layout` in `region` and its
/// feature maps at `at`, ending with the kernel command (without the activation table:
/// [`NO_TABLE`]).
fn full_commands(
    op: &NpuOp,
    block: &BlockConfig,
    layout: Option<&Layout>,
    region: u8,
    at: &Locs,
) -> Vec<Command> {
    let mut w = CommandWriter::default();
    let (cmd, _) = op_commands(
        &mut w,
        op,
        block,
        layout.map(|e| (e, region, 0)),
        at,
        NO_TABLE,
    );
    w.op(cmd);
    w.commands
}

/// The cost model of one operation's block candidates ([`estimate_traffic`]'s figures), with
/// the registers that no candidate changes written once: each candidate writes only its
/// own ([`block_commands`]: streams, weight order, OFM block, microblock) after them.
pub(super) struct Costing<'a> {
    target: &'a dyn Target,
    op: &'a NpuOp,
    at: &'a Locs,
    /// The register state [`op_commands`] with the first candidate and no streams leave,
    /// without the kernel command ([`Target::registers_after`]), and the kernel command;
    /// `None` for a RESIZE (its step registers depend on the block: costed in full).
    base: Option<(Box<Registers>, Command)>,
    /// The writer each candidate's own registers are written into, reused (its allocations
    /// are).
    scratch: RefCell<CommandWriter>,
}

impl<'a> Costing<'a> {
    /// The registers of `op` at `at` that do not depend on the candidate (`block` is any).
    pub(super) fn new(
        target: &'a dyn Target,
        op: &'a NpuOp,
        block: &BlockConfig,
        at: &'a Locs,
    ) -> Costing<'a> {
        let base = (!matches!(op.kernel, Kernel::Resize(_))).then(|| {
            let mut w = CommandWriter::default();
            let (cmd, _) = op_commands(&mut w, op, block, None, at, NO_TABLE);
            (target.registers_after(&w.commands), cmd)
        });
        Costing {
            target,
            op,
            at,
            base,
            scratch: RefCell::default(),
        }
    }

    /// The writer with `block`'s own registers (streams as `streams`) and the kernel command
    /// written, after the base's; `None` for a RESIZE.
    fn candidate(
        &self,
        block: &BlockConfig,
        streams: Option<(&Layout, u8, u64)>,
    ) -> Option<(std::cell::RefMut<'_, CommandWriter>, &Registers)> {
        let (regs, cmd) = self.base.as_ref()?;
        let mut w = self.scratch.borrow_mut();
        w.restart_from(&[]);
        block_commands(&mut w, self.op, block, streams);
        w.op(*cmd);
        Some((w, regs.as_ref()))
    }

    /// [`estimate_traffic`] of the operation with `block`, its streams laid out as `layout`
    /// in `region`: the same figures.
    pub(super) fn traffic(
        &self,
        block: &BlockConfig,
        layout: Option<&Layout>,
        region: u8,
    ) -> (u64, u64) {
        match self.candidate(block, layout.map(|e| (e, region, 0))) {
            Some((w, regs)) => self.target.estimate_traffic_after(regs, &w.commands),
            None => estimate_traffic(self.target, self.op, block, layout, region, self.at),
        }
    }

    /// [`Costing::traffic`] with the streams read in place (region 0), and with them read
    /// from `to` (the staging memory) at the same addresses.
    pub(super) fn traffic_restreamed(
        &self,
        block: &BlockConfig,
        layout: Option<&Layout>,
        to: u8,
    ) -> [(u64, u64); 2] {
        match self.candidate(block, layout.map(|e| (e, REGION_READ_ONLY, 0))) {
            Some((w, regs)) => self
                .target
                .estimate_traffic_restreamed_after(regs, &w.commands, to),
            None => [REGION_READ_ONLY, to].map(|region| self.traffic(block, layout, region)),
        }
    }

    /// The compute cycles ([`Target::estimate_compute`]) of the operation with `block`, its
    /// streams laid out as `layout` in `region`: the figure its full commands give.
    pub(super) fn compute(&self, block: &BlockConfig, layout: Option<&Layout>, region: u8) -> u64 {
        match self.candidate(block, layout.map(|e| (e, region, 0))) {
            Some((w, regs)) => self.target.estimate_compute_after(regs, &w.commands),
            None => estimate_compute(self.target, self.op, block, layout, region, self.at),
        }
    }
}

/// No activation table: estimates take the operation without its LUT.
const NO_TABLE: (ActivationFunction, u8) = (ActivationFunction::LutNone, 0);

/// Plans every operation of `l` with the feature maps at `p`; an operation that `earlier`
/// planned already, the same operation with its feature maps at the same places, keeps that
/// plan (planning is a function of the operation and its locations alone).
pub(super) fn plan(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    earlier: Option<&Planned>,
) -> Result<Vec<OpPlan>, TargetError> {
    let none = BTreeMap::new();
    // Operations are planned independently: on every thread available, the heaviest first.
    parallel::map_heaviest_first(&l.ops, plan_weight, |k, op| {
        if let Some(e) = earlier {
            if let (Some((op0, at0)), Some(plan0)) = (e.keys.get(k), e.plans.get(k)) {
                if op0 == op && *at0 == locs(op, p, l, &none) {
                    return Ok(plan0.clone());
                }
            }
        }
        plan_op(target, l, p, op)
    })
    .into_iter()
    .collect()
}

/// A planning pass's operations with their locations, and its plans, for a later pass
/// ([`plan`]'s `earlier`).
pub(super) struct Planned {
    keys: Vec<(NpuOp, Locs)>,
    plans: Vec<OpPlan>,
}

impl Planned {
    /// `plans` of the operations of `l` with the feature maps at `p`.
    pub(super) fn new(l: &Lowered, p: &Placement, plans: Vec<OpPlan>) -> Planned {
        let none = BTreeMap::new();
        let keys = l
            .ops
            .iter()
            .map(|op| (op.clone(), locs(op, p, l, &none)))
            .collect();
        Planned { keys, plans }
    }

    /// The plans.
    pub(super) fn into_plans(self) -> Vec<OpPlan> {
        self.plans
    }
}

/// The work of planning `op` ([`plan_op`]), roughly: its weights, which every block
/// candidate that is counted reads, and its OFM elements, which every candidate's cost
/// model walks in blocks.
fn plan_weight(op: &NpuOp) -> u64 {
    let (h, w, d) = op.ofm.shape;
    let weights = op.weights.as_ref().map_or(0, |wt| wt.values().len() as u64);
    4 * weights + u64::from(h) * u64::from(w) * u64::from(d) / 64
}

/// Plans one operation of `l` ([`plan`]).
fn plan_op(
    target: &dyn Target,
    l: &Lowered,
    p: &Placement,
    op: &NpuOp,
) -> Result<OpPlan, TargetError> {
    let none = BTreeMap::new();
    {
        let geom = geometry(op);
        let at = locs(op, p, l, &none);
        let cands = target.block_candidates(&geom);
        let first = cands[0];
        if matches!(op.kernel, Kernel::Dma(_)) {
            // A memory-to-memory copy: no block, no streams.
            return Ok(OpPlan {
                block: first,
                enc: None,
                cycles: 0,
                offchip: 0,
                alt: None,
                staged: None,
                micro: Vec::new(),
            });
        }
        let costing = Costing::new(target, op, &first, &at);
        let enc0 = count(target, op, &geom, &first)?;
        let swd = enc0.as_ref().map(Encoded::layout);
        // FWD candidates: the scale stream and one FWD stream of the estimated length.
        let fwd = match (&enc0, &op.weights) {
            (Some(e), Some(wt)) => target
                .fwd_length_estimate(wt)
                .map(|len| Layout::new(WeightStreams::Single, false, [e.scales.len() as u64, len])),
            _ => None,
        };
        // The cheapest candidate, and the cheapest SWD one (the fallback when the FWD
        // stream turns out longer than estimated).
        let staging = match (target.staging(), &swd) {
            (Some((region, _)), Some(_)) => Some(region),
            _ => None,
        };
        let mut costs = Vec::with_capacity(cands.len());
        // The SWD candidates with their streams in the staging memory, where there is one:
        // costed with the same streams read in place.
        let mut staged_costs = Vec::new();
        for c in &cands {
            let layout = match c.weight_streams {
                WeightStreams::Single => match &fwd {
                    Some(l) => Some(l),
                    None => continue,
                },
                _ => swd.as_ref(),
            };
            // (The preferred candidate is dense; a sparse one reads the same lengths, FWD ones
            // the FWD estimate.)
            let layout = layout.map(|l| Layout {
                sparse: c.sparse,
                ..l.clone()
            });
            let cost = match staging {
                Some(region) if c.weight_streams != WeightStreams::Single => {
                    let [direct, staged] = costing.traffic_restreamed(c, layout.as_ref(), region);
                    staged_costs.push((staged, *c, direct));
                    direct
                }
                _ => costing.traffic(c, layout.as_ref(), REGION_READ_ONLY),
            };
            costs.push((cost, *c));
        }
        // With no fast memory of its own (S1, S2: the arena in SRAM), nothing is cascaded or
        // copied and streams are rarely staged, so the constants are read in place by every
        // block that needs them (P13): the fewest off-chip bytes within a slack (S10). With
        // one, the objective prices each off-chip byte (S11); staging may still remove them.
        let slack = target.fast_storage().is_none();
        let best = pick(slack, costs.iter().copied()).unwrap_or(((u64::MAX, u64::MAX), first));
        let best_swd = pick(
            slack,
            costs
                .iter()
                .copied()
                .filter(|(_, c)| c.weight_streams != WeightStreams::Single),
        )
        .unwrap_or(((u64::MAX, u64::MAX), first));
        let mut chosen = None;
        if best.1 != best_swd.1 {
            if let Ok(e) = count(target, op, &geom, &best.1) {
                let layout = e.as_ref().map(Encoded::layout);
                let cost = costing.traffic(&best.1, layout.as_ref(), REGION_READ_ONLY);
                if pick(slack, [best_swd, (cost, best.1)].into_iter()).map(|b| b.1) == Some(best.1)
                {
                    chosen = Some((best.1, e, cost));
                }
            }
        }
        // The cheapest SWD candidate, counted: the fallback, or the alternative to an FWD winner.
        let swd_plan = || {
            let (block, enc) = if best_swd.1 == first {
                (first, enc0.clone())
            } else {
                match count(target, op, &geom, &best_swd.1) {
                    Ok(e) => (best_swd.1, e),
                    Err(_) => (first, enc0.clone()),
                }
            };
            let layout = enc.as_ref().map(Encoded::layout);
            let cost = costing.traffic(&block, layout.as_ref(), REGION_READ_ONLY);
            (block, enc, cost)
        };
        let mut alt = None;
        let (block, enc, (cycles, offchip)) = match chosen {
            Some(c) => {
                let (block, enc, (cycles, offchip)) = swd_plan();
                alt = Some(Box::new(OpPlan {
                    block,
                    enc,
                    cycles,
                    offchip,
                    alt: None,
                    staged: None,
                    micro: Vec::new(),
                }));
                c
            }
            None => swd_plan(),
        };
        // The cheapest SWD candidate with its streams in the staging memory (S14).
        let staged = match (target.staging(), &swd) {
            (Some(_), Some(_)) => {
                let taken = [Some(block), alt.as_ref().map(|a| a.block)];
                pick(false, staged_costs.iter().map(|&(s, c, _)| (s, c)))
                    .filter(|(_, c)| !taken.contains(&Some(*c)))
                    .and_then(|(_, c)| match count(target, op, &geom, &c) {
                        Ok(e) => Some((c, e)),
                        Err(_) => None,
                    })
                    .map(|(c, e)| {
                        let layout = e.as_ref().map(Encoded::layout);
                        let (cycles, offchip) =
                            costing.traffic(&c, layout.as_ref(), REGION_READ_ONLY);
                        Box::new(OpPlan {
                            block: c,
                            enc: e,
                            cycles,
                            offchip,
                            alt: None,
                            staged: None,
                            micro: Vec::new(),
                        })
                    })
            }
            _ => None,
        };
        // Per other microblock, its best candidate staged (S20).
        let bytes = swd.as_ref().map_or(0, |l| {
            l.parts.last().map_or(0, |&(at, len)| at + u64::from(len))
        });
        let mut micro: Vec<Micro> = Vec::new();
        let has = [
            Some(block),
            alt.as_ref().map(|a| a.block),
            staged.as_ref().map(|s| s.block),
        ];
        for &(s, c, direct) in &staged_costs {
            if has.iter().flatten().any(|b| b.microblock == c.microblock) {
                continue;
            }
            let cost = |x: (u64, u64)| objective::cost(x);
            match micro
                .iter_mut()
                .find(|m| m.block.microblock == c.microblock)
            {
                Some(m) if cost(s) < cost(m.staged) => {
                    *m = Micro {
                        block: c,
                        direct,
                        staged: s,
                        bytes,
                    }
                }
                Some(_) => {}
                None => micro.push(Micro {
                    block: c,
                    direct,
                    staged: s,
                    bytes,
                }),
            }
        }
        Ok(OpPlan {
            block,
            enc,
            cycles,
            offchip,
            alt,
            staged,
            micro,
        })
    }
}

/// Cycles a candidate may cost beyond the fastest one, as a fraction `1 / SLACK` of the
/// fastest's, when it moves fewer off-chip bytes (decision S10).
const SLACK: u64 = 16;

/// The candidate to take from `(cycles, off-chip bytes)` estimates: the fewest cycles, the
/// earliest among equals; with `slack`, the one with the fewest off-chip bytes among those
/// within `1 / SLACK` of the fewest cycles, then the fewest cycles, then the earliest.
fn pick<T: Copy>(
    slack: bool,
    costs: impl Iterator<Item = ((u64, u64), T)> + Clone,
) -> Option<((u64, u64), T)> {
    let fastest = costs.clone().map(|((c, _), _)| c).min()?;
    let limit = fastest.saturating_add(fastest / SLACK);
    let key = |(c, b): (u64, u64)| {
        if slack {
            (b, c)
        } else {
            (objective::cost((c, b)), 0)
        }
    };
    let mut best: Option<((u64, u64), T)> = None;
    for (cost, c) in costs.filter(|((c, _), _)| !slack || *c <= limit) {
        if best.is_none_or(|(b, _)| key(cost) < key(b)) {
            best = Some((cost, c));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::geometry;
    use super::super::regs::locs;
    use super::super::weights::{counted, Layout};
    use super::{estimate_traffic, pick, Costing};
    use npuc_backend::arch::Accelerator;
    use npuc_backend_lower::Kernel;
    use npuc_target::alloc;
    use npuc_target::arch_interface::WeightStreams;
    use npuc_target::arch_interface::{REGION_ARENA, REGION_READ_ONLY};
    use std::collections::BTreeMap;

    #[test]
    fn a_candidate_costed_on_the_shared_registers_costs_what_its_full_register_state_costs() {
        // Every block candidate of every operation of these corpus models, with its streams
        // read in place and (where there is one) from the staging memory, dense, sparse and
        // FWD: the cycles and off-chip bytes of `Costing` are `estimate_traffic`'s, and so
        // are both of `traffic_restreamed`'s (one cost, the streams moved).
        let models = [
            "resnet8",
            "ds_cnn_16x8",
            "mobilenet_tiny",
            "transformer_encoder",
            "unet_small",
            "efficientnet_se",
            "resize_bilinear",
            "fc_16x8",
        ];
        let mut compared = 0;
        for name in models {
            let l = crate::test_models::lowered(&format!("tflite/{name}"));
            for accelerator in [Accelerator::U85_128, Accelerator::U85_2048] {
                let target = crate::test_models::target(accelerator);
                let target = target.as_ref();
                let p = alloc::allocate(&l, target.fast_storage(), &[]);
                for op in &l.ops {
                    if matches!(op.kernel, Kernel::Dma(_)) {
                        continue;
                    }
                    let geom = geometry(op);
                    let at = locs(op, &p, &l, &BTreeMap::new());
                    let cands = target.block_candidates(&geom);
                    let costing = Costing::new(target, op, &cands[cands.len() - 1], &at);
                    let swd = counted(target, std::slice::from_ref(op), &geom, &cands[0])
                        .unwrap()
                        .and_then(|e| e.first().map(super::Encoded::layout));
                    // The scale stream and one stream of the weights' length.
                    let fwd = swd.as_ref().map(|l| {
                        let lens = l.parts.iter().map(|&(_, len)| u64::from(len));
                        let weights = lens.clone().skip(1).sum::<u64>();
                        Layout::new(WeightStreams::Single, false, lens.take(1).chain([weights]))
                    });
                    let mut regions = vec![REGION_READ_ONLY];
                    regions.extend(target.staging().map(|(r, _)| r));
                    for c in &cands {
                        for layout in [None, swd.as_ref(), fwd.as_ref()] {
                            for sparse in [false, true] {
                                let layout = layout.map(|l| Layout {
                                    sparse,
                                    ..l.clone()
                                });
                                // Both figures from one cost, the streams moved to each
                                // region (the arena's too): each what the full commands cost.
                                for &to in regions.iter().chain(&[REGION_ARENA]) {
                                    let full = |region| {
                                        estimate_traffic(
                                            target,
                                            op,
                                            c,
                                            layout.as_ref(),
                                            region,
                                            &at,
                                        )
                                    };
                                    assert_eq!(
                                        costing.traffic_restreamed(c, layout.as_ref(), to),
                                        [full(REGION_READ_ONLY), full(to)],
                                        "{name} {accelerator:?} {}: {c:?} streams in {to}",
                                        op.name
                                    );
                                }
                                for &region in &regions {
                                    assert_eq!(
                                        costing.traffic(c, layout.as_ref(), region),
                                        estimate_traffic(
                                            target,
                                            op,
                                            c,
                                            layout.as_ref(),
                                            region,
                                            &at
                                        ),
                                        "{name} {accelerator:?} {}: {c:?}",
                                        op.name
                                    );
                                    compared += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(compared > 1000, "{compared} candidates compared");
    }

    #[test]
    fn off_chip_bytes_are_priced_or_win_within_a_sixteenth_of_the_fewest_cycles() {
        let costs = [
            ((1600, 9000), 'a'),
            ((1700, 1000), 'b'),
            ((1699, 2000), 'c'),
        ];
        // With a fast memory of its own: cycles + priced bytes (S11): 2700 < 3699 < 10600.
        assert_eq!(pick(false, costs.into_iter()).unwrap().1, 'b');
        // 1700 <= 1600 + 100: the fewest bytes.
        assert_eq!(pick(true, costs.into_iter()).unwrap().1, 'b');
        let fast = [((1000, 10), 'x'), ((5000, 0), 'y')];
        assert_eq!(pick(false, fast.into_iter()).unwrap().1, 'x');
        // 1701 is beyond the slack: the next fewest bytes within it.
        let costs = [
            ((1600, 9000), 'a'),
            ((1701, 1000), 'b'),
            ((1699, 2000), 'c'),
        ];
        assert_eq!(pick(true, costs.into_iter()).unwrap().1, 'c');
        // Equal bytes: fewer cycles, then the earlier candidate.
        let costs = [((1650, 10), 'a'), ((1600, 10), 'b'), ((1600, 10), 'c')];
        assert_eq!(pick(true, costs.into_iter()).unwrap().1, 'b');
        assert_eq!(pick::<char>(true, std::iter::empty()), None);
    }
}
