//! The schedule of a compiled graph: for each NPU operation, in execution order, what the
//! scheduling passes chose (placement, block, weight format, staging, chaining, cascading) and
//! what the cost model estimates for it.
//!
//! A [`Schedule`] has a stable text form ([`Schedule::text`], what `npuc explain` prints and
//! what the stream snapshot tests compare) and a serde JSON form (`npuc explain --json`).
//!
//! What is target-neutral and what is not: the source operators, the kernel kind, the feature
//! maps and their placement (memory, region, offset), the staging copies (DMA source,
//! destination, size), chaining, the cascade bands and the cost (cycles, bytes per memory)
//! describe any NPU that runs operations over feature maps in addressable memories. The block
//! choice (`ofm_block`, `microblock`, `weight_format`, `weight_order`, `weight_sparsity`) is
//! the Ethos-U85's candidate description: the fields a target's block candidates carry.

pub use crate::arch_interface::{CascadePart, Choice, Staging, Transfer};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schedule of one compiled graph.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Target configuration (`ethos-u85-256`).
    pub accelerator: String,
    /// System configuration compiled for.
    pub system_config: String,
    /// Memory mode compiled for.
    pub memory_mode: String,
    /// The IR rewrites that ran before lowering, in order (the named passes of
    /// `compile/lower/rewrite`: `negate-as-sub`, ...).
    #[serde(default)]
    pub rewrites: Vec<String>,
    /// The NPU operations in execution order.
    pub ops: Vec<ScheduledOp>,
    /// The cost model's cycles for the whole stream (DMAs overlapping kernels as the waits
    /// allow): `npuc report`'s `total_cycles` for the compiled output.
    pub total_cycles: u64,
    /// Bytes of region 1 (the arena).
    pub arena_size: u64,
    /// Bytes of region 2 (the fast memory; 0 when unused).
    pub fast_size: u64,
    /// Bytes of region 0 (weights, scales, constants, lookup tables).
    pub read_only_size: u64,
    /// The DMA at the start copying the constant feature maps and/or lookup tables into the
    /// staging memory, if any.
    pub const_copy: Option<Transfer>,
    /// The attainable compute bound: the sum over operations of the fewest compute cycles of
    /// any block candidate, memories aside (at most `total_cycles`; `npuc compile` prints it
    /// in its summary).
    #[serde(default)]
    pub compute_bound: u64,
}

/// One NPU operation of a [`Schedule`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledOp {
    /// Position in execution order.
    pub index: usize,
    /// Name of the IR operator that produces its output.
    pub name: String,
    /// The source model's operators it computes (fused), in order.
    pub source: Vec<Source>,
    /// Kernel kind: `CONV`, `DEPTHWISE`, `POOL <mode>`, `ELEMENTWISE <mode>`, `RESIZE` or `DMA`.
    pub kernel: String,
    /// Kernel height, width (undilated); stride y, x; dilation y, x.
    pub kernel_size: [u32; 2],
    pub stride: [u32; 2],
    pub dilation: [u32; 2],
    /// IFM upscaling (`zeros` for a TRANSPOSE_CONV's zero-inserted IFM; `None`: none).
    pub ifm_upscale: Option<String>,
    /// The activation unit's lookup table function (`None`: no LUT).
    pub lut: Option<String>,
    /// Input feature map.
    pub ifm: FeatureMap,
    /// Second input feature map (elementwise operations, initial accumulators, DMA indices).
    pub ifm2: Option<FeatureMap>,
    /// Output feature map.
    pub ofm: FeatureMap,
    /// OFM block height, width, depth (`None` for a DMA).
    pub ofm_block: Option<[u32; 3]>,
    /// Microblock height, width, depth (`None` for a DMA).
    pub microblock: Option<[u32; 3]>,
    /// Weight stream format, `swd` or `fwd` (`None` without weights).
    pub weight_format: Option<String>,
    /// Weight order, `depth_first` or `part_kernel_first` (`None` without weights).
    pub weight_order: Option<String>,
    /// Weight sparsity, `none` or `sparse_2_4` (`None` without weights).
    pub weight_sparsity: Option<String>,
    /// The encoded weight and scale streams (`None` without a scale stream).
    pub streams: Option<Streams>,
    /// How the streams are read.
    pub staging: Staging,
    /// The IFM copied into the staging memory before the operation, if it is.
    pub ifm_copy: Option<Transfer>,
    /// Chaining with the next or the previous operation.
    pub chain: Option<Chain>,
    /// The cascade the operation is part of, if any.
    pub cascade: Option<CascadePart>,
    /// The cost model's cycles for the operation's kernel commands (a DMA operation: its
    /// own estimate).
    pub cycles: u64,
    /// Bytes the operation's kernel commands (a DMA operation: its DMA) read and write, per
    /// memory.
    pub memory: Vec<MemoryBytes>,
    /// The DMAs issued for the operation (its streams, IFM copy, lookup table): the cost
    /// model's cycles and bytes per memory (`None` when there are none).
    pub dma: Option<DmaCost>,
    /// The fewest compute cycles of any of its block candidates, memories aside (0: a DMA, or
    /// reading its producer's OFM from the chaining buffer); the schedule's `compute_bound`
    /// sums them.
    #[serde(default)]
    pub compute_bound: u64,
    /// The option taken among the operation's stream and staging options (decision S13)
    /// and the next best, each with its estimated objective (`None`: no options weighed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<Choice>,
}

/// A source model operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The TFLite operator index (main subgraph); `None` for a TOSA operator.
    pub index: Option<usize>,
    /// The operator: the TFLite builtin (`CONV_2D`) or the TOSA operator (`CONV2D`).
    pub op: String,
    /// Name of its (first) output tensor.
    pub output: String,
}

/// A feature map and where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureMap {
    /// Height, width, depth.
    pub shape: [u32; 3],
    /// Element type (`int8`, `int16`, ...).
    pub dtype: String,
    /// Where it lives.
    pub placement: FmPlacement,
    /// Broadcast along height, width, depth (elementwise inputs).
    pub broadcast: [bool; 3],
}

/// Where a feature map lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FmPlacement {
    /// In memory: the memory's name (`Sram`, `Dram`, `OnChipFlash`, `OffChipFlash`), the
    /// region and the byte offset of element (0, 0, 0) in the region.
    Memory {
        memory: String,
        region: u8,
        offset: u64,
    },
    /// In the chaining FIFO between two operations: in no memory.
    Chained,
    /// One value for every element (OP_SCALAR): in no memory.
    Scalar { value: i32 },
}

/// An operation's encoded streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streams {
    /// Number of weights encoded.
    pub weights: u64,
    /// Bytes of each weight stream (one per weight decoder, or one FWD stream).
    pub weight_bytes: Vec<u64>,
    /// Bytes of the scale/bias stream.
    pub scale_bytes: u64,
    /// Offset in region 0 of its stream block (of the first slice's, when sliced).
    pub read_only_offset: u64,
}

/// Chaining (the OFM of a producer goes through a FIFO into the next operation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Chain {
    /// This operation's OFM feeds the next operation's `operand` (`ifm` or `ifm2`).
    Producer { operand: String },
    /// This operation's `operand` is the previous operation's OFM.
    Consumer { operand: String },
}

/// Bytes read from and written to one memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryBytes {
    /// The memory's name.
    pub memory: String,
    pub read: u64,
    pub written: u64,
}

/// The cost of the DMAs issued for an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DmaCost {
    pub cycles: u64,
    pub memory: Vec<MemoryBytes>,
}

impl Schedule {
    /// The text form: a header (with a `rewrites` line when IR rewrites ran), then one block
    /// per operation. Stable: snapshot tests compare it.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "schedule {} {} {}",
            self.accelerator, self.system_config, self.memory_mode
        );
        let _ = writeln!(
            s,
            "total {} cycles; arena {} B, fast {} B, read-only {} B",
            self.total_cycles, self.arena_size, self.fast_size, self.read_only_size
        );
        if !self.rewrites.is_empty() {
            let _ = writeln!(s, "rewrites {}", self.rewrites.join(", "));
        }
        if let Some(c) = &self.const_copy {
            let _ = writeln!(s, "constants copied {}", copy_text(c));
        }
        for op in &self.ops {
            s.push('\n');
            op.write_text(&mut s);
        }
        s
    }
}

fn copy_text(c: &Transfer) -> String {
    format!(
        "r{}+{:#x} -> r{}+{:#x} ({} B)",
        c.from.0, c.from.1, c.to.0, c.to.1, c.bytes
    )
}

fn dims(d: &[u32]) -> String {
    d.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
}

fn memory_text(m: &[MemoryBytes]) -> String {
    m.iter()
        .map(|b| format!("{} r {} w {}", b.memory, b.read, b.written))
        .collect::<Vec<_>>()
        .join("; ")
}

impl FeatureMap {
    fn text(&self) -> String {
        let at = match &self.placement {
            FmPlacement::Memory {
                memory,
                region,
                offset,
            } => format!("{memory} r{region}+{offset:#x}"),
            FmPlacement::Chained => "chained".to_string(),
            FmPlacement::Scalar { value } => format!("scalar {value}"),
        };
        let b = self.broadcast;
        let bc = if b.iter().any(|&x| x) {
            let axes: String = [(b[0], 'h'), (b[1], 'w'), (b[2], 'c')]
                .iter()
                .filter(|(x, _)| *x)
                .map(|(_, a)| *a)
                .collect();
            format!(" broadcast {axes}")
        } else {
            String::new()
        };
        format!("{} {} {at}{bc}", dims(&self.shape), self.dtype)
    }
}

impl ScheduledOp {
    fn write_text(&self, s: &mut String) {
        let _ = writeln!(s, "op {} {} {:?}", self.index, self.kernel, self.name);
        for src in &self.source {
            let index = src.index.map_or(String::new(), |i| format!("#{i} "));
            let _ = writeln!(s, "  source   {index}{} -> {:?}", src.op, src.output);
        }
        let _ = writeln!(s, "  ifm      {}", self.ifm.text());
        if let Some(f) = &self.ifm2 {
            let _ = writeln!(s, "  ifm2     {}", f.text());
        }
        let _ = writeln!(s, "  ofm      {}", self.ofm.text());
        if self.kernel != "DMA" {
            let upscale = self
                .ifm_upscale
                .as_ref()
                .map_or(String::new(), |u| format!(" ifm upscale {u}"));
            let _ = writeln!(
                s,
                "  kernel   {} stride {} dilation {}{upscale}",
                dims(&self.kernel_size),
                dims(&self.stride),
                dims(&self.dilation)
            );
        }
        if let Some(f) = &self.lut {
            let _ = writeln!(s, "  lut      {f}");
        }
        if let (Some(b), Some(m)) = (&self.ofm_block, &self.microblock) {
            let _ = writeln!(s, "  block    ofm {} microblock {}", dims(b), dims(m));
        }
        if let (Some(f), Some(o), Some(sp)) = (
            &self.weight_format,
            &self.weight_order,
            &self.weight_sparsity,
        ) {
            let _ = writeln!(s, "  weights  {f} {o} sparsity {sp}");
        }
        if let Some(st) = &self.streams {
            let lens: Vec<String> = st.weight_bytes.iter().map(u64::to_string).collect();
            let _ = writeln!(
                s,
                "  streams  {} weights -> [{}] B, scales {} B, at r0+{:#x}",
                st.weights,
                lens.join(", "),
                st.scale_bytes,
                st.read_only_offset
            );
        }
        match &self.staging {
            Staging::Direct => {}
            Staging::Whole {
                region,
                offset,
                bytes,
                wait,
            } => {
                let _ = writeln!(
                    s,
                    "  staging  whole -> r{region}+{offset:#x} ({bytes} B){}",
                    if *wait { ", after KERNEL_WAIT 1" } else { "" }
                );
            }
            Staging::Sliced {
                region,
                buffers,
                slice_bytes,
                slice_depths,
                wait,
            } => {
                let _ = writeln!(
                    s,
                    "  staging  {} slices (depths {}) -> r{region}+{:#x} / r{region}+{:#x} ({} B){}",
                    slice_bytes.len(),
                    dims(slice_depths),
                    buffers[0],
                    buffers[1],
                    slice_bytes.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
                    if *wait { ", after KERNEL_WAIT 1" } else { "" }
                );
            }
            Staging::Cascade {
                region,
                copies,
                wait,
            } => {
                let parts: Vec<String> = copies
                    .iter()
                    .map(|[op, at, bytes]| format!("op {op} -> r{region}+{at:#x} ({bytes} B)"))
                    .collect();
                let _ = writeln!(
                    s,
                    "  staging  cascade: {}{}",
                    parts.join(", "),
                    if *wait { ", after KERNEL_WAIT 1" } else { "" }
                );
            }
        }
        if let Some(c) = &self.ifm_copy {
            let _ = writeln!(s, "  ifm copy {}", copy_text(c));
        }
        match &self.chain {
            Some(Chain::Producer { operand }) => {
                let _ = writeln!(s, "  chain    ofm -> next op's {operand}");
            }
            Some(Chain::Consumer { operand }) => {
                let _ = writeln!(s, "  chain    {operand} <- previous op's ofm");
            }
            None => {}
        }
        if let Some(c) = &self.cascade {
            let ring = c
                .ring_rows
                .map_or(String::new(), |r| format!(", ofm ring of {r} rows"));
            let _ = writeln!(
                s,
                "  cascade  {} (ops {}..={}): {} bands of up to {} rows{ring}",
                c.group, c.first, c.last, c.bands, c.band_rows
            );
        }
        let _ = writeln!(s, "  cycles   {}", self.cycles);
        if !self.memory.is_empty() {
            let _ = writeln!(s, "  memory   {}", memory_text(&self.memory));
        }
        if let Some(d) = &self.dma {
            let _ = writeln!(
                s,
                "  dma      {} cycles; {}",
                d.cycles,
                memory_text(&d.memory)
            );
        }
        if let Some(c) = &self.choice {
            let _ = write!(s, "  choice   {} ({})", c.chosen, c.objective);
            if let (Some(n), Some(o)) = (&c.next, c.next_objective) {
                let _ = write!(s, "; next {n} ({o})");
            }
            let _ = writeln!(s);
        }
    }
}
