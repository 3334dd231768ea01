//! npuc as a library in a pipeline: a `.tflite` model's bytes in; the command streams, the
//! compile summary and the estimated cycles out.
//!
//! `cargo run --release -p npuc --example compile_tflite -- MODEL.tflite [OUT.tflite]
//! [ethos-u85-128|256|512|1024|2048]` (without arguments: `models/tflite/mobilenet_tiny.tflite`
//! for Ethos-U85-256, nothing written).

use npuc::{Accelerator, Optimise, Options, OutputFormat};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/tflite/mobilenet_tiny.tflite"
        )
        .to_string()
    });
    let accelerator: Accelerator = match args.get(2) {
        Some(a) => a.parse()?,
        None => Accelerator::U85_256,
    };
    let bytes = std::fs::read(&model).map_err(|e| format!("reading {model}: {e}"))?;

    // The system configuration and memory mode by their vela.ini names (built-in presets, or
    // sections of a Vela-format .ini given as `Some(IniFile::read(path)?)`).
    let options = Options::from_names(
        accelerator,
        npuc::DEFAULT_SYSTEM_CONFIG,
        npuc::DEFAULT_MEMORY_MODE,
        None,
        Optimise::Performance,
    )?;
    let out = npuc::compile_artifact(&bytes, OutputFormat::Tflite, &options, &mut |msg| {
        eprintln!("{msg}")
    })?;

    // Each NPU segment is one command stream with its read-only data and memory needs.
    for (k, seg) in out.segments.iter().enumerate() {
        println!(
            "segment {k}: {} command words, {} read-only bytes, arena {} bytes, {} NPU operations, {} cycles",
            seg.payload.bytes().len() / 4,
            seg.read_only.len(),
            seg.arena_size,
            seg.operators.len(),
            seg.estimated_cycles()
        );
    }
    for o in out.summary.cpu_operators() {
        println!(
            "on the CPU: operator {} ({}): {}",
            o.index,
            o.opcode,
            o.reason.as_deref().unwrap_or("")
        );
    }
    println!("{}", serde_json::to_string_pretty(&out.summary)?);
    println!("estimated cycles: {}", out.cycles());
    if let Some(path) = args.get(1) {
        std::fs::write(path, &out.bytes).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}
