//! The npuc container: what `npuc compile -o MODEL.bin` writes (format in `docs/container.md`).
//!
//! A 48-byte little-endian header (magic `NPUC`, version, the CONFIG word of the target
//! configuration, section offsets and sizes, the arena size) followed by three 16-byte aligned
//! sections: the command stream, the read-only region (region 0) and a JSON manifest. The
//! same model and options always give the same bytes.

use crate::compile::{CompiledModel, TensorPlacement, REGION_ARENA, REGION_READ_ONLY};
use npuc_ir::Quantization;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The four magic bytes.
pub const MAGIC: [u8; 4] = *b"NPUC";
/// The container version this module writes and reads.
pub const VERSION: u32 = 1;
/// Header size in bytes.
pub const HEADER_BYTES: usize = 48;

/// Why bytes are not a valid container.
#[derive(Debug, Error)]
pub enum ContainerError {
    #[error("not an npuc container (bad magic)")]
    Magic,
    #[error("unsupported container version {0}")]
    Version(u32),
    #[error("truncated container: {0}")]
    Truncated(&'static str),
    #[error("manifest: {0}")]
    Manifest(#[from] serde_json::Error),
}

/// Quantization of a tensor in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantInfo {
    /// Quantized axis for per-axis quantization, absent for per-tensor.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub axis: Option<usize>,
    pub scales: Vec<f64>,
    pub zero_points: Vec<i64>,
}

/// A graph input or output in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    pub name: String,
    pub shape: Vec<usize>,
    /// `i8`, `i16`, `i32`, ... ([`npuc_ir::DType::name`]).
    pub dtype: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quantization: Option<QuantInfo>,
    pub region: u8,
    pub offset: u64,
    pub size: u64,
}

/// A memory region in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfo {
    pub index: u8,
    /// `read_only` or `arena`.
    pub name: String,
    pub size: u64,
}

/// One NPU operation in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorEntry {
    pub name: String,
    pub kernel: String,
    pub fused: Vec<String>,
    pub estimated_cycles: u64,
}

/// The manifest section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub accelerator: String,
    pub config_word: u32,
    pub regions: Vec<RegionInfo>,
    pub inputs: Vec<TensorInfo>,
    pub outputs: Vec<TensorInfo>,
    pub operators: Vec<OperatorEntry>,
    pub estimated_cycles: u64,
}

/// A parsed container.
#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    pub version: u32,
    pub config_word: u32,
    pub arena_size: u64,
    /// The command stream as 32-bit words.
    pub command_stream: Vec<u32>,
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
            axis: Some(*axis),
            scales: scales.clone(),
            zero_points: zero_points.clone(),
        },
    });
    TensorInfo {
        name: t.name.clone(),
        shape: t.shape.clone(),
        dtype: t.dtype.name().to_string(),
        quantization,
        region: t.region,
        offset: t.offset,
        size: t.size,
    }
}

/// The manifest of a compiled model.
pub fn manifest(m: &CompiledModel) -> Manifest {
    Manifest {
        accelerator: m.accelerator.name().to_string(),
        config_word: m.config_word,
        regions: vec![
            RegionInfo {
                index: REGION_READ_ONLY,
                name: "read_only".into(),
                size: m.read_only.len() as u64,
            },
            RegionInfo {
                index: REGION_ARENA,
                name: "arena".into(),
                size: m.arena_size,
            },
        ],
        inputs: m.inputs.iter().map(tensor_info).collect(),
        outputs: m.outputs.iter().map(tensor_info).collect(),
        operators: m
            .operators
            .iter()
            .map(|o| OperatorEntry {
                name: o.name.clone(),
                kernel: o.kernel.clone(),
                fused: o.fused.clone(),
                estimated_cycles: o.cycles,
            })
            .collect(),
        estimated_cycles: m.estimated_cycles(),
    }
}

fn pad16(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(16), 0);
}

/// Serialises a compiled model.
pub fn to_bytes(m: &CompiledModel) -> Vec<u8> {
    let stream: Vec<u8> = m
        .command_stream
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let manifest = serde_json::to_vec_pretty(&manifest(m)).expect("manifest serialises");
    let mut out = vec![0u8; HEADER_BYTES];
    let mut sections = [(0u32, 0u32); 3];
    for (i, data) in [&stream, &m.read_only, &manifest].into_iter().enumerate() {
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
    if version != VERSION {
        return Err(ContainerError::Version(version));
    }
    let config_word = u32_at(b, 8)?;
    let section = |i: usize, what: &'static str| -> Result<&[u8], ContainerError> {
        let off = u32_at(b, 16 + 8 * i)? as usize;
        let len = u32_at(b, 20 + 8 * i)? as usize;
        b.get(off..off + len).ok_or(ContainerError::Truncated(what))
    };
    let stream = section(0, "command stream")?;
    if stream.len() % 4 != 0 {
        return Err(ContainerError::Truncated("command stream"));
    }
    let command_stream = stream
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let read_only = section(1, "read-only region")?.to_vec();
    let manifest = serde_json::from_slice(section(2, "manifest")?)?;
    let arena_size = u64::from(u32_at(b, 40)?) | (u64::from(u32_at(b, 44)?) << 32);
    Ok(Container {
        version,
        config_word,
        arena_size,
        command_stream,
        read_only,
        manifest,
    })
}
