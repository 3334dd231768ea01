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
//! - [`tflite_out`]: a partitioned `.tflite` in Vela's format (NPU segments as `ethos-u`
//!   operators, the rest left to the CPU); [`verify`]: simulator against reference interpreter.
//!
//! The library entry points are [`compile()`] (an IR graph to a [`CompiledModel`]),
//! [`compile_file`] (a `.tflite` or `.tosa` file, whole graph on the NPU), [`compile_file_to_container`]
//! and [`compile_file_to_tflite`]; every failure is an [`Error`].
//!
//! ```
//! use npuc_ir::*;
//! let mut b = GraphBuilder::new("pool");
//! let x = b.input("x", DType::Int8, [1, 4, 4, 8]);
//! let y = b.op("pool", Op::MaxPool2d(PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0; 4] }), &[x]);
//! b.output(y);
//! let graph = b.finish().unwrap();
//! let model = npuc::compile(&graph, &npuc::Options::default()).unwrap();
//! assert_eq!(model.outputs[0].shape, vec![1, 2, 2, 8]);
//! let container = npuc::container::to_bytes(&model);
//! assert_eq!(&container[..4], b"NPUC");
//! ```
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
pub mod tflite_out;
pub mod verify;

pub use compile::{compile, CompileError, CompiledModel, Options};

use tflite_out::OpPlacement;

/// Why a model file could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The TFLite file is malformed.
    #[error("{0}")]
    Tflite(#[from] npuc_frontend_tflite::TfliteError),
    /// The file cannot be read or lowered to the IR.
    #[error("{0}")]
    Reference(#[from] reference::ReferenceError),
    /// The graph cannot be compiled.
    #[error("{0}")]
    Compile(#[from] CompileError),
    /// Some operators cannot run on the NPU (npuc container output only).
    #[error("{}", not_on_npu(.0))]
    NotOnNpu(Vec<OpPlacement>),
    /// Writing a `.tflite` output failed.
    #[error("{0}")]
    TfliteOut(#[from] tflite_out::TfliteOutError),
    /// Verification could not be carried out.
    #[error("{0}")]
    Verify(Box<verify::VerifyError>),
    /// The file is a compiled artifact, not a model to compile.
    #[error("{0}")]
    NotAModel(&'static str),
}

/// Refuses what is not a source model although it looks like one: an npuc container or a
/// `.tflite` already compiled by Vela (or npuc) for the NPU.
pub fn check_source(bytes: &[u8]) -> Result<(), Error> {
    if bytes.starts_with(&container::MAGIC) {
        return Err(Error::NotAModel(
            "this is an npuc container (a compiled output), not a model: compile the .tflite or .tosa it came from, or run, report or disassemble it",
        ));
    }
    if bytes.get(4..8) == Some(b"TFL3") {
        if let Ok(m) = npuc_frontend_tflite::TfliteModel::parse(bytes) {
            if m.operator_codes().iter().any(|c| c.is_ethos_u()) {
                return Err(Error::NotAModel(
                    "this .tflite is already compiled for the NPU (it holds ethos-u operators): compile the source model, or run, report or disassemble this one",
                ));
            }
        }
    }
    Ok(())
}

fn not_on_npu(ops: &[OpPlacement]) -> String {
    let mut s = format!(
        "{} operator(s) cannot run on the NPU, so the model cannot be one npuc container:",
        ops.len()
    );
    for o in ops {
        s.push_str(&format!(
            "\n  operator {} ({}): {}",
            o.op,
            o.opcode,
            o.cpu_reason.as_deref().unwrap_or("?")
        ));
    }
    s.push_str(
        "\nwrite a .tflite output instead (-o MODEL.tflite): those operators then stay on the CPU",
    );
    s
}

/// Compiles a `.tflite` or `.tosa` file whole onto the NPU. When a TFLite model has
/// operators the NPU path does not support, the error lists every one of them
/// ([`Error::NotOnNpu`]).
pub fn compile_file(bytes: &[u8], options: &Options) -> Result<CompiledModel, Error> {
    check_source(bytes)?;
    if reference::is_tosa(bytes) {
        return Ok(compile(&reference::lower_file(bytes)?, options)?);
    }
    let model = npuc_frontend_tflite::TfliteModel::parse(bytes)?;
    let whole = npuc_frontend_tflite::lower::lower(&model)
        .map_err(|e| Error::Reference(e.into()))
        .and_then(|l| Ok(compile(&l.graph, options)?));
    match whole {
        Ok(m) => Ok(m),
        Err(e) => {
            let cpu: Vec<OpPlacement> = model
                .main_subgraph()
                .operators
                .iter()
                .filter_map(|op| {
                    tflite_out::partition::check_op(&model, op.id)
                        .err()
                        .map(|reason| OpPlacement {
                            op: op.id.index(),
                            opcode: op.opcode.name().into_owned(),
                            cpu_reason: Some(reason),
                        })
                })
                .collect();
            Err(if cpu.is_empty() {
                e
            } else {
                Error::NotOnNpu(cpu)
            })
        }
    }
}

/// Compiles a `.tflite` or `.tosa` file into an npuc container ([`container`]).
pub fn compile_file_to_container(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    Ok(container::to_bytes(&compile_file(bytes, options)?))
}

/// Compiles a `.tflite` file into a `.tflite` in Vela's format (see [`tflite_out`]).
pub fn compile_file_to_tflite(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    check_source(bytes)?;
    Ok(tflite_out::compile_tflite(bytes, options, &mut |_| {})?.bytes)
}
