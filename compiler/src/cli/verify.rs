//! `npuc verify MODEL [--accel ethos-u85-N] [--samples N] [--seed S]`.

use super::compile::TargetArgs;
use anyhow::Context;
use npuc::verify::{verify_file, VerifyOptions};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `npuc verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The model (.tflite or .tosa).
    model: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    /// Number of seeded random full-range input samples.
    #[arg(long, default_value_t = 3)]
    samples: usize,
    /// Seed of the first sample.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Runs the subcommand: exit status 0 only if every output byte of every sample matched.
pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    let options = args.target.options()?;
    let opts = VerifyOptions {
        samples: args.samples,
        seed: args.seed,
    };
    let parts = verify_file(&bytes, &options, &opts)
        .with_context(|| format!("verifying {}", args.model.display()))?;
    let mut exact = true;
    for p in &parts {
        writeln!(
            std::io::stdout().lock(),
            "{} ({}): {}",
            p.part,
            p.counts,
            p.report.describe()
        )?;
        exact &= p.report.is_bit_exact();
    }
    if !exact {
        anyhow::bail!(
            "{}: the simulator and the reference interpreter disagree",
            args.model.display()
        );
    }
    Ok(())
}
