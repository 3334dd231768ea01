//! A cycle and traffic model of a command stream (TRM chapter 4), without input data.
//!
//! [`PerfModel::stream`] walks any command stream (npuc's or Vela's) in stream order, keeps the
//! register file ([`RegisterFile`], the ISA's one source of truth) and, at each kernel
//! operation and DMA, derives from the registers alone:
//! - MACs and compute cycles of the MAC unit, AO unit and weight decoders ([`cycles`]);
//! - bytes read and written per region and the highest byte touched in each ([`op`]);
//! - per memory (region -> memory from the [`MemoryMap`]): bytes, and the cycles the memory
//!   needs for the operation's accesses as AXI bursts and beats ([`traffic`], [`axi`],
//!   [`memory`]): the data time at the ports' bandwidth or, for short bursts on a slow memory,
//!   the latency time with the outstanding transactions the ports allow.
//!
//! An operation takes the longest of its compute cycles and its memory cycles (the units and
//! the AXI channels work in parallel, TRM 2.3). Kernel operations run one after another;
//! DMAs run on the mem2mem channel alongside them, and the stream's NPU_OP_DMA_WAIT /
//! NPU_OP_KERNEL_WAIT (TRM 3.10.5, 3.10.8), at most four outstanding DMA descriptors and at most
//! two remaining kernel operations decide when each starts ([`Timeline`]); a kernel and a DMA
//! that use the same memory at the same time share its channels. Branches are not taken: the
//! model counts each command once, in stream order. See `docs/decisions.md` P1..P16.

pub mod axi;
pub mod cycles;
pub mod memory;
pub mod op;
pub mod traffic;

pub use op::{OpCost, OpKind};

use crate::arch::ArchConfig;
use crate::isa::stream::StreamDecoder;
use crate::isa::{Command, DecodeError, RegisterFile};
use crate::sim::NUM_REGIONS;
use crate::system::{MemoryKind, MemoryMap};
use axi::Access;
use memory::MemoryTiming;

/// Number of memory kinds ([`MemoryKind::ALL`]).
pub const NUM_MEMORIES: usize = 4;

/// Index of a memory kind in per-memory arrays.
pub fn memory_index(kind: MemoryKind) -> usize {
    MemoryKind::ALL.iter().position(|&k| k == kind).unwrap_or(0)
}

/// The estimate for one kernel operation or DMA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpPerf {
    /// Byte offset of the NPU_OP_* command in its stream.
    pub offset: usize,
    /// TRM name of the command.
    pub instruction: &'static str,
    /// MACs, compute cycles, bytes per region, stream lengths, extents.
    pub cost: OpCost,
    /// Bytes read per memory (index [`memory_index`]).
    pub memory_read: [u64; NUM_MEMORIES],
    /// Bytes written per memory.
    pub memory_written: [u64; NUM_MEMORIES],
    /// Cycles each memory needs for this operation's traffic (the longer of its read and
    /// write channel).
    pub memory_cycles: [u64; NUM_MEMORIES],
    /// Cycles of each memory channel: index `2 * memory + (1 if write)`.
    pub channel_cycles: [u64; 2 * NUM_MEMORIES],
    /// The operation's cycles: the longest of compute and memory cycles.
    pub cycles: u64,
    /// Cycle at which it starts (from the start of the stream, see [`Timeline`]).
    pub start: u64,
    /// Cycle at which it ends: `start + cycles`, later when a memory it uses is busy with
    /// a concurrent operation.
    pub end: u64,
}

/// When operations run: kernel operations in order on the MAC/AO units, DMAs in order on the
/// mem2mem channel, both issued by the CC in stream order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The CC's position: when the next command can issue.
    pub issue: u64,
    /// End cycles of the kernel operations issued so far.
    pub kernel_ends: Vec<u64>,
    /// End cycles of the DMAs issued so far.
    pub dma_ends: Vec<u64>,
    /// When each memory channel (read and write of each memory, as
    /// [`OpPerf::channel_cycles`]) has served everything issued so far.
    pub channel_free: [u64; 2 * NUM_MEMORIES],
}

/// Kernel operations that may be remaining when a command starts (TRM 3.10.8).
pub const MAX_REMAINING_KERNELS: usize = 2;
/// mem2mem DMA descriptors (TRM 3.10.5).
pub const DMA_DESCRIPTORS: usize = 4;

impl Timeline {
    /// Waits until at most `n` of the operations ending at `ends` are still running.
    fn wait(issue: u64, ends: &[u64], n: usize) -> u64 {
        let running = ends.iter().filter(|&&e| e > issue).count();
        if running <= n {
            return issue;
        }
        let mut pending: Vec<u64> = ends.iter().copied().filter(|&e| e > issue).collect();
        pending.sort_unstable();
        pending[running - n - 1].max(issue)
    }

    /// NPU_OP_KERNEL_WAIT n.
    pub fn kernel_wait(&mut self, n: usize) {
        self.issue = Self::wait(self.issue, &self.kernel_ends, n);
    }

    /// NPU_OP_DMA_WAIT k.
    pub fn dma_wait(&mut self, k: usize) {
        self.issue = Self::wait(self.issue, &self.dma_ends, k);
    }

    /// Schedules a kernel operation (`dma = false`) or DMA of `cycles`; returns its start.
    pub fn schedule(&mut self, dma: bool, cycles: u64) -> u64 {
        self.schedule_on(dma, cycles, &[0; 2 * NUM_MEMORIES]).0
    }

    /// Schedules a kernel operation or DMA whose compute takes `compute` cycles and which
    /// needs `channels[i]` cycles of memory channel `i`; returns its start and end. A channel
    /// serves the operations that use it one after another, so an operation overlapping
    /// another on the same memory ends when both demands have been served.
    pub fn schedule_on(
        &mut self,
        dma: bool,
        compute: u64,
        channels: &[u64; 2 * NUM_MEMORIES],
    ) -> (u64, u64) {
        let (ends, limit) = if dma {
            (&mut self.dma_ends, DMA_DESCRIPTORS - 1)
        } else {
            (&mut self.kernel_ends, MAX_REMAINING_KERNELS - 1)
        };
        // The CC stalls while the unit's queue is full.
        self.issue = Self::wait(self.issue, ends, limit);
        let start = self.issue.max(ends.last().copied().unwrap_or(0));
        let mut end = start + compute;
        for (free, &need) in self.channel_free.iter_mut().zip(channels) {
            if need > 0 {
                *free = (*free).max(start) + need;
                end = end.max(*free);
            }
        }
        ends.push(end);
        (start, end)
    }

    /// When everything issued has completed.
    pub fn end(&self) -> u64 {
        let k = self.kernel_ends.last().copied().unwrap_or(0);
        let d = self.dma_ends.iter().copied().max().unwrap_or(0);
        self.issue.max(k).max(d)
    }
}

/// The estimate for a whole stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamPerf {
    /// Kernel operations and DMAs in stream order.
    pub ops: Vec<OpPerf>,
    /// Cycles until every operation has completed ([`Timeline`]).
    pub total_cycles: u64,
    /// Sum of the operations' own cycles (no overlap).
    pub serial_cycles: u64,
    /// Sum of MACs.
    pub macs: u64,
    /// Sum of weight stream bytes.
    pub weight_bytes: u64,
    /// Sum of scale stream bytes.
    pub scale_bytes: u64,
    /// Bytes read per region.
    pub read: [u64; NUM_REGIONS],
    /// Bytes written per region.
    pub written: [u64; NUM_REGIONS],
    /// Bytes read per memory.
    pub memory_read: [u64; NUM_MEMORIES],
    /// Bytes written per memory.
    pub memory_written: [u64; NUM_MEMORIES],
    /// One past the highest byte any operation touched, per region.
    pub peak: [u64; NUM_REGIONS],
}

impl StreamPerf {
    /// Bytes of a memory in use: the largest region peak among the regions mapped to it
    /// (regions in one memory share its address space, as Vela lays them out).
    pub fn memory_peak(&self, map: &MemoryMap, kind: MemoryKind) -> u64 {
        (0..NUM_REGIONS)
            .filter(|&r| map.region_memory(r as u32) == kind)
            .map(|r| self.peak[r])
            .max()
            .unwrap_or(0)
    }

    /// Bytes read from a memory.
    pub fn read_from(&self, kind: MemoryKind) -> u64 {
        self.memory_read[memory_index(kind)]
    }

    /// Bytes written to a memory.
    pub fn written_to(&self, kind: MemoryKind) -> u64 {
        self.memory_written[memory_index(kind)]
    }
}

/// A stream the model cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PerfError {
    /// The stream does not decode.
    #[error("{0}")]
    Decode(#[from] DecodeError),
}

/// The model: an NPU configuration and the memories around it.
#[derive(Debug, Clone)]
pub struct PerfModel {
    /// The NPU configuration.
    pub arch: ArchConfig,
    /// System configuration, memory mode and region -> memory mapping.
    pub map: MemoryMap,
    /// Each memory's timing through the NPU's ports (index [`memory_index`]).
    timing: [MemoryTiming; NUM_MEMORIES],
}

impl PerfModel {
    /// A model of `arch` in the system `map`.
    pub fn new(arch: ArchConfig, map: MemoryMap) -> PerfModel {
        let timing = MemoryKind::ALL.map(|k| MemoryTiming::new(&map.system, k, arch.accelerator));
        PerfModel { arch, map, timing }
    }

    /// A memory's timing through the NPU's ports.
    pub fn timing(&self, kind: MemoryKind) -> &MemoryTiming {
        &self.timing[memory_index(kind)]
    }

    /// Attaches memories and cycles to an operation's cost.
    pub fn op(&self, offset: usize, instruction: &'static str, cost: OpCost) -> OpPerf {
        let mut memory_read = [0; NUM_MEMORIES];
        let mut memory_written = [0; NUM_MEMORIES];
        for r in 0..NUM_REGIONS {
            let m = memory_index(self.map.region_memory(r as u32));
            memory_read[m] += cost.read[r];
            memory_written[m] += cost.written[r];
        }
        let mut memory_cycles = [0; NUM_MEMORIES];
        let mut channel_cycles = [0; 2 * NUM_MEMORIES];
        // Per-block data time of the read and write stages, and the latency of the first read
        // and the last write.
        let (mut read_data, mut write_data, mut read_latency, mut write_latency) =
            (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for (i, kind) in MemoryKind::ALL.into_iter().enumerate() {
            let (mut fm_reads, mut reads, mut writes) =
                (Access::default(), Access::default(), Access::default());
            for r in 0..NUM_REGIONS {
                if self.map.region_memory(r as u32) == kind {
                    fm_reads.merge(&cost.reads[r]);
                    reads.merge(&cost.stream_reads[r]);
                    writes.merge(&cost.writes[r]);
                }
            }
            reads.merge(&fm_reads);
            let t = &self.timing[i];
            let (rc, wc) = t.cycles(&reads, &writes);
            channel_cycles[2 * i] = rc.ceil() as u64;
            channel_cycles[2 * i + 1] = wc.ceil() as u64;
            memory_cycles[i] = channel_cycles[2 * i].max(channel_cycles[2 * i + 1]);
            if !reads.is_empty() {
                read_data = read_data.max(t.read.data(&fm_reads));
                read_latency = read_latency.max(t.read.latency);
            }
            if !writes.is_empty() {
                write_data = write_data.max(t.write.data(&writes));
                write_latency = write_latency.max(t.write.latency);
            }
        }
        let steady = memory_cycles
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(cost.compute_cycles);
        // The blocks flow through the stages IFM fetch -> MAC -> AO -> OFM write; in steady
        // state the slowest stage sets the pace, and the pipeline fills and drains once: the
        // first block passes every other stage, the first data arrives after the read latency
        // and the last write is acknowledged after the write latency (P16). Weight and scale
        // streams flow into the decoders and the AO as they arrive, and count only in the
        // steady state.
        let fill = if cost.blocks > 0 {
            let n = cost.blocks as f64;
            let stages = [
                read_data / n,
                cost.mac_cycles as f64 / n,
                cost.ao_cycles as f64 / n,
                write_data / n,
            ];
            let max = stages.iter().copied().fold(0.0, f64::max);
            stages.iter().sum::<f64>() - max
        } else {
            0.0
        };
        let cycles = steady + (fill + read_latency + write_latency).ceil() as u64;
        OpPerf {
            offset,
            instruction,
            cost,
            memory_read,
            memory_written,
            memory_cycles,
            channel_cycles,
            cycles,
            start: 0,
            end: cycles,
        }
    }

    /// Estimates a command stream (u32 words, first command at word 0), from the reset
    /// register state.
    pub fn stream(&self, words: &[u32]) -> Result<StreamPerf, PerfError> {
        let mut regs = RegisterFile::default();
        let mut perf = StreamPerf::default();
        let mut time = Timeline::default();
        for d in StreamDecoder::new(words) {
            let d = d?;
            if regs.apply(&d.command) {
                continue;
            }
            match d.command {
                Command::OpStop(_) => break,
                Command::OpDmaWait(w) => time.dma_wait(usize::from(w.k)),
                Command::OpKernelWait(w) => time.kernel_wait(usize::from(w.n)),
                _ => {}
            }
            let Some(cost) = op::op_cost(&self.arch, &regs, &d.command) else {
                continue;
            };
            let mut p = self.op(d.offset, d.opcode().spec().name, cost);
            let dma = matches!(d.command, Command::OpDmaStart(_));
            (p.start, p.end) = time.schedule_on(dma, p.cycles, &p.channel_cycles);
            perf.serial_cycles += p.cycles;
            perf.macs += p.cost.macs;
            perf.weight_bytes += p.cost.weight_bytes;
            perf.scale_bytes += p.cost.scale_bytes;
            for r in 0..NUM_REGIONS {
                perf.read[r] += p.cost.read[r];
                perf.written[r] += p.cost.written[r];
                perf.peak[r] = perf.peak[r].max(p.cost.extent[r]);
            }
            for m in 0..NUM_MEMORIES {
                perf.memory_read[m] += p.memory_read[m];
                perf.memory_written[m] += p.memory_written[m];
            }
            perf.ops.push(p);
        }
        perf.total_cycles = time.end();
        Ok(perf)
    }
}
