//! Command-line parsing and dispatch; each subcommand lives in its own module.

mod compile;
mod disasm;
mod explain;
mod report;
mod run;
mod vela_args;
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
    /// Compile a model to an npuc container, a .tflite with ethos-u operators, or Vela's files
    /// (--output-dir: Vela's command line works here).
    Compile(Box<compile::Args>),
    /// Disassemble the command streams of a compiled artifact.
    Disasm(disasm::Args),
    /// Compile a model and print its schedule: per NPU operation its sources, feature maps,
    /// block, weight format, staging, chaining, cascade and estimated cycles.
    Explain(explain::Args),
    /// Run a compiled model on the reference simulator.
    Run(run::Args),
    /// Estimate cycles, MACs and memory traffic of a compiled artifact (TRM chapter 4 model).
    Report(report::Args),
    /// Compile a model and compare the simulator with the reference interpreter on random
    /// inputs (exit status 0 only if bit-exact).
    Verify(verify::Args),
    /// Print the operators npuc compiles, per input format, as Markdown.
    SupportedOps,
}

/// Parses the arguments, runs the subcommand, and turns errors into a message and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Compile(args) => compile::run(*args),
        Command::Disasm(args) => disasm::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Report(args) => report::run(args),
        Command::SupportedOps => std::io::Write::write_all(
            &mut std::io::stdout().lock(),
            npuc::supported_ops::markdown().as_bytes(),
        )
        .map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`npuc disasm X | head`): nothing left to say.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("npuc: error: {}", npuc::error_message(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// True when the error is a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
