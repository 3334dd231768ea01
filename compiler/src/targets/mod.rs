//! The registry of NPU targets the driver knows: the one place of the driver that names a
//! target's implementation.
//!
//! [`compile`](crate::compile::compile) asks [`select`] for the [`Target`] its options
//! describe and passes only `&dyn Target` on. Adding an NPU adds a [`TargetFamily`] variant,
//! an arm in [`select`] and a module here (or a crate under `backend/`); no pass and no file
//! of another target changes. `compiler/tests/seam.rs` checks that no other file of the driver
//! names a target's implementation type.

use crate::arch_interface::Target;
use crate::compile::Options;
use crate::payload::TargetPayload;
use npuc_backend::system::MemoryMap;

mod u85;

pub use u85::{U85Block, U85Target};

/// The NPU families npuc compiles for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetFamily {
    /// Arm Ethos-U85, five configurations (128..2048 MACs per cycle).
    EthosU85,
}

impl TargetFamily {
    /// Every family, in the order `npuc` lists them.
    pub const ALL: [TargetFamily; 1] = [TargetFamily::EthosU85];

    /// Its name.
    pub const fn name(self) -> &'static str {
        match self {
            TargetFamily::EthosU85 => "ethos-u85",
        }
    }
}

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

/// The target `options` ask for, in the memory system `map`.
pub fn select(options: &Options, map: MemoryMap) -> Box<dyn Target> {
    match options.family() {
        TargetFamily::EthosU85 => {
            Box::new(U85Target::with_memory(options.accelerator, map).with_goal(options.optimise))
        }
    }
}
