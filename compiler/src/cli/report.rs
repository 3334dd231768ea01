//! `npuc report ARTIFACT [--json] [--per-layer] [--system-config NAME] [--memory-mode NAME] [--config FILE.ini]`.

use anyhow::Context;
use npuc::artifact::Artifact;
use npuc_backend::arch::Accelerator;
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
    /// weight_bytes, scale_bytes, peak_sram_bytes, accelerator, system_config, memory_mode,
    /// peak_region_bytes, and `ops` with the same keys per command (cycles, stream, offset,
    /// start_cycle, instruction).
    #[arg(long)]
    json: bool,
    /// One row per source operator instead of per command: source operator index and type,
    /// output tensor, cycles, MACs, MAC utilisation and bytes per memory. npuc's container
    /// and .tflite outputs record which operator each command comes from; any other stream
    /// gets one row per kernel command with the DMAs issued before it.
    #[arg(long)]
    per_layer: bool,
    /// System configuration (vela.ini `[System_Config.NAME]`; default: the one an npuc
    /// container records, else Ethos_U85_SYS_DRAM_Mid).
    #[arg(long)]
    system_config: Option<String>,
    /// Memory mode (vela.ini `[Memory_Mode.NAME]`; default: the one an npuc container
    /// records, else Dedicated_Sram_384KB).
    #[arg(long)]
    memory_mode: Option<String>,
    /// A Vela-format .ini file with more system configurations and memory modes.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Configuration for streams that do not name one (raw streams): ethos-u85-128 .. -2048
    /// (also spelt --accelerator or --accel).
    #[arg(long = "accelerator-config", visible_aliases = ["accelerator", "accel"])]
    accelerator: Option<Accelerator>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.artifact)
        .with_context(|| format!("reading {}", args.artifact.display()))?;
    let recorded = npuc::report::recorded_configuration(&bytes);
    let src = super::compile::config_source(args.config.as_deref())?;
    let pick = |given: &Option<String>, recorded: Option<&str>, default: &str| {
        given
            .clone()
            .or_else(|| recorded.map(str::to_string))
            .unwrap_or_else(|| default.to_string())
    };
    let rec = recorded.as_ref();
    let system = src.system_config(&pick(
        &args.system_config,
        rec.map(|c| c.system_config.as_str()),
        DEFAULT_SYSTEM_CONFIG,
    ))?;
    let mode = src.memory_mode(&pick(
        &args.memory_mode,
        rec.map(|c| c.memory_mode.as_str()),
        DEFAULT_MEMORY_MODE,
    ))?;
    let map = MemoryMap::new(&system, &mode)?;
    let artifact = Artifact::from_bytes(&bytes)
        .with_context(|| format!("reading {}", args.artifact.display()))?;
    let report = npuc::report::report(
        &artifact,
        &npuc::targets::ArtifactReaders::new(map, args.accelerator),
    )?;
    let mut out = std::io::stdout().lock();
    if args.per_layer {
        let maps = npuc::layers::layer_maps(&bytes);
        let layers = report.per_layer(maps.as_ref());
        if args.json {
            let json = serde_json::to_string_pretty(&layers.json(&report))?;
            writeln!(out, "{json}")?;
        } else {
            out.write_all(layers.text(&report).as_bytes())?;
        }
    } else if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.json())?)?;
    } else {
        out.write_all(report.text().as_bytes())?;
    }
    Ok(())
}
