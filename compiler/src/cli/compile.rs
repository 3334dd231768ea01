//! `npuc compile MODEL -o OUT.bin|OUT.tflite [--accel ethos-u85-256] [options]`.

use anyhow::Context;
use npuc::compile::{CompiledModel, Optimise, Options};
use npuc::tflite_out::Partition;
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::Command;
use npuc_backend::system::ini::{ConfigSource, IniFile};
use npuc_backend::system::presets::{DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG};
use npuc_backend::system::MemoryMap;
use std::path::{Path, PathBuf};

/// Target and optimisation options shared by `npuc compile` and `npuc verify`.
#[derive(clap::Args, Clone)]
pub struct TargetArgs {
    /// Target configuration: ethos-u85-128, -256, -512, -1024 or -2048.
    #[arg(long, default_value = "ethos-u85-256")]
    pub accel: Accelerator,
    /// System configuration (vela.ini `[System_Config.NAME]`, a preset or from --config).
    #[arg(long, default_value = DEFAULT_SYSTEM_CONFIG)]
    pub system_config: String,
    /// Memory mode (vela.ini `[Memory_Mode.NAME]`, a preset or from --config).
    #[arg(long, default_value = DEFAULT_MEMORY_MODE)]
    pub memory_mode: String,
    /// A Vela-format .ini file with more system configurations and memory modes.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Optimisation goal: performance or size.
    #[arg(long, default_value = "performance")]
    pub optimise: Optimise,
}

impl TargetArgs {
    /// The compile options these arguments select.
    pub fn options(&self) -> anyhow::Result<Options> {
        let file = match &self.config {
            Some(p) => Some(IniFile::read(p)?),
            None => None,
        };
        let src = ConfigSource { file };
        let system_config = src.system_config(&self.system_config)?;
        let memory_mode = src.memory_mode(&self.memory_mode)?;
        // Reject combinations the memory map cannot serve (e.g. SRAM-only modes on DRAM-less
        // systems) before compiling.
        MemoryMap::new(&system_config, &memory_mode)?;
        Ok(Options {
            accelerator: self.accel,
            system_config,
            memory_mode,
            optimise: self.optimise,
        })
    }
}

/// Arguments of `npuc compile`.
#[derive(clap::Args)]
pub struct Args {
    /// The model to compile (.tflite or .tosa).
    model: PathBuf,
    /// Output file: a name ending in .tflite gives a TFLite file in Vela's format (operators
    /// the NPU cannot run stay on the CPU); any other name an npuc container (whole model on
    /// the NPU).
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    /// Report progress on stderr (useful for large models).
    #[arg(long)]
    progress: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    refuse_overwriting(&args.model, &args.output)?;
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    npuc::check_source(&bytes).with_context(|| format!("{}", args.model.display()))?;
    let options = args.target.options()?;
    let show = args.progress;
    let mut progress = |msg: &str| {
        if show {
            eprintln!("npuc: {msg}");
        }
    };
    let what = || {
        format!(
            "compiling {} for {}",
            args.model.display(),
            args.target.accel
        )
    };
    let (out, summary) = if args
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tflite"))
    {
        if npuc::reference::is_tosa(&bytes) {
            anyhow::bail!("a .tflite output needs a .tflite input; compile a .tosa model to a container (e.g. -o model.bin)");
        }
        let o =
            npuc::tflite_out::compile_tflite(&bytes, &options, &mut progress).with_context(what)?;
        let s = summary_partition(&o.partition);
        (o.bytes, s)
    } else {
        progress("compiling the whole graph for the NPU");
        let m = npuc::compile_file(&bytes, &options).with_context(what)?;
        let s = summary(&[&m], source_operators(&bytes)?, 0);
        (npuc::container::to_bytes(&m), s)
    };
    std::fs::write(&args.output, &out)
        .with_context(|| format!("writing {}", args.output.display()))?;
    eprint!("{summary}");
    Ok(())
}

/// Fails when `output` names the same file as `input` (after resolving `.`, `..` and symbolic
/// links), which writing the output would destroy.
fn refuse_overwriting(input: &Path, output: &Path) -> anyhow::Result<()> {
    let Ok(input) = input.canonicalize() else {
        return Ok(()); // reading the input reports it
    };
    // The output may not exist yet: resolve its directory and append the name.
    let resolved = output.canonicalize().ok().or_else(|| {
        let dir = match output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(dir.canonicalize().ok()?.join(output.file_name()?))
    });
    if resolved.as_deref() == Some(input.as_path()) {
        anyhow::bail!(
            "the output {} is the input model; choose another output file",
            output.display()
        );
    }
    Ok(())
}

/// The number of operators of the source model (TFLite main subgraph, or the TOSA graph as
/// lowered), which the summary reports as on the NPU when the whole model compiled.
fn source_operators(bytes: &[u8]) -> anyhow::Result<usize> {
    Ok(if npuc::reference::is_tosa(bytes) {
        npuc::reference::lower_file(bytes)?.num_ops()
    } else {
        npuc_frontend_tflite::TfliteModel::parse(bytes)?
            .main_subgraph()
            .operators
            .len()
    })
}

fn summary_partition(p: &Partition) -> String {
    let models: Vec<&CompiledModel> = p.segments.iter().map(|s| &s.model).collect();
    let npu_ops = p.ops.len() - p.cpu_ops().count();
    let mut s = summary(&models, npu_ops, p.cpu_ops().count());
    for o in p.cpu_ops() {
        s.push_str(&format!(
            "  CPU: operator {} ({}): {}\n",
            o.op,
            o.opcode,
            o.cpu_reason.as_deref().unwrap_or("")
        ));
    }
    s
}

/// The commands of `stream` (decoded through the ISA table) that `pick` selects.
fn count_commands(stream: &[u32], pick: fn(&Command) -> bool) -> u64 {
    npuc_backend::isa::stream::StreamDecoder::new(stream)
        .map_while(Result::ok)
        .filter(|d| pick(&d.command))
        .count() as u64
}

/// Kernel operations (CONV, DEPTHWISE, POOL, ELEMENTWISE, RESIZE) in `stream`.
fn kernel_commands(stream: &[u32]) -> u64 {
    count_commands(stream, |c| {
        matches!(
            c,
            Command::OpConv(_)
                | Command::OpDepthwise(_)
                | Command::OpPool(_)
                | Command::OpElementwise(_)
                | Command::OpResize(_)
        )
    })
}

/// DMA operations in `stream`.
fn dma_commands(stream: &[u32]) -> u64 {
    count_commands(stream, |c| matches!(c, Command::OpDmaStart(_)))
}

/// The table printed at the end of `npuc compile`.
pub fn summary(models: &[&CompiledModel], npu_ops: usize, cpu_ops: usize) -> String {
    let sum = |f: &dyn Fn(&CompiledModel) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
    let kernel_ops = sum(&|m| kernel_commands(&m.command_stream));
    let dmas = sum(&|m| dma_commands(&m.command_stream));
    let arena = models.iter().map(|m| m.arena_size).max().unwrap_or(0);
    let arena_total = sum(&|m| m.arena_size);
    let fast = models.iter().map(|m| m.fast_size).max().unwrap_or(0);
    let ro = sum(&|m| m.read_only.len() as u64);
    let words = sum(&|m| m.command_stream.len() as u64);
    let cycles = sum(&|m| m.estimated_cycles());
    let raw_weights = sum(&|m| m.weights.weights);
    let weight_streams = sum(&|m| m.weights.weight_stream_bytes);
    let scale_streams = sum(&|m| m.weights.scale_stream_bytes);
    let ratio = if raw_weights == 0 {
        String::new()
    } else {
        format!(
            " ({:.1}% of the raw size)",
            100.0 * weight_streams as f64 / raw_weights as f64
        )
    };
    let config = models.first().map_or(String::new(), |m| {
        format!(
            "{}, {}, {}, optimised for {}",
            m.accelerator,
            m.system_config,
            m.memory_mode,
            m.optimise.name()
        )
    });
    let rows = [
        ("configuration", config),
        ("NPU segments", models.len().to_string()),
        ("operators on NPU", npu_ops.to_string()),
        ("operators on CPU", cpu_ops.to_string()),
        (
            "NPU operations",
            format!("{kernel_ops} kernel, {dmas} DMA (commands in the stream)"),
        ),
        ("command stream", format!("{} words", words)),
        (
            "arena (region 1)",
            format!("{arena} bytes (largest segment), {arena_total} bytes in all"),
        ),
        (
            "fast memory (region 2)",
            format!("{fast} bytes (largest segment; 0: feature maps in the arena)"),
        ),
        ("read-only (weights, scales)", format!("{ro} bytes")),
        (
            "weights",
            format!("{raw_weights} bytes raw -> {weight_streams} bytes encoded{ratio}"),
        ),
        ("scale/bias streams", format!("{scale_streams} bytes")),
        (
            "estimated cycles",
            format!("{cycles} (npuc report's model, this memory system)"),
        ),
    ];
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut s = String::from("npuc compile summary\n");
    for (k, v) in rows {
        s.push_str(&format!("  {k:<w$}  {v}\n"));
    }
    s
}
