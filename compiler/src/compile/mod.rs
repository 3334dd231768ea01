//! `npuc compile`: IR graph to an Ethos-U85 register command stream.
//!
//! The pipeline of this first slice:
//! 1. [`lower`]: match operator groups of the IR into one NPU kernel operation each:
//!    CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED with their RESCALE and optional CLAMP;
//!    MAX_POOL2D / AVG_POOL2D with an optional CLAMP; RESCALE-wrapped ADD / SUB / MUL with an
//!    optional CLAMP; RESHAPE as an alias.
//! 2. [`alloc`]: feature maps by liveness into region 2 (the fast memory, in the memory
//!    modes with one: `Dedicated_Sram*`; spilling to the arena when they do not fit) or region 1
//!    (the arena; graph inputs and outputs always); weights and scales into region 0
//!    (read-only).
//! 3. [`emit`]: per operation the microblock, OFM block and weight order the target's cost
//!    model prefers; weight/scale streams staged by DMA into SRAM where it pays; then the
//!    register command stream (only changed registers re-emitted, KERNEL_WAIT where an
//!    operation touches memory the previous one wrote or read, DMA_WAIT before a kernel whose
//!    streams a DMA brings, NPU_OP_STOP at the end).
//!
//! Anything outside the slice is a [`CompileError`] naming the operator.
//!
//! ```
//! use npuc_ir::*;
//! let mut b = GraphBuilder::new("pool");
//! let x = b.input("x", DType::Int8, [1, 4, 4, 8]);
//! let attrs = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0; 4] };
//! let y = b.op("pool", Op::MaxPool2d(attrs), &[x]);
//! b.output(y);
//! let g = b.finish().unwrap();
//! let model = npuc::compile::compile(&g, &npuc::compile::Options::default()).unwrap();
//! assert_eq!(*model.payload.command_words().unwrap().last().unwrap(), 0xffff_0000); // NPU_OP_STOP 0xffff
//! ```

pub use npuc_target::alloc;
pub mod emit;
/// The Ethos-U85 lowering recipes (the `npuc-backend-lower` crate).
pub use npuc_backend_lower as lower;
pub mod schedule;
pub mod summary;

use crate::arch_interface::LoweredView;
pub use crate::arch_interface::{OperatorInfo, WeightFigures};
use crate::targets::{self, TargetFamily};
use npuc_backend::arch::Accelerator;
use npuc_backend::system::ini::{ConfigSource, IniFile, LookupError};
use npuc_backend::system::{presets, MemoryMap, MemoryMode, SystemConfig, SystemError};
use npuc_ir::{DType, Graph, Quantization};
use thiserror::Error;

pub use crate::arch_interface::Optimise;

/// Compilation options. Construct with [`Options::new`] or struct update syntax
/// (`Options { accelerator, ..Options::default() }`).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Target configuration.
    pub accelerator: Accelerator,
    /// System configuration: clocks and the memories behind the AXI ports
    /// (default [`presets::DEFAULT_SYSTEM_CONFIG`]).
    pub system_config: SystemConfig,
    /// Memory mode: which port holds constants, the arena and the staging area
    /// (default [`presets::DEFAULT_MEMORY_MODE`]).
    pub memory_mode: MemoryMode,
    /// Optimisation goal.
    pub optimise: Optimise,
    /// A hard cap on the SRAM the compiled model uses (`--sram-budget`): the fast memory
    /// (region 2), plus the arena where the memory mode puts it in SRAM. It also caps the
    /// fast memory the scheduler may fill (the memory mode's `arena_cache_size`, see
    /// [`Options::with_sram_budget`]); a model that still needs more is refused.
    pub sram_budget: Option<u64>,
}

impl Options {
    /// These options with a hard SRAM budget of `bytes`: the memory mode's `arena_cache_size`
    /// (the fast memory the scheduler fills, in the `Dedicated_Sram` modes) becomes at most
    /// `bytes`, and [`compile`] refuses a model whose SRAM use exceeds it, naming the
    /// operation that needs the most.
    pub fn with_sram_budget(mut self, bytes: u64) -> Options {
        self.sram_budget = Some(bytes);
        let cache = self
            .memory_mode
            .arena_cache_size
            .map_or(bytes, |c| c.min(bytes));
        self.memory_mode.arena_cache_size = Some(cache);
        self
    }

    /// The NPU family these options compile for (every `Accelerator` is an Ethos-U85
    /// configuration).
    pub fn family(&self) -> TargetFamily {
        TargetFamily::EthosU85
    }

    /// The default options for one configuration.
    pub fn new(accelerator: Accelerator) -> Options {
        Options {
            accelerator,
            ..Options::default()
        }
    }
}

/// A system configuration or memory mode that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The name is unknown, or its section of the configuration file is wrong.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The system configuration and memory mode do not fit together.
    #[error(transparent)]
    System(#[from] SystemError),
}

impl Options {
    /// The options named as on the command line: a system configuration and a memory mode
    /// from `config` (a Vela-format `.ini`, whose sections take precedence) or the built-in
    /// presets (`--system-config`, `--memory-mode`, `--config`). Combinations the memory map
    /// cannot serve (e.g. an SRAM-only mode on a DRAM-less system) are rejected here.
    ///
    /// ```
    /// use npuc::{Accelerator, Optimise, Options};
    /// let o = Options::from_names(
    ///     Accelerator::U85_512,
    ///     "Ethos_U85_SYS_Flash_High",
    ///     "Sram_Only",
    ///     None,
    ///     Optimise::Size,
    /// )
    /// .unwrap();
    /// assert_eq!(o.memory_mode.name, "Sram_Only");
    /// let e = Options::from_names(Accelerator::U85_256, "Nope", "Sram_Only", None, Optimise::Size);
    /// assert!(e.unwrap_err().to_string().contains("unknown system configuration \"Nope\""));
    /// ```
    pub fn from_names(
        accelerator: Accelerator,
        system_config: &str,
        memory_mode: &str,
        config: Option<IniFile>,
        optimise: Optimise,
    ) -> Result<Options, OptionsError> {
        let src = ConfigSource { file: config };
        let system_config = src.system_config(system_config)?;
        let memory_mode = src.memory_mode(memory_mode)?;
        MemoryMap::new(&system_config, &memory_mode)?;
        Ok(Options {
            accelerator,
            system_config,
            memory_mode,
            optimise,
            sram_budget: None,
        })
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            accelerator: Accelerator::U85_256,
            system_config: presets::system_config(presets::DEFAULT_SYSTEM_CONFIG)
                .expect("the default system configuration is a preset"),
            memory_mode: presets::memory_mode(presets::DEFAULT_MEMORY_MODE)
                .expect("the default memory mode is a preset"),
            optimise: Optimise::default(),
            sram_budget: None,
        }
    }
}

/// Why a graph could not be compiled.
#[derive(Debug, Error)]
pub enum CompileError {
    /// Lowering refused the graph: an operator (group) the NPU path does not support (yet),
    /// or a malformed graph.
    #[error(transparent)]
    Lower(#[from] lower::LowerError),
    /// The graph itself is malformed.
    #[error("invalid graph: {0}")]
    Graph(String),
    /// The target refused the graph (a lowering error of a target other than the U85's).
    #[error(transparent)]
    Target(crate::arch_interface::TargetError),
    /// Encoding weights or scales failed.
    #[error("operator {name}: {source}")]
    Encode {
        name: String,
        #[source]
        source: crate::arch_interface::TargetError,
    },
    /// A register field could not hold a value.
    #[error("command stream: {0}")]
    Stream(String),
    /// The emitted stream fails validation (a compiler bug caught before anything is
    /// written): the stream would fault or compute garbage on the NPU.
    #[error("operator {operator}: the command stream fails validation ({reason})")]
    InvalidStream {
        /// The NPU operation at or after the failing command.
        operator: String,
        /// What the validator found.
        reason: String,
    },
    /// The system configuration and memory mode do not fit together.
    #[error("{0}")]
    System(#[from] npuc_backend::system::SystemError),
    #[error(transparent)]
    Payload(#[from] crate::payload::PayloadError),
    /// The model needs more SRAM than `--sram-budget` allows.
    #[error(
        "the model needs {needed} bytes of SRAM, over the budget of {budget} bytes; operation {operator} needs the most ({live} bytes of feature maps live in SRAM while it runs)"
    )]
    SramBudget {
        needed: u64,
        budget: u64,
        /// The NPU operation with the most SRAM-resident bytes live.
        operator: String,
        live: u64,
    },
}

/// A graph input or output as placed in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlacement {
    /// Tensor name.
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Quantization record, if any.
    pub quant: Option<Quantization>,
    /// Memory region (1 = arena).
    pub region: u8,
    /// Byte offset in the region.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

/// A compiled model: command stream, read-only data and where everything lives.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledModel {
    /// Target configuration.
    pub accelerator: Accelerator,
    /// CONFIG register word of the configuration.
    pub config_word: u32,
    /// The target's program, tagged with its format (the U85's: its cmd0/cmd1 command
    /// stream; `TargetPayload::command_words` reads it).
    pub payload: crate::payload::TargetPayload,
    /// Its kernel and DMA commands, as the target counts them.
    pub commands: crate::arch_interface::CommandCounts,
    /// Region 0: weights and scale streams.
    pub read_only: Vec<u8>,
    /// Size of region 1 (the feature-map arena) in bytes.
    pub arena_size: u64,
    /// Size of region 2 (the fast memory of the `Dedicated_Sram` modes) in bytes; 0 when
    /// unused.
    pub fast_size: u64,
    /// Estimated cycles of the whole stream: the target's cost model (`npuc report`'s), DMAs
    /// overlapping kernels as the stream's waits allow.
    pub estimated_total: u64,
    /// Graph inputs.
    pub inputs: Vec<TensorPlacement>,
    /// Graph outputs.
    pub outputs: Vec<TensorPlacement>,
    /// The NPU operations in execution order.
    pub operators: Vec<OperatorInfo>,
    /// Name of the system configuration compiled for.
    pub system_config: String,
    /// Name of the memory mode compiled for.
    pub memory_mode: String,
    /// The optimisation goal.
    pub optimise: Optimise,
    /// The weights and scales in the read-only region, before and after encoding.
    pub weights: WeightFigures,
    /// What the scheduling passes chose for each NPU operation, and the cost model's
    /// estimate ([`schedule::Schedule::text`] is what `npuc explain` prints).
    pub schedule: schedule::Schedule,
}

impl CompiledModel {
    /// Total estimated cycles (the same figure as `npuc report`'s `total_cycles` for the
    /// model's system configuration and memory mode).
    pub fn estimated_cycles(&self) -> u64 {
        self.estimated_total
    }
}

pub use crate::arch_interface::{REGION_ARENA, REGION_FAST, REGION_READ_ONLY};

/// Compiles a validated graph for one configuration.
pub fn compile(graph: &Graph, options: &Options) -> Result<CompiledModel, CompileError> {
    npuc_ir::validate(graph).map_err(|e| CompileError::Graph(e.to_string()))?;
    let map = MemoryMap::new(&options.system_config, &options.memory_mode)?;
    let arena = map.arena;
    let target = targets::select(options, map);
    let lowered = target.lower(graph).map_err(CompileError::lowering)?;
    // Every program is validated before anything is written (beside `describe`).
    let check = |w: &crate::arch_interface::Written, p: &crate::arch_interface::Placement| {
        let sizes = regions_of(w.read_only.len() as u64, p.arena_size, p.fast_size);
        validate_program(
            options.accelerator,
            &w.payload,
            &sizes,
            &w.read_only,
            &w.operators,
        )
    };
    let mut emitted = emit::emit(target.as_ref(), lowered.as_ref(), &check)?;
    if let Some(budget) = options.sram_budget {
        check_sram_budget(lowered.as_ref(), &emitted.placement, arena, budget)?;
    }
    let mut schedule = std::mem::take(&mut emitted.schedule);
    schedule.accelerator = options.accelerator.to_string();
    schedule.system_config = options.system_config.name.clone();
    schedule.memory_mode = options.memory_mode.name.clone();
    // Each operation's sources: the IR operators fused into it, by kind and output tensor.
    let ir_ops: std::collections::BTreeMap<&str, &npuc_ir::OpNode> = graph
        .op_ids()
        .filter_map(|o| graph.op(o))
        .map(|n| (n.name.as_str(), n))
        .collect();
    for (op, info) in schedule.ops.iter_mut().zip(&emitted.operators) {
        op.source = info
            .fused
            .iter()
            .map(|name| {
                let node = ir_ops.get(name.as_str());
                schedule::Source {
                    index: None,
                    op: node.map_or("?", |n| n.op.kind()).to_string(),
                    output: node
                        .and_then(|n| n.outputs().first())
                        .and_then(|&t| graph.tensor(t))
                        .map_or_else(|| name.clone(), |t| t.name.clone()),
                }
            })
            .collect();
    }
    let placement = &emitted.placement;
    let place = |t: npuc_ir::TensorId| -> TensorPlacement {
        let tensor = graph.tensor(t).expect("graph tensor");
        let buf = lowered
            .tensor_buffer(t)
            .expect("a graph tensor has a buffer");
        TensorPlacement {
            name: tensor.name.clone(),
            shape: tensor.ty.shape.0.clone(),
            dtype: tensor.ty.dtype,
            quant: tensor.quant.clone(),
            region: placement.regions[buf],
            offset: placement.offsets[buf],
            size: lowered.buffer(buf).size,
        }
    };
    let model = CompiledModel {
        accelerator: options.accelerator,
        config_word: target.config_word(),
        commands: target.count_commands(&emitted.payload),
        payload: emitted.payload,
        read_only: emitted.read_only,
        arena_size: placement.arena_size,
        fast_size: placement.fast_size,
        estimated_total: emitted.total_cycles,
        inputs: graph.inputs().iter().map(|&t| place(t)).collect(),
        outputs: graph.outputs().iter().map(|&t| place(t)).collect(),
        operators: emitted.operators,
        system_config: options.system_config.name.clone(),
        memory_mode: options.memory_mode.name.clone(),
        optimise: options.optimise,
        weights: emitted.weights,
        schedule,
    };
    Ok(model)
}

impl CompileError {
    /// A target's lowering error as `compile()` reports it: the U85's `LowerError` keeps its
    /// variant ([`CompileError::Lower`], which the partitioner and callers match on).
    fn lowering(e: crate::arch_interface::TargetError) -> CompileError {
        match e {
            crate::arch_interface::TargetError::Lower(e) => match e.downcast::<lower::LowerError>()
            {
                Ok(e) => CompileError::Lower(*e),
                Err(e) => CompileError::Target(crate::arch_interface::TargetError::Lower(e)),
            },
            other => CompileError::Target(other),
        }
    }
}

/// Refuses a placement whose SRAM (region 2, and region 1 when the arena is in SRAM) exceeds
/// `budget`, naming the operation with the most SRAM-resident feature-map bytes live.
fn check_sram_budget(
    l: &dyn LoweredView,
    p: &alloc::Placement,
    arena: npuc_backend::system::MemoryKind,
    budget: u64,
) -> Result<(), CompileError> {
    let arena_in_sram = arena == npuc_backend::system::MemoryKind::Sram;
    let needed = p.fast_size + if arena_in_sram { p.arena_size } else { 0 };
    if needed <= budget {
        return Ok(());
    }
    let in_sram =
        |i: usize| p.regions[i] == REGION_FAST || (arena_in_sram && p.regions[i] == REGION_ARENA);
    let live = |k: usize| -> u64 {
        (0..l.buffer_count().min(p.regions.len()))
            .filter(|&i| in_sram(i))
            .map(|i| alloc::buffer_item(l, i))
            .filter(|it| it.start <= k && k <= it.end)
            .map(|it| it.size)
            .sum()
    };
    let (k, most) = (0..l.op_count())
        .map(|k| (k, live(k)))
        .max_by_key(|&(k, b)| (b, std::cmp::Reverse(k)))
        .unwrap_or((0, 0));
    Err(CompileError::SramBudget {
        needed,
        budget,
        operator: if k < l.op_count() {
            l.op(k).name.to_string()
        } else {
            "-".into()
        },
        live: most,
    })
}

/// The region sizes a compiled model's stream runs with (as `npuc run` and `npuc verify` map
/// them): region 0 the read-only data, 1 the arena, 2 the fast memory when used.
pub fn region_sizes(model: &CompiledModel) -> npuc_backend::sim::validate::RegionSizes {
    regions_of(
        model.read_only.len() as u64,
        model.arena_size,
        model.fast_size,
    )
}

/// [`region_sizes`] of a program with `read_only` bytes of region 0, an arena and a fast area.
fn regions_of(read_only: u64, arena: u64, fast: u64) -> npuc_backend::sim::validate::RegionSizes {
    let mut regions = [None; npuc_backend::sim::NUM_REGIONS];
    regions[usize::from(REGION_READ_ONLY)] = Some(read_only.max(16));
    regions[usize::from(REGION_ARENA)] = Some(arena.max(16));
    if fast > 0 {
        regions[usize::from(REGION_FAST)] = Some(fast);
    }
    regions
}

/// Validates a compiled model's program with its regions ([`Target::validate`](crate::arch_interface::Target::validate) of the target
/// that reads it, `targets::reader`); a failure names the NPU operation the failing command
/// belongs to.
pub fn validate_model(model: &CompiledModel) -> Result<(), CompileError> {
    validate_program(
        model.accelerator,
        &model.payload,
        &region_sizes(model),
        &model.read_only,
        &model.operators,
    )
}

/// [`validate_model`] of a program's parts: `compile` validates what the writer made before
/// the model is assembled.
fn validate_program(
    accelerator: Accelerator,
    payload: &crate::payload::TargetPayload,
    regions: &npuc_backend::sim::validate::RegionSizes,
    read_only: &[u8],
    operators: &[OperatorInfo],
) -> Result<(), CompileError> {
    let target = targets::reader(Some(accelerator));
    let Err(e) = target.validate(payload, regions, Some(read_only)) else {
        return Ok(());
    };
    let word = e.offset.map(|offset| offset / 4);
    // The operation whose last kernel command is at or after the failing command (the last
    // operation for a command after all of them).
    let operator = word
        .and_then(|w| {
            operators
                .iter()
                .find(|o| o.done_at.is_some_and(|d| d >= w))
                .or(operators.last())
        })
        .map_or_else(
            || "(none identified)".to_string(),
            |o| format!("{} ({})", o.name, o.kernel),
        );
    Err(CompileError::InvalidStream {
        operator,
        reason: e.reason,
    })
}
