//! `npuc report ARTIFACT [--json] [--system-config NAME] [--memory-mode NAME] [--config FILE.ini]`.

use anyhow::Context;
use npuc::artifact::Artifact;
use npuc_backend::arch::Accelerator;
use npuc_backend::system::ini::{ConfigSource, IniFile};
use npuc_backend::system::presets::{DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG};
use npuc_backend::system::MemoryMap;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `npuc report`.
#[derive(clap::Args)]
pub struct Args {
    /// An npuc container (.bin from `npuc compile`), a Vela-compiled .tflite, a COP1/COP2
    /// payload, or a raw little-endian command stream.
    artifact: PathBuf,
    /// Print JSON: total_cycles, macs, {sram,dram}_{read,write}_bytes, flash_read_bytes,
    /// weight_bytes, scale_bytes, peak_sram_bytes, and `ops` with the same keys per operation.
    #[arg(long)]
    json: bool,
    /// System configuration (vela.ini `[System_Config.NAME]`).
    #[arg(long, default_value = DEFAULT_SYSTEM_CONFIG)]
    system_config: String,
    /// Memory mode (vela.ini `[Memory_Mode.NAME]`).
    #[arg(long, default_value = DEFAULT_MEMORY_MODE)]
    memory_mode: String,
    /// A Vela-format .ini file with more system configurations and memory modes.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Configuration for streams that do not name one (raw streams): ethos-u85-128 .. -2048.
    #[arg(long)]
    accelerator: Option<String>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let file = match &args.config {
        Some(p) => Some(IniFile::read(p)?),
        None => None,
    };
    let src = ConfigSource { file };
    let system = src.system_config(&args.system_config)?;
    let mode = src.memory_mode(&args.memory_mode)?;
    let map = MemoryMap::new(&system, &mode)?;
    let accelerator = match &args.accelerator {
        Some(a) => Some(a.parse::<Accelerator>()?),
        None => None,
    };
    let artifact = Artifact::read(&args.artifact)
        .with_context(|| format!("reading {}", args.artifact.display()))?;
    let report = npuc::report::report(&artifact, &map, accelerator)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.json())?)?;
    } else {
        out.write_all(report.text().as_bytes())?;
    }
    Ok(())
}
