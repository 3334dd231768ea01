//! `npuc report`: cycles, MACs and memory traffic of a compiled artifact, from the cost model
//! of the target that reads it ([`Target::estimate_stream`]; the Ethos-U85's is TRM chapter 4)
//! in a system configuration and memory mode ([`crate::targets::ArtifactReaders`]), after the
//! target's validation ([`Target::validate`]).
//!
//! ```
//! use npuc::artifact::Artifact;
//! use npuc::targets::ArtifactReaders;
//! // A raw stream: NPU_OP_STOP only.
//! let artifact = Artifact::from_bytes(&[0x00, 0x00, 0xff, 0xff]).unwrap();
//! let r = npuc::report::report(&artifact, &ArtifactReaders::default_u85()).unwrap();
//! assert_eq!(r.total.cycles, 0);
//! assert_eq!(r.json()["ops"].as_array().unwrap().len(), 0);
//! ```

use crate::arch_interface::{OpEstimate, StreamEstimate, Target, TargetDescription};
use crate::artifact::{Artifact, StreamOrigin};
use crate::targets::ArtifactReaders;
use serde_json::{json, Value};
use std::fmt::Write;

/// The TRM name of the DMA command, as the Ethos-U85's cost model names its operations.
pub const DMA_INSTRUCTION: &str = "NPU_OP_DMA_START";

/// A stream the model cannot read.
#[derive(Debug, thiserror::Error)]
#[error("command stream {stream}: {problem}")]
pub struct ReportError {
    /// Index of the stream in the artifact.
    pub stream: usize,
    /// What is wrong.
    pub problem: ReportProblem,
}

/// What is wrong with a stream.
#[derive(Debug, thiserror::Error)]
pub enum ReportProblem {
    /// It is not a command stream (another target's payload).
    #[error(transparent)]
    Payload(#[from] crate::payload::PayloadError),
    /// It fails the stream validation `npuc run` and `npuc compile` apply (decision H3).
    #[error("not a valid stream: {0}")]
    Invalid(String),
    /// The target's cost model cannot read it.
    #[error("{0}")]
    Perf(String),
    /// A figure does not fit in 64 bits.
    #[error("{0} does not fit in 64 bits")]
    Overflow(&'static str),
}

/// Region sizes a raw stream or a bare payload is validated with, which carry none: regions
/// 0, 1 and 2 (those every memory mode uses) of 256 MiB each (decision H3).
pub const RAW_STREAM_REGION_BYTES: u64 = 1 << 28;

const RAW_STREAM_REGIONS: [Option<u64>; 3] = [Some(RAW_STREAM_REGION_BYTES); 3];

/// The figures `--json` prints, for one operation or the whole artifact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// Cycles (for the total: until everything has completed, DMAs overlapping kernels).
    pub cycles: u64,
    /// MACs.
    pub macs: u64,
    /// Bytes read from / written to SRAM.
    pub sram_read: u64,
    /// See `sram_read`.
    pub sram_write: u64,
    /// Bytes read from / written to DRAM.
    pub dram_read: u64,
    /// See `dram_read`.
    pub dram_write: u64,
    /// Bytes read from flash (on-chip and off-chip).
    pub flash_read: u64,
    /// Sum of WEIGHT*_LENGTH.
    pub weight_bytes: u64,
    /// Sum of SCALE_LENGTH.
    pub scale_bytes: u64,
    /// Peak SRAM use in bytes.
    pub peak_sram: u64,
}

impl Figures {
    fn json(&self, cycles_key: &str) -> Value {
        json!({
            cycles_key: self.cycles,
            "macs": self.macs,
            "sram_read_bytes": self.sram_read,
            "sram_write_bytes": self.sram_write,
            "dram_read_bytes": self.dram_read,
            "dram_write_bytes": self.dram_write,
            "flash_read_bytes": self.flash_read,
            "weight_bytes": self.weight_bytes,
            "scale_bytes": self.scale_bytes,
            "peak_sram_bytes": self.peak_sram,
        })
    }
}

/// One operation of the report.
#[derive(Debug, Clone)]
pub struct OpRow {
    /// Index of its stream in the artifact.
    pub stream: usize,
    /// The target's estimate.
    pub estimate: OpEstimate,
    /// Its figures.
    pub figures: Figures,
}

/// The report of an artifact.
#[derive(Debug, Clone)]
pub struct Report {
    /// The configuration and memories modelled ([`Target::describe`]).
    pub target: TargetDescription,
    /// Each stream's estimate, with where it came from.
    pub streams: Vec<(StreamOrigin, StreamEstimate)>,
    /// Every operation, in execution order.
    pub ops: Vec<OpRow>,
    /// Totals.
    pub total: Figures,
    /// Peak bytes per region (largest over the streams; every region the target has).
    pub peak: Vec<u64>,
}

/// Bytes read from and written to the memory named `name` (vela.ini's names).
fn pick(p: &OpEstimate, name: &str) -> (u64, u64) {
    p.memory
        .iter()
        .find(|(m, _, _)| m == name)
        .map_or((0, 0), |&(_, r, w)| (r, w))
}

/// `in_sram`: whether each region is in SRAM.
fn op_figures(p: &OpEstimate, in_sram: &[bool]) -> Figures {
    let peak_sram = p
        .regions
        .iter()
        .zip(in_sram)
        .filter(|(_, &sram)| sram)
        .map(|(r, _)| r.extent)
        .max()
        .unwrap_or(0);
    let (sram_read, sram_write) = pick(p, "Sram");
    let (dram_read, dram_write) = pick(p, "Dram");
    Figures {
        cycles: p.cycles,
        macs: p.macs,
        sram_read,
        sram_write,
        dram_read,
        dram_write,
        flash_read: pick(p, "OnChipFlash").0 + pick(p, "OffChipFlash").0,
        weight_bytes: p.weight_bytes,
        scale_bytes: p.scale_bytes,
        peak_sram,
    }
}

/// The configuration an npuc container records (`None` for any other artifact, or a container
/// without the record): what `npuc report` models unless told otherwise.
pub fn recorded_configuration(bytes: &[u8]) -> Option<crate::container::Configuration> {
    if bytes.get(..4) != Some(&crate::container::MAGIC[..]) {
        return None;
    }
    crate::container::from_bytes(bytes)
        .ok()?
        .manifest
        .configuration
}

/// Estimates every command stream of an artifact with the targets that read it (`readers`:
/// in a memory system; the configuration is the one the artifact names, payload header or
/// container CONFIG word, else the one `readers` give, else Ethos-U85-256).
pub fn report(artifact: &Artifact, readers: &ArtifactReaders) -> Result<Report, ReportError> {
    let mut streams = Vec::new();
    let mut ops = Vec::new();
    let mut total = Figures::default();
    let mut peak: Vec<u64> = Vec::new();
    for (i, s) in artifact.streams.iter().enumerate() {
        let fail = |problem| ReportError { stream: i, problem };
        let target: Box<dyn Target> = readers.stream(artifact, s);
        let payload = crate::targets::artifact_payload(&s.words);
        let regions: &[Option<u64>] = match &s.regions {
            Some(r) => r,
            None => &RAW_STREAM_REGIONS,
        };
        target
            .validate(&payload, regions, s.read_only.as_deref())
            .map_err(|e| fail(ReportProblem::Invalid(e.reason)))?;
        let perf = target
            .estimate_stream(&payload)
            .map_err(|e| fail(ReportProblem::Perf(e.to_string())))?;
        let in_sram: Vec<bool> = (0..perf.peak.len())
            .map(|r| u8::try_from(r).is_ok_and(|r| target.region_memory(r) == "Sram"))
            .collect();
        let add = |a: u64, b: u64, what| {
            a.checked_add(b)
                .ok_or_else(|| fail(ReportProblem::Overflow(what)))
        };
        total.cycles = add(total.cycles, perf.total, "the cycle count")?;
        for p in &perf.ops {
            let f = op_figures(p, &in_sram);
            total.macs = add(total.macs, f.macs, "the MAC count")?;
            total.sram_read = add(total.sram_read, f.sram_read, "the SRAM bytes read")?;
            total.sram_write = add(total.sram_write, f.sram_write, "the SRAM bytes written")?;
            total.dram_read = add(total.dram_read, f.dram_read, "the DRAM bytes read")?;
            total.dram_write = add(total.dram_write, f.dram_write, "the DRAM bytes written")?;
            total.flash_read = add(total.flash_read, f.flash_read, "the flash bytes read")?;
            total.weight_bytes = add(total.weight_bytes, f.weight_bytes, "the weight bytes")?;
            total.scale_bytes = add(total.scale_bytes, f.scale_bytes, "the scale bytes")?;
            ops.push(OpRow {
                stream: i,
                estimate: p.clone(),
                figures: f,
            });
        }
        if peak.len() < perf.peak.len() {
            peak.resize(perf.peak.len(), 0);
        }
        for (p, &q) in peak.iter_mut().zip(&perf.peak) {
            *p = (*p).max(q);
        }
        // Regions in one memory share its address space (as Vela lays them out): SRAM's use
        // is its largest region peak.
        let sram_peak = perf
            .peak
            .iter()
            .zip(&in_sram)
            .filter(|(_, &sram)| sram)
            .map(|(&p, _)| p)
            .max()
            .unwrap_or(0);
        total.peak_sram = total.peak_sram.max(sram_peak);
        streams.push((s.origin.clone(), perf));
    }
    Ok(Report {
        target: readers.artifact(artifact).describe(),
        streams,
        ops,
        total,
        peak,
    })
}

impl Report {
    /// The `--json` object: totals, then `ops` with the same keys per operation (`cycles`
    /// instead of `total_cycles`, plus `stream`, `offset`, `instruction`, `start_cycle`).
    /// `total_cycles` is the end of the last operation: DMAs overlap kernel operations, so it
    /// can be less than the sum of the operations' cycles.
    pub fn json(&self) -> Value {
        let mut v = self.total.json("total_cycles");
        let ops: Vec<Value> = self
            .ops
            .iter()
            .map(|o| {
                let mut j = o.figures.json("cycles");
                j["stream"] = json!(o.stream);
                j["offset"] = json!(o.estimate.offset);
                j["start_cycle"] = json!(o.estimate.start);
                j["instruction"] = json!(o.estimate.instruction);
                j
            })
            .collect();
        v["ops"] = Value::Array(ops);
        v["accelerator"] = json!(self.target.name);
        v["system_config"] = json!(self.target.system_config);
        v["memory_mode"] = json!(self.target.memory_mode);
        v["peak_region_bytes"] = json!(self.peak);
        v
    }

    /// The kernel and DMA commands the report lists (`npu_operations` is 0: a stream alone
    /// does not tell how the compiler grouped its commands).
    pub fn counts(&self) -> crate::counts::Counts {
        let dma_commands = self.ops.iter().filter(|o| o.estimate.dma).count();
        crate::counts::Counts {
            npu_operations: 0,
            kernel_commands: self.ops.len() - dma_commands,
            dma_commands,
        }
    }

    /// The human-readable table: one row per command (`start` is the cycle it starts at).
    pub fn text(&self) -> String {
        let mut s = String::new();
        let m = &self.target;
        let _ = writeln!(
            s,
            "{} | system {} ({} MHz) | memory mode {} | region 0: {}, region 1: {}, region 2: {}",
            m.name,
            m.system_config,
            m.clock_hz / 1e6,
            m.memory_mode,
            m.region_memory(0),
            m.region_memory(1),
            m.region_memory(2)
        );
        let _ = writeln!(
            s,
            "{:>3} {:>8} {:<22} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "str",
            "offset",
            "operation",
            "start",
            "cycles",
            "MACs",
            "SRAM rd",
            "SRAM wr",
            "DRAM rd",
            "DRAM wr",
            "flash rd",
            "weights"
        );
        for o in &self.ops {
            let f = &o.figures;
            let _ = writeln!(
                s,
                "{:>3} {:>#8x} {:<22} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
                o.stream,
                o.estimate.offset,
                o.estimate.instruction,
                o.estimate.start,
                f.cycles,
                f.macs,
                f.sram_read,
                f.sram_write,
                f.dram_read,
                f.dram_write,
                f.flash_read,
                f.weight_bytes
            );
        }
        let t = &self.total;
        let _ = writeln!(
            s,
            "{:>3} {:>8} {:<22} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "",
            "",
            "total",
            "",
            t.cycles,
            t.macs,
            t.sram_read,
            t.sram_write,
            t.dram_read,
            t.dram_write,
            t.flash_read,
            t.weight_bytes
        );
        let _ = writeln!(s, "commands: {}", self.counts().commands());
        let secs = t.cycles as f64 / m.clock_hz;
        let _ = writeln!(
            s,
            "time {:.3} ms at {} MHz; scale bytes {}; peak SRAM {} bytes",
            secs * 1e3,
            m.clock_hz / 1e6,
            t.scale_bytes,
            t.peak_sram
        );
        let peaks: Vec<String> = self
            .peak
            .iter()
            .enumerate()
            .filter(|(_, &p)| p > 0)
            .map(|(r, p)| format!("region {r} ({}): {p}", m.region_memory(r)))
            .collect();
        let _ = writeln!(s, "peak per region: {}", peaks.join(", "));
        s
    }
}

/// How `--per-layer` grouped the commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// By source operator, from the layer map npuc records in its outputs.
    SourceOperators,
    /// By command group (a kernel command with the DMAs issued before it): a stream with no
    /// layer map (Vela's, a raw stream, an older npuc's output).
    CommandGroups,
}

impl Attribution {
    /// The name in `--per-layer --json`.
    pub fn name(self) -> &'static str {
        match self {
            Attribution::SourceOperators => "source_operators",
            Attribution::CommandGroups => "command_groups",
        }
    }
}

/// A source operator (or, with [`Attribution::CommandGroups`], a command group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOp {
    /// TFLite operator index (main subgraph); `None` for a TOSA operator or a command group.
    pub index: Option<u32>,
    /// TFLite builtin or TOSA operator (a command group: its kernel command's instruction).
    pub operator: String,
    /// Name of its output tensor (empty for a command group).
    pub output: String,
}

impl SourceOp {
    fn json(&self) -> Value {
        json!({"index": self.index, "operator": self.operator, "output": self.output})
    }

    fn label(&self) -> String {
        match self.index {
            Some(i) => format!("#{i} {}", self.operator),
            None => self.operator.clone(),
        }
    }
}

impl From<&crate::container::SourceEntry> for SourceOp {
    fn from(s: &crate::container::SourceEntry) -> SourceOp {
        SourceOp {
            index: s.index,
            operator: s.op.clone(),
            output: s.output.clone(),
        }
    }
}

/// One row of `npuc report --per-layer`.
#[derive(Debug, Clone)]
pub struct LayerRow {
    /// Index of its stream in the artifact.
    pub stream: usize,
    /// The source operator.
    pub source: SourceOp,
    /// The other source operators computed by the same NPU operations (fused into it).
    pub fused: Vec<SourceOp>,
    /// For a source operator whose work is all done by another's NPU operations (a fused
    /// activation, a padding): that operator; its row has no commands and no cost.
    pub fused_into: Option<SourceOp>,
    /// NPU operations attributed to it.
    pub npu_operations: usize,
    /// Their kernels (`CONV`, `ELEMENTWISE`, ..., `DMA`; a command group: its instruction),
    /// each once, in order.
    pub kernels: Vec<String>,
    /// Byte offsets of its kernel and DMA commands.
    pub commands: Vec<usize>,
    /// Its share of the stream's cycles: how far its commands move the end of the stream on
    /// the report's timeline (the rows of a stream add up to its total).
    pub cycles: u64,
    /// Its commands' own cycles, added up (DMAs overlapping kernels counted in full).
    pub op_cycles: u64,
    /// Its kernel commands' own cycles (what the MAC utilisation is measured against).
    pub kernel_cycles: u64,
    /// Its commands' compute cycles (the slowest unit of each), added up.
    pub npu_cycles: u64,
    /// Its commands' cycles on each memory (the estimate's memory names), added up.
    pub memory_cycles: Vec<(String, u64)>,
    /// MACs, bytes per memory, weight and scale bytes (`cycles` as above, `peak_sram` the
    /// highest of its commands').
    pub figures: Figures,
    /// MACs over the MACs the configuration could do in `kernel_cycles`, in %.
    pub mac_utilisation: f64,
}

/// `npuc report --per-layer`: the report's commands grouped by source operator.
#[derive(Debug, Clone)]
pub struct PerLayer {
    /// How the commands were grouped.
    pub attribution: Attribution,
    /// The rows, stream by stream, in execution order (a fused operator's row right after
    /// the row of the operator it is fused into).
    pub rows: Vec<LayerRow>,
    /// Source operators left on the CPU (a `.tflite` output): not estimated.
    pub cpu_operators: Vec<SourceOp>,
    /// What the reader should know about the rows.
    pub notes: Vec<String>,
}

/// Operators whose work, fused with another operator's, is attributed to that operator
/// (decision P22): activations, padding, reshapes, requantization.
const FOLLOWERS: &[&str] = &[
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "PAD",
    "PADV2",
    "RESHAPE",
    "QUANTIZE",
    "CLAMP",
    "RESCALE",
];

/// The source operator an NPU operation's cost goes to: the first of its sources that is not
/// an activation, padding, reshape or requantization fused with it; else its first source.
fn primary(sources: &[crate::container::SourceEntry]) -> Option<usize> {
    sources
        .iter()
        .position(|s| !FOLLOWERS.contains(&s.op.as_str()))
        .or((!sources.is_empty()).then_some(0))
}

fn add_figures(t: &mut Figures, f: &Figures) {
    t.macs = t.macs.saturating_add(f.macs);
    t.sram_read = t.sram_read.saturating_add(f.sram_read);
    t.sram_write = t.sram_write.saturating_add(f.sram_write);
    t.dram_read = t.dram_read.saturating_add(f.dram_read);
    t.dram_write = t.dram_write.saturating_add(f.dram_write);
    t.flash_read = t.flash_read.saturating_add(f.flash_read);
    t.weight_bytes = t.weight_bytes.saturating_add(f.weight_bytes);
    t.scale_bytes = t.scale_bytes.saturating_add(f.scale_bytes);
    t.peak_sram = t.peak_sram.max(f.peak_sram);
}

impl Report {
    /// The commands grouped by source operator with the layer maps npuc records in its
    /// outputs ([`crate::layers::layer_maps`]), else by command group.
    pub fn per_layer(&self, maps: Option<&crate::container::LayerMaps>) -> PerLayer {
        let maps = maps.filter(|m| m.streams.len() == self.streams.len());
        let attribution = if maps.is_some() {
            Attribution::SourceOperators
        } else {
            Attribution::CommandGroups
        };
        let macs_per_cc = u64::from(self.target.macs_per_cycle);
        let mut rows: Vec<LayerRow> = Vec::new();
        let mut notes = Vec::new();
        for s in 0..self.streams.len() {
            let ops: Vec<&OpRow> = self.ops.iter().filter(|o| o.stream == s).collect();
            // Each command's share of the stream's cycles: how far it moves the end.
            let total = self.streams[s].1.total;
            let mut share = Vec::with_capacity(ops.len());
            let mut end = 0u64;
            for o in &ops {
                share.push(
                    o.estimate
                        .end
                        .saturating_sub(end)
                        .min(total - end.min(total)),
                );
                end = end.max(o.estimate.end).min(total);
            }
            if let Some(last) = share.last_mut() {
                *last += total - end;
            }
            // The row (key) of each command.
            let mut keys: Vec<Option<usize>> = vec![None; ops.len()];
            let mut stream_rows: Vec<LayerRow> = Vec::new();
            let new_row = |source: SourceOp| LayerRow {
                stream: s,
                source,
                fused: Vec::new(),
                fused_into: None,
                npu_operations: 0,
                kernels: Vec::new(),
                commands: Vec::new(),
                cycles: 0,
                op_cycles: 0,
                kernel_cycles: 0,
                npu_cycles: 0,
                memory_cycles: Vec::new(),
                figures: Figures::default(),
                mac_utilisation: 0.0,
            };
            match maps.map(|m| &m.streams[s].operators) {
                Some(operators) => {
                    let at: std::collections::BTreeMap<usize, usize> = ops
                        .iter()
                        .enumerate()
                        .map(|(i, o)| (o.estimate.offset, i))
                        .collect();
                    let mut fused_rows: Vec<(SourceOp, SourceOp)> = Vec::new();
                    for op in operators {
                        let p = primary(&op.sources);
                        let source = p.map_or_else(
                            || SourceOp {
                                index: None,
                                operator: op.kernel.clone(),
                                output: op.name.clone(),
                            },
                            |p| SourceOp::from(&op.sources[p]),
                        );
                        let r = match stream_rows.iter().position(|r| r.source == source) {
                            Some(r) => r,
                            None => {
                                stream_rows.push(new_row(source.clone()));
                                stream_rows.len() - 1
                            }
                        };
                        stream_rows[r].npu_operations += 1;
                        if !stream_rows[r].kernels.contains(&op.kernel) {
                            stream_rows[r].kernels.push(op.kernel.clone());
                        }
                        for (i, other) in op.sources.iter().enumerate() {
                            if Some(i) == p {
                                continue;
                            }
                            let other = SourceOp::from(other);
                            if !stream_rows[r].fused.contains(&other) {
                                stream_rows[r].fused.push(other.clone());
                            }
                            if !fused_rows.iter().any(|(f, _)| *f == other) {
                                fused_rows.push((other, source.clone()));
                            }
                        }
                        for &c in &op.commands {
                            if let Some(&i) = at.get(&(c as usize)) {
                                keys[i] = Some(r);
                            }
                        }
                    }
                    if keys.iter().any(Option::is_none) {
                        let n = keys.iter().filter(|k| k.is_none()).count();
                        notes.push(format!(
                            "stream {s}: {n} commands in no operator of the layer map, in the row \"(unattributed)\""
                        ));
                        stream_rows.push(new_row(SourceOp {
                            index: None,
                            operator: "(unattributed)".into(),
                            output: String::new(),
                        }));
                        let r = stream_rows.len() - 1;
                        for k in keys.iter_mut().filter(|k| k.is_none()) {
                            *k = Some(r);
                        }
                    }
                    // Operators only fused into others: a row of their own, without cost.
                    for (f, into) in fused_rows {
                        if stream_rows.iter().any(|r| r.source == f) {
                            continue;
                        }
                        let mut row = new_row(f);
                        row.fused_into = Some(into);
                        stream_rows.push(row);
                    }
                }
                None => {
                    // A kernel command with the DMAs before it; trailing DMAs to the last.
                    let mut pending = Vec::new();
                    for (i, o) in ops.iter().enumerate() {
                        if o.estimate.dma {
                            pending.push(i);
                            continue;
                        }
                        stream_rows.push(new_row(SourceOp {
                            index: None,
                            operator: o.estimate.instruction.to_string(),
                            output: String::new(),
                        }));
                        let r = stream_rows.len() - 1;
                        stream_rows[r]
                            .kernels
                            .push(o.estimate.instruction.to_string());
                        for j in pending.drain(..).chain([i]) {
                            keys[j] = Some(r);
                        }
                    }
                    if !pending.is_empty() {
                        if stream_rows.is_empty() {
                            stream_rows.push(new_row(SourceOp {
                                index: None,
                                operator: DMA_INSTRUCTION.to_string(),
                                output: String::new(),
                            }));
                        }
                        let r = stream_rows.len() - 1;
                        for j in pending {
                            keys[j] = Some(r);
                        }
                    }
                }
            }
            for (i, o) in ops.iter().enumerate() {
                let Some(r) = keys[i] else { continue };
                let row = &mut stream_rows[r];
                row.commands.push(o.estimate.offset);
                row.cycles += share[i];
                row.op_cycles = row.op_cycles.saturating_add(o.figures.cycles);
                row.npu_cycles = row.npu_cycles.saturating_add(o.estimate.compute_cycles);
                for ((name, _, _), &c) in o.estimate.memory.iter().zip(&o.estimate.memory_cycles) {
                    match row.memory_cycles.iter_mut().find(|(m, _)| m == name) {
                        Some((_, m)) => *m = m.saturating_add(c),
                        None => row.memory_cycles.push((name.clone(), c)),
                    }
                }
                if !o.estimate.dma {
                    row.kernel_cycles = row.kernel_cycles.saturating_add(o.figures.cycles);
                }
                add_figures(&mut row.figures, &o.figures);
            }
            for row in &mut stream_rows {
                row.figures.cycles = row.cycles;
                let max = row.kernel_cycles.saturating_mul(macs_per_cc);
                row.mac_utilisation = if max == 0 {
                    0.0
                } else {
                    row.figures.macs as f64 * 100.0 / max as f64
                };
            }
            // Execution order: by first command; a fused operator's row after its host's.
            let first = |r: &LayerRow| r.commands.first().copied();
            let mut ordered: Vec<LayerRow> = Vec::new();
            let (mut hosts, fused): (Vec<LayerRow>, Vec<LayerRow>) = stream_rows
                .into_iter()
                .partition(|r| r.fused_into.is_none());
            hosts.sort_by_key(|r| (first(r).is_none(), first(r)));
            for h in hosts {
                let source = h.source.clone();
                ordered.push(h);
                ordered.extend(
                    fused
                        .iter()
                        .filter(|f| f.fused_into.as_ref() == Some(&source))
                        .cloned(),
                );
            }
            rows.extend(ordered);
        }
        let cpu_operators: Vec<SourceOp> = maps
            .map(|m| m.cpu_operators.iter().map(SourceOp::from).collect())
            .unwrap_or_default();
        match attribution {
            Attribution::SourceOperators => notes.insert(
                0,
                "rows by source operator: an NPU operation's commands go to its first source \
                 operator that is not a fused activation, padding, reshape or requantization; \
                 a DMA goes to the operation it prepares (decision P22)"
                    .into(),
            ),
            Attribution::CommandGroups => notes.insert(
                0,
                "no layer map in this artifact (not npuc's output, or an older npuc's): one row \
                 per kernel command with the DMAs issued before it; source operators unknown"
                    .into(),
            ),
        }
        if !cpu_operators.is_empty() {
            let list: Vec<String> = cpu_operators.iter().map(SourceOp::label).collect();
            notes.push(format!(
                "{} operators run on the CPU and are not estimated: {}",
                cpu_operators.len(),
                list.join(", ")
            ));
        }
        PerLayer {
            attribution,
            rows,
            cpu_operators,
            notes,
        }
    }
}

impl PerLayer {
    /// The rows' figures added up (cycles: the rows' shares, which add up to the report's
    /// total; peak SRAM: the highest).
    pub fn total(&self) -> Figures {
        let mut t = Figures::default();
        for r in &self.rows {
            t.cycles = t.cycles.saturating_add(r.cycles);
            add_figures(&mut t, &r.figures);
        }
        t
    }

    /// The `--per-layer --json` object (`report`: the report the rows come from).
    pub fn json(&self, report: &Report) -> Value {
        let layers: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut j = r.figures.json("cycles");
                if let Some(o) = j.as_object_mut() {
                    o.remove("peak_sram_bytes");
                }
                j["stream"] = json!(r.stream);
                j["index"] = json!(r.source.index);
                j["operator"] = json!(r.source.operator);
                j["output"] = json!(r.source.output);
                j["fused"] = Value::Array(r.fused.iter().map(SourceOp::json).collect());
                j["fused_into"] = r.fused_into.as_ref().map_or(Value::Null, SourceOp::json);
                j["npu_operations"] = json!(r.npu_operations);
                j["commands"] = json!(r.commands.len());
                j["op_cycles"] = json!(r.op_cycles);
                j["mac_utilisation"] = json!(r.mac_utilisation);
                j
            })
            .collect();
        let mut v = self.total().json("total_cycles");
        if let Some(o) = v.as_object_mut() {
            o.remove("peak_sram_bytes");
        }
        v["version"] = json!(crate::layers::LAYERS_VERSION);
        v["attribution"] = json!(self.attribution.name());
        v["accelerator"] = json!(report.target.name);
        v["system_config"] = json!(report.target.system_config);
        v["memory_mode"] = json!(report.target.memory_mode);
        v["layers"] = Value::Array(layers);
        v["cpu_operators"] = Value::Array(self.cpu_operators.iter().map(SourceOp::json).collect());
        v["notes"] = json!(self.notes);
        v
    }

    /// The human-readable table.
    pub fn text(&self, report: &Report) -> String {
        let mut s = String::new();
        let m = &report.target;
        let _ = writeln!(
            s,
            "{} | system {} ({} MHz) | memory mode {} | per {}",
            m.name,
            m.system_config,
            m.clock_hz / 1e6,
            m.memory_mode,
            match self.attribution {
                Attribution::SourceOperators => "source operator",
                Attribution::CommandGroups => "command group",
            }
        );
        let line = |s: &mut String, c: [&str; 13]| {
            let _ = writeln!(
                s,
                "{:>3} {:<26} {:>4} {:>10} {:>10} {:>10} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
            );
        };
        line(
            &mut s,
            [
                "str",
                "operator",
                "ops",
                "cycles",
                "op cycles",
                "MACs",
                "util%",
                "SRAM rd",
                "SRAM wr",
                "DRAM rd",
                "DRAM wr",
                "flash rd",
                "output",
            ],
        );
        for r in &self.rows {
            let f = &r.figures;
            let output = match &r.fused_into {
                Some(h) => format!("{} (fused into {})", r.source.output, h.label()),
                None => r.source.output.clone(),
            };
            line(
                &mut s,
                [
                    &r.stream.to_string(),
                    &r.source.label(),
                    &r.npu_operations.to_string(),
                    &r.cycles.to_string(),
                    &r.op_cycles.to_string(),
                    &f.macs.to_string(),
                    &format!("{:.1}", r.mac_utilisation),
                    &f.sram_read.to_string(),
                    &f.sram_write.to_string(),
                    &f.dram_read.to_string(),
                    &f.dram_write.to_string(),
                    &f.flash_read.to_string(),
                    &output,
                ],
            );
        }
        let t = self.total();
        let op_cycles: u64 = self.rows.iter().map(|r| r.op_cycles).sum();
        line(
            &mut s,
            [
                "",
                "total",
                "",
                &t.cycles.to_string(),
                &op_cycles.to_string(),
                &t.macs.to_string(),
                "",
                &t.sram_read.to_string(),
                &t.sram_write.to_string(),
                &t.dram_read.to_string(),
                &t.dram_write.to_string(),
                &t.flash_read.to_string(),
                "",
            ],
        );
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}
