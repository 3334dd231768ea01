//! `npuc compile MODEL -o OUT.bin|OUT.tflite [--accel ethos-u85-256] [options]`.

use anyhow::Context;
use npuc::compile::{CompiledModel, Optimise, Options};
use npuc::tflite_out::Partition;
use npuc::vela_output;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::ini::{ConfigSource, IniFile};
use npuc_backend::system::presets::{DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG};
use npuc_backend::system::MemoryMap;
use std::path::PathBuf;

/// Target and optimisation options shared by `npuc compile` and `npuc verify`.
#[derive(clap::Args, Clone)]
pub struct TargetArgs {
    /// Target configuration: ethos-u85-128, -256, -512, -1024 or -2048 (also spelt
    /// --accelerator or --accel).
    #[arg(
        long = "accelerator-config",
        visible_aliases = ["accelerator", "accel"],
        default_value = "ethos-u85-256"
    )]
    pub accel: Accelerator,
    /// System configuration (vela.ini `[System_Config.NAME]`, a preset or from --config).
    #[arg(long, default_value = DEFAULT_SYSTEM_CONFIG)]
    pub system_config: String,
    /// Memory mode (vela.ini `[Memory_Mode.NAME]`, a preset or from --config).
    #[arg(long, default_value = DEFAULT_MEMORY_MODE)]
    pub memory_mode: String,
    /// A Vela-format .ini file with more system configurations and memory modes (Vela's own
    /// `Arm/vela.ini`, when no such file exists, names the built-in presets).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Optimisation goal: performance or size (any case).
    #[arg(long, default_value = "performance")]
    pub optimise: Optimise,
    /// Size of the arena cache in bytes: overrides the memory mode's `arena_cache_size`.
    #[arg(long)]
    pub arena_cache_size: Option<u64>,
}

impl TargetArgs {
    /// The compile options these arguments select.
    pub fn options(&self) -> anyhow::Result<Options> {
        let src = config_source(self.config.as_deref())?;
        let system_config = src.system_config(&self.system_config)?;
        let mut memory_mode = src.memory_mode(&self.memory_mode)?;
        if let Some(n) = self.arena_cache_size {
            memory_mode.arena_cache_size = Some(n);
        }
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

/// The configurations of a `--config` file and the presets. Vela scripts name Vela's bundled
/// file as `Arm/vela.ini` (resolved in Vela's installation); when no file of that name exists,
/// the built-in presets (the U85 sections of that file) serve, with a note.
pub fn config_source(config: Option<&std::path::Path>) -> anyhow::Result<ConfigSource> {
    let file = match config {
        Some(p) if !p.exists() && p.ends_with("Arm/vela.ini") => {
            eprintln!(
                "npuc: note: {} is Vela's bundled configuration file; using npuc's built-in copy of its U85 presets",
                p.display()
            );
            None
        }
        Some(p) => Some(IniFile::read(p)?),
        None => None,
    };
    Ok(ConfigSource { file })
}

/// Arguments of `npuc compile`.
#[derive(clap::Args)]
pub struct Args {
    /// The model to compile (.tflite or .tosa).
    model: Option<PathBuf>,
    /// Output file: a name ending in .tflite gives a TFLite file in Vela's format (operators
    /// the NPU cannot run stay on the CPU), .npz Vela's raw output; any other name an npuc
    /// container (whole model on the NPU). Without -o, Vela's files go to --output-dir.
    #[arg(short, long, conflicts_with = "output_dir")]
    output: Option<PathBuf>,
    /// Write Vela's files into DIR: `<model>_vela.tflite` (or `<model>_vela.npz` with
    /// --output-format raw) and `<model>_summary_<system-config>.csv` (default: `output`,
    /// as Vela, when -o is not given).
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// Output format: tflite, or raw (Vela's .npz of command stream, weights and tensor
    /// placement; also with -o).
    #[arg(long, default_value = "tflite")]
    output_format: OutputFormat,
    /// Also write `<model>_per-layer.csv` (Vela's columns, npuc report's figures per
    /// command of the stream) into --output-dir.
    #[arg(long)]
    verbose_performance: bool,
    #[command(flatten)]
    target: TargetArgs,
    /// Report progress on stderr (useful for large models).
    #[arg(long)]
    progress: bool,
    #[command(flatten)]
    vela: super::vela_args::VelaArgs,
}

/// `--output-format`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A `.tflite` in Vela's format.
    Tflite,
    /// Vela's raw `.npz`.
    Raw,
}

/// What one compilation produced.
struct Compiled {
    /// The output file's bytes.
    bytes: Vec<u8>,
    /// The summary table.
    summary: String,
    /// The NPU segments (one for whole-graph compiles).
    models: Vec<CompiledModel>,
    /// Source operators placed on the NPU.
    npu_operators: usize,
}

fn compile_to(
    bytes: &[u8],
    options: &Options,
    kind: OutputFormat,
    tflite: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Compiled> {
    let tosa = npuc::reference::is_tosa(bytes);
    if tflite && kind == OutputFormat::Tflite && !tosa {
        let o = npuc::tflite_out::compile_tflite(bytes, options, progress)?;
        let summary = summary_partition(&o.partition);
        let npu_operators = o.partition.ops.len() - o.partition.cpu_ops().count();
        let models = o.partition.segments.into_iter().map(|s| s.model).collect();
        return Ok(Compiled {
            bytes: o.bytes,
            summary,
            models,
            npu_operators,
        });
    }
    progress("compiling the whole graph for the NPU");
    let m = npuc::compile_file(bytes, options)?;
    let npu_operators = source_operators(bytes)?;
    let summary = summary(&[&m], npu_operators, 0);
    let bytes = match (kind, tflite) {
        (OutputFormat::Raw, _) => npuc::vela_output::raw_npz(&m)?,
        (OutputFormat::Tflite, true) => npuc::tflite_out::whole::write_whole(&m)?,
        (OutputFormat::Tflite, false) => npuc::container::to_bytes(&m),
    };
    Ok(Compiled {
        bytes,
        summary,
        models: vec![m],
        npu_operators,
    })
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    args.vela.note_ignored();
    if let Some(f) = &args.vela.list_configs {
        return super::vela_args::list_configs(f);
    }
    if args.vela.supported_ops_report {
        return super::vela_args::supported_ops_report();
    }
    let Some(model) = &args.model else {
        anyhow::bail!("no model given (npuc compile MODEL.tflite|MODEL.tosa ...)");
    };
    let bytes = std::fs::read(model).with_context(|| format!("reading {}", model.display()))?;
    let options = args.target.options()?;
    let show = args.progress;
    let mut progress = |msg: &str| {
        if show {
            eprintln!("npuc: {msg}");
        }
    };
    let what = || format!("compiling {} for {}", model.display(), args.target.accel);
    if let Some(output) = &args.output {
        if args.verbose_performance {
            eprintln!(
                "npuc: note: --verbose-performance writes into --output-dir; ignored with -o"
            );
        }
        let ext = output.extension().and_then(|e| e.to_str()).unwrap_or("");
        let (kind, tflite) = match ext {
            _ if args.output_format == OutputFormat::Raw => (OutputFormat::Raw, false),
            "tflite" => (OutputFormat::Tflite, true),
            "npz" => (OutputFormat::Raw, false),
            _ => (OutputFormat::Tflite, false),
        };
        let c = compile_to(&bytes, &options, kind, tflite, &mut progress).with_context(what)?;
        std::fs::write(output, &c.bytes)
            .with_context(|| format!("writing {}", output.display()))?;
        eprint!("{}", c.summary);
        return Ok(());
    }
    let dir = args
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("output"));
    let stem = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let c =
        compile_to(&bytes, &options, args.output_format, true, &mut progress).with_context(what)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = match args.output_format {
        OutputFormat::Tflite => vela_output::tflite_name(&stem),
        OutputFormat::Raw => vela_output::npz_name(&stem),
    };
    let map = MemoryMap::new(&options.system_config, &options.memory_mode)?;
    let models: Vec<&CompiledModel> = c.models.iter().collect();
    let report = vela_output::report(&models, &map)?;
    let mut files = vec![(name, c.bytes)];
    files.push((
        vela_output::summary_name(&stem, &options.system_config.name),
        vela_output::summary_csv(&stem, &models, &report, c.npu_operators).into_bytes(),
    ));
    if args.verbose_performance {
        let original = original_operator(&bytes);
        let csv = vela_output::per_layer_csv(&models, &report, &original);
        files.push((vela_output::per_layer_name(&stem), csv.into_bytes()));
    }
    for (name, data) in files {
        let path = dir.join(name);
        std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
    }
    eprint!("{}", c.summary);
    Ok(())
}

/// The source operator an IR operator name comes from: the TFLite opcode of `opN/...`.
fn original_operator(bytes: &[u8]) -> impl Fn(&str) -> Option<String> {
    let model = if npuc::reference::is_tosa(bytes) {
        None
    } else {
        npuc_frontend_tflite::TfliteModel::parse(bytes).ok()
    };
    move |name: &str| {
        let m = model.as_ref()?;
        let i = npuc::tflite_out::partition::tflite_op_of(name)?;
        let op = m.main_subgraph().operators.get(i)?;
        Some(op.opcode.name().into_owned())
    }
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

/// The table printed at the end of `npuc compile`.
pub fn summary(models: &[&CompiledModel], npu_ops: usize, cpu_ops: usize) -> String {
    let sum = |f: &dyn Fn(&CompiledModel) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
    let counts = npuc::counts::Counts::sum(models.iter().copied());
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
        ("NPU operations", counts.npu_operations.to_string()),
        ("commands", counts.commands()),
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
