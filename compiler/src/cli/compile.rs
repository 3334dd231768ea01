//! `npuc compile MODEL -o OUT.bin|OUT.tflite [--accel ethos-u85-256] [--json] [options]`.

use anyhow::Context;
use npuc::{
    Accelerator, IniFile, Optimise, Options, OutputFormat, DEFAULT_MEMORY_MODE,
    DEFAULT_SYSTEM_CONFIG,
};
use std::io::Write;
use std::path::PathBuf;

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
        Ok(Options::from_names(
            self.accel,
            &self.system_config,
            &self.memory_mode,
            file,
            self.optimise,
        )?)
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
    /// Print the summary as JSON on stdout instead of the table on stderr: the configuration,
    /// every source operator with its placement (`npu` with its segment, or `cpu` with the
    /// reason), command counts, memory and weight figures, estimated cycles.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    let options = args.target.options()?;
    let show = args.progress;
    let mut progress = |msg: &str| {
        if show {
            eprintln!("npuc: {msg}");
        }
    };
    let format = if args.output.extension().is_some_and(|e| e == "tflite") {
        OutputFormat::Tflite
    } else {
        OutputFormat::Container
    };
    let out =
        npuc::compile_artifact(&bytes, format, &options, &mut progress).with_context(|| {
            format!(
                "compiling {} for {}",
                args.model.display(),
                args.target.accel
            )
        })?;
    std::fs::write(&args.output, &out.bytes)
        .with_context(|| format!("writing {}", args.output.display()))?;
    if args.json {
        let json = serde_json::to_string_pretty(&out.summary)?;
        writeln!(std::io::stdout().lock(), "{json}")?;
    } else {
        eprint!("{}", out.summary.text());
    }
    Ok(())
}
