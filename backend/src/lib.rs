//! The Ethos-U85 backend of npuc.
//!
//! - [`isa`]: the instruction set from one table — typed commands, encoding, decoding,
//!   disassembly, the register file.
//! - [`arch`]: the five U85 configurations (128..2048 MACs/cycle) and their limits.
//! - [`cop`]: the command-stream payloads Vela puts in its `ethos-u` custom operators
//!   (COP1 and COP2 headers).
//! - [`perf`]: cycle and traffic model of a command stream (TRM chapter 4), without data.
//! - [`system`]: system configurations and memory modes (Vela's `vela.ini` presets and parser).
//! - [`writer`]: the cmd0/cmd1 writer — register programming with redundant-write elision,
//!   the feature-map register groups, kernel, resize and DMA sequences, fences.

pub mod arch;
pub mod cop;
pub mod isa;
pub mod perf;
pub mod sim;
pub mod system;
pub mod writer;
