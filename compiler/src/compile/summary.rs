//! The summary of a compilation as data: where every operator of the source model runs (and
//! why not on the NPU), and the figures of the compiled command streams. `npuc compile` prints
//! it as a table ([`CompileSummary::text`]) or, with `--json`, as JSON (the serde form of
//! [`CompileSummary`]); the Python package returns it as a dict.
//!
//! ```
//! use npuc_ir::*;
//! let mut b = GraphBuilder::new("pool");
//! let x = b.input("x", DType::Int8, [1, 4, 4, 8]);
//! let attrs = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0; 4] };
//! let y = b.op("pool", Op::MaxPool2d(attrs), &[x]);
//! b.output(y);
//! let model = npuc::compile(&b.finish().unwrap(), &npuc::Options::default()).unwrap();
//! let ops = vec![npuc::SourceOperator::npu(0, "MAX_POOL_2D", 0)];
//! let s = npuc::CompileSummary::new(&[&model], ops, &npuc::Options::default());
//! assert_eq!((s.npu_operators, s.cpu_operators, s.kernel_commands), (1, 0, 1));
//! assert_eq!(s.estimated_cycles, model.estimated_cycles());
//! let json = serde_json::to_value(&s).unwrap();
//! assert_eq!(json["accelerator"], "ethos-u85-256");
//! assert_eq!(json["operators"][0]["placement"], "npu");
//! ```

use super::{CompiledModel, Options};
use serde::{Deserialize, Serialize};

/// Where a source operator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// In an NPU command stream.
    Npu,
    /// Left to the CPU (a `.tflite` output keeps it as an ordinary TFLite operator).
    Cpu,
}

/// One operator of the source model (TFLite main subgraph, or TOSA main block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceOperator {
    /// Operator index in the source graph (execution order).
    pub index: usize,
    /// Opcode name (`CONV_2D`, `CONV2D`, a custom operator's code).
    pub opcode: String,
    /// Where it runs.
    pub placement: Placement,
    /// The NPU segment (command stream) it is compiled into; `None` on the CPU.
    pub segment: Option<usize>,
    /// Why it stays on the CPU; `None` on the NPU.
    pub reason: Option<String>,
}

impl SourceOperator {
    /// An operator compiled into NPU segment `segment`.
    pub fn npu(index: usize, opcode: impl Into<String>, segment: usize) -> SourceOperator {
        SourceOperator {
            index,
            opcode: opcode.into(),
            placement: Placement::Npu,
            segment: Some(segment),
            reason: None,
        }
    }

    /// An operator left to the CPU, with the reason.
    pub fn cpu(
        index: usize,
        opcode: impl Into<String>,
        reason: impl Into<String>,
    ) -> SourceOperator {
        SourceOperator {
            index,
            opcode: opcode.into(),
            placement: Placement::Cpu,
            segment: None,
            reason: Some(reason.into()),
        }
    }
}

/// The summary of one compilation (all NPU segments together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileSummary {
    /// Target configuration (`ethos-u85-256`).
    pub accelerator: String,
    /// System configuration compiled for.
    pub system_config: String,
    /// Memory mode compiled for.
    pub memory_mode: String,
    /// Optimisation goal (`performance` or `size`).
    pub optimise: String,
    /// Number of NPU segments (command streams).
    pub npu_segments: usize,
    /// Source operators on the NPU.
    pub npu_operators: usize,
    /// Source operators left on the CPU.
    pub cpu_operators: usize,
    /// Every source operator, in execution order, with its placement.
    pub operators: Vec<SourceOperator>,
    /// NPU operations the compiler scheduled (`crate::counts`: one per group of fused IR
    /// operators; one or more commands each).
    pub npu_operations: usize,
    /// Kernel commands (CONV, DEPTHWISE, POOL, ELEMENTWISE, RESIZE) in the streams.
    pub kernel_commands: u64,
    /// DMA commands in the streams.
    pub dma_commands: u64,
    /// 32-bit words of the command streams.
    pub command_words: u64,
    /// Arena (region 1) bytes of the largest segment.
    pub arena_bytes: u64,
    /// Arena bytes of all segments together.
    pub arena_bytes_total: u64,
    /// Fast memory (region 2) bytes of the largest segment; 0 when the feature maps are in
    /// the arena.
    pub fast_memory_bytes: u64,
    /// Read-only bytes (weight and scale/bias streams, region 0).
    pub read_only_bytes: u64,
    /// Weights before encoding (one byte per 8-bit weight).
    pub weights_raw_bytes: u64,
    /// Bytes of the encoded weight streams.
    pub weights_encoded_bytes: u64,
    /// Bytes of the scale/bias streams.
    pub scale_bytes: u64,
    /// Estimated cycles of all segments (`npuc report`'s model, this system configuration and
    /// memory mode).
    pub estimated_cycles: u64,
    /// The attainable compute bound of all segments: per operation, the fewest compute
    /// cycles of any block candidate, memories aside (at most `estimated_cycles`).
    #[serde(default)]
    pub compute_bound: u64,
}

impl CompileSummary {
    /// The summary of the compiled segments `models` (in execution order) of a source graph
    /// whose operators are `operators`. The configuration is the segments' (they share it),
    /// or `options`' when nothing runs on the NPU.
    pub fn new(
        models: &[&CompiledModel],
        operators: Vec<SourceOperator>,
        options: &Options,
    ) -> CompileSummary {
        let sum = |f: &dyn Fn(&CompiledModel) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
        let (accelerator, system_config, memory_mode, optimise) = match models.first() {
            Some(m) => (
                m.accelerator,
                m.system_config.clone(),
                m.memory_mode.clone(),
                m.optimise,
            ),
            None => (
                options.accelerator,
                options.system_config.name.clone(),
                options.memory_mode.name.clone(),
                options.optimise,
            ),
        };
        let counts = crate::counts::Counts::sum(models.iter().copied());
        let cpu_operators = operators
            .iter()
            .filter(|o| o.placement == Placement::Cpu)
            .count();
        CompileSummary {
            accelerator: accelerator.name().to_string(),
            system_config,
            memory_mode,
            optimise: optimise.name().to_string(),
            npu_segments: models.len(),
            npu_operators: operators.len() - cpu_operators,
            cpu_operators,
            operators,
            npu_operations: counts.npu_operations,
            kernel_commands: counts.kernel_commands as u64,
            dma_commands: counts.dma_commands as u64,
            command_words: sum(&|m| m.payload.bytes().len() as u64 / 4),
            arena_bytes: models.iter().map(|m| m.arena_size).max().unwrap_or(0),
            arena_bytes_total: sum(&|m| m.arena_size),
            fast_memory_bytes: models.iter().map(|m| m.fast_size).max().unwrap_or(0),
            read_only_bytes: sum(&|m| m.read_only.len() as u64),
            weights_raw_bytes: sum(&|m| m.weights.weights),
            weights_encoded_bytes: sum(&|m| m.weights.weight_stream_bytes),
            scale_bytes: sum(&|m| m.weights.scale_stream_bytes),
            estimated_cycles: sum(&|m| m.estimated_cycles()),
            compute_bound: sum(&|m| m.schedule.compute_bound),
        }
    }

    /// The NPU operations and commands (`crate::counts`).
    pub fn counts(&self) -> crate::counts::Counts {
        crate::counts::Counts {
            npu_operations: self.npu_operations,
            kernel_commands: self.kernel_commands as usize,
            dma_commands: self.dma_commands as usize,
        }
    }

    /// The operators left on the CPU.
    pub fn cpu_operators(&self) -> impl Iterator<Item = &SourceOperator> {
        self.operators
            .iter()
            .filter(|o| o.placement == Placement::Cpu)
    }

    /// The table `npuc compile` prints (on stderr) at the end of a run.
    pub fn text(&self) -> String {
        let ratio = if self.weights_raw_bytes == 0 {
            String::new()
        } else {
            format!(
                " ({:.1}% of the raw size)",
                100.0 * self.weights_encoded_bytes as f64 / self.weights_raw_bytes as f64
            )
        };
        let rows = [
            (
                "configuration",
                format!(
                    "{}, {}, {}, optimised for {}",
                    self.accelerator, self.system_config, self.memory_mode, self.optimise
                ),
            ),
            ("NPU segments", self.npu_segments.to_string()),
            ("operators on NPU", self.npu_operators.to_string()),
            ("operators on CPU", self.cpu_operators.to_string()),
            ("NPU operations", self.npu_operations.to_string()),
            ("commands", self.counts().commands()),
            ("command stream", format!("{} words", self.command_words)),
            (
                "arena (region 1)",
                format!(
                    "{} bytes (largest segment), {} bytes in all",
                    self.arena_bytes, self.arena_bytes_total
                ),
            ),
            (
                "fast memory (region 2)",
                format!(
                    "{} bytes (largest segment; 0: feature maps in the arena)",
                    self.fast_memory_bytes
                ),
            ),
            (
                "read-only (weights, scales)",
                format!("{} bytes", self.read_only_bytes),
            ),
            (
                "weights",
                format!(
                    "{} bytes raw -> {} bytes encoded{ratio}",
                    self.weights_raw_bytes, self.weights_encoded_bytes
                ),
            ),
            ("scale/bias streams", format!("{} bytes", self.scale_bytes)),
            (
                "estimated cycles",
                format!(
                    "{} (npuc report's model, this memory system)",
                    self.estimated_cycles
                ),
            ),
            (
                "compute bound",
                format!(
                    "{} (each operation's best block candidate, memories aside)",
                    self.compute_bound
                ),
            ),
        ];
        let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let mut s = String::from("npuc compile summary\n");
        for (k, v) in rows {
            s.push_str(&format!("  {k:<w$}  {v}\n"));
        }
        for o in self.cpu_operators() {
            s.push_str(&format!(
                "  CPU: operator {} ({}): {}\n",
                o.index,
                o.opcode,
                o.reason.as_deref().unwrap_or("")
            ));
        }
        s
    }
}
