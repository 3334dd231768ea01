//! Command-stream payloads of the `ethos-u` custom operator (the first input tensor of the op).
//!
//! Two layouts exist (formats documented in `shared/ethos-u85/oracles.md`, checked against the
//! committed Vela fixtures):
//!
//! **COP1** — `COP1`, then 32-bit driver-action words: bits [7:0] the action id. Id 1 (config)
//! is followed by the NPU CONFIG word and the ID word; id 5 is a NOP (pads the stream start to a
//! 16-byte boundary); id 2 is a command stream of `bits[15:8] << 16 | bits[31:16]` words that
//! follow immediately.
//!
//! **COP2** — `COP2`, u16 major 1, u16 minor 0, u64 length of the rest; then entries of
//! (u32 type, u32 data length, data). Type 1 is a command stream whose data is a u32 metadata
//! length, the metadata (`VEUM`, u32 version, u32 body length 20, CONFIG word, ID word,
//! u32 features, u64 staging bytes, 0xFF padding) and then the stream words.

use crate::arch::Accelerator;

/// Which payload layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopFormat {
    /// `COP1` driver actions.
    Cop1,
    /// `COP2` entries with `VEUM` metadata.
    Cop2,
}

/// A parsed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpuPayload {
    /// Layout it came in.
    pub format: CopFormat,
    /// The NPU CONFIG register value the stream was compiled for (TRM 3.3.1.10).
    pub config_word: u32,
    /// The NPU ID register value.
    pub id_word: u32,
    /// The configuration named by `config_word`.
    pub accelerator: Accelerator,
    /// Byte offset of the first command word within the payload.
    pub stream_offset: usize,
    /// The command stream.
    pub words: Vec<u32>,
    /// COP2 features word (1 network-wide addressing, 2 local addressing).
    pub features: Option<u32>,
    /// COP2 staging (fast scratch) size in bytes.
    pub staging_bytes: Option<u64>,
}

/// Why a payload cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopError {
    /// The payload ends before a field it announces.
    #[error("payload truncated at byte {offset}: {what} needs {need} bytes, {have} remain")]
    Truncated {
        /// Byte offset of the field.
        offset: usize,
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// Neither `COP1` nor `COP2`.
    #[error("payload does not start with COP1 or COP2 (found {found:02x?})")]
    BadMagic {
        /// The first bytes.
        found: Vec<u8>,
    },
    /// A COP1 driver action npuc does not know.
    #[error("byte {offset}: unknown COP1 driver action {id} (word {word:#010x})")]
    UnknownAction {
        /// Byte offset of the action word.
        offset: usize,
        /// Action id.
        id: u8,
        /// The word.
        word: u32,
    },
    /// A structural field holds an unexpected value.
    #[error("byte {offset}: {what}")]
    Malformed {
        /// Byte offset.
        offset: usize,
        /// What is wrong.
        what: String,
    },
    /// No config action / metadata before the stream.
    #[error("payload has no NPU CONFIG word")]
    MissingConfig,
    /// No command stream.
    #[error("payload has no command stream")]
    MissingStream,
    /// More than one command stream.
    #[error("byte {offset}: a second command stream (only one per payload is supported)")]
    SecondStream {
        /// Byte offset of the second stream's header.
        offset: usize,
    },
    /// The CONFIG word is not a U85 configuration.
    #[error(transparent)]
    Config(#[from] crate::arch::UnknownConfigWord),
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CopError> {
        let have = self.bytes.len() - self.pos;
        if n > have {
            return Err(CopError::Truncated {
                offset: self.pos,
                what,
                need: n,
                have,
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, CopError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, CopError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, CopError> {
        let lo = u64::from(self.u32(what)?);
        let hi = u64::from(self.u32(what)?);
        Ok(lo | (hi << 32))
    }

    fn words(&mut self, n: usize, what: &'static str) -> Result<Vec<u32>, CopError> {
        let bytes = self.take(n.saturating_mul(4), what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
}

const ACTION_CONFIG: u8 = 1;
const ACTION_STREAM: u8 = 2;
const ACTION_NOP: u8 = 5;
const COP2_ENTRY_STREAM: u32 = 1;

/// Parses a COP1 or COP2 payload.
pub fn parse_payload(bytes: &[u8]) -> Result<NpuPayload, CopError> {
    match bytes.get(..4) {
        Some(b"COP1") => parse_cop1(bytes),
        Some(b"COP2") => parse_cop2(bytes),
        _ => Err(CopError::BadMagic {
            found: bytes.iter().take(4).copied().collect(),
        }),
    }
}

fn parse_cop1(bytes: &[u8]) -> Result<NpuPayload, CopError> {
    let mut r = Reader { bytes, pos: 4 };
    let mut config = None;
    let mut stream: Option<(usize, Vec<u32>)> = None;
    while r.remaining() > 0 {
        let offset = r.pos;
        let word = r.u32("driver action")?;
        match (word & 0xff) as u8 {
            ACTION_CONFIG => {
                let c = r.u32("CONFIG word")?;
                let id = r.u32("ID word")?;
                config = Some((c, id));
            }
            ACTION_NOP => {}
            ACTION_STREAM => {
                if stream.is_some() {
                    return Err(CopError::SecondStream { offset });
                }
                let len = (((word >> 8) & 0xff) << 16 | (word >> 16)) as usize;
                let start = r.pos;
                stream = Some((start, r.words(len, "command stream")?));
            }
            id => return Err(CopError::UnknownAction { offset, id, word }),
        }
    }
    let (config_word, id_word) = config.ok_or(CopError::MissingConfig)?;
    let (stream_offset, words) = stream.ok_or(CopError::MissingStream)?;
    Ok(NpuPayload {
        format: CopFormat::Cop1,
        config_word,
        id_word,
        accelerator: Accelerator::from_config_word(config_word)?,
        stream_offset,
        words,
        features: None,
        staging_bytes: None,
    })
}

fn parse_cop2(bytes: &[u8]) -> Result<NpuPayload, CopError> {
    let mut r = Reader { bytes, pos: 4 };
    let major = r.u16("COP2 version")?;
    let _minor = r.u16("COP2 version")?;
    if major != 1 {
        return Err(CopError::Malformed {
            offset: 4,
            what: format!("COP2 major version {major}, expected 1"),
        });
    }
    let rest = r.u64("COP2 length")?;
    if rest != r.remaining() as u64 {
        return Err(CopError::Malformed {
            offset: 8,
            what: format!("COP2 length {rest} but {} bytes follow", r.remaining()),
        });
    }
    let mut found = None;
    while r.remaining() > 0 {
        let offset = r.pos;
        let ty = r.u32("COP2 entry type")?;
        let len = r.u32("COP2 entry length")? as usize;
        let data_start = r.pos;
        let data = r.take(len, "COP2 entry data")?;
        if ty != COP2_ENTRY_STREAM {
            continue;
        }
        if found.is_some() {
            return Err(CopError::SecondStream { offset });
        }
        found = Some(parse_cop2_stream(data, data_start)?);
    }
    let (config_word, id_word, features, staging, stream_offset, words) =
        found.ok_or(CopError::MissingStream)?;
    Ok(NpuPayload {
        format: CopFormat::Cop2,
        config_word,
        id_word,
        accelerator: Accelerator::from_config_word(config_word)?,
        stream_offset,
        words,
        features: Some(features),
        staging_bytes: Some(staging),
    })
}

type Cop2Stream = (u32, u32, u32, u64, usize, Vec<u32>);

fn parse_cop2_stream(data: &[u8], base: usize) -> Result<Cop2Stream, CopError> {
    let mut r = Reader {
        bytes: data,
        pos: 0,
    };
    let meta_len = r.u32("metadata length")? as usize;
    let meta_start = r.pos;
    let meta = r.take(meta_len, "metadata")?;
    let mut m = Reader {
        bytes: meta,
        pos: 0,
    };
    let magic = m.take(4, "metadata magic")?;
    if magic != b"VEUM" {
        return Err(CopError::Malformed {
            offset: base + meta_start,
            what: format!("metadata magic {magic:02x?}, expected VEUM"),
        });
    }
    let _version = m.u32("metadata version")?;
    let body = m.u32("metadata body length")?;
    if body < 20 {
        return Err(CopError::Malformed {
            offset: base + meta_start + 8,
            what: format!("metadata body length {body} < 20"),
        });
    }
    let config = m.u32("CONFIG word")?;
    let id = m.u32("ID word")?;
    let features = m.u32("features")?;
    let staging = m.u64("staging bytes")?;
    let stream_len = r.remaining();
    if stream_len % 4 != 0 {
        return Err(CopError::Malformed {
            offset: base + r.pos,
            what: format!("stream length {stream_len} not a multiple of 4"),
        });
    }
    let stream_offset = base + r.pos;
    let words = r.words(stream_len / 4, "command stream")?;
    Ok((config, id, features, staging, stream_offset, words))
}

/// Writes a COP1 payload as Vela lays it out: magic, config action, NOPs up to a 16-byte
/// boundary, the stream action and the stream. Fails if the stream exceeds 2^24 - 1 words.
pub fn write_cop1(config_word: u32, id_word: u32, words: &[u32]) -> Option<Vec<u8>> {
    if words.len() >= 1 << 24 {
        return None;
    }
    let mut out = Vec::with_capacity(32 + words.len() * 4);
    out.extend_from_slice(b"COP1");
    let push = |w: u32, out: &mut Vec<u8>| out.extend_from_slice(&w.to_le_bytes());
    push(0x0010_0000 | u32::from(ACTION_CONFIG), &mut out);
    push(config_word, &mut out);
    push(id_word, &mut out);
    while (out.len() + 4) % 16 != 0 {
        push(u32::from(ACTION_NOP), &mut out);
    }
    let n = words.len() as u32;
    push(
        u32::from(ACTION_STREAM) | ((n >> 16) & 0xff) << 8 | (n & 0xffff) << 16,
        &mut out,
    );
    for &w in words {
        push(w, &mut out);
    }
    Some(out)
}
