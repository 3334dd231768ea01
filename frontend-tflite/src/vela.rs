//! Vela artifacts: `ethos-u` custom operators and the `OfflineMemoryAllocation` metadata.
//!
//! Vela compiles each NPU part of a graph into one `CUSTOM` operator with custom code
//! `ethos-u`. Its inputs are, in order:
//!
//! 1. the command-stream payload (a `COP1`/`COP2` blob, returned here as raw bytes),
//! 2. `read_only`: region 0 data (encoded weights, scales, LUTs, constants),
//! 3. `scratch`: region 1, the feature-map arena (only its size matters),
//! 4. `scratch_fast`: region 2, SRAM staging (only its size matters; in the shared-SRAM
//!    memory modes this is the scratch tensor again),
//!
//! followed by the input feature maps. Its outputs are the output feature maps.
//! Arena offsets of tensors are in the `OfflineMemoryAllocation` metadata buffer: little-endian
//! i32 `[version = 0, n_subgraphs, n_tensors, offset of each tensor...]`, with the offsets of
//! subgraph 0's tensors first, then subgraph 1's, and -1 for tensors not in the arena
//! (constants).

use crate::error::{OpRef, TfliteError};
use crate::ids::{OpId, SubgraphId, TensorId};
use crate::model::{Operator, Quantization, Subgraph, Tensor, TfliteModel};
use crate::types::TensorType;

/// Custom code of Vela's NPU operators.
pub const ETHOS_U_CUSTOM_CODE: &str = "ethos-u";

/// Name of the metadata entry holding tensor arena offsets.
pub const OFFLINE_MEMORY_ALLOCATION: &str = "OfflineMemoryAllocation";

/// Decoded `OfflineMemoryAllocation` metadata: an arena offset per tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineMemoryAllocation {
    /// Offsets per subgraph, indexed by tensor; `None` where the file has -1.
    offsets: Vec<Vec<Option<u32>>>,
}

impl OfflineMemoryAllocation {
    /// Decodes the metadata bytes; `tensors_per_subgraph` gives the model's subgraph sizes,
    /// which the declared counts must match.
    pub fn parse(bytes: &[u8], tensors_per_subgraph: &[usize]) -> Result<Self, TfliteError> {
        let err = |reason: String| TfliteError::OfflineMemoryAllocation { reason };
        if bytes.len() < 12 {
            return Err(err(format!(
                "{} bytes, too short for the 12-byte header [version, subgraphs, tensors]",
                bytes.len()
            )));
        }
        let word = |i: usize| {
            let b = &bytes[4 * i..4 * i + 4];
            i32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        let (version, n_subgraphs, n_tensors) = (word(0), word(1), word(2));
        if version != 0 {
            return Err(err(format!("version {version}, only version 0 is known")));
        }
        let n_subgraphs = usize::try_from(n_subgraphs)
            .ok()
            .filter(|&n| n <= tensors_per_subgraph.len())
            .ok_or_else(|| {
                err(format!(
                    "declares {n_subgraphs} subgraphs, the model has {}",
                    tensors_per_subgraph.len()
                ))
            })?;
        let expected: usize = tensors_per_subgraph[..n_subgraphs].iter().sum();
        if usize::try_from(n_tensors).ok() != Some(expected) {
            return Err(err(format!(
                "declares {n_tensors} tensors, the first {n_subgraphs} subgraph(s) have {expected}"
            )));
        }
        let available = (bytes.len() - 12) / 4;
        if available < expected {
            return Err(err(format!(
                "declares {expected} tensor offsets but holds only {available} ({} bytes)",
                bytes.len()
            )));
        }

        let mut offsets = Vec::with_capacity(n_subgraphs);
        let mut next = 3;
        for &count in &tensors_per_subgraph[..n_subgraphs] {
            let mut sg = Vec::with_capacity(count);
            for t in 0..count {
                let value = word(next);
                next += 1;
                sg.push(match value {
                    -1 => None,
                    v => Some(u32::try_from(v).map_err(|_| {
                        err(format!(
                            "subgraph {} tensor {t}: offset {v} (at byte {}) is negative",
                            offsets.len(),
                            4 * (next - 1)
                        ))
                    })?),
                });
            }
            offsets.push(sg);
        }
        Ok(OfflineMemoryAllocation { offsets })
    }

    /// The arena offset of a tensor, `None` for constants or tensors not covered.
    pub fn offset(&self, subgraph: SubgraphId, tensor: TensorId) -> Option<u32> {
        self.offsets
            .get(subgraph.index())?
            .get(tensor.index())
            .copied()
            .flatten()
    }

    /// Number of subgraphs the metadata covers.
    pub fn num_subgraphs(&self) -> usize {
        self.offsets.len()
    }
}

/// A feature-map tensor (IFM, OFM, graph input or output) as a runtime needs to see it.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMap {
    pub tensor: TensorId,
    pub name: String,
    /// Static shape (Vela emits no dynamic dimensions).
    pub shape: Vec<usize>,
    pub dtype: TensorType,
    pub quantization: Option<Quantization>,
    /// Size in bytes (shape x element size).
    pub byte_size: usize,
    /// Offset in the scratch arena, from `OfflineMemoryAllocation`; `None` when the model
    /// has no such metadata or the tensor is not in the arena.
    pub arena_offset: Option<u32>,
}

/// One `ethos-u` custom operator.
#[derive(Debug, Clone, PartialEq)]
pub struct EthosUOp {
    pub subgraph: SubgraphId,
    pub op: OpId,
    /// The command-stream payload (`COP1`/`COP2` container), undecoded.
    pub payload: Vec<u8>,
    /// Region 0 contents (may be empty for networks without constants).
    pub read_only: Vec<u8>,
    /// Size of region 1 (the arena) in bytes.
    pub scratch_size: usize,
    /// Size of region 2 (fast scratch) in bytes.
    pub scratch_fast_size: usize,
    pub payload_tensor: TensorId,
    pub read_only_tensor: TensorId,
    pub scratch_tensor: TensorId,
    pub scratch_fast_tensor: TensorId,
    /// Input feature maps (operator inputs 5 onward).
    pub ifms: Vec<FeatureMap>,
    /// Output feature maps.
    pub ofms: Vec<FeatureMap>,
}

/// An operator Vela left for the CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuOp {
    pub subgraph: SubgraphId,
    pub op: OpId,
    /// The opcode as TFLite spells it (`CONV_2D`), or the custom code.
    pub name: String,
    pub inputs: Vec<Option<TensorId>>,
    pub outputs: Vec<TensorId>,
}

/// An operator of a Vela-compiled subgraph, in execution order.
#[derive(Debug, Clone, PartialEq)]
pub enum VelaOp {
    Npu(EthosUOp),
    Cpu(CpuOp),
}

/// One subgraph of a Vela-compiled model.
#[derive(Debug, Clone, PartialEq)]
pub struct VelaSubgraph {
    pub id: SubgraphId,
    pub inputs: Vec<FeatureMap>,
    pub outputs: Vec<FeatureMap>,
    /// All operators in execution order.
    pub ops: Vec<VelaOp>,
}

/// The runtime view of a Vela-compiled model.
#[derive(Debug, Clone, PartialEq)]
pub struct VelaModel {
    pub subgraphs: Vec<VelaSubgraph>,
    /// The decoded arena offsets, if the model has the metadata.
    pub offline_memory_allocation: Option<OfflineMemoryAllocation>,
}

impl VelaModel {
    /// All `ethos-u` operators, subgraph by subgraph, in execution order.
    pub fn ethos_u_ops(&self) -> impl Iterator<Item = &EthosUOp> {
        self.subgraphs.iter().flat_map(|sg| {
            sg.ops.iter().filter_map(|op| match op {
                VelaOp::Npu(npu) => Some(npu),
                VelaOp::Cpu(_) => None,
            })
        })
    }

    /// All operators left for the CPU, subgraph by subgraph, in execution order.
    pub fn cpu_ops(&self) -> impl Iterator<Item = &CpuOp> {
        self.subgraphs.iter().flat_map(|sg| {
            sg.ops.iter().filter_map(|op| match op {
                VelaOp::Cpu(cpu) => Some(cpu),
                VelaOp::Npu(_) => None,
            })
        })
    }
}

impl TfliteModel {
    /// Decodes the `OfflineMemoryAllocation` metadata, `Ok(None)` when the model has none.
    pub fn offline_memory_allocation(
        &self,
    ) -> Result<Option<OfflineMemoryAllocation>, TfliteError> {
        let Some(bytes) = self.metadata_bytes(OFFLINE_MEMORY_ALLOCATION) else {
            return Ok(None);
        };
        let sizes: Vec<usize> = self.subgraphs().iter().map(|s| s.tensors.len()).collect();
        OfflineMemoryAllocation::parse(bytes, &sizes).map(Some)
    }

    /// The model seen as Vela output: every subgraph's graph inputs and outputs (with arena
    /// offsets) and its operators, split into `ethos-u` NPU operators and CPU operators.
    ///
    /// Works on any model (one without `ethos-u` operators has only CPU operators), but
    /// requires static shapes on graph inputs and outputs.
    pub fn vela(&self) -> Result<VelaModel, TfliteError> {
        let oma = self.offline_memory_allocation()?;
        let subgraphs = self
            .subgraphs()
            .iter()
            .map(|sg| {
                let fm = |&t: &TensorId| feature_map(sg, t, oma.as_ref());
                let ops = sg
                    .operators
                    .iter()
                    .map(|op| {
                        if op.opcode.is_ethos_u() {
                            ethos_u_op(self, sg, op, oma.as_ref()).map(VelaOp::Npu)
                        } else {
                            Ok(VelaOp::Cpu(CpuOp {
                                subgraph: sg.id,
                                op: op.id,
                                name: op.opcode.name().into_owned(),
                                inputs: op.inputs.clone(),
                                outputs: op.outputs.clone(),
                            }))
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(VelaSubgraph {
                    id: sg.id,
                    inputs: sg.inputs.iter().map(fm).collect::<Result<_, _>>()?,
                    outputs: sg.outputs.iter().map(fm).collect::<Result<_, _>>()?,
                    ops,
                })
            })
            .collect::<Result<Vec<_>, TfliteError>>()?;
        Ok(VelaModel {
            subgraphs,
            offline_memory_allocation: oma,
        })
    }

    /// All `ethos-u` operators of the model, subgraph by subgraph, in execution order.
    pub fn ethos_u_ops(&self) -> Result<Vec<EthosUOp>, TfliteError> {
        let oma = self.offline_memory_allocation()?;
        let mut ops = Vec::new();
        for sg in self.subgraphs() {
            for op in sg.operators.iter().filter(|op| op.opcode.is_ethos_u()) {
                ops.push(ethos_u_op(self, sg, op, oma.as_ref())?);
            }
        }
        Ok(ops)
    }
}

/// Tensor ids stored in a parsed model are in range; this keeps the lookup panic-free anyway.
fn tensor(sg: &Subgraph, id: TensorId, at: impl FnOnce() -> OpRef) -> Result<&Tensor, TfliteError> {
    sg.tensor(id).ok_or_else(|| TfliteError::EthosU {
        at: at(),
        reason: format!("tensor {id} is not in the subgraph"),
    })
}

fn feature_map(
    sg: &Subgraph,
    id: TensorId,
    oma: Option<&OfflineMemoryAllocation>,
) -> Result<FeatureMap, TfliteError> {
    let t = sg.tensor(id).ok_or(TfliteError::TensorIndexOutOfRange {
        subgraph: sg.id,
        context: "feature map".to_owned(),
        index: id.index() as i64,
        num_tensors: sg.tensors.len(),
    })?;
    let shape = t.static_shape()?;
    let byte_size = sized(t)?;
    Ok(FeatureMap {
        tensor: id,
        name: t.name.clone(),
        shape,
        dtype: t.dtype,
        quantization: t.quantization.clone(),
        byte_size,
        arena_offset: oma.and_then(|o| o.offset(sg.id, id)),
    })
}

/// Byte size of a static tensor, or an error naming it.
fn sized(t: &Tensor) -> Result<usize, TfliteError> {
    t.static_shape()?;
    t.byte_size().ok_or_else(|| TfliteError::InvalidShape {
        at: t.at(),
        shape: t.shape.clone(),
        reason: format!(
            "no byte size: type {} has no fixed element size, or the size overflows",
            t.dtype
        ),
    })
}

fn ethos_u_op(
    model: &TfliteModel,
    sg: &Subgraph,
    op: &Operator,
    oma: Option<&OfflineMemoryAllocation>,
) -> Result<EthosUOp, TfliteError> {
    let err = |reason: String| TfliteError::EthosU {
        at: op.at(),
        reason,
    };
    const ROLES: [&str; 4] = [
        "command stream",
        "read_only (region 0)",
        "scratch (region 1)",
        "scratch_fast (region 2)",
    ];
    if op.inputs.len() < ROLES.len() {
        return Err(err(format!(
            "{} inputs, needs at least 4 (command stream, read_only, scratch, scratch_fast)",
            op.inputs.len()
        )));
    }
    let mut fixed = [TensorId::new(0); 4];
    for (k, role) in ROLES.iter().enumerate() {
        fixed[k] =
            op.inputs[k].ok_or_else(|| err(format!("input {k} ({role}) is omitted (-1)")))?;
    }
    let [payload_tensor, read_only_tensor, scratch_tensor, scratch_fast_tensor] = fixed;

    let payload_t = tensor(sg, payload_tensor, || op.at())?;
    let payload = model
        .tensor_data(payload_t)
        .ok_or_else(|| {
            err(format!(
                "command stream tensor {payload_tensor} {:?} has no data",
                payload_t.name
            ))
        })?
        .to_vec();
    let read_only_t = tensor(sg, read_only_tensor, || op.at())?;
    let read_only = model.tensor_data(read_only_t).unwrap_or_default().to_vec();
    let scratch_size = sized(tensor(sg, scratch_tensor, || op.at())?)?;
    let scratch_fast_size = sized(tensor(sg, scratch_fast_tensor, || op.at())?)?;

    let ifms = op.inputs[ROLES.len()..]
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let t = t.ok_or_else(|| {
                err(format!(
                    "input {} (feature map {k}) is omitted (-1)",
                    k + ROLES.len()
                ))
            })?;
            feature_map(sg, t, oma)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ofms = op
        .outputs
        .iter()
        .map(|&t| feature_map(sg, t, oma))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(EthosUOp {
        subgraph: sg.id,
        op: op.id,
        payload,
        read_only,
        scratch_size,
        scratch_fast_size,
        payload_tensor,
        read_only_tensor,
        scratch_tensor,
        scratch_fast_tensor,
        ifms,
        ofms,
    })
}
