//! The target part of a compiled model: an opaque, target-tagged payload.
//!
//! The driver, the container and the outputs carry a target's program as bytes with a tag
//! saying whose and which form it is; only a user that knows the form reads into it. The
//! Ethos-U85's payload is its cmd0/cmd1 command stream (32-bit little-endian words); a target
//! without a command stream (NVDLA: per-layer register writes) would bring its own format.

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

/// The form of a target payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFormat {
    /// An Ethos-U85 register command stream: cmd0/cmd1 words, little-endian, to be placed at
    /// QBASE (TRM 3.1).
    U85CommandStream,
}

impl PayloadFormat {
    /// The family whose payload this is.
    pub const fn family(self) -> TargetFamily {
        match self {
            PayloadFormat::U85CommandStream => TargetFamily::EthosU85,
        }
    }

    /// Its name, as errors give it.
    pub const fn name(self) -> &'static str {
        match self {
            PayloadFormat::U85CommandStream => "ethos-u85 command stream",
        }
    }
}

/// A payload read as a form it is not.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("the target payload is a {found}, not an Ethos-U85 command stream")]
    NotCommandStream { found: &'static str },
    #[error("the command stream is {0} bytes, not a whole number of 32-bit words")]
    Ragged(usize),
}

/// A target's program: bytes and their format tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPayload {
    format: PayloadFormat,
    bytes: Vec<u8>,
}

impl TargetPayload {
    /// An Ethos-U85 command stream.
    pub fn u85_command_stream(words: &[u32]) -> Self {
        TargetPayload {
            format: PayloadFormat::U85CommandStream,
            bytes: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }

    /// A payload of the given format from its bytes; checks what the format requires.
    pub fn from_bytes(format: PayloadFormat, bytes: Vec<u8>) -> Result<Self, PayloadError> {
        match format {
            PayloadFormat::U85CommandStream if bytes.len() % 4 != 0 => {
                Err(PayloadError::Ragged(bytes.len()))
            }
            PayloadFormat::U85CommandStream => Ok(TargetPayload { format, bytes }),
        }
    }

    /// Its format.
    pub fn format(&self) -> PayloadFormat {
        self.format
    }

    /// The family it is for.
    pub fn family(&self) -> TargetFamily {
        self.format.family()
    }

    /// Its bytes, as written to a file.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The Ethos-U85 command stream as 32-bit words; an error for any other payload.
    pub fn command_words(&self) -> Result<Vec<u32>, PayloadError> {
        match self.format {
            PayloadFormat::U85CommandStream => Ok(self
                .bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_u85_payload_is_its_words_little_endian() {
        let p = TargetPayload::u85_command_stream(&[0x0001_ffff, 0x1234_5678]);
        assert_eq!(p.family(), TargetFamily::EthosU85);
        assert_eq!(p.bytes(), [0xff, 0xff, 1, 0, 0x78, 0x56, 0x34, 0x12]);
        assert_eq!(p.command_words().unwrap(), [0x0001_ffff, 0x1234_5678]);
    }

    #[test]
    fn a_ragged_command_stream_is_refused() {
        let e = TargetPayload::from_bytes(PayloadFormat::U85CommandStream, vec![0; 6]);
        assert_eq!(e, Err(PayloadError::Ragged(6)));
    }
}
