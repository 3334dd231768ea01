//! Prints the IR graph the TFLite frontend lowers a model to, and whether `npuc::compile`
//! accepts it (for every configuration).
//!
//! `cargo run -p npuc --example ir_dump -- model.tflite|model.tosa [--no-dump]`

use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: ir_dump FILE.tflite|FILE.tosa [--no-dump]");
        std::process::exit(2);
    };
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    let g = if path.ends_with(".tosa") {
        let model = npuc_frontend_tosa::TosaModel::parse(&bytes).unwrap_or_else(|e| {
            eprintln!("{path}: {e}");
            std::process::exit(1)
        });
        npuc_frontend_tosa::lower(&model).unwrap_or_else(|e| {
            eprintln!("{path}: {e}");
            std::process::exit(1)
        })
    } else {
        let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap_or_else(|e| {
            eprintln!("{path}: {e}");
            std::process::exit(1)
        });
        match npuc_frontend_tflite::lower::lower(&model) {
            Ok(l) => l.graph,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1)
            }
        }
    };
    if !args.iter().any(|a| a == "--no-dump") {
        print!("{}", npuc_ir::dump(&g));
    }
    for accel in Accelerator::ALL {
        match compile(&g, &Options::new(accel)) {
            Ok(m) => println!("{accel}: {} NPU operations", m.operators.len()),
            Err(e) => println!("{accel}: {e}"),
        }
    }
}
