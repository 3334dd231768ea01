//! `npuc verify`: a compiled model on the simulator against the graph on the reference
//! interpreter, on seeded random full-range inputs, every output byte compared.
//!
//! When an output differs, the first diverging NPU operation is localised: the stream is run
//! again up to (and including) the kernel command after which each operation's OFM is complete
//! (its last slice or band, [`crate::compile::OperatorInfo::done_at`]), with an `NPU_OP_STOP`
//! after it, and that OFM is read from memory right away (while it is certainly still live)
//! and compared with the interpreter's value of the IR tensor it computes, at the OFM
//! placement the compiled model records for the operation. Operations whose OFM is never whole
//! in memory (chained, or in a cascade's ring buffer) are skipped.

use crate::compile::{self, lower, CompiledModel};
use npuc_backend::sim::{SimError, Simulator};
use npuc_ir::{DType, Graph, InterpError, TensorValue};
use std::fmt::Write as _;

/// Verification settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Number of random input samples.
    pub samples: usize,
    /// Seed of the first sample (sample `k` uses `seed + k`).
    pub seed: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            samples: 3,
            seed: 1,
        }
    }
}

/// Why verification could not be carried out (a mismatch is not an error: see
/// [`VerifyReport`]).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The reference interpreter stopped.
    #[error("reference interpreter: {0}")]
    Interp(#[from] InterpError),
    /// The simulator stopped.
    #[error("simulator, sample {sample}: {source}")]
    Sim {
        /// Sample number.
        sample: usize,
        /// The diagnostic.
        source: SimError,
    },
    /// The model's inputs or outputs do not fit its arena.
    #[error("{0}")]
    Layout(String),
    #[error(transparent)]
    Payload(#[from] crate::payload::PayloadError),
    /// Verification would compare no output byte (no sample, no operator on the NPU, or
    /// outputs without elements), so it cannot show anything.
    #[error("nothing to compare: {0}")]
    NothingCompared(String),
}

/// The first NPU operation whose output differs from the interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the NPU operation (execution order).
    pub index: usize,
    /// Its name (as in the compiled model's operator list).
    pub name: String,
    /// The IR operators fused into it.
    pub fused: Vec<String>,
    /// Its parameters as text (kernel, feature maps, geometry, requantization).
    pub params: String,
    /// First differing byte of its OFM, the expected and the actual byte.
    pub byte: usize,
    pub expected: u8,
    pub actual: u8,
    /// Number of differing bytes in its OFM.
    pub differing: usize,
}

/// An output that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Sample number.
    pub sample: usize,
    /// Graph output number and name.
    pub output: usize,
    pub name: String,
    /// First differing byte, expected and actual.
    pub byte: usize,
    pub expected: u8,
    pub actual: u8,
    /// Number of differing bytes.
    pub differing: usize,
}

/// The result of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyReport {
    /// Samples run.
    pub samples: usize,
    /// Output bytes compared.
    pub bytes_compared: u64,
    /// Outputs that differ.
    pub mismatches: Vec<Mismatch>,
    /// The first diverging NPU operation (for the first sample with a mismatch), when it could
    /// be found.
    pub divergence: Option<Divergence>,
}

impl VerifyReport {
    /// True when every output byte of every sample matched.
    pub fn is_bit_exact(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// A human-readable account.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if self.is_bit_exact() {
            let _ = write!(
                s,
                "bit-exact: {} samples, {} output bytes compared",
                self.samples, self.bytes_compared
            );
            return s;
        }
        for m in &self.mismatches {
            let _ = writeln!(
                s,
                "sample {}: output {} {:?}: {} bytes differ, first at byte {} (expected {:#04x}, got {:#04x})",
                m.sample, m.output, m.name, m.differing, m.byte, m.expected, m.actual
            );
        }
        match &self.divergence {
            Some(d) => {
                let _ = write!(
                    s,
                    "first diverging NPU operation: #{} {} (fused {}): {} OFM bytes differ, first at byte {} (expected {:#04x}, got {:#04x})\n  {}",
                    d.index, d.name, d.fused.join(", "), d.differing, d.byte, d.expected, d.actual, d.params
                );
            }
            None => s.push_str("no single NPU operation output differs (not localised)"),
        }
        s
    }
}

/// xorshift64* (deterministic, no dependency).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
    }
}

/// Seeded random full-range values for the graph's inputs.
pub fn random_inputs(graph: &Graph, seed: u64) -> Vec<TensorValue> {
    let mut rng = Rng::new(seed);
    graph
        .inputs()
        .iter()
        .map(|&t| {
            let ty = &graph.tensor(t).expect("graph input").ty;
            let n = ty.shape.num_elements().unwrap_or(0);
            let bytes: Vec<u8> = (0..n * ty.dtype.byte_size())
                .map(|_| match ty.dtype {
                    DType::Bool => rng.byte() & 1,
                    _ => rng.byte(),
                })
                .collect();
            TensorValue::from_le_bytes(ty.dtype, ty.shape.dims().to_vec(), &bytes)
                .expect("random bytes of the right size")
        })
        .collect()
}

fn first_diff(a: &[u8], b: &[u8]) -> Option<(usize, usize)> {
    let n = a.iter().zip(b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    let first = a.iter().zip(b).position(|(x, y)| x != y);
    match first {
        Some(i) => Some((i, n)),
        None if n > 0 => Some((a.len().min(b.len()), n)),
        None => None,
    }
}

/// The contents of regions 1 (arena) and 2 (fast memory, empty when unused) after a run.
struct Memories {
    arena: Vec<u8>,
    fast: Vec<u8>,
}

impl Memories {
    fn region(&self, region: u8) -> &[u8] {
        if region == compile::REGION_FAST {
            &self.fast
        } else {
            &self.arena
        }
    }
}

/// Runs `words` with `model`'s regions and `inputs`; returns regions 1 and 2 afterwards.
fn simulate(
    model: &CompiledModel,
    inputs: &[TensorValue],
    words: &[u32],
    sample: usize,
) -> Result<(Memories, npuc_backend::sim::RunReport), VerifyError> {
    let mut sim = Simulator::new(model.accelerator);
    let mut ro = model.read_only.clone();
    ro.resize(ro.len().max(16), 0);
    sim.memory_mut().add_region(0, ro);
    let mut arena = vec![0u8; model.arena_size.max(16) as usize];
    let mut fast = vec![0u8; model.fast_size as usize];
    for (p, v) in model.inputs.iter().zip(inputs) {
        let bytes = v.to_le_bytes();
        let at = p.offset as usize;
        let mem = if p.region == compile::REGION_FAST {
            &mut fast
        } else {
            &mut arena
        };
        mem.get_mut(at..at + bytes.len())
            .ok_or_else(|| {
                VerifyError::Layout(format!("input {} outside region {}", p.name, p.region))
            })?
            .copy_from_slice(&bytes);
    }
    let id = sim.memory_mut().add_region(1, arena);
    let fast_id = (model.fast_size > 0).then(|| sim.memory_mut().add_region(2, fast));
    let report = sim
        .run(words)
        .map_err(|source| VerifyError::Sim { sample, source })?;
    let mem = Memories {
        arena: sim.memory().buffer(id).to_vec(),
        fast: fast_id.map_or_else(Vec::new, |f| sim.memory().buffer(f).to_vec()),
    };
    Ok((mem, report))
}

/// The most bytes of 64-bit values the reference interpreter may hold for one operation
/// (its operands and its result): 4 GiB (decision H8).
pub const MAX_INTERPRETER_BYTES: u64 = 1 << 32;

/// The 64-bit working set of the graph's largest operation (operands and result, 8 bytes per
/// element), and that operation's name: what the interpreter needs at least while it runs it.
pub fn interpreter_working_set(graph: &Graph) -> (u64, String) {
    let elements = |t: npuc_ir::TensorId| {
        graph
            .tensor(t)
            .and_then(|x| x.ty.shape.num_elements())
            .map_or(u64::MAX, |n| n as u64)
    };
    let mut worst = (0u64, String::new());
    for o in graph.topo_order().unwrap_or_default() {
        let Some(node) = graph.op(o) else { continue };
        let bytes = node
            .inputs()
            .iter()
            .chain(node.outputs())
            .fold(0u64, |a, &t| {
                a.saturating_add(elements(t).saturating_mul(8))
            });
        if bytes > worst.0 {
            worst = (bytes, node.name.clone());
        }
    }
    worst
}

/// Verifies `model` (compiled from `graph`) on `opts.samples` random inputs.
pub fn verify_graph(
    graph: &Graph,
    model: &CompiledModel,
    opts: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    let (bytes, op) = interpreter_working_set(graph);
    if bytes > MAX_INTERPRETER_BYTES {
        return Err(VerifyError::Layout(format!(
            "operator {op} needs {bytes} bytes of 64-bit values in the reference interpreter, above its limit of {MAX_INTERPRETER_BYTES}; verify a smaller model"
        )));
    }
    let mut report = VerifyReport {
        samples: opts.samples,
        ..VerifyReport::default()
    };
    let words = model.payload.command_words()?;
    for sample in 0..opts.samples {
        let inputs = random_inputs(graph, opts.seed + sample as u64);
        let values = npuc_ir::run(graph, inputs.clone())?;
        let (mem, _) = simulate(model, &inputs, &words, sample)?;
        let before = report.mismatches.len();
        for (k, (&t, p)) in graph.outputs().iter().zip(&model.outputs).enumerate() {
            let expected = values
                .get(&t)
                .map(TensorValue::to_le_bytes)
                .unwrap_or_default();
            let at = p.offset as usize;
            let actual = mem
                .region(p.region)
                .get(at..at + p.size as usize)
                .ok_or_else(|| {
                    VerifyError::Layout(format!("output {} outside region {}", p.name, p.region))
                })?;
            report.bytes_compared += expected.len() as u64;
            if let Some((byte, differing)) = first_diff(&expected, actual) {
                report.mismatches.push(Mismatch {
                    sample,
                    output: k,
                    name: p.name.clone(),
                    byte,
                    expected: expected.get(byte).copied().unwrap_or(0),
                    actual: actual.get(byte).copied().unwrap_or(0),
                    differing,
                });
            }
        }
        if report.mismatches.len() > before && report.divergence.is_none() {
            report.divergence = localise(graph, model, &inputs, &values, sample)?;
        }
    }
    Ok(report)
}

/// Finds the first NPU operation whose OFM differs from the interpreter.
pub fn localise(
    graph: &Graph,
    model: &CompiledModel,
    inputs: &[TensorValue],
    values: &npuc_ir::Values,
    sample: usize,
) -> Result<Option<Divergence>, VerifyError> {
    let Ok(lowered) = lower::lower(graph) else {
        return Ok(None);
    };
    let stream = model.payload.command_words()?;
    let Some(&stop) = stream.last() else {
        return Ok(None);
    };
    if lowered.ops.len() != model.operators.len() {
        return Ok(None);
    }
    for (k, (op, info)) in lowered.ops.iter().zip(&model.operators).enumerate() {
        // DMA operations (SCATTER's copies) are not kernel operations; an OFM never whole in
        // memory (chained, or in a cascade's ring buffer) cannot be compared. A sliced or
        // cascaded operation's OFM is complete after its last part.
        if matches!(op.kernel, lower::Kernel::Dma(_)) {
            continue;
        }
        let Some(at) = info.done_at else {
            continue;
        };
        // The OFM holds the output of the group's last fused IR operator.
        let last = op.fused.last().unwrap_or(&op.name);
        let Some(ir_op) = graph.find_op(last).and_then(|o| graph.op(o)) else {
            continue;
        };
        let Some(expected) = values
            .get(&ir_op.outputs()[0])
            .map(TensorValue::to_le_bytes)
        else {
            continue;
        };
        let (region, off, size) = info.ofm;
        if region == compile::alloc::CHAINED {
            continue;
        }
        let mut words = stream[..=at].to_vec();
        words.push(stop);
        let (mem, _) = simulate(model, inputs, &words, sample)?;
        let (off, size) = (off as usize, size as usize);
        let Some(actual) = mem.region(region).get(off..off + size) else {
            continue;
        };
        if let Some((byte, differing)) = first_diff(&expected, actual) {
            return Ok(Some(Divergence {
                index: k,
                name: op.name.clone(),
                fused: op.fused.clone(),
                params: params(op),
                byte,
                expected: expected.get(byte).copied().unwrap_or(0),
                actual: actual.get(byte).copied().unwrap_or(0),
                differing,
            }));
        }
    }
    Ok(None)
}

/// The parameters of an NPU operation as one line (weights left out).
pub fn params(op: &lower::NpuOp) -> String {
    let fm = |f: &lower::Fm| {
        format!(
            "{}x{}x{} {} zp {}",
            f.shape.0, f.shape.1, f.shape.2, f.dtype, f.zero_point
        )
    };
    let mut s = format!("{:?}: ifm {}", op.kernel, fm(&op.ifm));
    if let Some(f) = &op.ifm2 {
        let _ = write!(s, ", ifm2 {}", fm(f));
    }
    let _ = write!(
        s,
        ", ofm {}, kernel {}x{} stride {}x{} dilation {}x{} pad {:?}, activation [{}, {}], rounding {:?}",
        fm(&op.ofm),
        op.kernel_size.0,
        op.kernel_size.1,
        op.stride.0,
        op.stride.1,
        op.dilation.0,
        op.dilation.1,
        op.pad,
        op.act.0,
        op.act.1,
        op.round
    );
    match &op.requant {
        lower::Requant::PerChannel(c) => {
            let _ = write!(s, ", per-channel scales ({} channels)", c.len());
        }
        lower::Requant::Global { scale, shift } => {
            let _ = write!(s, ", ofm scale {scale} shift {shift}");
        }
    }
    s
}

/// Compiles `graph` with `options` and verifies it.
pub fn compile_and_verify(
    graph: &Graph,
    options: &compile::Options,
    opts: &VerifyOptions,
) -> Result<VerifyReport, crate::Error> {
    let model = compile::compile(graph, options)?;
    verify_graph(graph, &model, opts).map_err(|e| crate::Error::Verify(Box::new(e)))
}

/// The verification of one compiled part of a model file.
#[derive(Debug, Clone)]
pub struct PartReport {
    /// `whole graph`, or `segment N (operators a..b)` for a partitioned TFLite model.
    pub part: String,
    /// Its NPU operations and commands.
    pub counts: crate::counts::Counts,
    pub report: VerifyReport,
}

/// Compiles a `.tflite` / `.tosa` file and verifies it. A model that runs whole on the NPU
/// is verified as one graph; a TFLite model with CPU operators is partitioned as for a
/// `.tflite` output and every NPU segment is verified on random values of its boundary
/// tensors.
///
/// ```
/// use npuc::verify::{verify_file, VerifyOptions};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tosa/conv2d_3x3_relu.tosa");
/// let opts = VerifyOptions { samples: 2, seed: 1 };
/// let parts = verify_file(&std::fs::read(path).unwrap(), &Default::default(), &opts).unwrap();
/// assert_eq!(parts.len(), 1);
/// assert!(parts[0].report.is_bit_exact(), "{}", parts[0].report.describe());
/// assert_eq!(parts[0].report.bytes_compared, 2 * 12 * 12 * 20);
/// ```
pub fn verify_file(
    bytes: &[u8],
    options: &compile::Options,
    opts: &VerifyOptions,
) -> Result<Vec<PartReport>, crate::Error> {
    let err = |e: VerifyError| crate::Error::Verify(Box::new(e));
    if opts.samples == 0 {
        return Err(err(VerifyError::NothingCompared(
            "--samples 0 runs no input sample; give at least 1".into(),
        )));
    }
    let parts = match crate::compile_file(bytes, options) {
        Ok(model) => {
            let graph = crate::reference::lower_file(bytes)?;
            let report = verify_graph(&graph, &model, opts).map_err(err)?;
            vec![PartReport {
                part: "whole graph".into(),
                counts: crate::counts::Counts::of(&model),
                report,
            }]
        }
        Err(crate::Error::NotOnNpu(cpu)) => {
            let tfl = npuc_frontend_tflite::TfliteModel::parse(bytes)?;
            let part = crate::tflite_out::partition::partition(&tfl, options, &mut |_| {});
            let mut out = Vec::new();
            for (i, seg) in part.segments.iter().enumerate() {
                let g = npuc_frontend_tflite::lower::partition::lower_ops(
                    &tfl,
                    &seg.ops,
                    &seg.inputs,
                    &seg.outputs,
                )
                .map_err(|e| crate::Error::Reference(e.into()))?
                .graph;
                let report = verify_graph(&g, &seg.model, opts).map_err(err)?;
                out.push(PartReport {
                    part: format!(
                        "segment {i} (operators {}..={})",
                        seg.ops[0].index(),
                        seg.ops[seg.ops.len() - 1].index()
                    ),
                    counts: crate::counts::Counts::of(&seg.model),
                    report,
                });
            }
            if out.is_empty() {
                let reasons: Vec<String> = cpu
                    .iter()
                    .map(|o| {
                        format!(
                            "operator {} ({}): {}",
                            o.op,
                            o.opcode,
                            o.cpu_reason.as_deref().unwrap_or("?")
                        )
                    })
                    .collect();
                return Err(err(VerifyError::NothingCompared(format!(
                    "no operator runs on the NPU ({})",
                    reasons.join("; ")
                ))));
            }
            out
        }
        Err(e) => return Err(e),
    };
    if parts.iter().all(|p| p.report.bytes_compared == 0) {
        return Err(err(VerifyError::NothingCompared(
            "the outputs have no elements".into(),
        )));
    }
    Ok(parts)
}
