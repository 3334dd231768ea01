//! `npuc compile MODEL -o OUT.bin|OUT.tflite [--accel ethos-u85-256] [--json] [options]`.

use anyhow::Context;
use npuc::compile::CompiledModel;
use npuc::vela_output;
use npuc::{
    Accelerator, Optimise, Options, OutputFormat, DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG,
};
use npuc_backend::system::ini::{ConfigSource, IniFile};
use npuc_backend::system::MemoryMap;
use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// A hard cap on the SRAM the model may use, in bytes (the fast memory, and the arena
    /// when the memory mode puts it in SRAM); a model that needs more is refused, naming the
    /// operation that needs the most.
    #[arg(long, value_name = "BYTES")]
    pub sram_budget: Option<u64>,
}

impl TargetArgs {
    /// The compile options these arguments select.
    pub fn options(&self) -> anyhow::Result<Options> {
        let src = config_source(self.config.as_deref())?;
        let mut options = Options::from_names(
            self.accel,
            &self.system_config,
            &self.memory_mode,
            src.file,
            self.optimise,
        )?;
        if let Some(n) = self.arena_cache_size {
            options.memory_mode.arena_cache_size = Some(n);
            // Reject combinations the memory map cannot serve before compiling.
            MemoryMap::new(&options.system_config, &options.memory_mode)?;
        }
        if let Some(n) = self.sram_budget {
            options = options.with_sram_budget(n);
            MemoryMap::new(&options.system_config, &options.memory_mode)?;
        }
        Ok(options)
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
    /// Print the summary as JSON on stdout instead of the table on stderr: the configuration,
    /// every source operator with its placement (`npu` with its segment, or `cpu` with the
    /// reason), command counts, memory and weight figures, estimated cycles.
    #[arg(long)]
    json: bool,
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
    if let Some(output) = &args.output {
        refuse_overwriting(model, output)?;
    }
    let bytes = std::fs::read(model).with_context(|| format!("reading {}", model.display()))?;
    // (`compile_artifact` refuses a container or a compiled model, from the parse it makes.)
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
        let ext = output
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let format = match ext.as_str() {
            _ if args.output_format == OutputFormat::Raw => OutputFormat::Raw,
            "tflite" => OutputFormat::Tflite,
            "npz" => OutputFormat::Raw,
            _ => OutputFormat::Container,
        };
        let out =
            npuc::compile_artifact(&bytes, format, &options, &mut progress).with_context(what)?;
        std::fs::write(output, &out.bytes)
            .with_context(|| format!("writing {}", output.display()))?;
        return print_summary(&out.summary, args.json);
    }
    let dir = args
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("output"));
    let stem = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let format = match args.output_format {
        OutputFormat::Raw => OutputFormat::Raw,
        _ => OutputFormat::Tflite,
    };
    let out = npuc::compile_artifact(&bytes, format, &options, &mut progress).with_context(what)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = match format {
        OutputFormat::Raw => vela_output::npz_name(&stem),
        _ => vela_output::tflite_name(&stem),
    };
    let map = MemoryMap::new(&options.system_config, &options.memory_mode)?;
    let models: Vec<&CompiledModel> = out.segments.iter().collect();
    let report = vela_output::report(&models, &map)?;
    let npu_operators = out.summary.npu_operators;
    let mut files = vec![(name, out.bytes)];
    files.push((
        vela_output::summary_name(&stem, &options.system_config.name),
        vela_output::summary_csv(&stem, &models, &report, &map, npu_operators).into_bytes(),
    ));
    if args.verbose_performance {
        let maps = vela_output::layer_maps(&models);
        let csv = vela_output::per_layer_csv(&report, &report.per_layer(maps.as_ref()));
        files.push((vela_output::per_layer_name(&stem), csv.into_bytes()));
    }
    for (name, data) in files {
        let path = dir.join(name);
        std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
    }
    print_summary(&out.summary, args.json)
}

/// The summary: the table on stderr, or with `--json` the summary as JSON on stdout.
fn print_summary(summary: &npuc::CompileSummary, json: bool) -> anyhow::Result<()> {
    if json {
        let json = serde_json::to_string_pretty(summary)?;
        writeln!(std::io::stdout().lock(), "{json}")?;
    } else {
        eprint!("{}", summary.text());
    }
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
