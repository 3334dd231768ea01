//! Which TFLite operators run on the NPU, and the NPU segments they form.
//!
//! 1. Every operator of the main subgraph is lowered on its own (its non-constant inputs as
//!    graph inputs) and given to the NPU lowering; an operator either fails (it stays on the
//!    CPU, with the reason) or becomes a candidate.
//! 2. Runs of consecutive candidates (in the subgraph's execution order) form segments. Each
//!    segment is lowered as one graph (boundary tensors as its inputs and outputs) and
//!    compiled. When a segment fails, the operator the error names moves to the CPU (all of
//!    the segment's operators when the error names none) and the segments are formed again.
//! 3. A segment without any NPU kernel operation (only reshapes) stays on the CPU.

use crate::compile::lower::LowerError as NpuLowerError;
use crate::compile::{self, CompileError, CompiledModel, Options};
use npuc_frontend_tflite::lower::partition::{boundary, lower_ops};
use npuc_frontend_tflite::lower::LowerError;
use npuc_frontend_tflite::{OpId, TensorId, TfliteModel};
use std::collections::BTreeMap;

/// Where one TFLite operator of the main subgraph runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpPlacement {
    /// Operator index in the main subgraph.
    pub op: usize,
    /// Opcode name (`CONV_2D`, ...).
    pub opcode: String,
    /// `None` on the NPU, or why the operator stays on the CPU.
    pub cpu_reason: Option<String>,
}

/// A compiled NPU segment: consecutive operators that run as one command stream.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Its operators, in execution order.
    pub ops: Vec<OpId>,
    /// Boundary input tensors (the compiled model's inputs, in this order).
    pub inputs: Vec<TensorId>,
    /// Boundary output tensors (the compiled model's outputs, in this order).
    pub outputs: Vec<TensorId>,
    /// The compiled stream.
    pub model: CompiledModel,
}

/// The partition of the main subgraph.
#[derive(Debug, Clone)]
pub struct Partition {
    /// One entry per operator, in execution order.
    pub ops: Vec<OpPlacement>,
    /// The NPU segments, in execution order.
    pub segments: Vec<Segment>,
}

impl Partition {
    /// Operators left on the CPU.
    pub fn cpu_ops(&self) -> impl Iterator<Item = &OpPlacement> {
        self.ops.iter().filter(|o| o.cpu_reason.is_some())
    }
}

/// The TFLite operator index an IR operator name (`op12/3rescale`) comes from.
pub fn tflite_op_of(ir_name: &str) -> Option<usize> {
    ir_name.strip_prefix("op")?.split('/').next()?.parse().ok()
}

fn lower_reason(e: &LowerError) -> String {
    match e {
        LowerError::Operator { reason, .. } => reason.clone(),
        e => e.to_string(),
    }
}

fn compile_reason(e: &CompileError) -> String {
    match e {
        CompileError::Lower(NpuLowerError::Unsupported { kind, reason, .. }) => {
            format!("{kind}: {reason}")
        }
        e => e.to_string(),
    }
}

/// Checks one operator alone: `Ok(())` if the NPU lowering accepts it.
pub fn check_op(model: &TfliteModel, op: OpId) -> Result<(), String> {
    let sg = model.main_subgraph();
    let node = sg.operator(op).ok_or("no such operator")?;
    let inputs = boundary(model, &[op]).inputs;
    let lowered = lower_ops(model, &[op], &inputs, &node.outputs).map_err(|e| lower_reason(&e))?;
    compile::lower::lower(&lowered.graph).map_err(|e| compile_reason(&e.into()))?;
    Ok(())
}

/// The culprit operators of a failed segment.
fn culprits(seg: &[OpId], e: &SegmentError) -> Vec<OpId> {
    let named = match e {
        SegmentError::Lower(LowerError::Operator { op, .. }) => Some(*op),
        SegmentError::Compile(
            CompileError::Lower(NpuLowerError::Unsupported { name, .. })
            | CompileError::Encode { name, .. },
        ) => tflite_op_of(name),
        _ => None,
    };
    match named.and_then(|i| seg.iter().find(|o| o.index() == i)) {
        Some(&o) => vec![o],
        None => seg.to_vec(),
    }
}

enum SegmentError {
    Lower(LowerError),
    Compile(CompileError),
    Empty,
}

impl SegmentError {
    fn reason(&self) -> String {
        match self {
            SegmentError::Lower(e) => lower_reason(e),
            SegmentError::Compile(e) => compile_reason(e),
            SegmentError::Empty => {
                "only data-layout aliases (reshapes) here, nothing for the NPU to do".into()
            }
        }
    }
}

fn compile_segment(
    model: &TfliteModel,
    ops: &[OpId],
    options: &Options,
) -> Result<Segment, SegmentError> {
    let b = boundary(model, ops);
    let lowered = lower_ops(model, ops, &b.inputs, &b.outputs).map_err(SegmentError::Lower)?;
    let compiled = compile::compile(&lowered.graph, options).map_err(SegmentError::Compile)?;
    if compiled.operators.is_empty() {
        return Err(SegmentError::Empty);
    }
    Ok(Segment {
        ops: ops.to_vec(),
        inputs: b.inputs,
        outputs: b.outputs,
        model: compiled,
    })
}

/// Partitions the main subgraph and compiles its NPU segments. `progress` is called with
/// the number of operators before the per-operator check (of 32 or more) and with the
/// segment index while compiling.
pub fn partition(
    model: &TfliteModel,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Partition {
    let sg = model.main_subgraph();
    let n = sg.operators.len();
    if n >= 32 {
        progress(&format!("checking {n} operators"));
    }
    // Each operator alone, on every thread available.
    let mut reasons: Vec<Option<String>> =
        npuc_target::parallel::map(&sg.operators, |_, op| check_op(model, op.id).err());
    let mut done: BTreeMap<Vec<OpId>, Segment> = BTreeMap::new();
    let segments = loop {
        let mut runs: Vec<Vec<OpId>> = Vec::new();
        let mut cur = Vec::new();
        for (op, r) in sg.operators.iter().zip(&reasons) {
            if r.is_none() {
                cur.push(op.id);
            } else if !cur.is_empty() {
                runs.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            runs.push(cur);
        }
        let mut failed = false;
        for (i, run) in runs.iter().enumerate() {
            if done.contains_key(run) {
                continue;
            }
            progress(&format!(
                "compiling NPU segment {} ({} operators)",
                i + 1,
                run.len()
            ));
            match compile_segment(model, run, options) {
                Ok(s) => {
                    done.insert(run.clone(), s);
                }
                Err(e) => {
                    for o in culprits(run, &e) {
                        reasons[o.index()] = Some(e.reason());
                    }
                    failed = true;
                    break;
                }
            }
        }
        if !failed {
            break runs
                .iter()
                .map(|r| done.remove(r).expect("compiled segment"))
                .collect::<Vec<_>>();
        }
    };
    let ops = sg
        .operators
        .iter()
        .zip(reasons)
        .map(|(op, cpu_reason)| OpPlacement {
            op: op.id.index(),
            opcode: op.opcode.name().into_owned(),
            cpu_reason,
        })
        .collect();
    Partition { ops, segments }
}
