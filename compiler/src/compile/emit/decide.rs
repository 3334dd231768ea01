//! The scheduling passes, in order: chaining, placement, cascading, per-operation planning and
//! staging. Their result, [`Decisions`], is everything the writer ([`super::write`]) needs
//! besides the lowered operations; [`crate::compile::schedule::Schedule`] is its description.

use super::cascade::{self, Cascade};
use super::chain::{self, Operand};
use super::optimise::{self, Choice};
use super::plan::{self, OpPlan};
use super::staging::{self, ConstCopy, IfmCopy, Staged, Staging};
use super::weights::{encode_counted, Encoded};
use crate::arch_interface::{LoweredView, Target};
use crate::compile::alloc::{self, Placement};
use crate::compile::lower::Lowered;
use crate::compile::{CompileError, REGION_ARENA, REGION_FAST};
use std::borrow::Cow;

/// What the scheduling passes decided for a lowered graph (opaque outside the crate: what a
/// target's writer, [`crate::arch_interface::Target::write`], reads).
pub struct Decisions<'l> {
    /// The lowered graph as scheduled: buffer lifetimes extended for chains, cascade
    /// intermediates shrunk to their rings (a copy only when they change it).
    pub(super) lowered: Cow<'l, Lowered>,
    /// Where the feature maps live (staging buffers included in the region sizes).
    pub(super) placement: Placement,
    /// What was decided for each operation, in execution order (one per `lowered.ops`).
    pub(super) ops: Vec<OpDecision>,
    /// The cascades, in order.
    pub(super) cascades: Vec<Cascade>,
    /// The copy of the constant feature maps and/or lookup tables at the start, if any.
    pub(super) consts: Option<ConstCopy>,
    /// The global optimisation's schedules (decision S13) where they differ from the
    /// greedy's (`ops`): with the constant copy the greedy's rule takes, and without it
    /// where it took one (S14); `emit` keeps the one whose stream the cost model prefers.
    pub(super) alternatives: Vec<Alternative>,
}

/// Another schedule of the same operations: per-operation decisions, the placement with
/// its staging buffers, and the constant copy.
pub(crate) struct Alternative {
    pub ops: Vec<OpDecision>,
    pub placement: Placement,
    pub consts: Option<ConstCopy>,
}

/// What was decided for one operation.
pub(crate) struct OpDecision {
    /// Its block choice and encoded streams.
    pub plan: OpPlan,
    /// How its streams are read.
    pub staged: Staged,
    /// Its IFM copied into the staging memory, if it is.
    pub copy: Option<IfmCopy>,
    /// `Some(operand)` when its OFM is chained into the next operation's `operand`.
    pub chain: Option<Operand>,
    /// The cascade it belongs to (index into [`Decisions::cascades`]).
    pub cascade: Option<usize>,
    /// The option taken among the operation's staging options, and the next best (S13).
    pub choice: Option<Choice>,
}

/// Runs the scheduling passes on `l` for `target`.
pub(crate) fn decide<'l>(
    target: &dyn Target,
    l: &'l Lowered,
) -> Result<Decisions<'l>, CompileError> {
    for k in 0..l.op_count() {
        let op = l.op(k);
        if l.buffer(op.ofm).constant {
            return Err(CompileError::Stream(format!(
                "{}: the output is a constant buffer",
                op.name
            )));
        }
        super::check_activation(&l.ops[k])?;
    }
    let mut chains = chain::find(l);
    let place = |chains: &[Option<Operand>]| {
        let mut lowered = Cow::Borrowed(l);
        if chains.iter().any(Option::is_some) {
            chain::extend_lifetimes(lowered.to_mut(), chains);
        }
        let skip: Vec<usize> = (0..lowered.op_count())
            .filter(|&k| chains[k].is_some())
            .map(|k| lowered.op(k).ofm)
            .collect();
        let placement = alloc::allocate(lowered.as_ref(), target.fast_storage(), &skip);
        (lowered, skip, placement)
    };
    let (mut lowered, mut skip, mut placement) = place(&chains);
    // A chain whose producer reads a spilled IFM is dropped (S18): the producer then may be
    // cascaded with the operations before it, and its IFM kept in a ring instead of DRAM.
    let mut dropped = false;
    for (k, chain) in chains.iter_mut().enumerate() {
        let b = lowered.op(k).ifm;
        if chain.is_some()
            && placement.regions[b] == REGION_ARENA
            && !lowered.buffer(b).is_input
            && target.fast_storage().is_some()
        {
            *chain = None;
            dropped = true;
        }
    }
    if dropped {
        (lowered, skip, placement) = place(&chains);
    }
    // Where an intermediate feature map does not fit the fast memory, runs of operations may
    // be cascaded (computed band by band through ring buffers) when the cost model says so.
    let spills = (0..lowered.buffer_count()).any(|i| {
        let b = lowered.buffer(i);
        placement.regions[i] == REGION_ARENA && !b.is_input && !b.is_output
    });
    let (cascades, uncascaded_plans) = if spills && target.fast_storage().is_some() {
        let plans = plan::plan(target, &lowered, &placement, None)?;
        // The global program's (S20), else the greedy's.
        let cascades = optimise::cascades(target, &lowered, &plans, &placement, &chains)
            .unwrap_or_else(|| cascade::choose(target, &lowered, &placement, &plans, &chains));
        (
            cascades,
            Some(plan::Planned::new(&lowered, &placement, plans)),
        )
    } else {
        (Vec::new(), None)
    };
    if !cascades.is_empty() {
        cascade::apply(lowered.to_mut(), &cascades);
        placement = alloc::allocate(lowered.as_ref(), target.fast_storage(), &skip);
    }
    let mut in_cascade: Vec<Option<usize>> = vec![None; lowered.op_count()];
    for (i, c) in cascades.iter().enumerate() {
        for slot in &mut in_cascade[c.first..=c.last] {
            *slot = Some(i);
        }
    }
    // Without cascades the operations and their placement are the ones just planned.
    let mut plans = match uncascaded_plans {
        Some(planned) if cascades.is_empty() => planned.into_plans(),
        // Operations the cascades leave as they were, where they were, keep their plans.
        earlier => plan::plan(target, &lowered, &placement, earlier.as_ref())?,
    };
    // A cascade's operations run band by band: each with the block that suits its bands
    // (S16).
    cascade::member_plans(target, &lowered, &placement, &cascades, &mut plans);
    // A consumer runs with its producer's block and microblock.
    for k in 0..lowered.op_count() {
        if chains[k].is_some() {
            plans[k + 1].block = plans[k].block;
        }
    }
    let Some((region, _)) = target.staging() else {
        let stage = staging::stage(
            target,
            &lowered,
            &plans,
            &placement,
            &chains,
            &cascades,
            &[],
        );
        let mut ops = decisions(plans, stage, &chains, &in_cascade, None);
        encode_chosen(target, &lowered, &mut ops)?;
        return Ok(Decisions {
            lowered,
            placement,
            ops,
            cascades,
            consts: None,
            alternatives: Vec::new(),
        });
    };
    let plan_refs: Vec<&OpPlan> = plans.iter().collect();
    let sliced = staging::slice_all(target, &lowered, &plan_refs, &chains, &cascades);
    let opts = optimise::options(
        target, &lowered, &plans, &placement, &chains, &cascades, &sliced,
    );
    let stage = staging::stage(
        target, &lowered, &plans, &placement, &chains, &cascades, &sliced,
    );
    let lp = |consts: bool| {
        opts.as_ref().and_then(|o| {
            optimise::optimise(
                target, &lowered, &plans, &placement, &chains, &cascades, o, consts,
            )
        })
    };
    let grow = |p: &mut Placement, end: u64| {
        if region == REGION_FAST {
            p.fast_size = p.fast_size.max(end);
        } else {
            p.arena_size = p.arena_size.max(end);
        }
    };
    let mut alternatives = Vec::new();
    let with_consts = lp(true);
    // Where the program's schedule copies the constants, the same program without the copy,
    // whose bytes the streams may then take (S14).
    let without = with_consts
        .as_ref()
        .filter(|(s, _, _, _)| s.consts.is_some())
        .and_then(|_| lp(false));
    for (lp, alts, choices, lp_plans) in with_consts.into_iter().chain(without) {
        if alts.iter().all(|&a| a == 0) && same_staging(&lp, &stage) {
            continue;
        }
        let mut p = placement.clone();
        grow(&mut p, lp.end);
        alternatives.push(Alternative {
            consts: lp.consts,
            ops: decisions(lp_plans, lp, &chains, &in_cascade, Some(choices)),
            placement: p,
        });
    }
    let choices = opts.as_ref().map(|o| optimise::greedy_choices(o, &stage));
    grow(&mut placement, stage.end);
    let consts = stage.consts;
    let mut ops = decisions(plans, stage, &chains, &in_cascade, choices);
    encode_chosen(target, &lowered, &mut ops)?;
    for a in &mut alternatives {
        encode_chosen(target, &lowered, &mut a.ops)?;
    }
    Ok(Decisions {
        lowered,
        placement,
        ops,
        cascades,
        consts,
        alternatives,
    })
}

/// The candidates were costed by their streams' lengths: makes the streams of the ones
/// chosen, each operation's plan or, for one staged in slices, its slices' (the plan's are
/// not written then). On every thread available: the operations are independent.
fn encode_chosen(
    target: &dyn Target,
    l: &Lowered,
    ops: &mut [OpDecision],
) -> Result<(), CompileError> {
    let made = plan::par_map(ops, |k, o| -> Result<Option<Encoded>, CompileError> {
        match (&o.staged, &o.plan.enc) {
            (Staged::Sliced { .. }, _) | (_, None) => Ok(None),
            (_, Some(e)) if e.streams.len() == e.stream_lens.len() => Ok(None),
            (_, Some(e)) => {
                let mut e = e.clone();
                encode_counted(target, &l.ops[k], &mut e)?;
                Ok(Some(e))
            }
        }
    });
    for (o, e) in ops.iter_mut().zip(made) {
        if let Some(e) = e? {
            o.plan.enc = Some(e);
        }
        if let Staged::Sliced { slices, .. } = &mut o.staged {
            super::slice::encode_streams(target, slices)?;
        }
    }
    Ok(())
}

/// The per-operation decisions from the plans, the staging and the chains and cascades.
fn decisions(
    plans: Vec<OpPlan>,
    stage: Staging,
    chains: &[Option<Operand>],
    in_cascade: &[Option<usize>],
    choices: Option<Vec<Option<Choice>>>,
) -> Vec<OpDecision> {
    let mut choices = choices.unwrap_or_default().into_iter();
    plans
        .into_iter()
        .zip(stage.how)
        .zip(stage.copies)
        .zip(chains.iter().zip(in_cascade))
        .map(|(((plan, staged), copy), (chain, cascade))| OpDecision {
            plan,
            staged,
            copy,
            chain: *chain,
            cascade: *cascade,
            choice: choices.next().flatten(),
        })
        .collect()
}

/// Whether two stagings copy and stage every operation's streams the same way.
fn same_staging(a: &Staging, b: &Staging) -> bool {
    a.consts.is_some() == b.consts.is_some()
        && a.copies == b.copies
        && a.how.len() == b.how.len()
        && a.how.iter().zip(&b.how).all(|(x, y)| match (x, y) {
            (Staged::Direct, Staged::Direct) => true,
            (
                Staged::Whole { region, at, wait },
                Staged::Whole {
                    region: r,
                    at: o,
                    wait: w,
                },
            ) => region == r && at == o && wait == w,
            (
                Staged::Sliced {
                    bufs, slices, wait, ..
                },
                Staged::Sliced {
                    bufs: b,
                    slices: s,
                    wait: w,
                    ..
                },
            ) => bufs == b && slices.len() == s.len() && wait == w,
            (
                Staged::Cascade { blocks, wait, .. },
                Staged::Cascade {
                    blocks: b, wait: w, ..
                },
            ) => blocks == b && wait == w,
            _ => false,
        })
}
