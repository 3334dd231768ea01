//! The owned, verified view of a TFLite model.

use std::borrow::Cow;

use crate::error::{OpRef, TensorRef, TfliteError};
use crate::ids::{BufferId, OpId, OpcodeId, SubgraphId, TensorId};
use crate::schema as fb;
use crate::schema::{BuiltinOperator, BuiltinOptions2T, BuiltinOptionsT};
use crate::types::TensorType;

/// The TFLite file identifier, at bytes 4..8 of a file that carries one.
pub const TFLITE_IDENTIFIER: &[u8; 4] = b"TFL3";

/// Limits handed to the flatbuffers verifier.
///
/// The depth and table limits are the verifier's defaults. The "apparent size" (bytes visited
/// when the object graph is expanded into a tree) is limited to 8x the file size (at least
/// 1 MiB, at most 2 GiB): honest TFLite writers do not share objects, so a file whose
/// apparent size is far larger than itself is a decompression bomb for the reader.
fn verifier_options(file_len: usize) -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: 1_000_000,
        max_apparent_size: file_len.saturating_mul(8).clamp(1 << 20, 1 << 31),
        ignore_missing_null_terminator: false,
    }
}

/// A parsed TFLite model: everything copied out of the flatbuffer into owned, typed data.
///
/// Construct it with [`TfliteModel::parse`]. Every index inside (tensor, buffer, opcode,
/// subgraph) has been range-checked, and every constant tensor's data size matches its shape
/// and type, so the accessors below never fail on a parsed model.
#[derive(Debug, Clone)]
pub struct TfliteModel {
    version: u32,
    description: Option<String>,
    operator_codes: Vec<OperatorCode>,
    subgraphs: Vec<Subgraph>,
    buffers: Vec<Buffer>,
    metadata: Vec<Metadata>,
    signature_defs: Vec<SignatureDef>,
}

/// An entry of the model's `operator_codes` table, with the builtin code resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorCode {
    /// The builtin operator. The schema stores it twice: `deprecated_builtin_code` (an i8,
    /// used by old writers, and saturated at 127 = `PLACEHOLDER_FOR_GREATER_OP_CODES` by new
    /// ones) and `builtin_code` (an i32, 0 in old files). The code is the larger of the two.
    pub builtin: BuiltinOperator,
    /// The custom code, for `builtin == CUSTOM` (`"ethos-u"` for Vela's NPU operators).
    pub custom_code: Option<String>,
    /// Operator version.
    pub version: i32,
}

impl OperatorCode {
    /// True for `CUSTOM` operators.
    pub fn is_custom(&self) -> bool {
        self.builtin == BuiltinOperator::CUSTOM
    }

    /// True for Vela's NPU operator: `CUSTOM` with custom code `ethos-u`.
    pub fn is_ethos_u(&self) -> bool {
        self.is_custom() && self.custom_code.as_deref() == Some(crate::vela::ETHOS_U_CUSTOM_CODE)
    }

    /// The operator's name: the builtin operator as TFLite spells it (`CONV_2D`), the custom
    /// code for custom operators, `UNKNOWN_BUILTIN(n)` for codes this schema does not know.
    pub fn name(&self) -> Cow<'_, str> {
        if self.is_custom() {
            if let Some(code) = &self.custom_code {
                return Cow::Borrowed(code);
            }
        }
        match self.builtin.variant_name() {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("UNKNOWN_BUILTIN({})", self.builtin.0)),
        }
    }
}

/// Where a buffer's bytes were found in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferStorage {
    /// No data (the sentinel buffer 0, activations, variables).
    Empty,
    /// In the flatbuffer's `data` vector, starting at this file offset.
    Inline { file_offset: usize },
    /// Past the flatbuffer, through the `offset`/`size` fields used by models over 2 GiB.
    Appended { file_offset: u64 },
}

/// An entry of the model's `buffers` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    pub id: BufferId,
    pub data: Vec<u8>,
    pub storage: BufferStorage,
}

/// Kind of the `details` union of a tensor's quantization (non-affine schemes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantizationDetails {
    Custom,
    Blockwise,
    MultiAxis,
    /// A union type this schema does not know.
    Unknown(u8),
}

/// Affine quantization of a tensor: `real = scale * (q - zero_point)`.
///
/// One scale means per-tensor; more than one means per-axis along `quantized_dimension`,
/// with one scale per index of that dimension (checked at parse time).
#[derive(Debug, Clone, PartialEq)]
pub struct Quantization {
    pub scale: Vec<f32>,
    /// Same length as `scale` (checked at parse time).
    pub zero_point: Vec<i64>,
    pub quantized_dimension: usize,
    /// Float range recorded by the converter, often empty.
    pub min: Vec<f32>,
    pub max: Vec<f32>,
    /// Set when the tensor uses a non-affine scheme; the affine fields are then meaningless.
    pub details: Option<QuantizationDetails>,
}

impl Quantization {
    /// True for exactly one scale and zero point.
    pub fn is_per_tensor(&self) -> bool {
        self.scale.len() == 1
    }

    /// True for one scale per index of `quantized_dimension`.
    pub fn is_per_axis(&self) -> bool {
        self.scale.len() > 1
    }
}

/// A tensor of a subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub subgraph: SubgraphId,
    pub id: TensorId,
    pub name: String,
    /// The shape as stored. Converters write 1 (and sometimes -1) for unknown dimensions;
    /// `shape_signature` tells which ones they are.
    pub shape: Vec<i32>,
    /// The shape with -1 for dynamic dimensions, when the converter recorded one.
    pub shape_signature: Option<Vec<i32>>,
    /// False only for tensors of unknown rank (whose `shape` is then empty).
    pub has_rank: bool,
    pub dtype: TensorType,
    /// Index into the model's buffers; 0 (the empty sentinel) for tensors without data.
    pub buffer: BufferId,
    /// `None` for tensors that are not quantized (no quantization table or no scales).
    pub quantization: Option<Quantization>,
    pub is_variable: bool,
    /// True when the tensor has `sparsity` parameters (its buffer is then compressed).
    pub is_sparse: bool,
    /// The `external_buffer` id (data in another file), not resolved by this reader.
    pub external_buffer: Option<u32>,
}

impl Tensor {
    /// The reference used in error messages.
    pub fn at(&self) -> TensorRef {
        TensorRef {
            subgraph: self.subgraph,
            tensor: self.id,
            name: self.name.clone(),
        }
    }

    /// True if the shape or the shape signature has a negative (unknown) dimension.
    pub fn is_dynamic(&self) -> bool {
        let negative = |dims: &[i32]| dims.iter().any(|&d| d < 0);
        negative(&self.shape) || self.shape_signature.as_deref().is_some_and(negative)
    }

    /// The shape as sizes, or [`TfliteError::DynamicShape`] if a stored dimension is unknown.
    /// A dimension that is dynamic only in `shape_signature` (e.g. a batch of -1) takes its
    /// stored size, the size TFLite's interpreter allocates before any resize (and Vela
    /// compiles; decision F10). This is the check lowering applies; reading a model never
    /// rejects dynamic shapes.
    pub fn static_shape(&self) -> Result<Vec<usize>, TfliteError> {
        if self.shape.iter().any(|&d| d < 0) {
            return Err(TfliteError::DynamicShape {
                at: self.at(),
                shape: self.shape.clone(),
                signature: self.shape_signature.clone(),
            });
        }
        Ok(self.shape.iter().map(|&d| d as usize).collect())
    }

    /// Number of elements, `None` for dynamic shapes or on overflow.
    pub fn num_elements(&self) -> Option<usize> {
        element_count(&self.shape)
    }

    /// Bytes the tensor occupies (packed for sub-byte types), `None` for dynamic shapes,
    /// types without a fixed element size, or on overflow.
    pub fn byte_size(&self) -> Option<usize> {
        self.dtype.byte_size(self.num_elements()?)
    }
}

/// An operator of a subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct Operator {
    pub subgraph: SubgraphId,
    pub id: OpId,
    pub opcode_index: OpcodeId,
    /// Copy of `operator_codes[opcode_index]`.
    pub opcode: OperatorCode,
    /// `None` where the file has -1 (an omitted optional input).
    pub inputs: Vec<Option<TensorId>>,
    pub outputs: Vec<TensorId>,
    pub intermediates: Vec<TensorId>,
    /// The builtin options table, owned (generated object API types).
    pub builtin_options: BuiltinOptionsT,
    /// The second options union used by newer (StableHLO) operators.
    pub builtin_options_2: BuiltinOptions2T,
    /// Custom options bytes (inline, or from `large_custom_options_offset/size`).
    pub custom_options: Vec<u8>,
}

impl Operator {
    /// The reference used in error messages.
    pub fn at(&self) -> OpRef {
        OpRef {
            subgraph: self.subgraph,
            op: self.id,
            opcode: self.opcode.name().into_owned(),
        }
    }

    /// Name of the builtin options table type (`"Conv2DOptions"`), `None` if there is none.
    pub fn builtin_options_type(&self) -> Option<&'static str> {
        match self.builtin_options.builtin_options_type() {
            fb::BuiltinOptions::NONE => None,
            t => t.variant_name(),
        }
    }
}

/// A subgraph: tensors, operators in execution order, graph inputs and outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Subgraph {
    pub id: SubgraphId,
    pub name: Option<String>,
    pub tensors: Vec<Tensor>,
    pub operators: Vec<Operator>,
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
}

impl Subgraph {
    pub fn tensor(&self, id: TensorId) -> Option<&Tensor> {
        self.tensors.get(id.index())
    }

    pub fn operator(&self, id: OpId) -> Option<&Operator> {
        self.operators.get(id.index())
    }
}

/// A named metadata entry (`"min_runtime_version"`, `"OfflineMemoryAllocation"`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub name: String,
    pub buffer: BufferId,
}

/// A signature: named inputs and outputs of one subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureDef {
    pub key: String,
    pub subgraph: SubgraphId,
    pub inputs: Vec<(String, TensorId)>,
    pub outputs: Vec<(String, TensorId)>,
}

impl TfliteModel {
    /// Parses and verifies a `.tflite` file.
    ///
    /// The bytes are checked with the flatbuffers verifier before anything is read; then every
    /// cross-reference is range-checked and every constant buffer's size is compared with its
    /// tensor's shape and type. A file identifier other than `TFL3` at bytes 4..8 is rejected
    /// when it looks like one (four ASCII letters or digits); flatbuffers without an
    /// identifier are accepted.
    pub fn parse(bytes: &[u8]) -> Result<Self, TfliteError> {
        if bytes.len() < 8 {
            return Err(TfliteError::TooShort { len: bytes.len() });
        }
        let ident = &bytes[4..8];
        if ident != TFLITE_IDENTIFIER && ident.iter().all(u8::is_ascii_alphanumeric) {
            return Err(TfliteError::WrongIdentifier {
                found: String::from_utf8_lossy(ident).into_owned(),
            });
        }
        let model = fb::root_as_model_with_opts(&verifier_options(bytes.len()), bytes)
            .map_err(|e| TfliteError::invalid_flatbuffer(&e, bytes.len()))?;

        let buffers = read_buffers(&model, bytes)?;
        let operator_codes: Vec<OperatorCode> = model
            .operator_codes()
            .into_iter()
            .flatten()
            .map(read_operator_code)
            .collect();

        let subgraphs = model
            .subgraphs()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, sg)| read_subgraph(SubgraphId::new(i), sg, &buffers, &operator_codes, bytes))
            .collect::<Result<Vec<_>, _>>()?;
        if subgraphs.is_empty() {
            return Err(TfliteError::NoSubgraphs);
        }

        let metadata = model
            .metadata()
            .into_iter()
            .flatten()
            .map(|m| {
                let name = m.name().unwrap_or_default().to_owned();
                let buffer = m.buffer();
                if buffer as usize >= buffers.len() {
                    return Err(TfliteError::MetadataBufferOutOfRange {
                        name,
                        buffer,
                        num_buffers: buffers.len(),
                    });
                }
                Ok(Metadata {
                    name,
                    buffer: BufferId::new(buffer as usize),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;

        let signature_defs = model
            .signature_defs()
            .into_iter()
            .flatten()
            .map(|s| read_signature_def(s, &subgraphs))
            .collect::<Result<Vec<_>, _>>()?;

        Ok(TfliteModel {
            version: model.version(),
            description: model.description().map(str::to_owned),
            operator_codes,
            subgraphs,
            buffers,
            metadata,
            signature_defs,
        })
    }

    /// Schema version (3 for current files).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The model description (converters write e.g. `"MLIR Converted."`; Vela its own).
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    pub fn operator_codes(&self) -> &[OperatorCode] {
        &self.operator_codes
    }

    /// All subgraphs; there is at least one.
    pub fn subgraphs(&self) -> &[Subgraph] {
        &self.subgraphs
    }

    pub fn subgraph(&self, id: SubgraphId) -> Option<&Subgraph> {
        self.subgraphs.get(id.index())
    }

    /// Subgraph 0, the main graph.
    pub fn main_subgraph(&self) -> &Subgraph {
        // `parse` rejects models without subgraphs.
        &self.subgraphs[0]
    }

    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    pub fn buffer(&self, id: BufferId) -> Option<&Buffer> {
        self.buffers.get(id.index())
    }

    /// The constant data of a tensor, `None` when its buffer is empty.
    pub fn tensor_data(&self, tensor: &Tensor) -> Option<&[u8]> {
        self.buffer(tensor.buffer)
            .map(|b| b.data.as_slice())
            .filter(|d| !d.is_empty())
    }

    pub fn metadata(&self) -> &[Metadata] {
        &self.metadata
    }

    /// The bytes of the first metadata entry called `name`.
    pub fn metadata_bytes(&self, name: &str) -> Option<&[u8]> {
        self.metadata
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| self.buffer(m.buffer))
            .map(|b| b.data.as_slice())
    }

    pub fn signature_defs(&self) -> &[SignatureDef] {
        &self.signature_defs
    }
}

/// Product of the dimensions, `None` if one is negative or on overflow. Empty shape: 1.
fn element_count(shape: &[i32]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| {
        let d = usize::try_from(d).ok()?;
        n.checked_mul(d)
    })
}

fn read_buffers(model: &fb::Model<'_>, file: &[u8]) -> Result<Vec<Buffer>, TfliteError> {
    let file_start = file.as_ptr() as usize;
    model
        .buffers()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, b)| {
            let id = BufferId::new(i);
            let inline = b.data().map(|v| v.bytes()).unwrap_or_default();
            // The schema: offset/size are "only valid if > 1".
            let (offset, size) = (b.offset(), b.size());
            if offset > 1 {
                if !inline.is_empty() {
                    return Err(TfliteError::AmbiguousBuffer {
                        buffer: id,
                        inline_len: inline.len(),
                        offset,
                        size,
                    });
                }
                let data = file_range(file, offset, size).ok_or(TfliteError::BufferOutOfFile {
                    buffer: id,
                    offset,
                    size,
                    file_len: file.len(),
                })?;
                Ok(Buffer {
                    id,
                    data: data.to_vec(),
                    storage: BufferStorage::Appended {
                        file_offset: offset,
                    },
                })
            } else if inline.is_empty() {
                Ok(Buffer {
                    id,
                    data: Vec::new(),
                    storage: BufferStorage::Empty,
                })
            } else {
                Ok(Buffer {
                    id,
                    data: inline.to_vec(),
                    storage: BufferStorage::Inline {
                        // The verified vector is a subslice of `file`.
                        file_offset: (inline.as_ptr() as usize).saturating_sub(file_start),
                    },
                })
            }
        })
        .collect()
}

/// `file[offset..offset + size]`, `None` if any of it is outside the file.
fn file_range(file: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    file.get(start..end)
}

fn read_operator_code(code: fb::OperatorCode<'_>) -> OperatorCode {
    let deprecated = i32::from(code.deprecated_builtin_code());
    let extended = code.builtin_code().0;
    OperatorCode {
        builtin: BuiltinOperator(deprecated.max(extended)),
        custom_code: code.custom_code().map(str::to_owned),
        version: code.version(),
    }
}

fn read_subgraph(
    id: SubgraphId,
    sg: fb::SubGraph<'_>,
    buffers: &[Buffer],
    opcodes: &[OperatorCode],
    file: &[u8],
) -> Result<Subgraph, TfliteError> {
    let tensors = sg
        .tensors()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, t)| read_tensor(id, TensorId::new(i), t, buffers))
        .collect::<Result<Vec<_>, _>>()?;
    let n = tensors.len();

    let operators = sg
        .operators()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, op)| read_operator(id, OpId::new(i), op, opcodes, n, file))
        .collect::<Result<Vec<_>, _>>()?;

    let io = |list: Option<flatbuffers::Vector<'_, i32>>, what: &str| {
        list.into_iter()
            .flatten()
            .enumerate()
            .map(|(k, t)| tensor_index(id, n, i64::from(t), || format!("graph {what} {k}")))
            .collect::<Result<Vec<_>, _>>()
    };
    let inputs = io(sg.inputs(), "input")?;
    let outputs = io(sg.outputs(), "output")?;

    Ok(Subgraph {
        id,
        name: sg.name().map(str::to_owned),
        tensors,
        operators,
        inputs,
        outputs,
    })
}

fn tensor_index(
    subgraph: SubgraphId,
    num_tensors: usize,
    index: i64,
    context: impl FnOnce() -> String,
) -> Result<TensorId, TfliteError> {
    match usize::try_from(index) {
        Ok(i) if i < num_tensors => Ok(TensorId::new(i)),
        _ => Err(TfliteError::TensorIndexOutOfRange {
            subgraph,
            context: context(),
            index,
            num_tensors,
        }),
    }
}

fn read_tensor(
    subgraph: SubgraphId,
    id: TensorId,
    t: fb::Tensor<'_>,
    buffers: &[Buffer],
) -> Result<Tensor, TfliteError> {
    let at = || TensorRef {
        subgraph,
        tensor: id,
        name: t.name().unwrap_or_default().to_owned(),
    };
    let shape: Vec<i32> = t.shape().into_iter().flatten().collect();
    let dtype =
        TensorType::from_code(t.type_().0).ok_or_else(|| TfliteError::UnknownTensorType {
            at: at(),
            code: t.type_().0,
        })?;
    let buffer_index = t.buffer();
    let buffer =
        buffers
            .get(buffer_index as usize)
            .ok_or_else(|| TfliteError::BufferIndexOutOfRange {
                at: at(),
                buffer: buffer_index,
                num_buffers: buffers.len(),
            })?;
    let quantization = read_quantization(&shape, t.quantization(), at)?;
    let is_sparse = t.sparsity().is_some();

    // A dense constant must hold exactly shape x element size bytes.
    if !buffer.data.is_empty() && !is_sparse && dtype.bits().is_some() {
        let elements = element_count(&shape).ok_or_else(|| TfliteError::InvalidShape {
            at: at(),
            shape: shape.clone(),
            reason: "a tensor with data needs non-negative dimensions whose product fits in \
                     memory"
                .to_owned(),
        })?;
        let expected = dtype
            .byte_size(elements)
            .ok_or_else(|| TfliteError::InvalidShape {
                at: at(),
                shape: shape.clone(),
                reason: "byte size overflows".to_owned(),
            })?;
        if expected != buffer.data.len() {
            return Err(TfliteError::DataSizeMismatch {
                at: at(),
                buffer: buffer.id,
                shape,
                dtype,
                expected,
                actual: buffer.data.len(),
            });
        }
    }

    Ok(Tensor {
        subgraph,
        id,
        name: t.name().unwrap_or_default().to_owned(),
        shape,
        shape_signature: t.shape_signature().map(|s| s.iter().collect()),
        has_rank: t.has_rank(),
        dtype,
        buffer: buffer.id,
        quantization,
        is_variable: t.is_variable(),
        is_sparse,
        external_buffer: Some(t.external_buffer()).filter(|&e| e != 0),
    })
}

fn read_quantization(
    shape: &[i32],
    q: Option<fb::QuantizationParameters<'_>>,
    at: impl Fn() -> TensorRef,
) -> Result<Option<Quantization>, TfliteError> {
    let Some(q) = q else { return Ok(None) };
    let invalid = |reason: String| TfliteError::InvalidQuantization { at: at(), reason };

    let details = match q.details_type() {
        fb::QuantizationDetails::NONE => None,
        fb::QuantizationDetails::CustomQuantization => Some(QuantizationDetails::Custom),
        fb::QuantizationDetails::BlockwiseQuantization => Some(QuantizationDetails::Blockwise),
        fb::QuantizationDetails::MultiAxisQuantization => Some(QuantizationDetails::MultiAxis),
        other => Some(QuantizationDetails::Unknown(other.0)),
    };
    let scale: Vec<f32> = q.scale().into_iter().flatten().collect();
    let zero_point: Vec<i64> = q.zero_point().into_iter().flatten().collect();
    if scale.is_empty() && details.is_none() {
        // No scales: not quantized (only min/max, or an empty table).
        if !zero_point.is_empty() {
            return Err(invalid(format!(
                "{} zero points but no scales",
                zero_point.len()
            )));
        }
        return Ok(None);
    }

    let raw_dim = q.quantized_dimension();
    let quantized_dimension =
        usize::try_from(raw_dim).map_err(|_| invalid(format!("quantized_dimension {raw_dim}")))?;
    if details.is_none() {
        if zero_point.len() != scale.len() {
            return Err(invalid(format!(
                "{} scales but {} zero points",
                scale.len(),
                zero_point.len()
            )));
        }
        if scale.len() > 1 {
            let Some(&dim) = shape.get(quantized_dimension) else {
                return Err(invalid(format!(
                    "quantized_dimension {quantized_dimension} is outside shape {shape:?}"
                )));
            };
            if usize::try_from(dim).ok() != Some(scale.len()) {
                return Err(invalid(format!(
                    "{} per-axis scales for dimension {quantized_dimension} of shape {shape:?}",
                    scale.len()
                )));
            }
        }
    }

    Ok(Some(Quantization {
        scale,
        zero_point,
        quantized_dimension,
        min: q.min().into_iter().flatten().collect(),
        max: q.max().into_iter().flatten().collect(),
        details,
    }))
}

fn read_operator(
    subgraph: SubgraphId,
    id: OpId,
    op: fb::Operator<'_>,
    opcodes: &[OperatorCode],
    num_tensors: usize,
    file: &[u8],
) -> Result<Operator, TfliteError> {
    let index = op.opcode_index();
    let opcode = opcodes
        .get(index as usize)
        .ok_or(TfliteError::OpcodeIndexOutOfRange {
            subgraph,
            op: id,
            index,
            num_opcodes: opcodes.len(),
        })?
        .clone();
    let at = || OpRef {
        subgraph,
        op: id,
        opcode: opcode.name().into_owned(),
    };
    let context = |what: &str, k: usize| format!("operator {id} ({}) {what} {k}", opcode.name());

    let inputs =
        op.inputs()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(k, t)| match t {
                -1 => Ok(None),
                t => tensor_index(subgraph, num_tensors, i64::from(t), || context("input", k))
                    .map(Some),
            })
            .collect::<Result<Vec<_>, _>>()?;
    let indices = |list: Option<flatbuffers::Vector<'_, i32>>, what: &str| {
        list.into_iter()
            .flatten()
            .enumerate()
            .map(|(k, t)| tensor_index(subgraph, num_tensors, i64::from(t), || context(what, k)))
            .collect::<Result<Vec<_>, _>>()
    };
    let outputs = indices(op.outputs(), "output")?;
    let intermediates = indices(op.intermediates(), "intermediate")?;

    // Same convention as buffers: the large form is "only valid if > 1".
    let (large_offset, large_size) = (
        op.large_custom_options_offset(),
        op.large_custom_options_size(),
    );
    let custom_options = if large_offset > 1 {
        file_range(file, large_offset, large_size)
            .ok_or_else(|| TfliteError::CustomOptionsOutOfFile {
                at: at(),
                offset: large_offset,
                size: large_size,
                file_len: file.len(),
            })?
            .to_vec()
    } else {
        op.custom_options()
            .map(|v| v.bytes().to_vec())
            .unwrap_or_default()
    };

    // The object API copies the options tables; the flatbuffer was verified, so the
    // generated unpack code finds every union value its type field announces.
    let unpacked = op.unpack();

    Ok(Operator {
        subgraph,
        id,
        opcode_index: OpcodeId::new(index as usize),
        opcode,
        inputs,
        outputs,
        intermediates,
        builtin_options: unpacked.builtin_options,
        builtin_options_2: unpacked.builtin_options_2,
        custom_options,
    })
}

fn read_signature_def(
    s: fb::SignatureDef<'_>,
    subgraphs: &[Subgraph],
) -> Result<SignatureDef, TfliteError> {
    let key = s.signature_key().unwrap_or_default().to_owned();
    let index = s.subgraph_index();
    let subgraph =
        subgraphs
            .get(index as usize)
            .ok_or_else(|| TfliteError::SubgraphIndexOutOfRange {
                context: format!("signature {key:?}"),
                index,
                num_subgraphs: subgraphs.len(),
            })?;
    let map =
        |list: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::TensorMap<'_>>>>,
         what: &str| {
            list.into_iter()
                .flatten()
                .map(|m| {
                    let name = m.name().unwrap_or_default().to_owned();
                    let t = tensor_index(
                        subgraph.id,
                        subgraph.tensors.len(),
                        i64::from(m.tensor_index()),
                        || format!("signature {key:?} {what} {name:?}"),
                    )?;
                    Ok((name, t))
                })
                .collect::<Result<Vec<_>, TfliteError>>()
        };
    Ok(SignatureDef {
        inputs: map(s.inputs(), "input")?,
        outputs: map(s.outputs(), "output")?,
        subgraph: subgraph.id,
        key,
    })
}
