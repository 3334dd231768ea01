//! npuc: an open, fast, verifiable compiler for the Arm Ethos-U85 NPU.
//!
//! This crate is the driver: it reads models and compiled artifacts, runs the passes and
//! produces command streams, and hosts the `npuc` command-line tool.
//!
//! - [`artifact`]: reading compiled artifacts (Vela-compiled `.tflite`, COP1/COP2 payloads,
//!   raw command streams).
//! - [`disasm`]: disassembly of their command streams as text or JSON.
//! - [`compile`](mod@compile): TFLite/TOSA graph to command stream ([`container`] is the
//!   output format, [`arch_interface`] what the passes see of the hardware, [`targets`] the
//!   registry of targets that implement it, [`compile::summary`] the summary of a
//!   compilation).
//! - [`run`]: Vela-compiled models on the reference simulator; [`reference`](mod@reference):
//!   plain models on the IR's reference interpreter.
//! - [`report`]: cycles, MACs and memory traffic of an artifact (the backend's performance
//!   model in a system configuration and memory mode).
//! - [`tflite_out`]: a partitioned `.tflite` in Vela's format (NPU segments as `ethos-u`
//!   operators, the rest left to the CPU); [`verify`]: simulator against reference interpreter.
//!
//! For a pipeline, [`compile_artifact`] is the entry point: a `.tflite` or `.tosa` model's
//! bytes and [`Options`] (an [`Accelerator`], a [`SystemConfig`] and [`MemoryMode`] by their
//! vela.ini names with [`Options::from_names`], an [`Optimise`] goal) in; the file
//! ([`OutputFormat`]: Vela-format `.tflite` or npuc container), its [`CompileSummary`] (where
//! every source operator runs, and why not on the NPU; command, memory and weight figures),
//! the compiled segments and the estimated cycles out (`examples/compile_tflite.rs`).
//! [`run::run_vela`] and [`run::run_container`] run the result on the simulator,
//! [`verify::verify_file`] checks a model bit-exact.
//!
//! The lower-level entry points are [`compile()`] (an IR graph to a [`CompiledModel`]),
//! [`compile_file`] (a `.tflite` or `.tosa` file, whole graph on the NPU),
//! [`compile_file_to_container`] and [`compile_file_to_tflite`]; every failure is an
//! [`Error`]. A compiled model carries its [`compile::schedule::Schedule`]; [`schedule_text`]
//! and [`disasm_text`] give a model file's schedule and command stream as the stable texts
//! snapshot tests compare.
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

pub mod artifact;
pub mod compile;
pub mod container;
pub mod counts;
pub mod disasm;
pub mod layers;
pub mod npz;
pub mod reference;
pub mod report;
pub mod run;
pub mod supported_ops;
pub mod targets;
pub mod tflite_out;
pub mod vela_output;
pub mod verify;

pub use npuc_target::{arch_interface, payload};

pub use compile::summary::{CompileSummary, Placement, SourceOperator};
pub use compile::{compile, CompileError, CompiledModel, Optimise, Options, OptionsError};
pub use npuc_backend::arch::Accelerator;
pub use npuc_backend::system::ini::IniFile;
pub use npuc_backend::system::presets::{DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG};
pub use npuc_backend::system::{MemoryMap, MemoryMode, SystemConfig};

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
    /// The options name an unknown or unusable system configuration or memory mode.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The compiled artifact cannot be read back (for its report).
    #[error(transparent)]
    Artifact(#[from] artifact::ArtifactError),
    /// The performance model cannot read a compiled stream.
    #[error(transparent)]
    Report(#[from] report::ReportError),
}

/// The message of an error followed by its sources (`a: b: c`), each cause said once: a
/// source whose message the one before it already contains is left out (and trailing white
/// space). `npuc` prints its errors this way, and the Python package raises them with this
/// message.
///
/// ```
/// let e = npuc::compile_file(b"not a model at all", &npuc::Options::default()).unwrap_err();
/// let m = npuc::error_message(&e);
/// assert_eq!(m.matches("does not verify").count(), 1, "{m}");
/// assert_eq!(m, m.trim_end());
/// ```
pub fn error_message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string().trim_end().to_string();
    let mut last = s.clone();
    let mut source = e.source();
    while let Some(cause) = source {
        let m = cause.to_string().trim_end().to_string();
        if !last.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        last = m;
        source = cause.source();
    }
    s
}

/// Refuses what is not a source model although it looks like one: an npuc container, or a
/// `.tflite` already compiled by Vela (or npuc) for the NPU (naming its first `ethos-u`
/// operator).
pub fn check_source(bytes: &[u8]) -> Result<(), Error> {
    check_not_container(bytes)?;
    if bytes.get(4..8) == Some(b"TFL3") {
        if let Ok(m) = npuc_frontend_tflite::TfliteModel::parse(bytes) {
            if let Some(op) = tflite_out::already_compiled(&m) {
                return Err(tflite_out::TfliteOutError::AlreadyCompiled(op).into());
            }
        }
    }
    Ok(())
}

/// [`check_source`]'s refusal of an npuc container.
fn check_not_container(bytes: &[u8]) -> Result<(), Error> {
    if bytes.starts_with(&container::MAGIC) {
        return Err(Error::NotAModel(
            "this is an npuc container (a compiled output), not a model: compile the .tflite or .tosa it came from, or run, report or disassemble it",
        ));
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
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tosa/conv2d_3x3_relu.tosa");
/// let m = npuc::compile_file(&std::fs::read(path).unwrap(), &npuc::Options::default()).unwrap();
/// assert_eq!(m.inputs[0].shape, vec![1, 12, 12, 3]);
/// assert_eq!(*m.payload.command_words().unwrap().last().unwrap(), 0xffff_0000); // NPU_OP_STOP 0xffff
/// ```
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
pub(crate) fn tflite_sources(model: &npuc_frontend_tflite::TfliteModel, m: &mut CompiledModel) {
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
    let target = targets::reader(Some(m.accelerator));
    m.payload
        .command_words()
        .map_err(|e| Error::Compile(CompileError::Payload(e)))?;
    disasm::payload_text(target.as_ref(), &m.payload)
        .map_err(|e| Error::Compile(CompileError::Stream(e.to_string())))
}

/// Compiles a `.tflite` or `.tosa` file into an npuc container ([`container`]).
///
/// ```
/// use npuc::run::npy;
/// let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
/// let read = |p: &str| std::fs::read(format!("{models}/{p}")).unwrap();
/// let model = read("tflite/conv2d_3x3_relu.tflite");
/// let container = npuc::compile_file_to_container(&model, &npuc::Options::default()).unwrap();
/// let input = npy::read(&read("golden/conv2d_3x3_relu/input0_0.npy")).unwrap();
/// let golden = npy::read(&read("golden/conv2d_3x3_relu/output0_0.npy")).unwrap();
/// let run = npuc::run::run_container(&container, &[input]).unwrap();
/// assert_eq!(run.outputs, [golden]);
/// ```
pub fn compile_file_to_container(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    Ok(container::to_bytes(&compile_file(bytes, options)?))
}

/// Compiles a `.tflite` file into a `.tflite` in Vela's format (see [`tflite_out`]); a `.tosa`
/// file is compiled whole onto the NPU and written as one `ethos-u` operator
/// ([`tflite_out::whole`]).
///
/// ```
/// use npuc::run::npy;
/// let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
/// let read = |p: &str| std::fs::read(format!("{models}/{p}")).unwrap();
/// let model = read("tflite/conv2d_3x3_relu.tflite");
/// let tflite = npuc::compile_file_to_tflite(&model, &npuc::Options::default()).unwrap();
/// let input = npy::read(&read("golden/conv2d_3x3_relu/input0_1.npy")).unwrap();
/// let golden = npy::read(&read("golden/conv2d_3x3_relu/output0_1.npy")).unwrap();
/// let run = npuc::run::run_vela(&tflite, &[input]).unwrap();
/// assert_eq!(run.outputs, [golden]);
/// assert_eq!(run.reports.len(), 1); // one ethos-u operator
/// ```
pub fn compile_file_to_tflite(bytes: &[u8], options: &Options) -> Result<Vec<u8>, Error> {
    check_source(bytes)?;
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

/// The file `compile_artifact` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// A `.tflite` in Vela's format: NPU segments as `ethos-u` operators, operators the NPU
    /// cannot run left on the CPU ([`tflite_out`]); a TOSA model compiled whole as one
    /// `ethos-u` operator ([`tflite_out::whole`]).
    #[default]
    Tflite,
    /// npuc's container ([`container`]): the whole model on the NPU.
    Container,
    /// Vela's raw output ([`vela_output::raw_npz`]): the whole model on the NPU, its streams
    /// and tensor layout as the `.npz` arrays ExecuTorch-style readers take.
    Raw,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tflite" => Ok(OutputFormat::Tflite),
            "container" => Ok(OutputFormat::Container),
            "raw" => Ok(OutputFormat::Raw),
            _ => Err(format!(
                "unknown output format {s:?} (tflite, container or raw)"
            )),
        }
    }
}

/// A compiled model file with its summary.
#[derive(Debug, Clone)]
pub struct CompiledArtifact {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Where every source operator runs and the figures of the streams.
    pub summary: CompileSummary,
    /// The compiled NPU segments, in execution order (one for a container).
    pub segments: Vec<CompiledModel>,
    /// The options it was compiled with.
    pub options: Options,
    /// What `bytes` holds.
    pub format: OutputFormat,
}

impl CompiledArtifact {
    /// Estimated cycles of all segments (the summary's `estimated_cycles`).
    pub fn cycles(&self) -> u64 {
        self.summary.estimated_cycles
    }

    /// `npuc report`'s estimate of the file, per kernel and DMA operation, in the system
    /// configuration and memory mode it was compiled for.
    pub fn report(&self) -> Result<report::Report, Error> {
        // The raw `.npz` is not an artifact `report` reads: estimate its one segment.
        let container;
        let bytes = match (self.format, self.segments.as_slice()) {
            (OutputFormat::Raw, [m]) => {
                container = container::to_bytes(m);
                &container
            }
            _ => &self.bytes,
        };
        let artifact = artifact::Artifact::from_bytes(bytes)?;
        let map = MemoryMap::new(&self.options.system_config, &self.options.memory_mode)
            .map_err(OptionsError::from)?;
        Ok(report::report(
            &artifact,
            &targets::ArtifactReaders::new(map, None),
        )?)
    }
}

/// The operators of a source model: the TFLite main subgraph's, or the TOSA main block's
/// (without CONST and CONST_SHAPE, which are data), with their index in it and opcode name.
pub fn source_operators(bytes: &[u8]) -> Result<Vec<(usize, String)>, Error> {
    if reference::is_tosa(bytes) {
        let model =
            npuc_frontend_tosa::TosaModel::parse(bytes).map_err(|e| Error::Reference(e.into()))?;
        return Ok(model
            .main_block()
            .map(|b| {
                b.operators
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (i, o.name()))
                    .filter(|(_, n)| n != "CONST" && n != "CONST_SHAPE")
                    .collect()
            })
            .unwrap_or_default());
    }
    Ok(npuc_frontend_tflite::TfliteModel::parse(bytes)?
        .main_subgraph()
        .operators
        .iter()
        .map(|o| (o.id.index(), o.opcode.name().into_owned()))
        .collect())
}

/// Compiles a `.tflite` or `.tosa` model file into `format`, with its summary: the entry point
/// for pipelines (`npuc compile` and the Python package use it). `progress` is told what is
/// being compiled (useful for large models).
///
/// ```
/// let bytes = std::fs::read(concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/../models/tflite/conv2d_3x3_relu.tflite"
/// ))
/// .unwrap();
/// let options = npuc::Options::new(npuc::Accelerator::U85_128);
/// let out = npuc::compile_artifact(&bytes, npuc::OutputFormat::Tflite, &options, &mut |_| {})
///     .unwrap();
/// assert_eq!(&out.bytes[4..8], b"TFL3");
/// assert_eq!(out.summary.accelerator, "ethos-u85-128");
/// assert_eq!((out.summary.npu_operators, out.summary.cpu_operators), (1, 0));
/// assert_eq!(out.report().unwrap().total.cycles, out.cycles());
/// ```
pub fn compile_artifact(
    bytes: &[u8],
    format: OutputFormat,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<CompiledArtifact, Error> {
    match format {
        OutputFormat::Tflite if !reference::is_tosa(bytes) => {
            // (`compile_tflite` refuses a compiled model itself, from the one parse it makes.)
            check_not_container(bytes)?;
            let o = tflite_out::compile_tflite(bytes, options, progress)?;
            let mut segment_of = std::collections::BTreeMap::new();
            for (k, s) in o.partition.segments.iter().enumerate() {
                segment_of.extend(s.ops.iter().map(|op| (op.index(), k)));
            }
            let operators = o
                .partition
                .ops
                .iter()
                .map(|p| match (&p.cpu_reason, segment_of.get(&p.op)) {
                    (None, Some(&k)) => SourceOperator::npu(p.op, p.opcode.clone(), k),
                    (Some(r), _) => SourceOperator::cpu(p.op, p.opcode.clone(), r.clone()),
                    (None, None) => {
                        SourceOperator::cpu(p.op, p.opcode.clone(), "in no compiled NPU segment")
                    }
                })
                .collect();
            let segments: Vec<CompiledModel> =
                o.partition.segments.into_iter().map(|s| s.model).collect();
            let refs: Vec<&CompiledModel> = segments.iter().collect();
            Ok(CompiledArtifact {
                summary: CompileSummary::new(&refs, operators, options),
                bytes: o.bytes,
                segments,
                options: options.clone(),
                format,
            })
        }
        OutputFormat::Tflite | OutputFormat::Container | OutputFormat::Raw => {
            check_source(bytes)?;
            progress("compiling the whole graph for the NPU");
            let m = compile_file(bytes, options)?;
            let operators = source_operators(bytes)?
                .into_iter()
                .map(|(i, name)| SourceOperator::npu(i, name, 0))
                .collect();
            let file = match format {
                OutputFormat::Tflite => tflite_out::whole::write_whole(&m)?,
                OutputFormat::Raw => vela_output::raw_npz(&m)?,
                OutputFormat::Container => container::to_bytes(&m),
            };
            Ok(CompiledArtifact {
                summary: CompileSummary::new(&[&m], operators, options),
                bytes: file,
                segments: vec![m],
                options: options.clone(),
                format,
            })
        }
    }
}
