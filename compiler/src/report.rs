//! `npuc report`: cycles, MACs and memory traffic of a compiled artifact, from the performance
//! model of the backend ([`npuc_backend::perf`], TRM chapter 4) in a system configuration and
//! memory mode ([`npuc_backend::system`]).
//!
//! ```
//! use npuc::artifact::Artifact;
//! use npuc_backend::system::MemoryMap;
//! // A raw stream: NPU_OP_STOP only.
//! let artifact = Artifact::from_bytes(&[0x00, 0x00, 0xff, 0xff]).unwrap();
//! let r = npuc::report::report(&artifact, &MemoryMap::default_u85(), None).unwrap();
//! assert_eq!(r.total.cycles, 0);
//! assert_eq!(r.json()["ops"].as_array().unwrap().len(), 0);
//! ```

use crate::artifact::{Artifact, StreamOrigin};
use npuc_backend::arch::Accelerator;
use npuc_backend::perf::{OpPerf, PerfError, PerfModel, StreamPerf};
use npuc_backend::sim::NUM_REGIONS;
use npuc_backend::system::{MemoryKind, MemoryMap};
use serde_json::{json, Value};
use std::fmt::Write;

/// The TRM name of the DMA command, as the performance model names its operations.
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
    /// It fails the stream validation `npuc run` and `npuc compile` apply (decision H3).
    #[error("not a valid stream: {0}")]
    Invalid(String),
    /// The performance model cannot read it.
    #[error("{0}")]
    Perf(String),
    /// A figure does not fit in 64 bits.
    #[error("{0} does not fit in 64 bits")]
    Overflow(&'static str),
}

/// Region sizes a raw stream or a bare payload is validated with, which carry none: regions
/// 0, 1 and 2 (those every memory mode uses) of 256 MiB each (decision H3).
pub const RAW_STREAM_REGION_BYTES: u64 = 1 << 28;

fn raw_stream_regions() -> npuc_backend::sim::validate::RegionSizes {
    let mut r = [None; NUM_REGIONS];
    for slot in r.iter_mut().take(3) {
        *slot = Some(RAW_STREAM_REGION_BYTES);
    }
    r
}

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
    /// The model's estimate.
    pub perf: OpPerf,
    /// Its figures.
    pub figures: Figures,
}

/// The report of an artifact.
#[derive(Debug, Clone)]
pub struct Report {
    /// The configuration modelled.
    pub accelerator: Accelerator,
    /// The memories.
    pub map: MemoryMap,
    /// Each stream's estimate, with where it came from.
    pub streams: Vec<(StreamOrigin, StreamPerf)>,
    /// Every operation, in execution order.
    pub ops: Vec<OpRow>,
    /// Totals.
    pub total: Figures,
    /// Peak bytes per region (largest over the streams).
    pub peak: [u64; NUM_REGIONS],
}

fn pick(mem: &[u64; 4], kind: MemoryKind) -> u64 {
    mem[npuc_backend::perf::memory_index(kind)]
}

fn op_figures(p: &OpPerf, map: &MemoryMap) -> Figures {
    let mut peak_sram = 0;
    for r in 0..NUM_REGIONS {
        if map.region_memory(r as u32) == MemoryKind::Sram {
            peak_sram = peak_sram.max(p.cost.extent[r]);
        }
    }
    Figures {
        cycles: p.cycles,
        macs: p.cost.macs,
        sram_read: pick(&p.memory_read, MemoryKind::Sram),
        sram_write: pick(&p.memory_written, MemoryKind::Sram),
        dram_read: pick(&p.memory_read, MemoryKind::Dram),
        dram_write: pick(&p.memory_written, MemoryKind::Dram),
        flash_read: pick(&p.memory_read, MemoryKind::OnChipFlash)
            + pick(&p.memory_read, MemoryKind::OffChipFlash),
        weight_bytes: p.cost.weight_bytes,
        scale_bytes: p.cost.scale_bytes,
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

/// Estimates every command stream of an artifact in the given memories. The configuration
/// is the one the artifact names (payload header, container CONFIG word), else `accelerator`,
/// else Ethos-U85-256.
pub fn report(
    artifact: &Artifact,
    map: &MemoryMap,
    accelerator: Option<Accelerator>,
) -> Result<Report, ReportError> {
    let acc = artifact
        .streams
        .iter()
        .find_map(|s| s.accelerator)
        .or(accelerator)
        .unwrap_or(Accelerator::U85_256);
    let mut streams = Vec::new();
    let mut ops = Vec::new();
    let mut total = Figures::default();
    let mut peak = [0u64; NUM_REGIONS];
    for (i, s) in artifact.streams.iter().enumerate() {
        let fail = |problem| ReportError { stream: i, problem };
        let accelerator = s.accelerator.unwrap_or(acc);
        let regions = s.regions.unwrap_or_else(raw_stream_regions);
        npuc_backend::sim::validate::validate(
            accelerator,
            &s.words,
            &regions,
            s.read_only.as_deref(),
        )
        .map_err(|e| fail(ReportProblem::Invalid(e.to_string())))?;
        let model = PerfModel::new(accelerator.config(), map.clone());
        let perf = model
            .stream(&s.words)
            .map_err(|e: PerfError| fail(ReportProblem::Perf(e.to_string())))?;
        let add = |a: u64, b: u64, what| {
            a.checked_add(b)
                .ok_or_else(|| fail(ReportProblem::Overflow(what)))
        };
        total.cycles = add(total.cycles, perf.total_cycles, "the cycle count")?;
        for p in &perf.ops {
            let f = op_figures(p, map);
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
                perf: p.clone(),
                figures: f,
            });
        }
        for (p, &q) in peak.iter_mut().zip(&perf.peak) {
            *p = (*p).max(q);
        }
        total.peak_sram = total.peak_sram.max(perf.memory_peak(map, MemoryKind::Sram));
        streams.push((s.origin.clone(), perf));
    }
    Ok(Report {
        accelerator: acc,
        map: map.clone(),
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
                j["offset"] = json!(o.perf.offset);
                j["start_cycle"] = json!(o.perf.start);
                j["instruction"] = json!(o.perf.instruction);
                j
            })
            .collect();
        v["ops"] = Value::Array(ops);
        v["accelerator"] = json!(self.accelerator.name());
        v["system_config"] = json!(self.map.system.name);
        v["memory_mode"] = json!(self.map.mode.name);
        v["peak_region_bytes"] = json!(self.peak.to_vec());
        v
    }

    /// The kernel and DMA commands the report lists (`npu_operations` is 0: a stream alone
    /// does not tell how the compiler grouped its commands).
    pub fn counts(&self) -> crate::counts::Counts {
        let dma_commands = self
            .ops
            .iter()
            .filter(|o| o.perf.instruction == DMA_INSTRUCTION)
            .count();
        crate::counts::Counts {
            npu_operations: 0,
            kernel_commands: self.ops.len() - dma_commands,
            dma_commands,
        }
    }

    /// The human-readable table: one row per command (`start` is the cycle it starts at).
    pub fn text(&self) -> String {
        let mut s = String::new();
        let m = &self.map;
        let _ = writeln!(
            s,
            "{} | system {} ({} MHz) | memory mode {} | region 0: {}, region 1: {}, region 2: {}",
            self.accelerator.name(),
            m.system.name,
            m.system.core_clock / 1e6,
            m.mode.name,
            m.constants,
            m.arena,
            m.cache
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
                o.perf.offset,
                o.perf.instruction,
                o.perf.start,
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
        let secs = t.cycles as f64 / m.system.core_clock;
        let _ = writeln!(
            s,
            "time {:.3} ms at {} MHz; scale bytes {}; peak SRAM {} bytes",
            secs * 1e3,
            m.system.core_clock / 1e6,
            t.scale_bytes,
            t.peak_sram
        );
        let peaks: Vec<String> = self
            .peak
            .iter()
            .enumerate()
            .filter(|(_, &p)| p > 0)
            .map(|(r, p)| format!("region {r} ({}): {p}", m.region_memory(r as u32)))
            .collect();
        let _ = writeln!(s, "peak per region: {}", peaks.join(", "));
        s
    }
}
