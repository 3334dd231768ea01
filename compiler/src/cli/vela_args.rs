//! The rest of Vela's command line on `npuc compile`: a script written for Vela runs
//! unchanged with `vela` replaced by `npuc compile`. Options npuc acts on are here
//! (`--list-configs`, `--supported-ops-report`, `--show-cpu-operations`); the ones it has no use
//! for are accepted and each gets a one-line note on stderr.

use npuc_backend::system::ini::IniFile;
use npuc_backend::system::presets::{MEMORY_MODE_NAMES, SYSTEM_CONFIG_NAMES};
use std::path::{Path, PathBuf};

/// Vela's options that are not target options.
#[derive(clap::Args, Default)]
pub struct VelaArgs {
    /// List the system configurations and memory modes of a Vela-format .ini file (Vela's
    /// `Arm/vela.ini`: npuc's built-in presets) and exit.
    #[arg(long, value_name = "FILE")]
    pub list_configs: Option<PathBuf>,
    /// Write SUPPORTED_OPS.md (as `npuc supported-ops`) into the current directory and exit.
    #[arg(long)]
    pub supported_ops_report: bool,
    /// Operators left on the CPU are always listed at the end of the summary; accepted for
    /// Vela's scripts.
    #[arg(long)]
    pub show_cpu_operations: bool,
    #[command(flatten)]
    ignored: Ignored,
}

/// Vela options npuc has no use for: accepted, noted, ignored.
#[derive(clap::Args, Default)]
#[command(next_help_heading = "Vela options npuc accepts and ignores")]
struct Ignored {
    #[arg(long, hide = true)]
    api_version: bool,
    #[arg(long, hide = true)]
    list_config_files: bool,
    #[arg(long, hide = true)]
    enable_debug_db: bool,
    #[arg(long, hide = true)]
    verbose_all: bool,
    #[arg(long, hide = true)]
    verbose_config: bool,
    #[arg(long, hide = true)]
    verbose_graph: bool,
    #[arg(long, hide = true)]
    verbose_quantization: bool,
    #[arg(long, hide = true)]
    verbose_packing: bool,
    #[arg(long, hide = true)]
    verbose_tensor_purpose: bool,
    #[arg(long, hide = true)]
    verbose_tensor_format: bool,
    #[arg(long, hide = true)]
    verbose_schedule: bool,
    #[arg(long, hide = true)]
    verbose_allocation: bool,
    #[arg(long, hide = true)]
    verbose_high_level_command_stream: bool,
    #[arg(long, hide = true)]
    verbose_register_command_stream: bool,
    #[arg(long, hide = true)]
    verbose_operators: bool,
    #[arg(long, hide = true)]
    verbose_weights: bool,
    #[arg(long, hide = true)]
    verbose_cycle_estimate: bool,
    #[arg(long, hide = true)]
    verbose_progress: bool,
    #[arg(long, hide = true)]
    timing: bool,
    #[arg(long, hide = true)]
    force_symmetric_int_weights: bool,
    #[arg(long, hide = true)]
    show_subgraph_io_summary: bool,
    #[arg(long, hide = true)]
    separate_io_regions: bool,
    #[arg(long, hide = true)]
    debug_force_legacy_core: bool,
    #[arg(long, hide = true)]
    debug_force_regor: bool,
    #[arg(long, hide = true)]
    disable_chaining: bool,
    #[arg(long, hide = true)]
    disable_fwd: bool,
    #[arg(long, hide = true)]
    disable_cascading: bool,
    #[arg(long, hide = true)]
    disable_buffering: bool,
    #[arg(long, hide = true)]
    disable_ifm_reuse: bool,
    #[arg(long, hide = true, value_name = "OP[,OP...]")]
    ignore_ops: Option<String>,
    #[arg(long, hide = true)]
    tensor_allocator: Option<String>,
    #[arg(long, hide = true)]
    max_block_dependency: Option<String>,
    #[arg(long, hide = true)]
    cpu_tensor_alignment: Option<String>,
    #[arg(long, hide = true)]
    recursion_limit: Option<String>,
    #[arg(long, hide = true)]
    hillclimb_max_iterations: Option<String>,
    #[arg(long, hide = true)]
    cop_format: Option<String>,
    #[arg(long, hide = true)]
    experimental_softmax_int16_neg_exp_range: Option<String>,
}

impl Ignored {
    /// The options given, as typed.
    fn given(&self) -> Vec<&'static str> {
        let flags = [
            (self.api_version, "--api-version"),
            (self.list_config_files, "--list-config-files"),
            (self.enable_debug_db, "--enable-debug-db"),
            (self.verbose_all, "--verbose-all"),
            (self.verbose_config, "--verbose-config"),
            (self.verbose_graph, "--verbose-graph"),
            (self.verbose_quantization, "--verbose-quantization"),
            (self.verbose_packing, "--verbose-packing"),
            (self.verbose_tensor_purpose, "--verbose-tensor-purpose"),
            (self.verbose_tensor_format, "--verbose-tensor-format"),
            (self.verbose_schedule, "--verbose-schedule"),
            (self.verbose_allocation, "--verbose-allocation"),
            (
                self.verbose_high_level_command_stream,
                "--verbose-high-level-command-stream",
            ),
            (
                self.verbose_register_command_stream,
                "--verbose-register-command-stream",
            ),
            (self.verbose_operators, "--verbose-operators"),
            (self.verbose_weights, "--verbose-weights"),
            (self.verbose_cycle_estimate, "--verbose-cycle-estimate"),
            (self.verbose_progress, "--verbose-progress"),
            (self.timing, "--timing"),
            (
                self.force_symmetric_int_weights,
                "--force-symmetric-int-weights",
            ),
            (self.show_subgraph_io_summary, "--show-subgraph-io-summary"),
            (self.separate_io_regions, "--separate-io-regions"),
            (self.debug_force_legacy_core, "--debug-force-legacy-core"),
            (self.debug_force_regor, "--debug-force-regor"),
            (self.disable_chaining, "--disable-chaining"),
            (self.disable_fwd, "--disable-fwd"),
            (self.disable_cascading, "--disable-cascading"),
            (self.disable_buffering, "--disable-buffering"),
            (self.disable_ifm_reuse, "--disable-ifm-reuse"),
            (self.ignore_ops.is_some(), "--ignore-ops"),
            (self.tensor_allocator.is_some(), "--tensor-allocator"),
            (
                self.max_block_dependency.is_some(),
                "--max-block-dependency",
            ),
            (
                self.cpu_tensor_alignment.is_some(),
                "--cpu-tensor-alignment",
            ),
            (self.recursion_limit.is_some(), "--recursion-limit"),
            (
                self.hillclimb_max_iterations.is_some(),
                "--hillclimb-max-iterations",
            ),
            (self.cop_format.is_some(), "--cop-format"),
            (
                self.experimental_softmax_int16_neg_exp_range.is_some(),
                "--experimental-softmax-int16-neg-exp-range",
            ),
        ];
        flags
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect()
    }
}

impl VelaArgs {
    /// One note on stderr per Vela option npuc ignores.
    pub fn note_ignored(&self) {
        for name in self.ignored.given() {
            eprintln!("npuc: note: {name} is a Vela option npuc has no use for; ignored");
        }
    }
}

fn list(out: &mut String, systems: &[String], modes: &[String]) {
    for s in systems {
        out.push_str(&format!("   System_Config.{s}\n"));
    }
    for m in modes {
        out.push_str(&format!("   Memory_Mode.{m}\n"));
    }
}

/// `--list-configs FILE`: the configurations a file defines, as Vela lists them. Vela's
/// bundled `Arm/vela.ini` (when no such file exists) lists npuc's built-in presets.
pub fn list_configs(file: &Path) -> anyhow::Result<()> {
    let mut out = String::new();
    if !file.exists() && file.ends_with("Arm/vela.ini") {
        out.push_str("Configurations built into npuc (the U85 sections of Vela's Arm/vela.ini):\n");
        let s: Vec<String> = SYSTEM_CONFIG_NAMES.map(String::from).to_vec();
        let m: Vec<String> = MEMORY_MODE_NAMES.map(String::from).to_vec();
        list(&mut out, &s, &m);
    } else {
        let ini = IniFile::read(file)?;
        out.push_str(&format!("Configurations defined in {}:\n", file.display()));
        list(
            &mut out,
            &ini.system_config_names(),
            &ini.memory_mode_names(),
        );
    }
    std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes())?;
    Ok(())
}

/// `--supported-ops-report`: `SUPPORTED_OPS.md` in the current directory.
pub fn supported_ops_report() -> anyhow::Result<()> {
    let path = Path::new("SUPPORTED_OPS.md");
    std::fs::write(path, npuc::supported_ops::markdown())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    eprintln!("npuc: wrote {}", path.display());
    Ok(())
}
