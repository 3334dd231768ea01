//! Scheduling and register command stream generation.
//!
//! `decide` runs the scheduling passes:
//! 1. `chain`: an OFM read only by the next operation, an ELEMENTWISE, goes through a
//!    chaining FIFO; the other feature maps are placed ([`super::alloc`]).
//! 2. `cascade`: where intermediate feature maps spill out of the fast memory, runs of
//!    operations are computed band by band through ring buffers when the cost model says so.
//! 3. `plan`: each operation's microblock, OFM block and weight order are chosen by the
//!    target's cost model among the candidates it offers, and its weight and scale streams are
//!    encoded for that choice; the streams of each operation form one block in region 0.
//! 4. `staging`: where the cost model says it pays and a buffer fits, an operation's block
//!    is copied by DMA into the staging memory while the previous operation runs.
//!
//! The target's writer ([`Target::write`]; the U85's is [`write`]) then writes the command
//! stream and region 0 from the lowered operations and those decisions, and [`describe`] turns the decisions and the cost model's estimate of the
//! written stream into the [`Schedule`].

use super::alloc::Placement;
use super::lower::{kind_of, Fm, Lowered, NpuOp};
use super::schedule::Schedule;
use super::{CompileError, OperatorInfo, WeightFigures};
use crate::arch_interface::{LoweredView, OpGeometry, Target, TargetError};
use npuc_backend::isa::{AccFormat, ActivationPrecision, ActivationType};
use npuc_backend::writer::output::clip;

pub(crate) mod bounds;
pub(crate) mod cascade;
mod chain;
mod decide;
mod describe;
mod lut;
mod objective;
mod optimise;
mod plan;
mod regs;
mod slice;
mod staging;
mod weights;
pub(crate) mod write;

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

pub(crate) fn geometry(op: &NpuOp) -> OpGeometry {
    let kd = (
        (op.kernel_size.0 - 1) * op.dilation.0 + 1,
        (op.kernel_size.1 - 1) * op.dilation.1 + 1,
    );
    OpGeometry {
        kind: kind_of(op.kernel),
        ofm: op.ofm.shape,
        ifm_depth: op.ifm.shape.2,
        kernel: kd,
        stride: op.stride,
        ifm_elem_bytes: op.ifm.elem_bytes(),
        ofm_elem_bytes: op.ofm.elem_bytes(),
        acc_bytes: match op.acc {
            AccFormat::I32 => 4,
            AccFormat::I48 => 8,
        },
        weights: op.weights.is_some(),
        sparse_2_4: op
            .weights
            .as_ref()
            .is_some_and(crate::arch_interface::is_sparse_2_4),
    }
}

/// ACTIVATION_PRECISION of a feature map's element type.
fn precision(fm: &Fm) -> ActivationPrecision {
    match fm.elem_bytes() {
        1 => ActivationPrecision::B8,
        2 => ActivationPrecision::B16,
        4 => ActivationPrecision::B32,
        _ => ActivationPrecision::B64,
    }
}

/// ACTIVATION_TYPE of a feature map's element type.
fn activation_type(fm: &Fm) -> ActivationType {
    if fm.dtype.is_unsigned() {
        ActivationType::Unsigned
    } else {
        ActivationType::Signed
    }
}

/// Refuses an operation whose activation bounds the OFM clipping cannot express (16-bit
/// bounds, or none).
fn check_activation(op: &NpuOp) -> Result<(), CompileError> {
    if clip(op.act, op.ofm.dtype.is_unsigned()).is_none() {
        return Err(CompileError::Stream(format!(
            "{}: activation bounds {:?} are neither 16-bit nor absent",
            op.name, op.act
        )));
    }
    Ok(())
}

/// The constant buffers read as feature maps, in the order of first use.
pub(super) fn const_operands(l: &Lowered) -> Vec<usize> {
    let mut out = Vec::new();
    for op in &l.ops {
        for fm in std::iter::once(&op.ifm).chain(op.ifm2.as_ref()) {
            if l.constants.contains_key(&fm.buffer) && !out.contains(&fm.buffer) {
                out.push(fm.buffer);
            }
        }
    }
    out
}

/// The objective (S11) of a whole stream's estimate: its cycles plus its priced off-chip
/// (not SRAM) bytes.
fn stream_objective(e: &crate::arch_interface::StreamEstimate) -> u64 {
    let offchip = e
        .ops
        .iter()
        .flat_map(|o| &o.memory)
        .filter(|(m, _, _)| m != "Sram")
        .map(|(_, r, w)| r + w)
        .sum();
    objective::cost((e.total, offchip))
}

/// A writer's error as the compiler reports it (a register field that cannot hold a value
/// is a `CompileError::Stream`, as before the writer was a target method).
fn write_error(e: TargetError) -> CompileError {
    match e {
        TargetError::Stream(s) => CompileError::Stream(s),
        other => CompileError::Target(other),
    }
}

/// Schedules a lowered graph ([`decide`]), writes its command stream and read-only region
/// (the target's writer) and describes the schedule with the cost model's estimate ([`describe`]).
pub fn emit(target: &dyn Target, program: &dyn LoweredView) -> Result<Emitted, CompileError> {
    // The U85 parts of `emit` read the U85's own form.
    let l: &Lowered = program.as_any().downcast_ref().ok_or_else(|| {
        CompileError::Stream("the lowered program is not the Ethos-U85's".to_string())
    })?;
    let decide::Decided {
        mut decisions,
        alternatives,
    } = decide::decide(target, l)?;
    let mut written = target.write(program, &decisions).map_err(write_error)?;
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
            (stream_objective(&e) < stream_objective(&est)).then_some((w, e))
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
    let schedule = describe::describe(target, program, &decisions, &written, &est);
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
