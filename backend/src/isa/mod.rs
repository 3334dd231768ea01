//! The Ethos-U85 instruction set, from one table.
//!
//! `backend/isa/commands.csv` and `enums.csv` describe every instruction once (opcode, every
//! payload field with its bit range and type, reserved bits). `tools/isa-gen` turns them into
//! [`generated`]: the [`Opcode`] and typed [`Command`] enums, a payload struct per instruction
//! with its encoder and decoder, the typed field enums, the [`COMMANDS`]/[`ENUMS`] tables and
//! the simulator's [`RegisterFile`]. Stream decoding ([`stream`]) and disassembly ([`disasm`])
//! are driven by the same tables, so no field layout is written twice.

#[rustfmt::skip]
#[allow(clippy::all, missing_docs)]
pub mod generated;
pub mod disasm;
pub mod stream;
pub mod table;

pub use generated::*;
pub use stream::{
    decode_stream, encode_stream, words_from_bytes, DecodeError, Decoded, EncodeError,
};
pub use table::{CmdKind, CommandSpec, EnumSpec, EnumValueSpec, FieldError, FieldKind, FieldSpec};
