//! One validation of a command stream, used by `npuc compile` before it writes a stream, by
//! `npuc report` before it estimates one, and (being the simulator itself) by `npuc run`.
//!
//! The validator *is* the simulator (decision H3 in `docs/decisions.md`): the stream runs on
//! zero-filled memories of the sizes the artifact gives each region, under the work budget
//! ([`super::work`]). So every rule the simulator enforces, and only those, is what
//! validation checks, with no second copy of the rules: the stream decodes; every region it
//! uses is set and mapped; every access stays within the region's bytes; block sizes, strides,
//! kernel sizes, chaining and every other TRM `assert()` of the pseudocode hold; the weight and
//! scale streams decode; branches stay in the stream; and the run ends within its budgets. What
//! depends on the data (a branch on `result_flag`, LUT contents) is checked on the path zero
//! inputs take, and the asserts only data can violate (a division by zero) are not applied
//! ([`super::Memory::set_data_unknown`]).

use super::{RunReport, SimError, Simulator, NUM_REGIONS};
use crate::arch::Accelerator;

/// The most bytes one region may have, for validation and for `npuc run` (4 GiB; the
/// NPU's addresses have 40 bits, but no memory of an Ethos-U85 system comes near this).
pub const MAX_REGION_BYTES: u64 = 1 << 32;

/// Why a stream is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A region is larger than [`MAX_REGION_BYTES`].
    #[error("region {region} of {size} bytes is larger than the {MAX_REGION_BYTES} bytes a region may have")]
    RegionTooLarge {
        /// The region.
        region: usize,
        /// Its size.
        size: u64,
    },
    /// The simulator stopped.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// The sizes of the eight regions of an artifact (`None`: not mapped).
pub type RegionSizes = [Option<u64>; NUM_REGIONS];

/// A zero-filled buffer of `size` bytes for `region`, refused above [`MAX_REGION_BYTES`].
pub fn region_buffer(region: usize, size: u64) -> Result<Vec<u8>, ValidationError> {
    if size > MAX_REGION_BYTES {
        return Err(ValidationError::RegionTooLarge { region, size });
    }
    Ok(vec![0u8; size as usize])
}

/// Validates `words` for `accelerator` with `regions` mapped, zero-filled except region 0,
/// which starts with `constants` (the read-only data: weight and scale streams, tables).
/// Without `constants` (a raw stream carries none) weight and scale streams are only
/// bounds-checked, not decoded ([`super::Memory::set_constants_unknown`]). Returns what the
/// run did.
pub fn validate(
    accelerator: Accelerator,
    words: &[u32],
    regions: &RegionSizes,
    constants: Option<&[u8]>,
) -> Result<RunReport, ValidationError> {
    let mut sim = Simulator::new(accelerator);
    for (r, size) in regions.iter().enumerate() {
        if let Some(size) = *size {
            let mut buffer = region_buffer(r, size)?;
            if let (0, Some(c)) = (r, constants) {
                if buffer.len() < c.len() {
                    buffer.resize(c.len(), 0);
                }
                buffer[..c.len()].copy_from_slice(c);
            }
            sim.memory_mut().add_region(r as u8, buffer);
        }
    }
    sim.memory_mut().set_constants_unknown(constants.is_none());
    sim.memory_mut().set_data_unknown(true);
    Ok(sim.run(words)?)
}
