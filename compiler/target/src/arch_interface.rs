//! The architecture interface the compiler passes see.
//!
//! Passes never look at configuration tables directly: they ask a [`Target`] for block limits,
//! the microblock and OFM block of an operation, the encoded weight and scale streams and a
//! cost estimate. The targets that implement it are in the driver's registry (its `targets`);
//! the passes only ever hold a `&dyn Target`.
//!
//! The interface names no type of a target (decision A1 in `docs/decisions.md`): what the
//! passes carry around for one operation is a [`BlockConfig`], a value type of this module
//! whose neutral fields (OFM block, microblock, weight streams, sparsity) are what the passes
//! read and whose `private` word is the target's own (the U85 packs its microblock encoding and
//! weight order there); the commands a target's writer produced reach the cost model as
//! [`Commands`], which only the target that made them looks into.

use crate::payload::TargetPayload;
use npuc_codecs::ordering::{self, IfmPrecision, OhwiWeights};
use npuc_codecs::scale::{AccFormat, ChannelScale};
use serde::{Deserialize, Serialize};
use std::any::Any;
use thiserror::Error;

/// The kind of NPU kernel operation, as far as block selection and costs care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelKind {
    /// NPU_OP_CONV (convolution, fully connected).
    Conv,
    /// NPU_OP_DEPTHWISE.
    Depthwise,
    /// NPU_OP_POOL.
    Pool,
    /// NPU_OP_ELEMENTWISE (binary).
    Elementwise,
}

/// What block selection needs to know about one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpGeometry {
    /// Kernel kind.
    pub kind: KernelKind,
    /// OFM height, width, depth.
    pub ofm: (u32, u32, u32),
    /// IFM depth.
    pub ifm_depth: u32,
    /// Dilated kernel height and width.
    pub kernel: (u32, u32),
    /// Stride y, x.
    pub stride: (u32, u32),
    /// Bytes per IFM element.
    pub ifm_elem_bytes: u32,
    /// Bytes per OFM element.
    pub ofm_elem_bytes: u32,
    /// Bytes per accumulator in the accumulator RAM (4 for `I32`, 8 for `I48`).
    pub acc_bytes: u32,
    /// The operation has a weight stream (a CONV taking its weights from IFM2 has none).
    pub weights: bool,
    /// Its weights are 2:4 sparse ([`OhwiWeights::is_sparse_2_4`], TRM 3.10.63: in -127..127,
    /// at most two non-zero in every group of four consecutive input channels), so a
    /// convolution may run sparse.
    pub sparse_2_4: bool,
}

/// How an operation's weights are streamed to the weight decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightStreams {
    /// One stream per weight decoder (U85: SWD).
    PerDecoder,
    /// One stream all decoders read (U85: FWD, convolutions only).
    Single,
}

/// A target's choice of block for one operation, as the passes see it: the neutral fields they
/// read (and the OFM block, which they may shrink: slicing, cascading), and a `private` word
/// only the target that made it reads. Made by [`Target::block_candidates`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockConfig {
    /// OFM block height, width, depth (U85: NPU_SET_OFM_BLK_*_M1 + 1).
    pub ofm_block: (u32, u32, u32),
    /// The microblock height, width, depth: the OFM block is a multiple of it.
    pub microblock: (u32, u32, u32),
    /// How the weights are streamed.
    pub weight_streams: WeightStreams,
    /// The weights are read sparse (U85: NPU_SET_WEIGHT_FORMAT.weight_sparsity 2:4).
    pub sparse: bool,
    /// The rest of the target's choice, in the target's own encoding (U85: the ACC_FORMAT
    /// microblock encoding and the weight order).
    pub private: u32,
}

/// The names of a block's choices, for `npuc explain` (the target's vocabulary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockNames {
    /// The weight stream format (U85: `SWD`, `FWD`).
    pub weight_format: &'static str,
    /// The weight order (U85: `depth_first`, `part_kernel_first`).
    pub weight_order: &'static str,
    /// The weight sparsity (U85: `none`, `sparse_2_4`).
    pub weight_sparsity: &'static str,
}

/// Commands a target's own writer produced (the U85's: a `Vec<isa::Command>`), opaque to
/// the passes: they take it from the writer and hand it back to the same target's cost model.
pub type Commands = dyn std::any::Any;

/// A register state of a target's own type ([`Target::registers_after`]): opaque to the driver.
pub type Registers = dyn std::any::Any + Send + Sync;

/// Encoded weights of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedWeights {
    /// One SWD stream per weight decoder (each a multiple of 16 bytes), or one FWD stream (a
    /// multiple of 32 bytes).
    pub streams: Vec<Vec<u8>>,
}

/// The estimate of a whole command stream (a target's program): what the optimiser compares
/// and what `npuc report` prints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamEstimate {
    /// Each kernel operation and DMA, in stream order.
    pub ops: Vec<OpEstimate>,
    /// Cycles until everything has completed (DMAs overlapping kernels as the waits allow).
    pub total: u64,
    /// One past the highest byte any operation touched, per region (every region the target
    /// has, in order).
    pub peak: Vec<u64>,
}

/// The estimate of one kernel operation or DMA of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpEstimate {
    /// A DMA (else a kernel operation).
    pub dma: bool,
    /// Byte offset of the command that starts it in its stream.
    pub offset: usize,
    /// The target's name of that command (U85: `NPU_OP_CONV`).
    pub instruction: &'static str,
    /// Its own cycles.
    pub cycles: u64,
    /// The cycle it starts at (from the start of the stream).
    pub start: u64,
    /// The cycle it ends at: `start + cycles`, later when a memory it uses is busy.
    pub end: u64,
    /// Multiply-accumulates.
    pub macs: u64,
    /// Cycles of the NPU's units (the slowest compute unit), memories aside.
    pub compute_cycles: u64,
    /// Bytes read and written per memory: (memory name, read, written), memories in a fixed
    /// order.
    pub memory: Vec<(String, u64, u64)>,
    /// Cycles each memory needs for its traffic, in the order of `memory`.
    pub memory_cycles: Vec<u64>,
    /// Bytes of weight streams it reads.
    pub weight_bytes: u64,
    /// Bytes of scale streams it reads.
    pub scale_bytes: u64,
    /// Its traffic per region (every region the target has, in order).
    pub regions: Vec<RegionTraffic>,
}

/// What one operation reads and writes in one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionTraffic {
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
    /// Of the bytes read, those of weight and scale streams (and a matrix multiply's second
    /// operand, read as a weight stream).
    pub stream_read: u64,
    /// One past the highest byte touched (0: untouched).
    pub extent: u64,
}

/// A stream that fails its target's validation (decision H3): the target's words for why,
/// and the byte offset of the command at fault when one is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{reason}")]
pub struct InvalidStream {
    /// Why.
    pub reason: String,
    /// Byte offset of the failing command in the stream.
    pub offset: Option<usize>,
}

/// The commands of a stream, as `npuc` counts them (the driver's `counts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandCounts {
    /// Kernel commands (one per kernel operation the stream starts).
    pub kernel: usize,
    /// DMA commands.
    pub dma: usize,
}

/// A command that starts work (a kernel operation or a DMA), as the layer map sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkCommand {
    /// Its byte offset in the stream.
    pub offset: u32,
    /// A DMA (else a kernel operation).
    pub dma: bool,
    /// Where it writes (a kernel: its OFM; a DMA: its destination): region and address.
    pub region: u8,
    /// See `region`.
    pub address: u64,
}

/// One command of a stream, as its target disassembles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisasmCommand {
    /// Byte offset in the stream.
    pub offset: usize,
    /// The command's name (U85: `NPU_SET_IFM_BASE0`).
    pub name: &'static str,
    /// The text line `npuc disasm` prints (offset, name, fields).
    pub line: String,
    /// Each field's name and the unsigned integer its bits hold, in the target's field order.
    pub fields: Vec<(&'static str, u64)>,
}

/// A command stream its target cannot decode; the target's words for why and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct StreamError(pub String);

/// The disassembly of a command stream: the commands up to the first one that does not
/// decode, and that error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Disassembly {
    /// The commands decoded, in stream order.
    pub commands: Vec<DisasmCommand>,
    /// Why decoding stopped before the end, if it did.
    pub error: Option<StreamError>,
}

/// A target's configuration and memories, as `npuc report` names them in its header and
/// uses them for MAC utilisation ([`Target::describe`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetDescription {
    /// The configuration's name (U85: `ethos-u85-256`).
    pub name: String,
    /// Multiply-accumulates per cycle of the configuration.
    pub macs_per_cycle: u32,
    /// The system configuration's name (U85: vela.ini's `[System_Config.NAME]`).
    pub system_config: String,
    /// The memory mode's name (U85: vela.ini's `[Memory_Mode.NAME]`).
    pub memory_mode: String,
    /// The NPU core clock in Hz.
    pub clock_hz: f64,
    /// The name of the memory holding each region ([`Target::region_memory`]), every region
    /// the target has, in order.
    pub region_memories: Vec<String>,
}

impl TargetDescription {
    /// The name of the memory holding `region` (empty when the target has no such region).
    pub fn region_memory(&self, region: usize) -> &str {
        self.region_memories.get(region).map_or("", String::as_str)
    }
}

/// One buffer of a lowered program, as the schedule framework sees it ([`LoweredView`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferView {
    /// Size in bytes.
    pub size: u64,
    /// The operation writing it (`None`: a graph input or a constant).
    pub producer: Option<usize>,
    /// The last operation reading it.
    pub last_use: Option<usize>,
    /// A graph input (live from the start).
    pub is_input: bool,
    /// A graph output (live to the end).
    pub is_output: bool,
    /// Holds constant data: it lives in the read-only region, not the arena.
    pub constant: bool,
}

/// One operation of a lowered program, as the schedule framework sees it ([`LoweredView`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpView<'a> {
    /// Its name (the source operator's output tensor, or the lowering's name for it).
    pub name: &'a str,
    /// Its kernel kind as block selection sees it (`None`: a DMA, which has no kernel).
    pub kernel: Option<KernelKind>,
    /// The buffer of its IFM.
    pub ifm: usize,
    /// The buffer of its second IFM, when it has one.
    pub ifm2: Option<usize>,
    /// The buffer of its OFM.
    pub ofm: usize,
}

/// A feature map of an operation, as `npuc explain` describes it ([`OpDescription`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FmDescription {
    /// Its buffer.
    pub buffer: usize,
    /// Height, width, depth.
    pub shape: [u32; 3],
    /// The element type's name.
    pub dtype: String,
    /// Broadcast along height, width, depth.
    pub broadcast: [bool; 3],
}

/// What `npuc explain` says of one operation of a lowered program besides its schedule
/// ([`LoweredView::describe_op`]), in the target's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpDescription {
    /// The kernel, as the target names it (U85: `CONV`, `POOL MAX`, `DMA`).
    pub kernel: String,
    /// Kernel height, width.
    pub kernel_size: [u32; 2],
    /// Stride y, x.
    pub stride: [u32; 2],
    /// Dilation y, x.
    pub dilation: [u32; 2],
    /// The IFM upscaling, when there is one (U85: `nearest`, `zeros`).
    pub ifm_upscale: Option<String>,
    /// The lookup table's function, when one is applied.
    pub lut: Option<String>,
    /// Its feature maps.
    pub ifm: FmDescription,
    /// See `ifm`.
    pub ifm2: Option<FmDescription>,
    /// See `ifm`.
    pub ofm: FmDescription,
    /// It has a weight stream.
    pub weighted: bool,
}

/// Where a target's writer put an operation's feature maps (what `npuc explain` shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpLocations {
    /// The IFM's region and the byte offset of its element (0, 0, 0) (an IFM copied into
    /// the staging memory: its copy's).
    pub ifm: (u8, u64),
    /// See `ifm`.
    pub ifm2: Option<(u8, u64)>,
    /// See `ifm`.
    pub ofm: (u8, u64),
    /// The IFM is one scalar value (read from no memory).
    pub ifm_scalar: Option<i32>,
    /// The IFM2 is one scalar value (read from no memory).
    pub ifm2_scalar: Option<i32>,
}

/// The lowered program a target's [`Target::lower`] made, as the schedule framework of the
/// driver reads it (allocation, the scheduling passes' own reads, the schedule's
/// description): buffers with their sizes, producers and last uses, and each operation's
/// feature-map buffers, kernel kind and names. The target's own passes read its own form.
pub trait LoweredView {
    /// The number of buffers.
    fn buffer_count(&self) -> usize;
    /// Buffer `i` (`i < buffer_count()`).
    fn buffer(&self, i: usize) -> BufferView;
    /// The number of operations, in execution order.
    fn op_count(&self) -> usize;
    /// Operation `k` (`k < op_count()`).
    fn op(&self, k: usize) -> OpView<'_>;
    /// The description of operation `k` for `npuc explain`.
    fn describe_op(&self, k: usize) -> OpDescription;
    /// The buffer holding a graph input or output, or an operation's output tensor.
    fn tensor_buffer(&self, t: npuc_ir::TensorId) -> Option<usize>;
    /// The IR rewrites that ran before lowering, in order.
    fn rewrites(&self) -> &[&'static str];
    /// The program as its target's own type, for that target's own passes (the U85's: the
    /// lowering crate's form).
    fn as_any(&self) -> &dyn std::any::Any;
}

// ---------------------------------------------------------------------------------------
// What the framework decided for a lowered program, and what a target's writer made of it
// (decision A3): `Target::write` takes the program it lowered and these neutral decisions,
// and returns a neutral `Written`.
// ---------------------------------------------------------------------------------------

/// The "region" of a chained feature map: it goes through a chaining FIFO, no memory.
pub const CHAINED: u8 = u8::MAX;

/// Region of the read-only data (weights, scales, constants, tables).
pub const REGION_READ_ONLY: u8 = 0;
/// Region of the feature-map arena.
pub const REGION_ARENA: u8 = 1;
/// Region of the fast memory (SRAM staging area) in modes where the arena is elsewhere.
pub const REGION_FAST: u8 = 2;

/// What the compiler optimises for (`--optimise`): what a target's scheduling passes read
/// of the driver's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Optimise {
    /// Fewest cycles.
    #[default]
    Performance,
    /// Smallest arena and read-only data.
    Size,
}

impl Optimise {
    /// `performance` or `size`.
    pub fn name(self) -> &'static str {
        match self {
            Optimise::Performance => "performance",
            Optimise::Size => "size",
        }
    }
}

impl std::str::FromStr for Optimise {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // Any case: Vela spells them `Performance` and `Size`.
        match s.to_ascii_lowercase().as_str() {
            "performance" => Ok(Optimise::Performance),
            "size" => Ok(Optimise::Size),
            _ => Err(format!(
                "unknown optimisation goal {s:?} (performance or size)"
            )),
        }
    }
}

/// Where each buffer lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Region of each buffer (constants: region 0, placed by the target's writer;
    /// [`CHAINED`]: in no memory).
    pub regions: Vec<u8>,
    /// Byte offset of each buffer in its region.
    pub offsets: Vec<u64>,
    /// Arena (region 1) size in bytes (a multiple of 16).
    pub arena_size: u64,
    /// Fast area (region 2) size in bytes (a multiple of 16; 0 when unused).
    pub fast_size: u64,
}

/// The operand of a chain's consumer that the producer's OFM feeds (through a chaining FIFO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainOperand {
    /// The consumer's IFM.
    Ifm,
    /// The consumer's IFM2.
    Ifm2,
}

/// An operation's IFM buffer copied whole into the staging memory before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfmCopy {
    /// Where the buffer is: (region, offset).
    pub src: (u8, u64),
    /// Where the copy goes: (region, offset).
    pub dst: (u8, u64),
    /// Bytes copied.
    pub size: u64,
    /// The copy waits for the kernel before the previous one (whose buffers it overwrites).
    pub wait: bool,
}

/// One copy at the start of the constant feature maps (`consts`) and/or the lookup tables
/// (`tables`), which the writer lays out in that order in the read-only region, into
/// `region` at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstCopy {
    /// Destination region.
    pub region: u8,
    /// Destination offset.
    pub at: u64,
    /// The constant feature maps are copied.
    pub consts: bool,
    /// The lookup tables are copied.
    pub tables: bool,
}

/// The encoded streams of an operation, in figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFigures {
    /// Number of weights encoded.
    pub weights: u64,
    /// Bytes of each weight stream (one per weight decoder, or one single stream).
    pub weight_bytes: Vec<u64>,
    /// Bytes of the scale/bias stream.
    pub scale_bytes: u64,
}

/// What was decided for one operation: the framework's neutral choices, and the target's
/// own plan (opaque: only the target that offered the candidates reads it).
pub struct OpDecision {
    /// The block it runs with (among [`Target::block_candidates`]; an operation run in
    /// slices: its slices').
    pub block: BlockConfig,
    /// Its encoded streams (`None`: it has none).
    pub streams: Option<StreamFigures>,
    /// How its streams are read.
    pub staging: Staging,
    /// Its IFM copied into the staging memory, if it is.
    pub ifm_copy: Option<IfmCopy>,
    /// `Some(operand)` when its OFM is chained into the next operation's `operand`.
    pub chain: Option<ChainOperand>,
    /// Its part in a cascade, if it has one.
    pub cascade: Option<CascadePart>,
    /// The optimiser's choice among its options (or its cascade's), for `npuc explain`.
    pub choice: Option<Choice>,
    /// The target's own plan for it (U85: the encoded streams and how they are staged).
    pub plan: Box<dyn Any>,
}

/// What the scheduling passes decided for a lowered program: placement, per-operation
/// decisions (block, streams, staging, copies, chains, cascades) and the copy of the
/// constants; the parts only the target reads are opaque (`OpDecision::plan`, `private`).
pub struct Decisions {
    /// The program as scheduled, when the passes changed it (lifetimes extended for chains,
    /// cascade intermediates shrunk to their rings); `None`: the program as lowered. It is
    /// of the same target's form as the program it was made from.
    pub scheduled: Option<Box<dyn LoweredView>>,
    /// Where the feature maps live (staging buffers included in the region sizes).
    pub placement: Placement,
    /// Per operation, in execution order.
    pub ops: Vec<OpDecision>,
    /// The copy of the constant feature maps and/or lookup tables at the start, if any.
    pub const_copy: Option<ConstCopy>,
    /// The target's own decisions for the whole program (U85: the cascades' bands, rings
    /// and input rings).
    pub private: Box<dyn Any>,
}

/// What a target's scheduling passes decided ([`Target::decide`]): the decisions, and other
/// complete schedules of the same operations the target found (U85: the global program's,
/// decision S13, where they differ from the greedy's); the driver writes each and keeps the
/// one whose stream's estimate has the lowest objective (`objective::stream_cost`; ties: the
/// earlier, `decisions` first).
pub struct Decided {
    pub decisions: Decisions,
    pub alternatives: Vec<Alternative>,
}

/// Another schedule of the same operations ([`Decided::alternatives`]): per-operation
/// decisions, the placement with its staging buffers, and the constant copy; the rest of
/// [`Decisions`] is shared.
pub struct Alternative {
    pub ops: Vec<OpDecision>,
    pub placement: Placement,
    pub consts: Option<ConstCopy>,
}

impl Decisions {
    /// The program as scheduled: [`Decisions::scheduled`], else `lowered`.
    pub fn program<'a>(&'a self, lowered: &'a dyn LoweredView) -> &'a dyn LoweredView {
        self.scheduled.as_deref().unwrap_or(lowered)
    }
}

/// One NPU operation of the compiled model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorInfo {
    /// Name of the IR operator that produced the NPU operation's output.
    pub name: String,
    /// NPU kernel (`CONV`, `DEPTHWISE`, `POOL`, `ELEMENTWISE`).
    pub kernel: String,
    /// The IR operators fused into it, in order.
    pub fused: Vec<String>,
    /// Estimated cycles.
    pub cycles: u64,
    /// Where its OFM buffer lives: region, byte offset, size in bytes.
    pub ofm: (u8, u64, u64),
    /// The word offset in the command stream of the kernel command after which its whole OFM
    /// is in memory (its last part); `None` when it never is (chained, or in a cascade's ring
    /// buffer).
    pub done_at: Option<usize>,
}

/// The weights of a compiled model, before and after encoding: summed over the weight stream
/// blocks of the read-only region (a weight tensor used by several NPU operations counts once
/// per block that encodes it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeightFigures {
    /// Number of weights encoded (bytes before compression: one byte per 8-bit weight).
    pub weights: u64,
    /// Bytes of the encoded weight streams (SWD or FWD, without padding).
    pub weight_stream_bytes: u64,
    /// Bytes of the scale/bias streams.
    pub scale_stream_bytes: u64,
}

/// What a target's writer made of a scheduled program ([`Target::write`]): its payload,
/// the read-only region, and which operation each part belongs to.
pub struct Written {
    /// The program, in the format the target chose.
    pub payload: TargetPayload,
    /// Region 0 (read-only: weight and scale streams, constants, tables).
    pub read_only: Vec<u8>,
    /// The operations in execution order (`cycles`: a DMA operation's own estimate, 0 for a
    /// kernel operation; `done_at` a command's word offset).
    pub operators: Vec<OperatorInfo>,
    /// The operation of each kernel command, in stream order.
    pub owners: Vec<usize>,
    /// The operation each DMA command was issued for, in stream order; `None`: the copy of
    /// the constants at the start.
    pub dma_owners: Vec<Option<usize>>,
    /// The weights and scales in region 0.
    pub weights: WeightFigures,
    /// Where each operation's feature maps are read and written (an IFM copied into the
    /// staging memory: its copy).
    pub locations: Vec<OpLocations>,
    /// The region 0 offset of each operation's stream block (the first slice's when sliced).
    pub stream_offsets: Vec<Option<u64>>,
    /// The copy of the constants and/or lookup tables at the start: from, to, bytes.
    pub const_copy: Option<Transfer>,
}

/// An operation's choice among its options (block alternative, IFM copy, how the streams are
/// read): descriptions and objectives (cycles plus priced off-chip bytes, decision S11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub chosen: String,
    pub objective: u64,
    /// The cheapest other option (`None`: there was no other).
    pub next: Option<String>,
    pub next_objective: Option<u64>,
}

/// How an operation's weight and scale streams are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Staging {
    /// From region 0 (or no streams).
    Direct,
    /// Copied whole by one DMA into `region` at `offset`, issued while the previous
    /// operation runs (`wait`: after a KERNEL_WAIT 1).
    Whole {
        region: u8,
        offset: u64,
        bytes: u64,
        wait: bool,
    },
    /// In OFM-depth slices, each slice's streams copied into one of two buffers.
    Sliced {
        region: u8,
        buffers: [u64; 2],
        /// Bytes of each slice's streams.
        slice_bytes: Vec<u64>,
        /// OFM channels of each slice.
        slice_depths: Vec<u32>,
        wait: bool,
    },
    /// The first operation of a cascade: the streams of the cascade's operations, each
    /// copied whole into `region` (operation, offset, bytes) before the first band.
    Cascade {
        region: u8,
        copies: Vec<[u64; 3]>,
        wait: bool,
    },
}

/// A DMA copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// Source region and offset.
    pub from: (u8, u64),
    /// Destination region and offset.
    pub to: (u8, u64),
    pub bytes: u64,
}

/// An operation's part in a cascade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CascadePart {
    /// The cascade's number in the schedule.
    pub group: usize,
    /// Its first and last operation.
    pub first: usize,
    pub last: usize,
    /// The bands the operation is computed in.
    pub bands: usize,
    /// OFM rows of its largest band.
    pub band_rows: u32,
    /// Rows of the ring buffer its OFM lives in (`None` for the last operation).
    pub ring_rows: Option<u32>,
}

/// Why a target could not encode something.
#[derive(Debug, Error)]
pub enum TargetError {
    #[error("weight ordering: {0}")]
    Ordering(#[from] ordering::OrderingError),
    #[error("weight encoding: {0}")]
    Swd(String),
    #[error("scale stream: {0}")]
    Scale(#[from] npuc_codecs::scale::ScaleError),
    #[error("{0}")]
    Unsupported(String),
    /// The writer could not write the program (a register field could not hold a value).
    #[error("command stream: {0}")]
    Stream(String),
    /// Encoding an operation's weights or scales failed while scheduling it.
    #[error("operator {name}: {source}")]
    Encode {
        name: String,
        #[source]
        source: Box<TargetError>,
    },
    /// Lowering refused the graph: the target's own error (U85: `LowerError`, an operator it
    /// does not support, or a malformed graph).
    #[error(transparent)]
    Lower(Box<dyn std::error::Error + Send + Sync>),
}

/// The architecture interface used by the compiler passes (`Sync`: the passes consult it
/// from several threads).
pub trait Target: Sync {
    /// The CONFIG word written into the container header.
    fn config_word(&self) -> u32;
    /// Largest OFM block (height, width, depth).
    fn ofm_block_max(&self) -> (u32, u32, u32);
    /// The valid microblock / OFM block / weight order choices for an operation within the
    /// internal RAM limits, the preferred one first; never empty.
    fn block_candidates(&self, geom: &OpGeometry) -> Vec<BlockConfig>;
    /// The names of `block`'s choices.
    fn block_names(&self, block: &BlockConfig) -> BlockNames;
    /// Orders and encodes OHWI weights (zero point already subtracted) for a conv-like op in
    /// the block's weight order.
    fn encode_weights(
        &self,
        kind: KernelKind,
        weights: &OhwiWeights,
        ifm_precision: IfmPrecision,
        stride: (u32, u32),
        dilation: (u32, u32),
        block: &BlockConfig,
    ) -> Result<EncodedWeights, TargetError>;
    /// For each of `weights` (e.g. the OFM-depth slices of one operation, all with the same
    /// other arguments), the exact byte length of each stream [`Self::encode_weights`] makes
    /// of it, for costing candidates without their streams; by default, encoding them.
    fn weight_stream_lengths(
        &self,
        kind: KernelKind,
        weights: &[&OhwiWeights],
        ifm_precision: IfmPrecision,
        stride: (u32, u32),
        dilation: (u32, u32),
        block: &BlockConfig,
    ) -> Result<Vec<Vec<u64>>, TargetError> {
        weights
            .iter()
            .map(|w| {
                let enc = self.encode_weights(kind, w, ifm_precision, stride, dilation, block)?;
                Ok(enc.streams.iter().map(|s| s.len() as u64).collect())
            })
            .collect()
    }
    /// Encodes the per-channel bias/scale records for an accumulator format.
    fn encode_scales(
        &self,
        channels: &[ChannelScale],
        acc: AccFormat,
        block: &BlockConfig,
    ) -> Result<Vec<u8>, TargetError>;
    /// The length in bytes of the FWD stream of `weights` for `block`, estimated without
    /// ordering them (`None` when FWD cannot represent them); SWD lengths need the encoding.
    fn fwd_length_estimate(&self, weights: &OhwiWeights) -> Option<u64>;
    /// Estimated cycles of the kernel operation or DMA that ends `commands` (made by this
    /// target's writer), with the register state the commands before it set (from reset): the
    /// cost model of `npuc report`.
    fn estimate(&self, commands: &Commands) -> u64 {
        self.estimate_traffic(commands).0
    }
    /// [`Target::estimate`]'s cycles, and the bytes the operation moves to and from memories
    /// other than SRAM (DRAM, flash): the off-chip traffic `npuc report` counts. Commands of
    /// another target's writer cost nothing (a programming error, caught by a debug assertion).
    fn estimate_traffic(&self, commands: &Commands) -> (u64, u64);
    /// The register state `commands` (this target's writer's) leave from reset: what a
    /// planner writes many candidates of one operation after ([`Target::estimate_traffic_after`]).
    fn registers_after(&self, commands: &Commands) -> Box<Registers>;
    /// [`Target::estimate_traffic`] of the operation that ends `commands`, written after the
    /// commands that left `base` ([`Target::registers_after`]): the figures of the whole
    /// sequence, without replaying the commands before.
    fn estimate_traffic_after(&self, base: &Registers, commands: &Commands) -> (u64, u64);
    /// [`Target::estimate_traffic_after`], and the same with the operation's weight and scale
    /// streams read from region `to` at the same addresses (a copy of them in a staging
    /// memory): what a planner compares for each candidate.
    fn estimate_traffic_restreamed_after(
        &self,
        base: &Registers,
        commands: &Commands,
        to: u8,
    ) -> [(u64, u64); 2];
    /// [`Target::estimate_compute`] of the operation that ends `commands`, written after the
    /// commands that left `base`.
    fn estimate_compute_after(&self, base: &Registers, commands: &Commands) -> u64;
    /// The compute cycles of the operation that ends `commands`, memories aside: the cost
    /// model's cycles of the NPU's units and block pipeline (U85: P17, the MAC and AO stages
    /// per block, the CC issuing the blocks, the first block's IFM read and the last one's
    /// OFM write), without the memories' bandwidth or the DMAs.
    fn estimate_compute(&self, commands: &Commands) -> u64;
    /// Counts the kernel and DMA commands of a program this target wrote (none in another
    /// target's payload).
    fn count_commands(&self, payload: &TargetPayload) -> CommandCounts;
    /// Disassembles a program of this target's kind (any writer's, not only its own: Vela's
    /// too; another target's payload is an error).
    fn disassemble(&self, payload: &TargetPayload) -> Disassembly;
    /// The commands of a program of this target's kind that start work, in order (`None` if
    /// it does not decode, or is another target's).
    fn work_commands(&self, payload: &TargetPayload) -> Option<Vec<WorkCommand>>;
    /// Estimates a whole program of this target's kind, any writer's (an error if its cost
    /// model cannot read it, or it is another target's).
    fn estimate_stream(&self, payload: &TargetPayload) -> Result<StreamEstimate, StreamError>;
    /// Checks that a program of this target's kind, any writer's, runs within `regions`
    /// (bytes per region; `None`: not mapped), region 0 starting with `read_only` when given:
    /// what every compiled stream passes before it is written, and what `npuc report` asks
    /// of any stream it estimates (decision H3).
    fn validate(
        &self,
        payload: &TargetPayload,
        regions: &[Option<u64>],
        read_only: Option<&[u8]>,
    ) -> Result<(), InvalidStream>;
    /// The name of the memory holding a region (`Sram`, `Dram`, ...).
    fn region_memory(&self, region: u8) -> String;
    /// The configuration and memories this target models (what `npuc report` prints).
    fn describe(&self) -> TargetDescription;
    /// The capacity in bytes of a fast memory separate from the arena (region 2), when the
    /// memory mode has one (`None`: feature maps live in the arena only).
    fn fast_storage(&self) -> Option<u64>;
    /// Lowers a validated graph to the target's NPU operations over buffers (the U85's: its
    /// lowering recipes, `npuc-backend-lower`): an opaque program the schedule framework
    /// reads through [`LoweredView`] (decision A2); the target's own passes read their own
    /// form ([`LoweredView::as_any`]).
    fn lower(&self, graph: &npuc_ir::Graph) -> Result<Box<dyn LoweredView>, TargetError>;
    /// Schedules the program this target's [`Target::lower`] made: runs the target's
    /// scheduling passes (placement through `alloc` or its own, blocks, streams, staging,
    /// whatever the target decides) and returns the neutral [`Decisions`] its
    /// [`Target::write`] reads back, with any alternative schedules (decision A4). The U85's
    /// passes are `npuc-backend-schedule`'s.
    fn decide(&self, lowered: &dyn LoweredView) -> Result<Decided, TargetError>;
    /// Writes the program (its payload, in the format the target chooses) and read-only
    /// region of a scheduled graph: `lowered` is the program this target's [`Target::lower`]
    /// made, `decisions` what the scheduling passes decided for it (the program as scheduled
    /// included, [`Decisions::program`]). The U85's writer sequences the operations in
    /// `npuc-backend-schedule`'s `write` and programs the registers with the backend's `writer`.
    fn write(
        &self,
        lowered: &dyn LoweredView,
        decisions: &Decisions,
    ) -> Result<Written, TargetError>;
    /// The attainable compute bound of each scheduled operation, in order: the fewest
    /// compute cycles ([`Target::estimate_compute`]) of any block candidate the target offers
    /// for it and of the plan taken, feature maps and streams in the memory of the least
    /// latency; 0 for an operation that computes nothing of its own (a DMA, a chain's
    /// consumer). `npuc explain`'s `compute_bound`.
    fn compute_bounds(&self, lowered: &dyn LoweredView, decisions: &Decisions) -> Vec<u64>;
    /// Where weight and scale streams can be staged by DMA (region, capacity in bytes), when
    /// the constants are not in that memory already.
    fn staging(&self) -> Option<(u8, u64)>;
}
