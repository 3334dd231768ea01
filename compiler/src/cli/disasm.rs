//! `npuc disasm ARTIFACT [--json]`.

use anyhow::Context;
use npuc::artifact::Artifact;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `npuc disasm`.
#[derive(clap::Args)]
pub struct Args {
    /// An npuc container (.bin from `npuc compile`), a Vela-compiled .tflite, a COP1/COP2
    /// payload, or a raw little-endian command stream.
    artifact: PathBuf,
    /// Print JSON: {version, streams, commands}, each command {op, offset, name, fields} with
    /// raw field values.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let artifact = Artifact::read(&args.artifact)
        .with_context(|| format!("reading {}", args.artifact.display()))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        match npuc::disasm::json(&artifact) {
            Ok(v) => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
            Err(e) => return Err(e.into()),
        }
    } else {
        match npuc::disasm::text(&artifact) {
            Ok(t) => out.write_all(t.as_bytes())?,
            Err(e) => {
                out.write_all(e.partial.as_bytes())?;
                return Err(e.into());
            }
        }
    }
    Ok(())
}
