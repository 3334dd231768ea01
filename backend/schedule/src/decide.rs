//! The scheduling passes, in order: chaining, placement, cascading, per-operation planning and
//! staging. Their result, the neutral [`Decisions`] (decision A3) with the U85's own plans
//! inside (`U85Plan` per operation, the cascades for the whole program), is everything the
//! writer ([`super::write`]) needs besides the lowered operations;
//! the driver's `Schedule` (what `npuc explain` prints) is its description.

use super::cascade::{self, Cascade};
use super::chain::{self, Operand};
use super::optimise::{self, Choice};
use super::plan::{self, OpPlan};
use super::staging::{self, ConstCopy, IfmCopy, Staged, Staging};
use super::weights::{encode_counted, Encoded};
use npuc_backend_lower::{Lowered, NpuOp};
use npuc_target::alloc::{self, Placement};
use npuc_target::arch_interface::{
    self as arch, Alternative, Decided, Decisions, LoweredView, Target, TargetError,
};
use npuc_target::arch_interface::{REGION_ARENA, REGION_FAST};
use npuc_target::parallel;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// The U85's own plan of one operation ([`arch::OpDecision::plan`]).
pub(super) struct U85Plan {
    /// Its block choice and encoded streams.
    pub plan: OpPlan,
    /// How its streams are read.
    pub staged: Staged,
}

/// The U85's reading of [`Decisions`]: its own program and plans, and the neutral choices.
pub(super) struct U85Decisions<'a> {
    /// The program as scheduled.
    pub lowered: &'a Lowered,
    pub placement: &'a Placement,
    pub ops: Vec<U85OpRef<'a>>,
    pub cascades: &'a [Cascade],
    pub consts: Option<arch::ConstCopy>,
}

/// One operation of [`U85Decisions`].
pub(super) struct U85OpRef<'a> {
    pub plan: &'a OpPlan,
    pub staged: &'a Staged,
    pub copy: Option<arch::IfmCopy>,
    pub chain: Option<arch::ChainOperand>,
    /// The cascade it belongs to (index into [`U85Decisions::cascades`]).
    pub cascade: Option<usize>,
}

/// Reads decisions made for a U85 program (`lowered`, made by the U85's lowering) back into
/// the U85's own types (decision A3: the target downcasts what it made).
pub(super) fn u85<'a>(
    lowered: &'a dyn LoweredView,
    d: &'a Decisions,
) -> Result<U85Decisions<'a>, TargetError> {
    let foreign = |what: &str| TargetError::Unsupported(format!("{what} are not the Ethos-U85's"));
    let l: &Lowered = d
        .program(lowered)
        .as_any()
        .downcast_ref()
        .ok_or_else(|| foreign("the lowered program"))?;
    let cascades: &Vec<Cascade> = d
        .private
        .downcast_ref()
        .ok_or_else(|| foreign("the decisions"))?;
    let ops = d
        .ops
        .iter()
        .map(|o| {
            let u: &U85Plan = o.plan.downcast_ref()?;
            Some(U85OpRef {
                plan: &u.plan,
                staged: &u.staged,
                copy: o.ifm_copy,
                chain: o.chain,
                cascade: o.cascade.as_ref().map(|c| c.group),
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| foreign("the operations' plans"))?;
    Ok(U85Decisions {
        lowered: l,
        placement: &d.placement,
        ops,
        cascades,
        consts: d.const_copy,
    })
}

/// What was decided for one operation, in the U85 passes' own types.
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

/// An operation's best slice candidate is counted exactly, taken or not, when its estimated
/// objective is within 1/`CLOSE_SLICES` of the operation's best option's (decision S24).
const CLOSE_SLICES: u64 = 32;

/// Runs the scheduling passes on `l` for `target`.
pub(crate) fn decide(target: &dyn Target, l: &Lowered) -> Result<Decided, TargetError> {
    for k in 0..l.op_count() {
        let op = l.op(k);
        if l.buffer(op.ofm).constant {
            return Err(TargetError::Stream(format!(
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
        return Ok(Decided {
            decisions: Decisions {
                ops: neutral(ops, &cascades),
                scheduled: scheduled(lowered),
                placement,
                const_copy: None,
                private: Box::new(cascades),
            },
            alternatives: Vec::new(),
        });
    };
    let plan_refs: Vec<&OpPlan> = plans.iter().collect();
    // Slice candidates are ranked by estimated stream lengths; the ones the greedy or the
    // global program (with or without the constant copy) then take, and each operation's
    // best one if close to its best option, are counted exactly, the others dropped, and
    // both choose again among exact figures only (decision S24).
    let mut sliced = staging::slice_all(target, &lowered, &plan_refs, &chains, &cascades);
    // The probe's programs and the final ones are often the same program: each solved once.
    let solved = optimise::Solved::default();
    let lp = |opts: &Option<optimise::Options>, consts: bool| {
        opts.as_ref().and_then(|o| {
            optimise::optimise(
                target, &lowered, &plans, &placement, &chains, &cascades, o, consts, &solved,
            )
        })
    };
    // The program, and where its schedule copies the constants the same program without the
    // copy, whose bytes the streams may then take (S14).
    let programs = |opts: &Option<optimise::Options>| {
        let with_consts = lp(opts, true);
        let without = with_consts
            .as_ref()
            .filter(|(s, _, _, _)| s.consts.is_some())
            .and_then(|_| lp(opts, false));
        (with_consts, without)
    };
    // The greedy and the programs are independent: the greedy on a thread of its own.
    let choose = |opts: &Option<optimise::Options>, sliced: &[staging::SliceCands]| {
        let (stage, (with_consts, without)) = std::thread::scope(|s| {
            let stage = s.spawn(|| {
                let stage = staging::stage(
                    target, &lowered, &plans, &placement, &chains, &cascades, sliced,
                );
                // The greedy's streams, which are written whichever schedule is kept, made
                // while the program solves (the target keeps them; an error is the final
                // encoding's to report).
                let how = stage.how.iter().zip(plans.iter().map(|p| p.enc.as_ref()));
                make_streams(target, &to_encode(&lowered, how));
                stage
            });
            let programs = programs(opts);
            (joined(stage), programs)
        });
        (stage, with_consts, without)
    };
    if sliced.iter().any(|c| !c.is_empty()) {
        let opts = optimise::options(
            target, &lowered, &plans, &placement, &chains, &cascades, &sliced,
        );
        // The close candidates and the greedy's are counted on the greedy's thread while the
        // program solves; the program's others after it (the same candidates counted).
        let close: BTreeSet<(usize, usize)> = opts
            .iter()
            .flat_map(|o| optimise::close_slices(o, CLOSE_SLICES))
            .collect();
        let ((mut counted, early), by_program) = std::thread::scope(|s| {
            let greedy = s.spawn(|| {
                let stage = staging::stage(
                    target, &lowered, &plans, &placement, &chains, &cascades, &sliced,
                );
                let mut taken = close.clone();
                taken.extend(staging::sliced_taken(&stage, &sliced));
                let counted = staging::count_slices(target, &lowered, &sliced, &taken);
                (counted, taken)
            });
            let (with_consts, without) = programs(&opts);
            let by_program: BTreeSet<(usize, usize)> = with_consts
                .iter()
                .chain(&without)
                .flat_map(|(lp, _, _, _)| staging::sliced_taken(lp, &sliced))
                .collect();
            (joined(greedy), by_program)
        });
        let rest: BTreeSet<(usize, usize)> = by_program.difference(&early).copied().collect();
        counted.extend(staging::count_slices(target, &lowered, &sliced, &rest));
        staging::keep_counted(&mut sliced, counted);
    }
    let opts = optimise::options(
        target, &lowered, &plans, &placement, &chains, &cascades, &sliced,
    );
    let (stage, with_consts, without) = choose(&opts, &sliced);
    let grow = |p: &mut Placement, end: u64| {
        if region == REGION_FAST {
            p.fast_size = p.fast_size.max(end);
        } else {
            p.arena_size = p.arena_size.max(end);
        }
    };
    let mut alternatives = Vec::new();
    for (lp, alts, choices, lp_plans) in with_consts.into_iter().chain(without) {
        if alts.iter().all(|&a| a == 0) && same_staging(&lp, &stage) {
            continue;
        }
        let mut p = placement.clone();
        grow(&mut p, lp.end);
        let consts = lp.consts;
        alternatives.push((
            decisions(lp_plans, lp, &chains, &in_cascade, Some(choices)),
            consts,
            p,
        ));
    }
    let choices = opts.as_ref().map(|o| optimise::greedy_choices(o, &stage));
    grow(&mut placement, stage.end);
    let consts = stage.consts.map(const_copy);
    let mut ops = decisions(plans, stage, &chains, &in_cascade, choices);
    encode_chosen(target, &lowered, &mut ops)?;
    let mut alts = Vec::with_capacity(alternatives.len());
    for (mut ops, consts, placement) in alternatives {
        encode_chosen(target, &lowered, &mut ops)?;
        alts.push(Alternative {
            ops: neutral(ops, &cascades),
            placement,
            consts: consts.map(const_copy),
        });
    }
    Ok(Decided {
        decisions: Decisions {
            ops: neutral(ops, &cascades),
            scheduled: scheduled(lowered),
            placement,
            const_copy: consts,
            private: Box::new(cascades),
        },
        alternatives: alts,
    })
}

/// What a scoped thread returned (its panic, resumed).
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// The program as scheduled, when the passes changed it.
fn scheduled(l: Cow<'_, Lowered>) -> Option<Box<dyn LoweredView>> {
    match l {
        Cow::Borrowed(_) => None,
        Cow::Owned(l) => Some(Box::new(l)),
    }
}

fn const_copy(c: ConstCopy) -> arch::ConstCopy {
    arch::ConstCopy {
        region: c.region,
        at: c.at,
        consts: c.consts,
        tables: c.tables,
    }
}

/// The neutral decisions of the U85 passes' per-operation decisions (their plans inside).
fn neutral(ops: Vec<OpDecision>, cascades: &[Cascade]) -> Vec<arch::OpDecision> {
    let size = |o: &OpDecision| o.plan.enc.as_ref().map_or(0, Encoded::size);
    let sizes: Vec<u64> = ops.iter().map(size).collect();
    ops.into_iter()
        .enumerate()
        .map(|(k, o)| {
            let block = match &o.staged {
                Staged::Sliced { block, .. } => *block,
                _ => o.plan.block,
            };
            let streams = o.plan.enc.as_ref().map(|e| arch::StreamFigures {
                weights: e.weight_count,
                weight_bytes: e.stream_lens.clone(),
                scale_bytes: e.scales.len() as u64,
            });
            let staging = match &o.staged {
                Staged::Direct => arch::Staging::Direct,
                Staged::Whole { region, at, wait } => arch::Staging::Whole {
                    region: *region,
                    offset: *at,
                    bytes: sizes[k],
                    wait: *wait,
                },
                Staged::Sliced {
                    region,
                    bufs,
                    slices,
                    wait,
                    ..
                } => arch::Staging::Sliced {
                    region: *region,
                    buffers: *bufs,
                    slice_bytes: slices.iter().map(|s| s.enc.size()).collect(),
                    slice_depths: slices.iter().map(|s| s.op.ofm.shape.2).collect(),
                    wait: *wait,
                },
                Staged::Cascade {
                    region,
                    blocks,
                    wait,
                    ..
                } => arch::Staging::Cascade {
                    region: *region,
                    copies: blocks
                        .iter()
                        .map(|&(j, at)| [j as u64, at, sizes[j]])
                        .collect(),
                    wait: *wait,
                },
            };
            let cascade = o.cascade.map(|g| {
                let c = &cascades[g];
                let mine: Vec<u32> = c
                    .pieces
                    .iter()
                    .filter(|piece| piece.0 == k)
                    .map(|piece| piece.2 - piece.1)
                    .collect();
                arch::CascadePart {
                    group: g,
                    first: c.first,
                    last: c.last,
                    bands: mine.len(),
                    band_rows: mine.iter().copied().max().unwrap_or(0),
                    ring_rows: (k < c.last).then(|| c.rings[k - c.first]),
                }
            });
            // (A cascade's operations: the program's choice of the cascade, S20.)
            let choice = o
                .choice
                .as_ref()
                .or_else(|| o.cascade.and_then(|g| cascades[g].choice.as_ref()))
                .map(|c| arch::Choice {
                    chosen: c.chosen.0.clone(),
                    objective: c.chosen.1,
                    next: c.next.as_ref().map(|n| n.0.clone()),
                    next_objective: c.next.as_ref().map(|n| n.1),
                });
            arch::OpDecision {
                block,
                streams,
                staging,
                ifm_copy: o.copy.map(|c| arch::IfmCopy {
                    src: c.src,
                    dst: c.dst,
                    size: c.size,
                    wait: c.wait,
                }),
                chain: o.chain.map(|c| match c {
                    Operand::Ifm => arch::ChainOperand::Ifm,
                    Operand::Ifm2 => arch::ChainOperand::Ifm2,
                }),
                cascade,
                choice,
                plan: Box::new(U85Plan {
                    plan: o.plan,
                    staged: o.staged,
                }),
            }
        })
        .collect()
}

/// One encoding to make: the operation, its slice (`None`: the operation's own streams), the
/// operation or slice, and its counted streams.
type ToEncode<'a> = (usize, Option<usize>, &'a NpuOp, &'a Encoded);

/// The streams a schedule needs made, from each operation's staging and plan: an operation
/// staged in slices its slices' (the plan's are not written then), another its plan's if
/// only counted.
fn to_encode<'a>(
    l: &'a Lowered,
    ops: impl Iterator<Item = (&'a Staged, Option<&'a Encoded>)>,
) -> Vec<ToEncode<'a>> {
    let mut work = Vec::new();
    for (k, (staged, enc)) in ops.enumerate() {
        match (staged, enc) {
            (Staged::Sliced { slices, .. }, _) => work.extend(
                (slices.iter().enumerate())
                    .filter(|(_, s)| s.op.weights.is_some())
                    .map(|(j, s)| (k, Some(j), &s.op, &s.enc)),
            ),
            (_, Some(e)) if e.streams.len() != e.stream_lens.len() => {
                work.push((k, None, &l.ops[k], e));
            }
            _ => {}
        }
    }
    work
}

/// Makes the streams of `work` on every thread available, the largest weight sets first: the
/// operations and slices are independent, and a large one taken last would keep one thread
/// busy alone. (The target keeps what it makes: making them again costs a copy.)
fn make_streams(target: &dyn Target, work: &[ToEncode<'_>]) -> Vec<Result<Encoded, TargetError>> {
    let weight = |w: &ToEncode<'_>| {
        w.2.weights
            .as_ref()
            .map_or(0, |wt| wt.values().len() as u64)
    };
    parallel::map_heaviest_first(work, weight, |_, &(_, _, op, enc)| {
        let mut e = enc.clone();
        encode_counted(target, op, &mut e).map(|()| e)
    })
}

/// The candidates were costed by their streams' lengths: makes the streams of the ones
/// chosen ([`to_encode`], [`make_streams`]).
fn encode_chosen(
    target: &dyn Target,
    l: &Lowered,
    ops: &mut [OpDecision],
) -> Result<(), TargetError> {
    let work = to_encode(l, ops.iter().map(|o| (&o.staged, o.plan.enc.as_ref())));
    let made = make_streams(target, &work);
    let keys: Vec<(usize, Option<usize>)> = work.iter().map(|&(k, j, _, _)| (k, j)).collect();
    for ((k, j), e) in keys.into_iter().zip(made) {
        let e = e?;
        match (j, &mut ops[k].staged) {
            (Some(j), Staged::Sliced { slices, .. }) => {
                slices[j].enc = e;
                slices[j].op.weights = None;
            }
            _ => ops[k].plan.enc = Some(e),
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
