//! Scheduling, writing and describing a lowered program, through the target.
//!
//! [`emit`] asks the target to schedule the program ([`Target::decide`]: the U85's passes
//! are `npuc-backend-schedule`'s), writes it ([`Target::write`]), writes each alternative
//! schedule the target offers and keeps the one whose stream the target's cost model
//! estimates cheapest by the objective (decision S11), and [`describe`]s the decisions and
//! that estimate as the [`Schedule`] `npuc explain` prints.

use super::alloc::Placement;
use super::schedule::Schedule;
use super::{CompileError, OperatorInfo, WeightFigures};
use crate::arch_interface::{Decided, LoweredView, Target, TargetError, Written};
use npuc_target::objective::stream_cost;

mod describe;

/// The emitted stream and read-only data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    /// The target's program, in the format its writer chose.
    pub payload: crate::payload::TargetPayload,
    pub read_only: Vec<u8>,
    pub operators: Vec<OperatorInfo>,
    /// Where the feature maps live.
    pub placement: Placement,
    /// Estimated cycles of the whole stream (the target's cost model).
    pub total_cycles: u64,
    /// The weights and scales in the read-only region.
    pub weights: WeightFigures,
    /// The schedule (sources and configuration names not filled in).
    pub schedule: Schedule,
}

/// A target's scheduling or writing error as the compiler reports it: a register field that
/// cannot hold a value is a `CompileError::Stream`, an operation whose streams cannot be
/// encoded a `CompileError::Encode` (as when the passes were the driver's).
fn target_error(e: TargetError) -> CompileError {
    match e {
        TargetError::Stream(s) => CompileError::Stream(s),
        TargetError::Encode { name, source } => CompileError::Encode {
            name,
            source: *source,
        },
        other => CompileError::Target(other),
    }
}

/// A check of the written program and its placement (the driver's validation) that `emit`
/// runs on a thread of its own while it describes the schedule.
pub type Check<'a> = dyn Fn(&Written, &Placement) -> Result<(), CompileError> + Sync + 'a;

/// Schedules a lowered graph (the target's passes), writes its program and read-only region
/// (the target's writer), and describes the schedule with the cost model's estimate
/// ([`describe`]) while `check` examines what was written; `check`'s error wins.
pub fn emit(
    target: &dyn Target,
    program: &dyn LoweredView,
    check: &Check<'_>,
) -> Result<Emitted, CompileError> {
    let Decided {
        mut decisions,
        alternatives,
    } = target.decide(program).map_err(target_error)?;
    let mut written = target.write(program, &decisions).map_err(target_error)?;
    let mut est = target.estimate_stream(&written.payload).unwrap_or_default();
    // The global optimisation's schedules (S13), where they differ, replace the greedy's when
    // the cost model's estimate of the whole stream has a lower objective (S11; ties: the
    // earlier).
    for alt in alternatives {
        let kept_ops = std::mem::replace(&mut decisions.ops, alt.ops);
        let kept_placement = std::mem::replace(&mut decisions.placement, alt.placement);
        let kept_consts = std::mem::replace(&mut decisions.const_copy, alt.consts);
        let better = target.write(program, &decisions).ok().and_then(|w| {
            let e = target.estimate_stream(&w.payload).ok()?;
            (stream_cost(&e) < stream_cost(&est)).then_some((w, e))
        });
        match better {
            Some((w, e)) => {
                written = w;
                est = e;
            }
            None => {
                decisions.ops = kept_ops;
                decisions.placement = kept_placement;
                decisions.const_copy = kept_consts;
            }
        }
    }
    let (checked, schedule) = std::thread::scope(|s| {
        let checking = s.spawn(|| check(&written, &decisions.placement));
        let schedule = describe::describe(target, program, &decisions, &written, &est);
        let checked = checking
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (checked, schedule)
    });
    checked?;
    // Kernel operations take their cycles from the stream's estimate (a sliced or cascaded
    // operation the sum of its parts'; DMA operations keep their own estimate).
    let mut operators = written.operators;
    for (o, s) in operators.iter_mut().zip(&schedule.ops) {
        o.cycles = s.cycles;
    }
    Ok(Emitted {
        payload: written.payload,
        read_only: written.read_only,
        operators,
        placement: decisions.placement,
        total_cycles: est.total,
        weights: written.weights,
        schedule,
    })
}
