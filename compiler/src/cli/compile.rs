//! `npuc compile MODEL.tflite -o OUT.bin [--accel ethos-u85-256]`.

use anyhow::{bail, Context};
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use std::path::PathBuf;

/// Arguments of `npuc compile`.
#[derive(clap::Args)]
pub struct Args {
    /// The model to compile (.tflite).
    model: PathBuf,
    /// Output file: an npuc container (any name not ending in .tflite).
    #[arg(short, long)]
    output: PathBuf,
    /// Target configuration: ethos-u85-128, -256, -512, -1024 or -2048.
    #[arg(long, default_value = "ethos-u85-256")]
    accel: Accelerator,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.output.extension().is_some_and(|e| e == "tflite") {
        bail!("writing .tflite output is not implemented yet; use an output name like model.bin");
    }
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes)
        .with_context(|| format!("parsing {}", args.model.display()))?;
    let lowered = npuc_frontend_tflite::lower::lower(&model)
        .with_context(|| format!("lowering {}", args.model.display()))?;
    let options = Options {
        accelerator: args.accel,
    };
    let compiled = compile(&lowered.graph, &options).with_context(|| {
        format!(
            "compiling {} for {} (a .tflite output keeping unsupported operators on the CPU is \
             not available yet)",
            args.model.display(),
            args.accel
        )
    })?;
    let out = npuc::container::to_bytes(&compiled);
    std::fs::write(&args.output, &out)
        .with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "npuc: {} NPU operations, {} command words, {} read-only bytes, arena {} bytes, ~{} cycles",
        compiled.operators.len(),
        compiled.command_stream.len(),
        compiled.read_only.len(),
        compiled.arena_size,
        compiled.estimated_cycles()
    );
    Ok(())
}
