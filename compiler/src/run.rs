//! `npuc run`: executes a compiled model on the reference simulator.
//!
//! An npuc container ([`run_container`]) runs on the simulator with its regions as the
//! manifest lists them.
//!
//! For a Vela-format `.tflite` (any `ethos-u` custom operator with a COP payload, any mix of
//! NPU and CPU operators, any number of each), the operators of the main subgraph run in
//! order on one tensor arena laid out by the `OfflineMemoryAllocation` metadata:
//!
//! * an `ethos-u` operator runs on the simulator with `read_only` in region 0, the arena from
//!   its `scratch` tensor's offset in region 1, and `scratch_fast` in region 2 (the arena
//!   again when the operator passes the scratch tensor as `scratch_fast`, as in Vela's
//!   Shared_Sram and Sram_Only modes; a separate zeroed buffer otherwise);
//! * a CPU operator is lowered alone (`npuc_frontend_tflite::lower::lower_operator`) and run on
//!   the IR reference interpreter, its non-constant inputs read from and its outputs written
//!   to their arena offsets. An operator the interpreter cannot run is an error naming it.
//!
//! Graph inputs are written at their offsets first (an input with no offset is read by no
//! operator: its data is checked, then not used) and outputs read back at the end.

#[path = "npy.rs"]
pub mod npy;

use npuc_backend::arch::Accelerator;
use npuc_backend::cop::{parse_payload, NpuPayload};
use npuc_backend::sim::validate::region_buffer;
use npuc_backend::sim::{RunReport, SimError, Simulator};
use npuc_frontend_tflite::lower::{lower_operator, LoweredOperator};
use npuc_frontend_tflite::vela::{CpuOp, EthosUOp, OfflineMemoryAllocation, VelaOp};
use npuc_frontend_tflite::{Subgraph, TensorId, TensorType, TfliteModel};
use npy::{Array, Dtype};

/// Why a model could not be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The model could not be read.
    #[error("reading the model: {0}")]
    Model(String),
    /// A CPU operator could not be lowered or interpreted.
    #[error("CPU operator {op} ({name}) on the reference interpreter: {reason}")]
    CpuOp {
        /// Index of the operator in the subgraph.
        op: usize,
        /// Its TFLite opcode name.
        name: String,
        /// What went wrong.
        reason: String,
    },
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
    /// TFLite names of the operators run on the reference interpreter, in order.
    pub cpu_ops: Vec<String>,
    /// The configuration the model was compiled for.
    pub accelerator: Option<Accelerator>,
    /// What the run did that the caller may not expect (an input given in another shape with
    /// the same dtype and element count); the CLI prints them on stderr.
    pub notes: Vec<String>,
}

/// Checks input `index` (`given`) against the graph's tensor `name` (`dtype`, `shape`,
/// `size` bytes). The data is accepted in another shape when dtype and element count match:
/// Vela rewrites graph inputs (rank 0 becomes [1], 5-D becomes 4-D, depthwise weights
/// [KH, KW, C, M] become [1, KH, KW, C*M]) without moving a byte, so data shaped for the
/// source model is the same bytes. Returns the note saying so, or `None` for an exact match.
fn accept_input(
    index: usize,
    given: &Array,
    name: &str,
    dtype: Dtype,
    shape: &[usize],
    size: usize,
) -> Result<Option<String>, RunError> {
    if given.dtype != dtype || given.data.len() != size {
        return Err(RunError::Input {
            index,
            reason: format!(
                "{} {:?} given, the graph's input {name} is {dtype} {shape:?}",
                given.dtype, given.shape
            ),
        });
    }
    Ok((given.shape != shape).then(|| {
        format!(
            "input {index} ({name}): {dtype} {:?} given, the graph's input is {shape:?}; same dtype and element count, so it was used in the graph's shape",
            given.shape
        )
    }))
}

fn npy_dtype(name: &str, dtype: TensorType) -> Result<Dtype, RunError> {
    Ok(match dtype {
        TensorType::Bool => Dtype::Bool,
        TensorType::Int8 => Dtype::I8,
        TensorType::Uint8 => Dtype::U8,
        TensorType::Int16 => Dtype::I16,
        TensorType::Uint16 => Dtype::U16,
        TensorType::Int32 => Dtype::I32,
        TensorType::Uint32 => Dtype::U32,
        TensorType::Int64 => Dtype::I64,
        TensorType::Float32 => Dtype::F32,
        t => return Err(RunError::Dtype(name.to_owned(), t)),
    })
}

/// A tensor of the subgraph as the arena holds it: offset, byte size, dtype, shape.
struct Placed {
    name: String,
    at: usize,
    size: usize,
    dtype: Dtype,
    shape: Vec<usize>,
}

fn placed(
    sg: &Subgraph,
    oma: Option<&OfflineMemoryAllocation>,
    t: TensorId,
) -> Result<Placed, RunError> {
    let mut p = unplaced(sg, t)?;
    p.at = oma
        .and_then(|o| o.offset(sg.id, t))
        .ok_or_else(|| RunError::NoOffset(p.name.clone()))? as usize;
    Ok(p)
}

/// A tensor's name, dtype, shape and size, its offset left 0 (for a tensor not in the arena).
fn unplaced(sg: &Subgraph, t: TensorId) -> Result<Placed, RunError> {
    let tensor = sg
        .tensor(t)
        .ok_or_else(|| RunError::Model(format!("tensor {t} is not in the subgraph")))?;
    let name = tensor.name.clone();
    let shape = tensor
        .static_shape()
        .map_err(|e| RunError::Model(e.to_string()))?;
    let size = tensor
        .byte_size()
        .ok_or_else(|| RunError::Dtype(name.clone(), tensor.dtype))?;
    Ok(Placed {
        dtype: npy_dtype(&name, tensor.dtype)?,
        name,
        at: 0,
        size,
        shape,
    })
}

/// Whether `model` is a TFLite file with at least one `ethos-u` operator, to run with
/// [`run_vela`] (anything unreadable counts as one, so that [`run_vela`] reports it); a TOSA
/// file or a plain `.tflite` is not (it runs on the reference interpreter).
pub fn is_npu_compiled(model: &[u8]) -> bool {
    if crate::reference::is_tosa(model) {
        return false;
    }
    match TfliteModel::parse(model) {
        Ok(m) => m.operator_codes().iter().any(|c| c.is_ethos_u()),
        Err(_) => true,
    }
}

/// Runs a Vela-format `.tflite` on `inputs` (in the graph's input order).
pub fn run_vela(model: &[u8], inputs: &[Array]) -> Result<RunOutput, RunError> {
    run_vela_patched(model, inputs, &|words| words)
}

/// [`run_vela`] with each ethos-u operator's command words passed through `patch` before
/// anything runs: for adjudicating a Vela stream ("would it match with this register
/// changed?", docs/decisions.md simulator #42).
pub fn run_vela_patched(
    model: &[u8],
    inputs: &[Array],
    patch: &dyn Fn(Vec<u32>) -> Vec<u32>,
) -> Result<RunOutput, RunError> {
    let m = TfliteModel::parse(model).map_err(|e| RunError::Model(e.to_string()))?;
    let v = m.vela().map_err(|e| RunError::Model(e.to_string()))?;
    let vsg = v
        .subgraphs
        .first()
        .ok_or_else(|| RunError::Model("no subgraph".into()))?;
    let sg = m.main_subgraph();
    let oma = v.offline_memory_allocation.as_ref();
    if inputs.len() != vsg.inputs.len() {
        return Err(RunError::Input {
            index: inputs.len().min(vsg.inputs.len()),
            reason: format!(
                "the graph has {} inputs, {} given",
                vsg.inputs.len(),
                inputs.len()
            ),
        });
    }
    // Every payload is read before anything runs; all must be for one configuration.
    let mut payloads = Vec::new();
    for (k, op) in v.ethos_u_ops().enumerate() {
        let mut p = parse_payload(&op.payload)
            .map_err(|e| RunError::Model(format!("ethos-u operator {k}: {e}")))?;
        p.words = patch(p.words);
        if let Some(first) = payloads.first().map(|p: &NpuPayload| p.accelerator) {
            if first != p.accelerator {
                return Err(RunError::Model(format!(
                    "ethos-u operator {k} is for {:?}, operator 0 for {first:?}",
                    p.accelerator
                )));
            }
        }
        payloads.push(p);
    }
    let accelerator = payloads.first().map(|p| p.accelerator);
    let region1_base = |op: &EthosUOp| {
        oma.and_then(|o| o.offset(sg.id, op.scratch_tensor))
            .map_or(0, |o| o as usize)
    };
    // A graph input without an arena offset is read by no ethos-u operator (they see only
    // the arena); Vela leaves one so when the output does not depend on it (e.g. a
    // convolution whose every tap falls in the padding). Its data is checked and not used; a
    // CPU operator reading it is still an error (`NoOffset`).
    let in_arena = |t: TensorId| oma.and_then(|o| o.offset(sg.id, t)).is_some();
    // Every CPU operator is lowered before anything runs (an operator the interpreter cannot
    // run is reported up front). The arena covers every operator's scratch and every arena
    // tensor an operator or the graph touches.
    let mut arena_size = 0;
    let mut lowered = Vec::new();
    let mut arena_tensors: Vec<TensorId> = vsg
        .inputs
        .iter()
        .filter(|fm| in_arena(fm.tensor))
        .chain(&vsg.outputs)
        .map(|fm| fm.tensor)
        .collect();
    for op in &vsg.ops {
        match op {
            VelaOp::Npu(op) => {
                arena_size = arena_size.max(region1_base(op).saturating_add(op.scratch_size))
            }
            VelaOp::Cpu(op) => {
                let l = lower_operator(&m, sg.id, op.op).map_err(|e| RunError::CpuOp {
                    op: op.op.index(),
                    name: op.name.clone(),
                    reason: e.to_string(),
                })?;
                arena_tensors.extend(l.inputs.iter().chain(&l.outputs));
                lowered.push(l);
            }
        }
    }
    // Variable tensors (an LSTM's output and cell state) in the arena start from the value
    // TFLite resets them to: the zero point for int8, 0 otherwise (decisions.md simulator #36).
    let variables: Vec<(TensorId, u8)> = sg
        .tensors
        .iter()
        .filter(|t| t.is_variable && oma.and_then(|o| o.offset(sg.id, t.id)).is_some())
        .map(|t| {
            let zp = t.quantization.as_ref().and_then(|q| q.zero_point.first());
            let fill = match (t.dtype, zp) {
                (TensorType::Int8, Some(&zp)) => zp as i8 as u8,
                _ => 0,
            };
            (t.id, fill)
        })
        .collect();
    arena_tensors.extend(variables.iter().map(|&(t, _)| t));
    for &t in &arena_tensors {
        let p = placed(sg, oma, t)?;
        arena_size = arena_size.max(p.at.saturating_add(p.size));
    }
    let mut sim = Simulator::new(accelerator.unwrap_or(Accelerator::U85_256));
    let arena = region_buffer(1, arena_size as u64).map_err(|e| RunError::Model(e.to_string()))?;
    let arena = sim.memory_mut().add_buffer(arena);
    for &(t, fill) in &variables {
        let p = placed(sg, oma, t)?;
        sim.memory_mut().buffer_mut(arena)[p.at..p.at + p.size].fill(fill);
    }
    let mut notes = Vec::new();
    for (index, (fm, a)) in vsg.inputs.iter().zip(inputs).enumerate() {
        if !in_arena(fm.tensor) {
            let p = unplaced(sg, fm.tensor)?;
            notes.extend(accept_input(index, a, &p.name, p.dtype, &p.shape, p.size)?);
            notes.push(format!(
                "input {index} ({}): not in the arena (no OfflineMemoryAllocation offset), so no operator reads it; not used",
                p.name
            ));
            continue;
        }
        let p = placed(sg, oma, fm.tensor)?;
        notes.extend(accept_input(index, a, &p.name, p.dtype, &p.shape, p.size)?);
        sim.memory_mut().buffer_mut(arena)[p.at..p.at + p.size].copy_from_slice(&a.data);
    }
    let mut reports = Vec::new();
    let mut cpu_ops = Vec::new();
    let mut npu_index = 0;
    let mut lowered = lowered.iter();
    for op in &vsg.ops {
        match op {
            VelaOp::Npu(op) => {
                let mem = sim.memory_mut();
                let ro = mem.add_buffer(op.read_only.clone());
                let base = region1_base(op) as u64;
                mem.map_region(0, ro, 0);
                mem.map_region(1, arena, base);
                if op.scratch_fast_tensor == op.scratch_tensor {
                    mem.map_region(2, arena, base);
                } else {
                    let fast = region_buffer(2, op.scratch_fast_size as u64)
                        .map_err(|e| RunError::Model(e.to_string()))?;
                    let fast = mem.add_buffer(fast);
                    mem.map_region(2, fast, 0);
                }
                let r = sim
                    .run(&payloads[npu_index].words)
                    .map_err(|source| RunError::Sim {
                        op: npu_index,
                        source,
                    })?;
                reports.push(r);
                npu_index += 1;
            }
            VelaOp::Cpu(op) => {
                let l = lowered
                    .next()
                    .ok_or_else(|| RunError::Model("CPU operator not lowered".into()))?;
                run_cpu_op(sg, oma, op, l, sim.memory_mut().buffer_mut(arena))?;
                cpu_ops.push(op.name.clone());
            }
        }
    }
    let mut outputs = Vec::new();
    for fm in &vsg.outputs {
        let p = placed(sg, oma, fm.tensor)?;
        outputs.push(Array {
            dtype: p.dtype,
            shape: p.shape,
            data: sim.memory().buffer(arena)[p.at..p.at + p.size].to_vec(),
        });
    }
    Ok(RunOutput {
        outputs,
        reports,
        cpu_ops,
        accelerator,
        notes,
    })
}

/// Runs one CPU operator on the reference interpreter over the arena.
fn run_cpu_op(
    sg: &Subgraph,
    oma: Option<&OfflineMemoryAllocation>,
    op: &CpuOp,
    lowered: &LoweredOperator,
    arena: &mut [u8],
) -> Result<(), RunError> {
    let fail = |reason: String| RunError::CpuOp {
        op: op.op.index(),
        name: op.name.clone(),
        reason,
    };
    let mut values = Vec::new();
    for &t in &lowered.inputs {
        let p = placed(sg, oma, t)?;
        values.push(Array {
            dtype: p.dtype,
            shape: p.shape,
            data: arena[p.at..p.at + p.size].to_vec(),
        });
    }
    let results = crate::reference::run_graph(&lowered.lowered.graph, &values)
        .map_err(|e| fail(e.to_string()))?;
    for (&t, a) in lowered.outputs.iter().zip(&results) {
        let p = placed(sg, oma, t)?;
        if a.data.len() != p.size {
            return Err(fail(format!(
                "output {} has {} bytes, the tensor {}",
                p.name,
                a.data.len(),
                p.size
            )));
        }
        arena[p.at..p.at + p.size].copy_from_slice(&a.data);
    }
    Ok(())
}

/// The `.npy` element type of a manifest dtype name (`i8`, `i16`, ...).
fn manifest_dtype(name: &str) -> Option<Dtype> {
    Some(match name {
        "bool" => Dtype::Bool,
        "i8" => Dtype::I8,
        "u8" => Dtype::U8,
        "i16" => Dtype::I16,
        "u16" => Dtype::U16,
        "i32" => Dtype::I32,
        "i64" => Dtype::I64,
        // INT48 is read and written as int64 (see `i48_to_memory`).
        "i48" => Dtype::I64,
        _ => return None,
    })
}

/// An INT48 tensor given as int64 `.npy` data, as the container holds it: `size / elements`
/// bytes per element (8: the NPU's b64 words; 6: packed). `None` if a value does not fit 48
/// bits or the sizes disagree.
fn i48_to_memory(data: &[u8], size: usize) -> Option<Vec<u8>> {
    let n = data.len() / 8;
    let width = size.checked_div(n).unwrap_or(8);
    if data.len() % 8 != 0 || !matches!(width, 6 | 8) || n * width != size {
        return None;
    }
    let mut out = Vec::with_capacity(size);
    for c in data.chunks_exact(8) {
        let v = i64::from_le_bytes(c.try_into().ok()?);
        if !(-(1i64 << 47)..(1i64 << 47)).contains(&v) {
            return None;
        }
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    Some(out)
}

/// An INT48 tensor of `elements` as the container holds it (6 or 8 bytes each), as int64.
fn i48_from_memory(data: &[u8], elements: usize) -> Option<Vec<u8>> {
    let width = data.len().checked_div(elements).unwrap_or(8);
    if !matches!(width, 6 | 8) || width * elements != data.len() {
        return None;
    }
    Some(
        data.chunks_exact(width)
            .flat_map(|c| {
                let mut b = [0u8; 8];
                b[..width].copy_from_slice(c);
                // Sign-extend from bit 47.
                (((i64::from_le_bytes(b)) << 16) >> 16).to_le_bytes()
            })
            .collect(),
    )
}

/// A graph input or output of a container: its element type and byte range in its region.
fn container_tensor(t: &crate::container::TensorInfo) -> Result<(Dtype, usize, usize), RunError> {
    let dtype = manifest_dtype(&t.dtype).ok_or_else(|| {
        RunError::Model(format!("tensor {}: unsupported dtype {}", t.name, t.dtype))
    })?;
    let at = usize::try_from(t.offset)
        .map_err(|_| RunError::Model(format!("tensor {}: offset out of range", t.name)))?;
    let size = usize::try_from(t.size)
        .map_err(|_| RunError::Model(format!("tensor {}: size out of range", t.name)))?;
    Ok((dtype, at, size))
}

/// Runs an npuc container (`npuc compile -o MODEL.bin`) on `inputs` (in the graph's input
/// order): region 0 holds the read-only section, every other region of the manifest starts
/// zeroed with its recorded size, inputs are written and outputs read at their manifest
/// region and offset.
pub fn run_container(bytes: &[u8], inputs: &[Array]) -> Result<RunOutput, RunError> {
    let c = crate::container::from_bytes(bytes).map_err(|e| RunError::Model(e.to_string()))?;
    let accelerator =
        Accelerator::from_config_word(c.config_word).map_err(|e| RunError::Model(e.to_string()))?;
    let m = &c.manifest;
    if inputs.len() != m.inputs.len() {
        return Err(RunError::Input {
            index: inputs.len().min(m.inputs.len()),
            reason: format!(
                "the graph has {} inputs, {} given",
                m.inputs.len(),
                inputs.len()
            ),
        });
    }
    let mut sim = Simulator::new(accelerator);
    let mut regions = std::collections::BTreeMap::new();
    regions.insert(0u32, sim.memory_mut().add_region(0, c.read_only.clone()));
    for r in m.regions.iter().filter(|r| r.index != 0) {
        let region = u8::try_from(r.index)
            .ok()
            .filter(|&i| usize::from(i) < npuc_backend::sim::NUM_REGIONS)
            .ok_or_else(|| RunError::Model(format!("region {} does not exist", r.index)))?;
        let buffer = region_buffer(usize::from(region), r.size)
            .map_err(|e| RunError::Model(e.to_string()))?;
        regions.insert(r.index, sim.memory_mut().add_region(region, buffer));
    }
    let slot = |t: &crate::container::TensorInfo| -> Result<_, RunError> {
        let (dtype, at, size) = container_tensor(t)?;
        let buffer = *regions.get(&t.region).ok_or_else(|| {
            RunError::Model(format!(
                "tensor {} is in region {}, which the manifest does not list",
                t.name, t.region
            ))
        })?;
        Ok((dtype, at, size, buffer))
    };
    let mut notes = Vec::new();
    for (index, (t, a)) in m.inputs.iter().zip(inputs).enumerate() {
        let (dtype, at, size, buffer) = slot(t)?;
        let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
        // INT48 arrives as int64 and is packed into the tensor's element size first.
        let i48 = (t.dtype == "i48" && a.dtype == dtype)
            .then(|| i48_to_memory(&a.data, size))
            .flatten()
            .map(|data| Array {
                dtype: a.dtype,
                shape: a.shape.clone(),
                data,
            });
        let a = i48.as_ref().unwrap_or(a);
        notes.extend(accept_input(index, a, &t.name, dtype, &shape, size)?);
        let data = &a.data;
        sim.memory_mut()
            .buffer_mut(buffer)
            .get_mut(at..at + size)
            .ok_or_else(|| {
                RunError::Model(format!("input {} lies outside region {}", t.name, t.region))
            })?
            .copy_from_slice(data);
    }
    let report = sim
        .run(
            &c.payload
                .command_words()
                .map_err(|e| RunError::Model(e.to_string()))?,
        )
        .map_err(|source| RunError::Sim { op: 0, source })?;
    let mut outputs = Vec::new();
    for t in &m.outputs {
        let (dtype, at, size, buffer) = slot(t)?;
        let data = sim
            .memory()
            .buffer(buffer)
            .get(at..at + size)
            .ok_or_else(|| {
                RunError::Model(format!(
                    "output {} lies outside region {}",
                    t.name, t.region
                ))
            })?
            .to_vec();
        let data = if t.dtype == "i48" {
            let elements = t.shape.iter().map(|&d| d as usize).product();
            i48_from_memory(&data, elements).ok_or_else(|| {
                RunError::Model(format!(
                    "output {}: {} bytes do not hold {elements} INT48 values",
                    t.name, size
                ))
            })?
        } else {
            data
        };
        outputs.push(Array {
            dtype,
            shape: t.shape.iter().map(|&d| d as usize).collect(),
            data,
        });
    }
    Ok(RunOutput {
        outputs,
        reports: vec![report],
        cpu_ops: Vec::new(),
        accelerator: Some(accelerator),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::{i48_from_memory, i48_to_memory};

    fn int64(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn int48_round_trips_through_6_and_8_byte_elements() {
        let v = int64(&[-(1 << 47), -1, 0, 1, (1 << 47) - 1]);
        for width in [6, 8] {
            let m = i48_to_memory(&v, 5 * width).unwrap();
            assert_eq!(m.len(), 5 * width);
            assert_eq!(i48_from_memory(&m, 5).unwrap(), v);
        }
        // -1 packed in 6 bytes is 0xffff_ffff_ffff and reads back sign-extended.
        assert_eq!(&i48_to_memory(&int64(&[-1]), 6).unwrap(), &[0xff; 6]);
    }

    #[test]
    fn int48_refuses_values_beyond_48_bits_and_odd_sizes() {
        assert!(i48_to_memory(&int64(&[1 << 47]), 8).is_none());
        assert!(i48_to_memory(&int64(&[-(1 << 47) - 1]), 6).is_none());
        assert!(i48_to_memory(&int64(&[1, 2]), 12 + 1).is_none());
        assert!(i48_from_memory(&[0; 7], 1).is_none());
    }
}
