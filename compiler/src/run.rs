//! `npuc run`: executes a compiled model on the reference simulator.
//!
//! For a Vela-compiled `.tflite`: `read_only` goes to region 0, the arena (`scratch`) to
//! region 1 and `scratch_fast` to region 2 (the arena again when Vela passes the scratch
//! tensor as `scratch_fast`, as in its Shared_Sram and Sram_Only modes). Inputs are written
//! at their `OfflineMemoryAllocation` offsets, every `ethos-u` operator runs in order, and the
//! outputs are read back from the arena. CPU operators are not supported yet.

#[path = "npy.rs"]
pub mod npy;

use npuc_backend::arch::Accelerator;
use npuc_backend::cop::parse_payload;
use npuc_backend::sim::{RunReport, SimError, Simulator};
use npuc_frontend_tflite::vela::{FeatureMap, VelaOp};
use npuc_frontend_tflite::{TensorType, TfliteModel};
use npy::{Array, Dtype};

/// Why a model could not be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The model could not be read.
    #[error("reading the model: {0}")]
    Model(String),
    /// The graph has operators left for the CPU.
    #[error("the graph has CPU operators ({0}); running them needs the reference interpreter, which is not wired into `npuc run` yet")]
    CpuOps(String),
    /// The inputs do not match the graph.
    #[error("input {index}: {reason}")]
    Input {
        /// Input number.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A tensor's dtype has no `.npy` mapping here.
    #[error("tensor {0}: unsupported dtype {1:?}")]
    Dtype(String, TensorType),
    /// A tensor is not in the arena.
    #[error("tensor {0} has no arena offset (OfflineMemoryAllocation)")]
    NoOffset(String),
    /// The simulator stopped.
    #[error("ethos-u operator {op}: {source}")]
    Sim {
        /// Index of the ethos-u operator.
        op: usize,
        /// The diagnostic.
        source: SimError,
    },
}

/// The outputs and per-operator simulator reports of a run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Graph outputs, in the graph's order.
    pub outputs: Vec<Array>,
    /// One report per ethos-u operator.
    pub reports: Vec<RunReport>,
    /// The configuration the model was compiled for.
    pub accelerator: Option<Accelerator>,
}

fn dtype_of(fm: &FeatureMap) -> Result<Dtype, RunError> {
    Ok(match fm.dtype {
        TensorType::Bool => Dtype::Bool,
        TensorType::Int8 => Dtype::I8,
        TensorType::Uint8 => Dtype::U8,
        TensorType::Int16 => Dtype::I16,
        TensorType::Uint16 => Dtype::U16,
        TensorType::Int32 => Dtype::I32,
        TensorType::Uint32 => Dtype::U32,
        TensorType::Int64 => Dtype::I64,
        t => return Err(RunError::Dtype(fm.name.clone(), t)),
    })
}

fn offset(fm: &FeatureMap) -> Result<usize, RunError> {
    fm.arena_offset
        .map(|o| o as usize)
        .ok_or_else(|| RunError::NoOffset(fm.name.clone()))
}

/// Runs a Vela-compiled `.tflite` on `inputs` (in the graph's input order).
pub fn run_vela(model: &[u8], inputs: &[Array]) -> Result<RunOutput, RunError> {
    let m = TfliteModel::parse(model).map_err(|e| RunError::Model(e.to_string()))?;
    let v = m.vela().map_err(|e| RunError::Model(e.to_string()))?;
    let sg = v
        .subgraphs
        .first()
        .ok_or_else(|| RunError::Model("no subgraph".into()))?;
    let cpu: Vec<String> = sg
        .ops
        .iter()
        .filter_map(|op| match op {
            VelaOp::Cpu(c) => Some(c.name.clone()),
            VelaOp::Npu(_) => None,
        })
        .collect();
    if !cpu.is_empty() {
        return Err(RunError::CpuOps(cpu.join(", ")));
    }
    if inputs.len() != sg.inputs.len() {
        return Err(RunError::Input {
            index: inputs.len().min(sg.inputs.len()),
            reason: format!(
                "the graph has {} inputs, {} given",
                sg.inputs.len(),
                inputs.len()
            ),
        });
    }
    let npu: Vec<_> = v.ethos_u_ops().collect();
    let arena_size = npu.iter().map(|o| o.scratch_size).max().unwrap_or(0);
    let mut arena = vec![0u8; arena_size];
    for (index, (fm, a)) in sg.inputs.iter().zip(inputs).enumerate() {
        let dt = dtype_of(fm)?;
        if a.dtype != dt || a.shape != fm.shape {
            return Err(RunError::Input {
                index,
                reason: format!(
                    "{} {:?} given, the graph's input {} is {} {:?}",
                    a.dtype, a.shape, fm.name, dt, fm.shape
                ),
            });
        }
        let at = offset(fm)?;
        let dst = arena
            .get_mut(at..at + a.data.len())
            .ok_or_else(|| RunError::Input {
                index,
                reason: format!(
                    "offset {at} + {} bytes is outside the {arena_size}-byte arena",
                    a.data.len()
                ),
            })?;
        dst.copy_from_slice(&a.data);
    }
    let mut sim: Option<Simulator> = None;
    let mut reports = Vec::new();
    let mut accelerator = None;
    let mut arena_id = None;
    for (k, op) in npu.iter().enumerate() {
        let payload = parse_payload(&op.payload)
            .map_err(|e| RunError::Model(format!("ethos-u operator {k}: {e}")))?;
        accelerator = Some(payload.accelerator);
        let s = sim.get_or_insert_with(|| Simulator::new(payload.accelerator));
        let mem = s.memory_mut();
        let aid = *arena_id.get_or_insert_with(|| mem.add_buffer(std::mem::take(&mut arena)));
        let ro = mem.add_buffer(op.read_only.clone());
        mem.map_region(0, ro, 0);
        mem.map_region(1, aid, 0);
        if op.scratch_fast_tensor == op.scratch_tensor {
            mem.map_region(2, aid, 0);
        } else {
            let fast = mem.add_buffer(vec![0u8; op.scratch_fast_size]);
            mem.map_region(2, fast, 0);
        }
        let r = s
            .run(&payload.words)
            .map_err(|source| RunError::Sim { op: k, source })?;
        reports.push(r);
    }
    let mut outputs = Vec::new();
    for fm in &sg.outputs {
        let dt = dtype_of(fm)?;
        let at = offset(fm)?;
        let bytes = match (&sim, arena_id) {
            (Some(s), Some(id)) => s
                .memory()
                .buffer(id)
                .get(at..at + fm.byte_size)
                .map(<[u8]>::to_vec),
            _ => None,
        };
        let data = bytes.ok_or_else(|| RunError::NoOffset(fm.name.clone()))?;
        outputs.push(Array {
            dtype: dt,
            shape: fm.shape.clone(),
            data,
        });
    }
    Ok(RunOutput {
        outputs,
        reports,
        accelerator,
    })
}
