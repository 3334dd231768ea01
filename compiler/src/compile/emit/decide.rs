//! The scheduling passes, in order: chaining, placement, cascading, per-operation planning and
//! staging. Their result, [`Decisions`], is everything the writer ([`super::write`]) needs
//! besides the lowered operations; [`crate::compile::schedule::Schedule`] is its description.

use super::cascade::{self, Cascade};
use super::chain::{self, Operand};
use super::plan::{self, OpPlan};
use super::staging::{self, ConstCopy, IfmCopy, Staged};
use crate::arch_interface::Target;
use crate::compile::alloc::{self, Placement};
use crate::compile::lower::Lowered;
use crate::compile::{CompileError, REGION_ARENA, REGION_FAST};
use npuc_backend::writer::output::clip;
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
}

/// Runs the scheduling passes on `l` for `target`.
pub(crate) fn decide<'l>(
    target: &dyn Target,
    l: &'l Lowered,
) -> Result<Decisions<'l>, CompileError> {
    for op in &l.ops {
        if l.constants.contains_key(&op.ofm.buffer) {
            return Err(CompileError::Stream(format!(
                "{}: the output is a constant buffer",
                op.name
            )));
        }
        if clip(op.act, op.ofm.dtype.is_unsigned()).is_none() {
            return Err(CompileError::Stream(format!(
                "{}: activation bounds {:?} are neither 16-bit nor absent",
                op.name, op.act
            )));
        }
    }
    let chains = chain::find(l);
    let mut lowered = Cow::Borrowed(l);
    if chains.iter().any(Option::is_some) {
        chain::extend_lifetimes(lowered.to_mut(), &chains);
    }
    let skip: Vec<usize> = (0..lowered.ops.len())
        .filter(|&k| chains[k].is_some())
        .map(|k| lowered.ops[k].ofm.buffer)
        .collect();
    let mut placement = alloc::allocate(&lowered, target.fast_storage(), &skip);
    // Where an intermediate feature map does not fit the fast memory, runs of operations may
    // be cascaded (computed band by band through ring buffers) when the cost model says so.
    let spills = (0..lowered.buffers.len()).any(|i| {
        let b = &lowered.buffers[i];
        placement.regions[i] == REGION_ARENA && !b.is_input && !b.is_output
    });
    let (cascades, uncascaded_plans) = if spills && target.fast_storage().is_some() {
        let plans = plan::plan(target, &lowered, &placement)?;
        (
            cascade::choose(target, &lowered, &placement, &plans, &chains),
            Some(plans),
        )
    } else {
        (Vec::new(), None)
    };
    if !cascades.is_empty() {
        cascade::apply(lowered.to_mut(), &cascades);
        placement = alloc::allocate(&lowered, target.fast_storage(), &skip);
    }
    let mut in_cascade: Vec<Option<usize>> = vec![None; lowered.ops.len()];
    for (i, c) in cascades.iter().enumerate() {
        for slot in &mut in_cascade[c.first..=c.last] {
            *slot = Some(i);
        }
    }
    // Without cascades the operations and their placement are the ones just planned.
    let mut plans = match uncascaded_plans {
        Some(plans) if cascades.is_empty() => plans,
        _ => plan::plan(target, &lowered, &placement)?,
    };
    // A consumer runs with its producer's block and microblock.
    for k in 0..lowered.ops.len() {
        if chains[k].is_some() {
            plans[k + 1].block = plans[k].block;
        }
    }
    let stage = staging::stage(target, &lowered, &plans, &placement, &chains, &cascades);
    if let Some((region, _)) = target.staging() {
        if region == REGION_FAST {
            placement.fast_size = placement.fast_size.max(stage.end);
        } else {
            placement.arena_size = placement.arena_size.max(stage.end);
        }
    }
    let ops = plans
        .into_iter()
        .zip(stage.how)
        .zip(stage.copies)
        .zip(chains.into_iter().zip(in_cascade))
        .map(|(((plan, staged), copy), (chain, cascade))| OpDecision {
            plan,
            staged,
            copy,
            chain,
            cascade,
        })
        .collect();
    Ok(Decisions {
        lowered,
        placement,
        ops,
        cascades,
        consts: stage.consts,
    })
}
