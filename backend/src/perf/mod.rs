//! A cycle and traffic model of a command stream (TRM chapter 4), without input data.
//!
//! [`PerfModel::stream`] walks any command stream (npuc's or Vela's) in stream order, keeps the
//! register file ([`RegisterFile`], the ISA's one source of truth) and, at each kernel
//! operation and DMA, derives from the registers alone:
//! - MACs and compute cycles of the MAC unit, AO unit and weight decoders ([`cycles`]);
//! - bytes read and written per region and the highest byte touched in each ([`op`]);
//! - per memory (region -> memory from the [`MemoryMap`]): bytes, and the cycles the memory
//!   needs for the operation's accesses ([`traffic`], [`axi`], [`memory`]): each DMA read
//!   channel (IFM, IFM stream, weights, scales, mem2mem) at what its read buffer and the
//!   memory's latency and outstanding transactions sustain, on the accesses' effective bytes.
//!
//! An operation takes the longer of its NPU cycles (the block pipeline of MAC and AO stages
//! with the CC's issue limit and one block's IFM read and OFM write, P17) and its busiest
//! memory's cycles (P18), as Vela 5.2 estimates an operation, calibrated per operation against
//! Vela's own estimate (P21, `tests/tests/perf_calibration.rs`). Kernel operations run one
//! after another (a chained pair together); DMAs run on the mem2mem channel alongside them,
//! and the stream's NPU_OP_DMA_WAIT / NPU_OP_KERNEL_WAIT (TRM 3.10.5, 3.10.8), at most four
//! outstanding DMA descriptors and at most two remaining kernel operations decide when each
//! starts ([`Timeline`]); an operation's memory-bound cycles overlap the time DMA_WAITs held it
//! back (P25). Branches are not taken: the model counts each command once, in stream order.
//! See `docs/decisions.md` P1..P25.

pub mod axi;
pub mod cycles;
pub mod memory;
pub mod op;
pub mod traffic;

pub use op::{OpCost, OpKind, Pipeline};

use crate::arch::ArchConfig;
use crate::isa::stream::StreamDecoder;
use crate::isa::{Command, DecodeError, RegisterFile};
use crate::sim::NUM_REGIONS;
use crate::system::{MemoryKind, MemoryMap};
use axi::Access;
use memory::{read_buffer_words, MemoryTiming, ReadChannel, READ_CHANNELS};

/// Number of memory kinds ([`MemoryKind::ALL`]).
pub const NUM_MEMORIES: usize = 4;

/// Index of a memory kind in per-memory arrays.
pub fn memory_index(kind: MemoryKind) -> usize {
    MemoryKind::ALL.iter().position(|&k| k == kind).unwrap_or(0)
}

/// The estimate for one kernel operation or DMA.
#[derive(Debug, Clone, PartialEq)]
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
    /// Cycles of the NPU's units and block pipeline (P17), memories aside.
    pub npu_cycles: u64,
    /// The operation's cycles: the longer of `npu_cycles` and the busiest memory's cycles.
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
    /// Start of the last kernel operation, and whether it writes its OFM to the chaining
    /// buffer (the next kernel operation, which reads it, runs alongside it, P19).
    pub last_kernel: Option<(u64, bool)>,
    /// End cycles of the DMAs issued so far.
    pub dma_ends: Vec<u64>,
    /// When each memory channel (read and write of each memory, as
    /// [`OpPerf::channel_cycles`]) has served everything issued so far.
    pub channel_free: [u64; 2 * NUM_MEMORIES],
    /// How far NPU_OP_DMA_WAITs have moved the CC since the last kernel operation (P25).
    pub dma_waited: u64,
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
        let before = self.issue;
        self.issue = Self::wait(self.issue, &self.dma_ends, k);
        self.dma_waited += self.issue - before;
    }

    /// How long the stream's DMA_WAITs hold the next kernel operation back: from when it could
    /// start without them (the CC's position before the waits, at the earliest the end of the
    /// previous kernel operation) to when it starts.
    ///
    /// The model lets the operation's memory-bound cycles overlap this time (P25): Vela 5.2
    /// times an operation as the longer of its NPU cycles plus its weight and lookup-table
    /// transfers that the previous operation does not hide, and its memory accesses.
    pub fn held_by_dma_waits(&self) -> u64 {
        let previous = self.kernel_ends.last().copied().unwrap_or(0);
        let ready = self.issue.saturating_sub(self.dma_waited).max(previous);
        self.issue.max(previous).saturating_sub(ready)
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
        if !dma {
            self.dma_waited = 0;
        }
        let (ends, limit) = if dma {
            (&mut self.dma_ends, DMA_DESCRIPTORS - 1)
        } else {
            (&mut self.kernel_ends, MAX_REMAINING_KERNELS - 1)
        };
        // The CC stalls while the unit's queue is full.
        self.issue = Self::wait(self.issue, ends, limit);
        let chained = !dma && matches!(self.last_kernel, Some((_, true)));
        let start = match self.last_kernel {
            Some((s, true)) if chained => self.issue.max(s),
            _ => self.issue.max(ends.last().copied().unwrap_or(0)),
        };
        let mut end = start + compute;
        for (free, &need) in self.channel_free.iter_mut().zip(channels) {
            if need > 0 {
                *free = (*free).max(start) + need;
                end = end.max(*free);
            }
        }
        if chained {
            // The pair ends together: the reader cannot finish before the writer.
            end = end.max(ends.last().copied().unwrap_or(0));
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
#[derive(Debug, Clone, Default, PartialEq)]
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

/// The accesses of several regions to one memory channel: the one region's own where only
/// one has any (not copied), else their merge in region order ([`Access::merge`], which the
/// one region's accesses are as they stand).
#[derive(Default)]
enum Gathered<'a> {
    #[default]
    Nothing,
    One(&'a Access),
    Merged(Access),
}

impl<'a> Gathered<'a> {
    fn add(&mut self, a: &'a Access) {
        if a.is_empty() {
            return;
        }
        *self = match std::mem::take(self) {
            Gathered::Nothing => Gathered::One(a),
            Gathered::One(first) => {
                let mut m = first.clone();
                m.merge(a);
                Gathered::Merged(m)
            }
            Gathered::Merged(mut m) => {
                m.merge(a);
                Gathered::Merged(m)
            }
        };
    }

    fn get<'s>(&'s self, none: &'s Access) -> &'s Access {
        match self {
            Gathered::Nothing => none,
            Gathered::One(a) => a,
            Gathered::Merged(m) => m,
        }
    }
}

impl PerfModel {
    /// A model of `arch` in the system `map`.
    pub fn new(arch: ArchConfig, map: MemoryMap) -> PerfModel {
        let mut timing =
            MemoryKind::ALL.map(|k| MemoryTiming::new(&map.system, k, arch.accelerator));
        // Sram_Only: the constants' on-chip flash is the SRAM's stand-in (MemoryMap::new); it is
        // reached through the SRAM's ports, as Vela 5.2 estimates it (P20).
        let (flash, sram) = (
            memory_index(MemoryKind::OnChipFlash),
            memory_index(MemoryKind::Sram),
        );
        if map.constants == MemoryKind::OnChipFlash
            && map.arena == MemoryKind::Sram
            && map.system.area(MemoryKind::OnChipFlash) == map.system.area(MemoryKind::Sram)
        {
            timing[flash] = timing[sram];
        }
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
        let fm_channel = match cost.kind {
            OpKind::Conv | OpKind::Depthwise | OpKind::Pool => ReadChannel::Ifm,
            OpKind::Elementwise | OpKind::Resize => ReadChannel::IfmStream,
            OpKind::Dma => ReadChannel::Mem2Mem,
        };
        let weight_channel = if cost.fast_weights {
            ReadChannel::FastWeight
        } else {
            ReadChannel::Weight
        };
        let mut memory_cycles = [0; NUM_MEMORIES];
        let mut channel_cycles = [0; 2 * NUM_MEMORIES];
        // A DMA: its read and its write, each with its memory's latency (P18).
        let mut dma_cycles = 0.0f64;
        let mut reads: [[Gathered<'_>; READ_CHANNELS]; NUM_MEMORIES] = Default::default();
        let mut writes: [Gathered<'_>; NUM_MEMORIES] = Default::default();
        // The scale stream is timed on the constant memory's scale channel wherever the
        // stream reads it from (P21).
        let constants = memory_index(self.map.constants);
        for r in 0..NUM_REGIONS {
            let m = memory_index(self.map.region_memory(r as u32));
            reads[m][fm_channel as usize].add(&cost.reads[r]);
            reads[m][weight_channel as usize].add(&cost.stream_reads[r]);
            reads[constants][ReadChannel::Scale as usize].add(&cost.scale_reads[r]);
            writes[m].add(&cost.writes[r]);
        }
        let none = Access::default();
        for (i, (reads, writes)) in reads.iter().zip(&writes).enumerate() {
            let t = &self.timing[i];
            let (rc, wc, both) =
                t.cycles(reads.each_ref().map(|g| g.get(&none)), writes.get(&none));
            channel_cycles[2 * i] = rc.ceil() as u64;
            channel_cycles[2 * i + 1] = wc.ceil() as u64;
            memory_cycles[i] = both.ceil() as u64;
            if rc > 0.0 {
                dma_cycles = dma_cycles.max(rc + t.read.latency);
            }
            if wc > 0.0 {
                dma_cycles = dma_cycles.max(wc + t.write.latency);
            }
        }
        let memory = memory_cycles.iter().copied().max().unwrap_or(0);
        let npu = self.npu_cycles(&cost).unwrap_or(dma_cycles.ceil() as u64);
        let cycles = npu.max(memory);
        OpPerf {
            offset,
            instruction,
            cost,
            memory_read,
            memory_written,
            memory_cycles,
            channel_cycles,
            npu_cycles: npu,
            cycles,
            start: 0,
            end: cycles,
        }
    }

    /// The NPU's cycles of a kernel operation ([`OpPerf::npu_cycles`]), from its block
    /// pipeline alone (the feature maps' and streams' runs are not read: [`op::op_compute_cost`]
    /// suffices); `None` for a DMA, whose cycles are its memories'.
    pub fn npu_cycles(&self, cost: &OpCost) -> Option<u64> {
        match cost.kind {
            OpKind::Dma => None,
            OpKind::Elementwise | OpKind::Resize => Some(self.streaming_cycles(&cost.pipe)),
            _ => Some(self.block_cycles(&cost.pipe)),
        }
    }

    /// Cycles of one block's IFM reads (the slowest operand) and of its OFM write, each with
    /// its memory's latency: what the pipeline's fill and drain cannot hide (P17).
    fn block_io(&self, pipe: &Pipeline) -> (f64, f64) {
        let timing =
            |region: u8| &self.timing[memory_index(self.map.region_memory(u32::from(region)))];
        let mut ifm: f64 = 0.0;
        for (region, a) in &pipe.ifm_block {
            let t = timing(*region);
            ifm =
                ifm.max(t.read.latency + (a.effective_bytes(t.burst) / t.read.bandwidth()).floor());
        }
        let ofm = pipe.ofm_block.as_ref().map_or(0.0, |(region, a)| {
            let t = timing(*region);
            t.write.latency + (a.effective_bytes(t.burst) / t.write.bandwidth()).floor()
        });
        (ifm, ofm)
    }

    /// A MAC-unit operation's cycles (P17): blocks flow through the MAC and AO stages, the
    /// slower setting the pace; the CC issues each block's commands at a quarter of the
    /// stages' cycles; the AO waits per block for the block's scales and biases (the scale
    /// channel's read buffer refilled once per memory latency); the first IFM block's read
    /// and the last OFM block's write come on top.
    fn block_cycles(&self, pipe: &Pipeline) -> u64 {
        let (ifm, ofm) = self.block_io(pipe);
        let n = pipe.blocks;
        let bias = pipe.scale_block.map_or(0.0, |(region, bytes)| {
            let t = &self.timing[memory_index(self.map.region_memory(u32::from(region)))];
            let buffer = f64::from(read_buffer_words(self.arch.accelerator, ReadChannel::Scale))
                * f64::from(crate::system::AXI_PORT_BYTES);
            bytes / buffer * t.read.latency
        });
        let mac = pipe.mac_block;
        let ao = pipe.ao_block.max(bias);
        let io = if n > 1.0 { (ofm - ifm).abs() } else { 0.0 };
        let cmd = (io + mac + ao) / 4.0;
        let (m, a) = (mac.max(cmd), ao.max(cmd));
        let body = if m > a {
            (m * n).floor() + a
        } else {
            a * n + m
        };
        (body + ifm + ofm).floor() as u64
    }

    /// An elementwise or resize operation's cycles (P17): its elements at the AO's rate, or,
    /// when slower, the CC issuing the blocks, a quarter of each block's IFM/OFM transfer and
    /// AO time.
    fn streaming_cycles(&self, pipe: &Pipeline) -> u64 {
        let (ifm, ofm) = self.block_io(pipe);
        let ao = (pipe.ao_per_element * pipe.elements).ceil();
        let per = (ifm.max(ofm) / pipe.block_elements.max(1.0) + pipe.ao_per_element) / 4.0;
        let cmd = (per * pipe.elements).ceil();
        ao.max(cmd) as u64
    }

    /// Estimates a command stream (u32 words, first command at word 0), from the reset
    /// register state.
    pub fn stream(&self, words: &[u32]) -> Result<StreamPerf, PerfError> {
        let mut regs = RegisterFile::default();
        let mut perf = StreamPerf::default();
        let mut time = Timeline::default();
        // The last kernel operation when it writes the chaining buffer: its start and block
        // pipeline, and whether that is a MAC-unit pipeline (P24).
        let mut producer: Option<(u64, Pipeline, bool)> = None;
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
            let reads_chain = !dma && matches!(time.last_kernel, Some((_, true)));
            if !dma && !reads_chain {
                // P25: the memory-bound part of a kernel operation overlaps the time the
                // stream's DMA_WAITs held it back.
                p.cycles = p
                    .npu_cycles
                    .max(p.cycles.saturating_sub(time.held_by_dma_waits()));
                p.end = p.cycles;
            }
            (p.start, p.end) = time.schedule_on(dma, p.cycles, &[0; 2 * NUM_MEMORIES]);
            // The chain so far when this operation reads it (P24, P28).
            let mut chain = None;
            if reads_chain {
                if let Some((start, mut pipe, mac)) = producer.take() {
                    // P24: one AO unit performs every operation of a chain (TRM 2.6.3), so
                    // the pair's AO stage takes both operations' cycles per element, and the
                    // chain's output block is the reader's.
                    pipe.ao_per_element += p.cost.pipe.ao_per_element;
                    pipe.ao_block = (pipe.ao_per_element * pipe.block_elements).ceil();
                    pipe.ofm_block.clone_from(&p.cost.pipe.ofm_block);
                    let pair = if mac {
                        self.block_cycles(&pipe)
                    } else {
                        self.streaming_cycles(&pipe)
                    };
                    let end = start + pair;
                    if end > p.end {
                        // The reader runs alongside the writer until the pair's end.
                        p.end = end;
                        p.cycles = end - p.start;
                        if let Some(last) = time.kernel_ends.last_mut() {
                            *last = end;
                        }
                    }
                    chain = Some((start, pipe, mac));
                }
            }
            if !dma {
                time.last_kernel = Some((p.start, p.cost.chained_ofm));
                // P28: an operation that reads the chaining buffer and writes it again extends
                // the chain: the next reader joins the whole chain's pipeline (from the first
                // writer's start, every operation's AO work so far), not this operation's alone.
                producer = p.cost.chained_ofm.then(|| {
                    chain.unwrap_or_else(|| {
                        let mac = !matches!(p.cost.kind, OpKind::Elementwise | OpKind::Resize);
                        (p.start, p.cost.pipe.clone(), mac)
                    })
                });
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathered_accesses_are_the_merge_of_every_region_in_order() {
        let access = |runs: &[(u64, u64, u64)]| {
            let mut a = Access::default();
            for &(len, align, count) in runs {
                a.add(len, align, count);
            }
            a
        };
        let regions = [
            access(&[]),
            access(&[(64, 16, 3), (7, 1, 2)]),
            access(&[]),
            access(&[(64, 48, 1), (32, 32, 5)]),
            access(&[(7, 3, 4)]),
        ];
        let none = Access::default();
        for n in 0..=regions.len() {
            let mut merged = Access::default();
            let mut gathered = Gathered::default();
            for a in &regions[..n] {
                merged.merge(a);
                gathered.add(a);
            }
            assert_eq!(gathered.get(&none), &merged, "{n} regions");
        }
    }
    use crate::arch::Accelerator;
    use crate::isa::{
        encode_stream, ActivationFormat, ActivationPrecision, ActivationReverse, ActivationStorage,
        ActivationTranspose, ActivationType, ElementwiseMode, OfmScaleMode, OpElementwise, OpStop,
        SetIfm2Region, SetIfmDepthM1, SetIfmPrecision, SetIfmRegion, SetOfmBlkDepthM1,
        SetOfmBlkHeightM1, SetOfmBlkWidthM1, SetOfmDepthM1, SetOfmHeight0M1, SetOfmHeight1M1,
        SetOfmHeightM1, SetOfmPrecision, SetOfmRegion, SetOfmWidth0M1, SetOfmWidthM1,
    };
    use crate::system::presets;

    /// `n` elementwise ADDs of 8x8x16 int8 tensors in SRAM, each after the first reading its
    /// IFM from the chaining buffer the one before writes (the last writes SRAM).
    fn add_chain(n: usize) -> Vec<u32> {
        let storage = |chained: bool| {
            if chained {
                ActivationStorage::Chained
            } else {
                ActivationStorage::Tile2x2
            }
        };
        let mut c = vec![
            Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 7 }),
            Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 7 }),
            Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: 15 }),
            Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 15 }),
            Command::SetOfmWidth0M1(SetOfmWidth0M1 { width_m1: 7 }),
            Command::SetOfmHeight0M1(SetOfmHeight0M1 { height_m1: 7 }),
            Command::SetOfmHeight1M1(SetOfmHeight1M1 { height_m1: 7 }),
            Command::SetOfmBlkHeightM1(SetOfmBlkHeightM1 { height_m1: 7 }),
            Command::SetOfmBlkWidthM1(SetOfmBlkWidthM1 { width_m1: 7 }),
            Command::SetOfmBlkDepthM1(SetOfmBlkDepthM1 { depth_m1: 15 }),
            Command::SetIfmRegion(SetIfmRegion { region: 1 }),
            Command::SetIfm2Region(SetIfm2Region { region: 1 }),
            Command::SetOfmRegion(SetOfmRegion { region: 1 }),
        ];
        for i in 0..n {
            let (reads, writes) = (i > 0, i + 1 < n);
            c.push(Command::SetIfmPrecision(SetIfmPrecision {
                activation_type: ActivationType::Signed,
                activation_precision: ActivationPrecision::B8,
                activation_format: ActivationFormat::Nhwc,
                activation_storage: storage(reads),
            }));
            c.push(Command::SetOfmPrecision(SetOfmPrecision {
                activation_type: ActivationType::Signed,
                activation_precision: ActivationPrecision::B8,
                activation_format: ActivationFormat::Nhwc,
                scale_mode: OfmScaleMode::Global,
                activation_reverse: ActivationReverse::None,
                activation_transpose: ActivationTranspose::Hwc,
                activation_storage: storage(writes),
            }));
            c.push(Command::OpElementwise(OpElementwise {
                elementwise_mode: ElementwiseMode::Add,
            }));
        }
        c.push(Command::OpStop(OpStop { mask: 0 }));
        encode_stream(&c).unwrap()
    }

    #[test]
    fn every_operation_of_a_longer_chain_adds_its_ao_work_to_the_chain() {
        let map = MemoryMap::new(
            &presets::system_config("Ethos_U85_SYS_DRAM_Mid").unwrap(),
            &presets::memory_mode("Sram_Only").unwrap(),
        )
        .unwrap();
        let m = PerfModel::new(Accelerator::U85_256.config(), map);
        let one = m.stream(&add_chain(1)).unwrap();
        // Table 4-12: CB_8 -> OB_8 at 1 element per SU per cycle, 4 SUs: 1024 / 4.
        assert_eq!(one.ops[0].cost.compute_cycles, 256);
        // TRM 2.6: one AO unit performs every operation of a chain, so each ADD of the chain
        // adds its 256 AO cycles to the chain's, and the chain ends with its last operation
        // (before P28 a third ADD joined only the second's pipeline, not the first's).
        for n in 2..=4 {
            let p = m.stream(&add_chain(n)).unwrap();
            assert_eq!(p.ops.len(), n);
            assert_eq!(p.total_cycles, 256 * n as u64, "{n} ADDs");
            assert_eq!(p.ops[n - 1].end, p.total_cycles, "{n} ADDs");
        }
    }
}
