//! The registry of NPU targets the driver knows: the one place of the driver that names a
//! target's implementation.
//!
//! [`compile`](crate::compile::compile) asks [`select`] for the [`Target`] its options
//! describe and passes only `&dyn Target` on. Adding an NPU adds a [`TargetFamily`] variant,
//! an arm in [`select`] and the target's crate (the Ethos-U85's is `npuc-backend-schedule`,
//! beside `backend/`'s others); no pass of the driver and no file of another target changes. `compiler/tests/seam.rs` checks that no other file of the driver
//! names a target's implementation type.

use crate::arch_interface::Target;
use crate::artifact::{Artifact, NpuStream};
use crate::compile::Options;
use crate::payload::TargetPayload;
use npuc_backend::system::MemoryMap;

pub use crate::payload::TargetFamily;
pub use npuc_backend_schedule::{U85Block, U85Target};

/// The target that reads a stream of an artifact (disassembly): in the configuration the
/// artifact records (the default one when it records none) and the default memory system.
/// Every artifact npuc opens (containers, Vela's `.tflite`, raw streams) holds Ethos-U85
/// streams.
pub fn reader(accelerator: Option<npuc_backend::arch::Accelerator>) -> Box<dyn Target> {
    Box::new(U85Target::new(
        accelerator.unwrap_or(npuc_backend::arch::Accelerator::U85_256),
    ))
}

/// [`reader`] in the memory system `map` (what `npuc report` estimates a stream in).
pub fn reader_with_memory(
    accelerator: Option<npuc_backend::arch::Accelerator>,
    map: MemoryMap,
) -> Box<dyn Target> {
    Box::new(U85Target::with_memory(
        accelerator.unwrap_or(npuc_backend::arch::Accelerator::U85_256),
        map,
    ))
}

/// The payload of a stream an artifact holds, for its [`reader`]: every artifact npuc opens
/// holds Ethos-U85 command streams.
pub fn artifact_payload(words: &[u32]) -> TargetPayload {
    TargetPayload::u85_command_stream(words)
}

/// The targets that read the streams of an artifact in a memory system (what `npuc report`
/// estimates them with): every artifact npuc opens holds Ethos-U85 streams, each read in the
/// configuration it names, else the one the artifact names, else `accelerator`, else the
/// Ethos-U85-256.
#[derive(Debug, Clone)]
pub struct ArtifactReaders {
    map: MemoryMap,
    accelerator: Option<npuc_backend::arch::Accelerator>,
}

impl ArtifactReaders {
    /// Readers in the memory system `map`; `accelerator`: the configuration of streams that
    /// name none (raw streams).
    pub fn new(map: MemoryMap, accelerator: Option<npuc_backend::arch::Accelerator>) -> Self {
        ArtifactReaders { map, accelerator }
    }

    /// The default memory system (`MemoryMap::default_u85`), no configuration given.
    pub fn default_u85() -> Self {
        ArtifactReaders::new(MemoryMap::default_u85(), None)
    }

    /// The configuration modelled for `artifact`: the first one a stream names, else the
    /// one given, else the Ethos-U85-256.
    fn configuration(&self, artifact: &Artifact) -> npuc_backend::arch::Accelerator {
        artifact
            .streams
            .iter()
            .find_map(|s| s.accelerator)
            .or(self.accelerator)
            .unwrap_or(npuc_backend::arch::Accelerator::U85_256)
    }

    /// The target modelling `artifact` as a whole (the report's header).
    pub fn artifact(&self, artifact: &Artifact) -> Box<dyn Target> {
        reader_with_memory(Some(self.configuration(artifact)), self.map.clone())
    }

    /// The target reading `stream` of `artifact`.
    pub fn stream(&self, artifact: &Artifact, stream: &NpuStream) -> Box<dyn Target> {
        let acc = stream
            .accelerator
            .unwrap_or_else(|| self.configuration(artifact));
        reader_with_memory(Some(acc), self.map.clone())
    }
}

/// The target `options` ask for, in the memory system `map`.
pub fn select(options: &Options, map: MemoryMap) -> Box<dyn Target> {
    match options.family() {
        TargetFamily::EthosU85 => {
            Box::new(U85Target::with_memory(options.accelerator, map).with_goal(options.optimise))
        }
    }
}
