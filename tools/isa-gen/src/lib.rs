//! Generator for the Ethos-U85 ISA module of the backend.
//!
//! `backend/isa/commands.csv` and `backend/isa/enums.csv` are the one description of the
//! instruction set (all 111 instructions of TRM 3.10/3.11, every payload field with its bit
//! range and type). This crate reads and checks them and writes
//! `backend/src/isa/generated.rs`: the `Opcode` and typed `Command` enums, one payload struct
//! per instruction with its encoder and decoder, the typed field enums, the static tables that
//! drive decoding and disassembly, and the simulator's `RegisterFile`. The field enums the
//! codecs read too ([`emit::SHARED_ENUMS`]) go to `codecs/src/isa_fields.rs` instead, and
//! the backend's module re-exports them.
//!
//! Run `cargo run -p npuc-isa-gen` after editing the CSV files; a test fails if the committed
//! module is stale.

pub mod emit;
pub mod table;

use std::path::{Path, PathBuf};

/// Generates the module text from the two CSV texts.
pub fn generate(commands_csv: &str, enums_csv: &str) -> Result<String, table::TableError> {
    let t = table::read(commands_csv, enums_csv)?;
    Ok(emit::emit(&t))
}

/// Generates the codecs crate's module of the shared field enums ([`emit::SHARED_ENUMS`]).
pub fn generate_codecs_fields(
    commands_csv: &str,
    enums_csv: &str,
) -> Result<String, table::TableError> {
    let t = table::read(commands_csv, enums_csv)?;
    Ok(emit::emit_codecs_fields(&t))
}

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Paths of the inputs and the output, relative to the repository root.
pub const COMMANDS_CSV: &str = "backend/isa/commands.csv";
/// See [`COMMANDS_CSV`].
pub const ENUMS_CSV: &str = "backend/isa/enums.csv";
/// See [`COMMANDS_CSV`].
pub const OUTPUT: &str = "backend/src/isa/generated.rs";
/// See [`COMMANDS_CSV`]: the shared field enums, in the codecs crate (which the backend uses).
pub const CODECS_OUTPUT: &str = "codecs/src/isa_fields.rs";

/// Generates the module from the files in the repository.
pub fn generate_from_repo() -> Result<String, Box<dyn std::error::Error>> {
    Ok(generate_all_from_repo()?[0].1.clone())
}

/// Every generated file from the files in the repository: (path relative to the root, text).
pub fn generate_all_from_repo() -> Result<Vec<(&'static str, String)>, Box<dyn std::error::Error>> {
    let root = repo_root();
    let commands = std::fs::read_to_string(root.join(COMMANDS_CSV))?;
    let enums = std::fs::read_to_string(root.join(ENUMS_CSV))?;
    Ok(vec![
        (OUTPUT, generate(&commands, &enums)?),
        (CODECS_OUTPUT, generate_codecs_fields(&commands, &enums)?),
    ])
}
