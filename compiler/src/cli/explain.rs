//! `npuc explain MODEL [--accel ethos-u85-256] [options] [--json]`.

use super::compile::TargetArgs;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `npuc explain`.
#[derive(clap::Args)]
pub struct Args {
    /// The model (.tflite or .tosa), compiled whole onto the NPU as `npuc compile -o OUT.bin`
    /// does.
    model: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    /// Print JSON: `rewrites` (the IR rewrites that ran), `ops` (each with source, kernel,
    /// feature maps, ofm_block, microblock, weight_format, staging, chain, cascade, cycles,
    /// memory) and `total_cycles`.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    let options = args.target.options()?;
    let m = npuc::compile_file(&bytes, &options).with_context(|| {
        format!(
            "compiling {} for {}",
            args.model.display(),
            args.target.accel
        )
    })?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&m.schedule)?)?;
    } else {
        out.write_all(m.schedule.text().as_bytes())?;
    }
    Ok(())
}
