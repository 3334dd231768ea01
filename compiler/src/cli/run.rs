//! `npuc run ARTIFACT --input in0.npy [--input ...] --output-dir DIR`.

use anyhow::Context;
use std::path::PathBuf;

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
    let outputs = if model.starts_with(&npuc::container::MAGIC) {
        npuc::run::run_container(&model, &inputs)?.outputs
    } else if npuc::run::is_npu_compiled(&model) {
        npuc::run::run_vela(&model, &inputs)?.outputs
    } else {
        npuc::reference::run_file(&model, &inputs).with_context(|| {
            format!(
                "running {} on the reference interpreter",
                args.artifact.display()
            )
        })?
    };
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("creating {}", args.output_dir.display()))?;
    for (k, a) in outputs.iter().enumerate() {
        let p = args.output_dir.join(format!("out{k}.npy"));
        std::fs::write(&p, npuc::run::npy::write(a))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
