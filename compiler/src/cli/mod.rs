//! Command-line parsing and dispatch; each subcommand lives in its own module.

mod compile;
mod disasm;
mod report;
mod run;
mod verify;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// npuc: an open, fast, verifiable compiler for the Arm Ethos-U85 NPU.
#[derive(Parser)]
#[command(name = "npuc", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a model to an npuc container, or to a .tflite with ethos-u operators.
    Compile(compile::Args),
    /// Disassemble the command streams of a compiled artifact.
    Disasm(disasm::Args),
    /// Run a compiled model on the reference simulator.
    Run(run::Args),
    /// Estimate cycles, MACs and memory traffic of a compiled artifact (TRM chapter 4 model).
    Report(report::Args),
    /// Compile a model and compare the simulator with the reference interpreter on random
    /// inputs (exit status 0 only if bit-exact).
    Verify(verify::Args),
}

/// Parses the arguments, runs the subcommand, and turns errors into a message and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Compile(args) => compile::run(args),
        Command::Disasm(args) => disasm::run(args),
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Report(args) => report::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("npuc: error: {}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each said once: a cause whose text the message
/// already holds (a library error that embeds its source, as many `thiserror` variants do) is
/// not repeated.
fn message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || msg.contains(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg
}
