//! Generator for the Ethos-U85 ISA module of the backend.
//!
//! `backend/isa/commands.csv` and `backend/isa/enums.csv` are the one description of the
//! instruction set (all 111 instructions of TRM 3.10/3.11, every payload field with its bit
//! range and type). This crate reads and checks them and writes
//! `backend/src/isa/generated.rs`: the `Opcode` and typed `Command` enums, one payload struct
//! per instruction with its encoder and decoder, the typed field enums, the static tables that
//! drive decoding and disassembly, and the simulator's `RegisterFile`.
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

/// Generates the module from the files in the repository.
pub fn generate_from_repo() -> Result<String, Box<dyn std::error::Error>> {
    let root = repo_root();
    let commands = std::fs::read_to_string(root.join(COMMANDS_CSV))?;
    let enums = std::fs::read_to_string(root.join(ENUMS_CSV))?;
    Ok(generate(&commands, &enums)?)
}
