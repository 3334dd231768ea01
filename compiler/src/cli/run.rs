//! `npuc run ARTIFACT --input in0.npy [--input ...] --output-dir DIR`.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// Arguments of `npuc run`.
#[derive(clap::Args)]
pub struct Args {
    /// An npuc container (run on the simulator), a Vela-format .tflite (ethos-u operators run
    /// on the simulator, CPU operators on the reference interpreter), or a plain .tflite /
    /// .tosa (run on the reference interpreter).
    artifact: PathBuf,
    /// Graph inputs as .npy files, in the graph's input order.
    #[arg(long = "input")]
    inputs: Vec<PathBuf>,
    /// Directory for out0.npy, out1.npy, ... (created if missing).
    #[arg(long)]
    output_dir: PathBuf,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let model = std::fs::read(&args.artifact)
        .with_context(|| format!("reading {}", args.artifact.display()))?;
    let mut inputs = Vec::new();
    for p in &args.inputs {
        let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        inputs.push(
            npuc::run::npy::read(&bytes).with_context(|| format!("reading {}", p.display()))?,
        );
    }
    let simulated = if model.starts_with(&npuc::container::MAGIC) {
        Some(npuc::run::run_container(&model, &inputs)?)
    } else if npuc::run::is_npu_compiled(&model) {
        Some(npuc::run::run_vela(&model, &inputs)?)
    } else {
        None
    };
    let outputs = if let Some(run) = simulated {
        for note in &run.notes {
            eprintln!("npuc: note: {note}");
        }
        run.outputs
    } else {
        npuc::reference::run_file(&model, &inputs).with_context(|| {
            format!(
                "running {} on the reference interpreter",
                args.artifact.display()
            )
        })?
    };
    write_outputs(&args.output_dir, &outputs)
}

/// `outN.npy`: the name of output `N`.
fn output_name(k: usize) -> String {
    format!("out{k}.npy")
}

/// Whether `name` is an output file name `outN.npy` (what an earlier run may have left).
fn is_output_name(name: &str) -> bool {
    name.strip_prefix("out")
        .and_then(|r| r.strip_suffix(".npy"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes `out0.npy, out1.npy, ...` into `dir`, all or nothing: every file is first written
/// into a fresh directory inside `dir`, then the outputs of earlier runs (`outN.npy`) are
/// removed and the new files moved into place. On failure nothing new is left in `dir`.
fn write_outputs(dir: &Path, outputs: &[npuc::run::npy::Array]) -> anyhow::Result<()> {
    if dir.is_file() {
        anyhow::bail!("--output-dir {} is a file, not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let staging = dir.join(format!(".npuc-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let result = (|| -> anyhow::Result<()> {
        for (k, a) in outputs.iter().enumerate() {
            let p = staging.join(output_name(k));
            std::fs::write(&p, npuc::run::npy::write(a))
                .with_context(|| format!("writing {}", p.display()))?;
        }
        // Clear what is in the way, every output of an earlier run, once sure it all can be.
        let mut stale = Vec::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let entry = entry?;
            if entry.file_name().to_str().is_some_and(is_output_name) {
                let p = entry.path();
                if p.is_dir() {
                    anyhow::bail!("cannot write {}: a directory is in the way", p.display());
                }
                stale.push(p);
            }
        }
        for p in stale {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
        for k in 0..outputs.len() {
            let to = dir.join(output_name(k));
            std::fs::rename(staging.join(output_name(k)), &to)
                .with_context(|| format!("writing {}", to.display()))?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result
}
