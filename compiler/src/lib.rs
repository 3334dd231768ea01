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
//! and [`compile_file_to_tflite`]; every failure is an [`Error`]. A compiled model carries its
//! [`compile::schedule::Schedule`]; [`schedule_text`] and [`disasm_text`] give a model file's
//! schedule and command stream as the stable texts snapshot tests compare.
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
pub mod counts;
pub mod disasm;
pub mod npz;
pub mod reference;
pub mod report;
pub mod run;
pub mod supported_ops;
pub mod tflite_out;
pub mod vela_output;
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
    if reference::is_tosa(bytes) {
        return Ok(compile(&reference::lower_file(bytes)?, options)?);
    }
    let model = npuc_frontend_tflite::TfliteModel::parse(bytes)?;
    if let Some(op) = tflite_out::already_compiled(&model) {
        return Err(tflite_out::TfliteOutError::AlreadyCompiled(op).into());
    }
    let whole = npuc_frontend_tflite::lower::lower(&model)
        .map_err(|e| Error::Reference(e.into()))
        .and_then(|l| Ok(compile(&l.graph, options)?));
    match whole {
        Ok(mut m) => {
            tflite_sources(&model, &mut m);
            Ok(m)
        }
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

/// Names each scheduled operation's sources by TFLite operator: the IR operators the TFLite
/// frontend makes of operator `N` are named `opN/...`; they become operator `N` with its
/// builtin name and first output tensor, once per operator.
fn tflite_sources(model: &npuc_frontend_tflite::TfliteModel, m: &mut CompiledModel) {
    let sg = model.main_subgraph();
    let index_of = |name: &str| -> Option<usize> {
        let rest = name.strip_prefix("op")?;
        rest[..rest.find('/')?].parse().ok()
    };
    for (op, info) in m.schedule.ops.iter_mut().zip(&m.operators) {
        let mut out: Vec<compile::schedule::Source> = Vec::new();
        for (src, ir_name) in std::mem::take(&mut op.source).into_iter().zip(&info.fused) {
            let resolved = index_of(ir_name).and_then(|i| {
                let o = sg.operators.get(i)?;
                let output = o.outputs.first().and_then(|&t| sg.tensor(t))?;
                Some(compile::schedule::Source {
                    index: Some(i),
                    op: o.opcode.name().into_owned(),
                    output: output.name.clone(),
                })
            });
            let s = resolved.unwrap_or(src);
            if !out.contains(&s) {
                out.push(s);
            }
        }
        op.source = out;
    }
}

/// The schedule of a `.tflite` or `.tosa` file compiled whole onto the NPU, as text
/// ([`compile::schedule::Schedule::text`]): what `npuc explain` prints, and a snapshot format.
///
/// ```
/// let bytes = std::fs::read("../models/tflite/conv2d_1x1.tflite").unwrap();
/// let options = npuc::Options::default();
/// let text = npuc::schedule_text(&bytes, &options).unwrap();
/// assert!(text.contains("op 0 CONV"));
/// assert!(text.contains("  source   #0 CONV_2D -> "));
/// let disasm = npuc::disasm_text(&bytes, &options).unwrap();
/// assert!(disasm.ends_with("NPU_OP_STOP mask=0xffff\n"));
/// ```
pub fn schedule_text(bytes: &[u8], options: &Options) -> Result<String, Error> {
    Ok(compile_file(bytes, options)?.schedule.text())
}

/// The disassembly of the command stream of a `.tflite` or `.tosa` file compiled whole onto
/// the NPU ([`disasm::text`] of the stream): a snapshot format.
pub fn disasm_text(bytes: &[u8], options: &Options) -> Result<String, Error> {
    stream_text(&compile_file(bytes, options)?)
}

/// The disassembly of a compiled model's command stream: one line per command, as
/// `npuc disasm` prints them.
pub fn stream_text(m: &CompiledModel) -> Result<String, Error> {
    disasm::words_text(&m.command_stream)
        .map_err(|e| Error::Compile(CompileError::Stream(e.to_string())))
}

/// Compiles a `.tflite` or `.tosa` file into an npuc container ([`container`]).
pub fn compile_file_to_container(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    Ok(container::to_bytes(&compile_file(bytes, options)?))
}

/// Compiles a `.tflite` file into a `.tflite` in Vela's format (see [`tflite_out`]); a `.tosa`
/// file is compiled whole onto the NPU and written as one `ethos-u` operator
/// ([`tflite_out::whole`]).
pub fn compile_file_to_tflite(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    if reference::is_tosa(bytes) {
        return Ok(tflite_out::whole::write_whole(&compile_file(
            bytes, options,
        )?)?);
    }
    Ok(tflite_out::compile_tflite(bytes, options, &mut |_| {})?.bytes)
}

/// Compiles a `.tflite` or `.tosa` file whole onto the NPU into Vela's raw output: the
/// `.npz` archive of [`vela_output::raw_npz`].
pub fn compile_file_to_raw(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    Ok(vela_output::raw_npz(&compile_file(bytes, options)?)?)
}
