//! Diagnostics of the simulator: every way a command stream can stop other than `NPU_OP_STOP`
//! or running off its end. None of them is a panic; each names the command (byte offset and
//! TRM name) and the rule that was broken.

use crate::isa::DecodeError;

/// Why a command could not be executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// A failed `assert()` of the TRM pseudocode (UNPREDICTABLE behaviour, TRM 3.6.1).
    #[error("TRM {section} assert failed: {rule} ({detail})")]
    Assert {
        /// TRM section of the pseudocode holding the assert.
        section: &'static str,
        /// The asserted condition, as written in the TRM (or a short paraphrase).
        rule: &'static str,
        /// The values involved.
        detail: String,
    },
    /// An access outside the bytes mapped for a region.
    #[error("{access} of {len} bytes at region {region} offset {addr:#x} is outside the region ({size} bytes mapped)")]
    OutOfRegion {
        /// `read` or `write`.
        access: &'static str,
        /// Region number (-1 = internal LUT RAM).
        region: i32,
        /// Offset within the region.
        addr: u64,
        /// Access size in bytes.
        len: u64,
        /// Mapped size of the region.
        size: u64,
    },
    /// A region number 0..7 that has no memory mapped.
    #[error("region {region} has no memory mapped")]
    UnmappedRegion {
        /// The region.
        region: u8,
    },
    /// `NPU_OP_BRANCH` to an unaligned offset or past the end of the stream (TRM 3.11.2: branch_fault).
    #[error("branch_fault: target {target:#x} is not a 4-aligned offset below QSIZE {qsize:#x}")]
    BranchFault {
        /// The branch target (bytes from QBASE).
        target: u64,
        /// The stream size in bytes.
        qsize: u64,
    },
    /// The weight stream of a kernel operation could not be decoded.
    #[error("weight stream: {0}")]
    Weights(String),
    /// The scale/bias stream of a kernel operation could not be decoded.
    #[error("scale/bias stream: {0}")]
    Scales(String),
    /// The operation would take the run past its work budget (an endless branch loop, or an
    /// operation of absurd size): stopped before it starts.
    #[error("work budget exhausted: the operation needs {needed} units of work, {remaining} of the budget of {budget} remain (see docs/decisions.md H2)")]
    WorkBudget {
        /// Work of this operation (elements, MACs and bytes; saturated at u64::MAX).
        needed: u64,
        /// Budget left before it.
        remaining: u64,
        /// The run's budget.
        budget: u64,
    },
    /// The operation would hold more feature-map elements at once than the simulator allows.
    #[error("the operation reads and writes {elements} feature-map elements, above the simulator's limit of {limit} per operation (see docs/decisions.md H2)")]
    TooLarge {
        /// Elements it would hold (saturated at u64::MAX).
        elements: u64,
        /// The limit.
        limit: u64,
    },
    /// A feature this simulator does not implement yet.
    #[error("not implemented: {0}")]
    Unsupported(&'static str),
}

impl Fault {
    /// A failed TRM assert.
    pub fn assert(section: &'static str, rule: &'static str, detail: impl Into<String>) -> Fault {
        Fault::Assert {
            section,
            rule,
            detail: detail.into(),
        }
    }
}

impl From<npuc_codecs::arith::TrmAssert> for Fault {
    fn from(a: npuc_codecs::arith::TrmAssert) -> Fault {
        Fault::Assert {
            section: a.section,
            rule: a.rule,
            detail: a.detail,
        }
    }
}

/// Checks a TRM assert: `Ok` if `cond` holds, else [`Fault::Assert`].
pub(crate) fn check(
    cond: bool,
    section: &'static str,
    rule: &'static str,
    detail: impl FnOnce() -> String,
) -> Result<(), Fault> {
    if cond {
        Ok(())
    } else {
        Err(Fault::assert(section, rule, detail()))
    }
}

/// Why a run stopped abnormally (the hardware would raise cmd_parse_error, branch_fault or
/// stop UNPREDICTABLY).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The word at `offset` is not a valid command (cmd_parse_error).
    #[error("cmd_parse_error: {0}")]
    Decode(#[from] DecodeError),
    /// A command failed.
    #[error("command at offset {offset:#06x} ({instruction}): {fault}")]
    Command {
        /// Byte offset of the command in the stream.
        offset: usize,
        /// TRM name of the instruction.
        instruction: &'static str,
        /// What went wrong.
        fault: Fault,
    },
    /// The step budget ran out (an endless branch loop).
    #[error("step budget of {budget} commands exhausted at offset {offset:#06x}")]
    StepBudget {
        /// The budget.
        budget: u64,
        /// Offset of the next command.
        offset: usize,
    },
}

impl SimError {
    /// The failure's [`Fault`], if it was raised by a command.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            SimError::Command { fault, .. } => Some(fault),
            _ => None,
        }
    }
}
