//! npuc: an open, fast, verifiable compiler for the Arm Ethos-U85 NPU.
//!
//! This crate is the driver: it reads models and compiled artifacts, runs the passes and
//! produces command streams, and hosts the `npuc` command-line tool.
//!
//! - [`artifact`]: reading compiled artifacts (Vela-compiled `.tflite`, COP1/COP2 payloads,
//!   raw command streams).
//! - [`disasm`]: disassembly of their command streams as text or JSON.
//! - [`compile`]: TFLite/TOSA graph to command stream ([`container`] is the output format,
//!   [`arch_interface`] what the passes see of the hardware).
//! - [`run`]: Vela-compiled models on the reference simulator; [`reference`]: plain models on
//!   the IR's reference interpreter.
//! - [`report`]: cycles, MACs and memory traffic of an artifact (the backend's performance
//!   model in a system configuration and memory mode).
//!
//! ```
//! use npuc::artifact::Artifact;
//! // A raw stream of two commands: NPU_SET_IFM_REGION 1, NPU_OP_STOP.
//! let bytes = [0x0f, 0x01, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff];
//! let artifact = Artifact::from_bytes(&bytes).unwrap();
//! let text = npuc::disasm::text(&artifact).unwrap();
//! assert!(text.contains("0x0000 NPU_SET_IFM_REGION region=1"));
//! assert!(text.contains("0x0004 NPU_OP_STOP mask=0xffff"));
//! ```

pub mod arch_interface;
pub mod artifact;
pub mod compile;
pub mod container;
pub mod disasm;
pub mod reference;
pub mod report;
pub mod run;
