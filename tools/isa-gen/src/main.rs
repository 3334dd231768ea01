//! `cargo run -p npuc-isa-gen [--check]`: (re)writes backend/src/isa/generated.rs.

use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let text = match npuc_isa_gen::generate_from_repo() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("isa-gen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = npuc_isa_gen::repo_root().join(npuc_isa_gen::OUTPUT);
    let current = std::fs::read_to_string(&out).unwrap_or_default();
    if check {
        if current == text {
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "isa-gen: {} is stale; run `cargo run -p npuc-isa-gen`",
            out.display()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&out, text) {
        eprintln!("isa-gen: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("isa-gen: wrote {}", out.display());
    ExitCode::SUCCESS
}
