//! The npuc container: what `npuc compile -o MODEL.bin` writes (format in `docs/container.md`).
//!
//! A 56-byte little-endian header (magic `NPUC`, version, the CONFIG word of the target
//! configuration, section offsets and sizes, the arena and fast-memory sizes) followed by three 16-byte aligned
//! sections: the command stream, the read-only region (region 0) and the manifest, a protobuf
//! message ([`Manifest`], encoded with prost; the message types are written by hand with
//! prost's derive, so no `protoc` is needed). The same model and options always give the
//! same bytes. Version 1 containers (JSON manifest) and version 2 (no region 2) are rejected with
//! an error that says so.

use crate::compile::{CompiledModel, TensorPlacement, REGION_ARENA, REGION_FAST, REGION_READ_ONLY};
use crate::payload::{PayloadFormat, TargetPayload};
use npuc_ir::Quantization;
use prost::Message;
use thiserror::Error;

/// The four magic bytes.
pub const MAGIC: [u8; 4] = *b"NPUC";
/// The container version this module writes and reads.
pub const VERSION: u32 = 3;
/// Header size in bytes.
pub const HEADER_BYTES: usize = 56;

/// Why bytes are not a valid container.
#[derive(Debug, Error)]
pub enum ContainerError {
    #[error("not an npuc container (bad magic)")]
    Magic,
    #[error("npuc container version 1 (JSON manifest) is no longer read; recompile the model with this npuc (container version 3)")]
    Version1,
    #[error("npuc container version 2 (feature maps in the arena only) is no longer read; recompile the model with this npuc (container version 3)")]
    Version2,
    #[error("unsupported container version {0} (this npuc reads version 3)")]
    Version(u32),
    #[error("truncated container: {0}")]
    Truncated(&'static str),
    #[error("manifest: {0}")]
    Manifest(#[from] prost::DecodeError),
}

/// Quantization of a tensor in the manifest.
#[derive(Clone, PartialEq, Message)]
pub struct QuantInfo {
    /// Quantized axis for per-axis quantization, absent for per-tensor.
    #[prost(uint32, optional, tag = "1")]
    pub axis: Option<u32>,
    #[prost(double, repeated, tag = "2")]
    pub scales: Vec<f64>,
    #[prost(int64, repeated, tag = "3")]
    pub zero_points: Vec<i64>,
}

/// A graph input or output in the manifest.
#[derive(Clone, PartialEq, Message)]
pub struct TensorInfo {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(uint64, repeated, tag = "2")]
    pub shape: Vec<u64>,
    /// `i8`, `i16`, `i32`, ... ([`npuc_ir::DType::name`]).
    #[prost(string, tag = "3")]
    pub dtype: String,
    #[prost(message, optional, tag = "4")]
    pub quantization: Option<QuantInfo>,
    #[prost(uint32, tag = "5")]
    pub region: u32,
    #[prost(uint64, tag = "6")]
    pub offset: u64,
    #[prost(uint64, tag = "7")]
    pub size: u64,
}

/// A memory region in the manifest.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct RegionInfo {
    #[prost(uint32, tag = "1")]
    pub index: u32,
    /// `read_only`, `arena` or `fast`.
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(uint64, tag = "3")]
    pub size: u64,
}

/// One NPU operation in the manifest.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct OperatorEntry {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub kernel: String,
    #[prost(string, repeated, tag = "3")]
    pub fused: Vec<String>,
    #[prost(uint64, tag = "4")]
    pub estimated_cycles: u64,
    /// The source model's operators it computes, in order (layer map version 1; empty in
    /// older containers).
    #[prost(message, repeated, tag = "5")]
    pub sources: Vec<SourceEntry>,
    /// Byte offsets in the command stream of the kernel and DMA commands attributed to it
    /// ([`crate::layers::attribute`]; layer map version 1).
    #[prost(uint32, repeated, tag = "6")]
    pub commands: Vec<u32>,
}

/// A source model operator of an NPU operation.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct SourceEntry {
    /// The TFLite operator index (main subgraph); absent for a TOSA operator.
    #[prost(uint32, optional, tag = "1")]
    pub index: Option<u32>,
    /// The TFLite builtin (`CONV_2D`) or TOSA operator (`CONV2D`).
    #[prost(string, tag = "2")]
    pub op: String,
    /// Name of its (first) output tensor.
    #[prost(string, tag = "3")]
    pub output: String,
}

/// The NPU operations of one command stream (one `ethos-u` operator of a `.tflite`).
#[derive(Clone, PartialEq, Message)]
pub struct StreamLayers {
    #[prost(message, repeated, tag = "1")]
    pub operators: Vec<OperatorEntry>,
}

/// The `npuc_layers` metadata of a `.tflite` output ([`crate::layers::TFLITE_METADATA_NAME`]):
/// the layer map of each `ethos-u` operator, in the order of the operators, and the source
/// operators left on the CPU.
#[derive(Clone, PartialEq, Message)]
pub struct LayerMaps {
    /// The layer map version ([`crate::layers::LAYERS_VERSION`]).
    #[prost(uint32, tag = "1")]
    pub version: u32,
    #[prost(message, repeated, tag = "2")]
    pub streams: Vec<StreamLayers>,
    /// The source operators left on the CPU (the reasons are in `npuc compile`'s summary).
    #[prost(message, repeated, tag = "3")]
    pub cpu_operators: Vec<SourceEntry>,
}

/// The configuration the model was compiled for.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct Configuration {
    /// `ethos-u85-256`, ...
    #[prost(string, tag = "1")]
    pub accelerator: String,
    /// System configuration name (vela.ini `System_Config.NAME`).
    #[prost(string, tag = "2")]
    pub system_config: String,
    /// Memory mode name (vela.ini `Memory_Mode.NAME`).
    #[prost(string, tag = "3")]
    pub memory_mode: String,
    /// `performance` or `size`.
    #[prost(string, tag = "4")]
    pub optimise: String,
}

/// The manifest section.
#[derive(Clone, PartialEq, Message)]
pub struct Manifest {
    #[prost(message, optional, tag = "1")]
    pub configuration: Option<Configuration>,
    #[prost(uint32, tag = "2")]
    pub config_word: u32,
    #[prost(message, repeated, tag = "3")]
    pub regions: Vec<RegionInfo>,
    #[prost(message, repeated, tag = "4")]
    pub inputs: Vec<TensorInfo>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<TensorInfo>,
    #[prost(message, repeated, tag = "6")]
    pub operators: Vec<OperatorEntry>,
    /// Estimated cycles of the whole stream (`npuc report`'s `total_cycles` in the same
    /// memory system).
    #[prost(uint64, tag = "7")]
    pub estimated_cycles: u64,
    /// The layer map version the operators' `sources` and `commands` follow (0: none, as in
    /// containers of older npuc versions).
    #[prost(uint32, tag = "8")]
    pub layers_version: u32,
}

/// A parsed container.
#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    pub version: u32,
    pub config_word: u32,
    pub arena_size: u64,
    /// Region 2 size (0: unused).
    pub fast_size: u64,
    /// The target payload: for version 3, whose header names no target, the Ethos-U85
    /// command stream (the tag is implicit in the version).
    pub payload: TargetPayload,
    /// Region 0 contents.
    pub read_only: Vec<u8>,
    pub manifest: Manifest,
}

fn tensor_info(t: &TensorPlacement) -> TensorInfo {
    let quantization = t.quant.as_ref().map(|q| match q {
        Quantization::PerTensor { scale, zero_point } => QuantInfo {
            axis: None,
            scales: vec![*scale],
            zero_points: vec![*zero_point],
        },
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        } => QuantInfo {
            axis: Some(*axis as u32),
            scales: scales.clone(),
            zero_points: zero_points.clone(),
        },
    });
    TensorInfo {
        name: t.name.clone(),
        shape: t.shape.iter().map(|&d| d as u64).collect(),
        dtype: t.dtype.name().to_string(),
        quantization,
        region: u32::from(t.region),
        offset: t.offset,
        size: t.size,
    }
}

/// The manifest of a compiled model.
pub fn manifest(m: &CompiledModel) -> Manifest {
    let (operators, attributed) = crate::layers::operator_entries(m);
    Manifest {
        configuration: Some(Configuration {
            accelerator: m.accelerator.name().to_string(),
            system_config: m.system_config.clone(),
            memory_mode: m.memory_mode.clone(),
            optimise: m.optimise.name().to_string(),
        }),
        config_word: m.config_word,
        regions: vec![
            RegionInfo {
                index: u32::from(REGION_READ_ONLY),
                name: "read_only".into(),
                size: m.read_only.len() as u64,
            },
            RegionInfo {
                index: u32::from(REGION_ARENA),
                name: "arena".into(),
                size: m.arena_size,
            },
        ]
        .into_iter()
        .chain((m.fast_size > 0).then(|| RegionInfo {
            index: u32::from(REGION_FAST),
            name: "fast".into(),
            size: m.fast_size,
        }))
        .collect(),
        inputs: m.inputs.iter().map(tensor_info).collect(),
        outputs: m.outputs.iter().map(tensor_info).collect(),
        operators,
        estimated_cycles: m.estimated_cycles(),
        layers_version: if attributed {
            crate::layers::LAYERS_VERSION
        } else {
            0
        },
    }
}

fn pad16(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(16), 0);
}

/// Serialises a compiled model.
pub fn to_bytes(m: &CompiledModel) -> Vec<u8> {
    // Version 3's header names no target: its command stream section is the U85's. Another
    // payload format needs a header that tags it (a new container version).
    match m.payload.format() {
        PayloadFormat::U85CommandStream => {}
    }
    let stream = m.payload.bytes();
    let manifest = manifest(m).encode_to_vec();
    let mut out = vec![0u8; HEADER_BYTES];
    let mut sections = [(0u32, 0u32); 3];
    for (i, data) in [stream, &m.read_only, &manifest].into_iter().enumerate() {
        pad16(&mut out);
        sections[i] = (out.len() as u32, data.len() as u32);
        out.extend_from_slice(data);
    }
    pad16(&mut out);
    let mut h = Vec::with_capacity(HEADER_BYTES);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&m.config_word.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    for (off, len) in sections {
        h.extend_from_slice(&off.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
    }
    h.extend_from_slice(&m.arena_size.to_le_bytes());
    h.extend_from_slice(&m.fast_size.to_le_bytes());
    out[..HEADER_BYTES].copy_from_slice(&h);
    out
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ContainerError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or(ContainerError::Truncated("header"))
}

/// Parses a container.
pub fn from_bytes(b: &[u8]) -> Result<Container, ContainerError> {
    if b.len() < HEADER_BYTES {
        return Err(ContainerError::Truncated("header"));
    }
    if b[..4] != MAGIC {
        return Err(ContainerError::Magic);
    }
    let version = u32_at(b, 4)?;
    match version {
        VERSION => {}
        1 => return Err(ContainerError::Version1),
        2 => return Err(ContainerError::Version2),
        v => return Err(ContainerError::Version(v)),
    }
    let config_word = u32_at(b, 8)?;
    let section = |i: usize, what: &'static str| -> Result<&[u8], ContainerError> {
        let off = u32_at(b, 16 + 8 * i)? as usize;
        let len = u32_at(b, 20 + 8 * i)? as usize;
        off.checked_add(len)
            .and_then(|end| b.get(off..end))
            .ok_or(ContainerError::Truncated(what))
    };
    // Version 3 carries only Ethos-U85 command streams: the payload's tag is the version's.
    let payload = TargetPayload::from_bytes(
        PayloadFormat::U85CommandStream,
        section(0, "command stream")?.to_vec(),
    )
    .map_err(|_| ContainerError::Truncated("command stream"))?;
    let read_only = section(1, "read-only region")?.to_vec();
    let manifest = Manifest::decode(section(2, "manifest")?)?;
    let u64_at = |at| -> Result<u64, ContainerError> {
        Ok(u64::from(u32_at(b, at)?) | (u64::from(u32_at(b, at + 4)?) << 32))
    };
    let arena_size = u64_at(40)?;
    let fast_size = u64_at(48)?;
    Ok(Container {
        version,
        config_word,
        arena_size,
        fast_size,
        payload,
        read_only,
        manifest,
    })
}
