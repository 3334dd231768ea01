//! Compiled artifacts npuc reads: npuc's own container (`NPUC`, see docs/container.md), a
//! Vela-compiled `.tflite` (one command stream per `ethos-u` operator), a COP1/COP2 payload on
//! its own, or a raw little-endian command stream.

use npuc_backend::arch::Accelerator;
use npuc_backend::cop::{self, CopError, NpuPayload};
use npuc_backend::isa::{words_from_bytes, DecodeError};
use npuc_backend::sim::validate::RegionSizes;
use npuc_backend::sim::NUM_REGIONS;
use npuc_frontend_tflite::{EthosUOp, TfliteError, TfliteModel};
use std::path::Path;

/// An artifact that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A TFLite file that is malformed.
    #[error("{0}")]
    Tflite(#[from] TfliteError),
    /// An `ethos-u` operator whose payload is malformed.
    #[error("ethos-u operator {index} ({location}): {source}")]
    Payload {
        /// Ordinal among the model's `ethos-u` operators.
        index: usize,
        /// Subgraph and operator.
        location: String,
        /// What is wrong.
        source: CopError,
    },
    /// A payload file that is malformed.
    #[error("{0}")]
    Cop(#[from] CopError),
    /// A raw stream whose length is not whole words.
    #[error("{0}")]
    Stream(#[from] DecodeError),
    /// An npuc container that is malformed.
    #[error("{0}")]
    Container(#[from] crate::container::ContainerError),
    #[error(transparent)]
    TargetPayload(#[from] crate::payload::PayloadError),
    /// A TFLite file without `ethos-u` operators.
    #[error("the model has no ethos-u operators (it has not been compiled for the NPU)")]
    NoNpuOperators,
    /// An empty file (no command stream at all).
    #[error("the file is empty: it holds no command stream")]
    Empty,
}

/// Where a command stream came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamOrigin {
    /// The `index`-th `ethos-u` operator of a TFLite file.
    EthosUOp {
        /// Ordinal among the `ethos-u` operators, in execution order.
        index: usize,
        /// Subgraph index.
        subgraph: usize,
        /// Operator index within the subgraph.
        operator: usize,
    },
    /// A payload or raw stream file.
    File,
    /// npuc's own container.
    Container,
}

/// One command stream with what is known about it.
#[derive(Debug, Clone)]
pub struct NpuStream {
    /// Where it came from.
    pub origin: StreamOrigin,
    /// The command words.
    pub words: Vec<u32>,
    /// The payload header, if the stream came in one.
    pub payload: Option<NpuPayload>,
    /// The configuration, when the payload names it.
    pub accelerator: Option<Accelerator>,
    /// The `ethos-u` operator (read-only region, scratch sizes, feature maps), for TFLite input.
    pub op: Option<EthosUOp>,
    /// The size of each region the stream runs with, when the artifact gives them (a
    /// container, an `ethos-u` operator); `None` for a raw stream or a bare payload.
    pub regions: Option<RegionSizes>,
    /// The contents of region 0 (weights, scales, tables), when the artifact holds them.
    pub read_only: Option<Vec<u8>>,
}

/// All command streams of an artifact, in execution order.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The streams.
    pub streams: Vec<NpuStream>,
}

impl Artifact {
    /// Reads an artifact file (the kind is told by its content, not its name).
    pub fn read(path: &Path) -> Result<Artifact, ArtifactError> {
        let bytes = std::fs::read(path).map_err(|source| ArtifactError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Artifact::from_bytes(&bytes)
    }

    /// Reads an artifact from memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        if bytes.is_empty() {
            return Err(ArtifactError::Empty);
        }
        if bytes.get(4..8) == Some(b"TFL3") {
            return Artifact::from_tflite(&TfliteModel::parse(bytes)?);
        }
        if bytes.get(..4) == Some(&crate::container::MAGIC[..]) {
            let c = crate::container::from_bytes(bytes)?;
            let accelerator = Accelerator::from_config_word(c.config_word).ok();
            // As `npuc run` maps them: region 0 the read-only data, the others as listed.
            let mut regions = [None; NUM_REGIONS];
            regions[0] = Some(c.read_only.len() as u64);
            for r in c.manifest.regions.iter().filter(|r| r.index != 0) {
                if let Some(slot) = regions.get_mut(r.index as usize) {
                    *slot = Some(r.size);
                }
            }
            return Ok(Artifact {
                streams: vec![NpuStream {
                    origin: StreamOrigin::Container,
                    words: c.payload.command_words()?,
                    payload: None,
                    accelerator,
                    op: None,
                    regions: Some(regions),
                    read_only: Some(c.read_only),
                }],
            });
        }
        if matches!(bytes.get(..4), Some(b"COP1" | b"COP2")) {
            let p = cop::parse_payload(bytes)?;
            return Ok(Artifact {
                streams: vec![stream_from_payload(StreamOrigin::File, p, None)],
            });
        }
        let words = words_from_bytes(bytes)?;
        Ok(Artifact {
            streams: vec![NpuStream {
                origin: StreamOrigin::File,
                words,
                payload: None,
                accelerator: None,
                op: None,
                regions: None,
                read_only: None,
            }],
        })
    }

    /// The `ethos-u` operators of a Vela-compiled model.
    pub fn from_tflite(model: &TfliteModel) -> Result<Artifact, ArtifactError> {
        let vela = model.vela()?;
        let mut streams = Vec::new();
        for (index, op) in vela.ethos_u_ops().enumerate() {
            let location = format!(
                "subgraph {} operator {}",
                op.subgraph.index(),
                op.op.index()
            );
            let payload =
                cop::parse_payload(&op.payload).map_err(|source| ArtifactError::Payload {
                    index,
                    location,
                    source,
                })?;
            let origin = StreamOrigin::EthosUOp {
                index,
                subgraph: op.subgraph.index(),
                operator: op.op.index(),
            };
            streams.push(stream_from_payload(origin, payload, Some(op.clone())));
        }
        if streams.is_empty() {
            return Err(ArtifactError::NoNpuOperators);
        }
        Ok(Artifact { streams })
    }
}

fn stream_from_payload(origin: StreamOrigin, p: NpuPayload, op: Option<EthosUOp>) -> NpuStream {
    // As `npuc run` maps an ethos-u operator: region 0 its read-only data, 1 its scratch, 2
    // its fast scratch (the scratch again when they are one tensor).
    let regions = op.as_ref().map(|op| {
        let mut r = [None; NUM_REGIONS];
        r[0] = Some(op.read_only.len() as u64);
        r[1] = Some(op.scratch_size as u64);
        r[2] = Some(if op.scratch_fast_tensor == op.scratch_tensor {
            op.scratch_size
        } else {
            op.scratch_fast_size
        } as u64);
        r
    });
    NpuStream {
        origin,
        words: p.words.clone(),
        accelerator: Some(p.accelerator),
        payload: Some(p),
        read_only: op.as_ref().map(|op| op.read_only.clone()),
        op,
        regions,
    }
}
