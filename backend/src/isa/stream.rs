//! Command streams: little-endian 32-bit words, decoded and encoded through the ISA table.
//!
//! Decoding is total: every word sequence gives either commands or a [`DecodeError`] naming the
//! byte offset and the rule broken (TRM 3.5.3: control bits [15:14] must be `00` or `01` and
//! bits [13:10] zero; reserved payload bits zero; enum fields hold no reserved value; a cmd1
//! header is followed by its payload word).

use super::generated::{Command, Opcode};
use super::table::{CmdKind, FieldKind};

/// Why a word sequence is not a valid command stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The byte length of a stream is not a multiple of 4.
    #[error("command stream length {len} bytes is not a multiple of 4")]
    NotWordAligned {
        /// The length in bytes.
        len: usize,
    },
    /// Control bits [15:14] are `10` or `11` (reserved, TRM 3.5.3).
    #[error("offset {offset:#x}: word {word:#010x} has reserved control bits {control:#04b}")]
    ReservedControl {
        /// Byte offset of the command.
        offset: usize,
        /// The header word.
        word: u32,
        /// Bits [15:14].
        control: u8,
    },
    /// No instruction has this opcode for this control value.
    #[error("offset {offset:#x}: word {word:#010x}: unknown {kind} opcode {opcode:#05x}")]
    UnknownOpcode {
        /// Byte offset of the command.
        offset: usize,
        /// The header word.
        word: u32,
        /// `cmd0` or `cmd1`.
        kind: &'static str,
        /// Bits [9:0].
        opcode: u16,
    },
    /// A cmd1 header is the last word of the stream.
    #[error(
        "offset {offset:#x}: {name} is a two-word command but the stream ends after its header"
    )]
    MissingPayload {
        /// Byte offset of the command.
        offset: usize,
        /// TRM name.
        name: &'static str,
    },
    /// Reserved bits are set.
    #[error(
        "offset {offset:#x}: {name} has reserved bits set (mask {bits:#x} of the 64-bit command)"
    )]
    ReservedBits {
        /// Byte offset of the command.
        offset: usize,
        /// TRM name.
        name: &'static str,
        /// The offending bits.
        bits: u64,
    },
    /// An enum field holds a reserved value.
    #[error("offset {offset:#x}: {name}.{field} = {value} is a reserved {enum_type} value")]
    ReservedEnumValue {
        /// Byte offset of the command.
        offset: usize,
        /// TRM name.
        name: &'static str,
        /// Field name.
        field: &'static str,
        /// Enum type name.
        enum_type: &'static str,
        /// The value.
        value: u64,
    },
}

/// A command that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("command {index}: {source}")]
pub struct EncodeError {
    /// Index of the command in the list given to [`encode_stream`].
    pub index: usize,
    /// The field that does not fit.
    pub source: super::table::FieldError,
}

/// One decoded command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Byte offset of the command from the start of the stream.
    pub offset: usize,
    /// The command's 64 bits (bits [63:32] are zero for cmd0).
    pub raw: u64,
    /// The typed command.
    pub command: Command,
}

impl Decoded {
    /// The instruction.
    pub fn opcode(&self) -> Opcode {
        self.command.opcode()
    }
}

/// Splits little-endian bytes into words.
pub fn words_from_bytes(bytes: &[u8]) -> Result<Vec<u32>, DecodeError> {
    if bytes.len() % 4 != 0 {
        return Err(DecodeError::NotWordAligned { len: bytes.len() });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Decodes the command starting at word `index`; `offset_base` is added to reported offsets.
pub fn decode_at(words: &[u32], index: usize, offset_base: usize) -> Result<Decoded, DecodeError> {
    let offset = offset_base + index * 4;
    let word = words[index];
    let control = ((word >> 14) & 3) as u8;
    let kind = match control {
        0 => CmdKind::Cmd0,
        1 => CmdKind::Cmd1,
        _ => {
            return Err(DecodeError::ReservedControl {
                offset,
                word,
                control,
            })
        }
    };
    let opcode = Opcode::from_header((word & 0xc3ff) as u16).ok_or(DecodeError::UnknownOpcode {
        offset,
        word,
        kind: if kind == CmdKind::Cmd0 {
            "cmd0"
        } else {
            "cmd1"
        },
        opcode: (word & 0x3ff) as u16,
    })?;
    let spec = opcode.spec();
    let raw = match kind {
        CmdKind::Cmd0 => u64::from(word),
        CmdKind::Cmd1 => {
            let payload = *words.get(index + 1).ok_or(DecodeError::MissingPayload {
                offset,
                name: spec.name,
            })?;
            u64::from(word) | (u64::from(payload) << 32)
        }
    };
    if raw & spec.reserved != 0 {
        return Err(DecodeError::ReservedBits {
            offset,
            name: spec.name,
            bits: raw & spec.reserved,
        });
    }
    for f in spec.fields {
        if let FieldKind::Enum(id) = f.kind {
            let e = id.spec();
            let value = f.extract(raw);
            if e.name_of(value).is_none() {
                return Err(DecodeError::ReservedEnumValue {
                    offset,
                    name: spec.name,
                    field: f.name,
                    enum_type: e.name,
                    value,
                });
            }
        }
    }
    // Every enum value was checked against the same table, so this cannot fail; map the error
    // anyway rather than unwrap.
    let command = Command::from_raw(opcode, raw).map_err(|e| DecodeError::ReservedEnumValue {
        offset,
        name: spec.name,
        field: e.field,
        enum_type: "",
        value: 0,
    })?;
    Ok(Decoded {
        offset,
        raw,
        command,
    })
}

/// Decodes a whole stream; stops at the first invalid command.
pub fn decode_stream(words: &[u32]) -> Result<Vec<Decoded>, DecodeError> {
    StreamDecoder::new(words).collect()
}

/// Iterates over the commands of a stream; yields one error and then stops.
#[derive(Debug, Clone)]
pub struct StreamDecoder<'a> {
    words: &'a [u32],
    index: usize,
    offset_base: usize,
    failed: bool,
}

impl<'a> StreamDecoder<'a> {
    /// A decoder over `words`, reporting offsets from the first word.
    pub fn new(words: &'a [u32]) -> Self {
        Self::with_offset(words, 0)
    }

    /// A decoder whose reported offsets start at `offset_base` bytes.
    pub fn with_offset(words: &'a [u32], offset_base: usize) -> Self {
        StreamDecoder {
            words,
            index: 0,
            offset_base,
            failed: false,
        }
    }
}

impl Iterator for StreamDecoder<'_> {
    type Item = Result<Decoded, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.index >= self.words.len() {
            return None;
        }
        match decode_at(self.words, self.index, self.offset_base) {
            Ok(d) => {
                self.index += d.opcode().spec().kind.words();
                Some(Ok(d))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Encodes commands into words.
pub fn encode_stream(commands: &[Command]) -> Result<Vec<u32>, EncodeError> {
    let mut words = Vec::with_capacity(commands.len() * 2);
    for (index, c) in commands.iter().enumerate() {
        let raw = c.to_raw().map_err(|source| EncodeError { index, source })?;
        words.push(raw as u32);
        if c.opcode().spec().kind == CmdKind::Cmd1 {
            words.push((raw >> 32) as u32);
        }
    }
    Ok(words)
}
