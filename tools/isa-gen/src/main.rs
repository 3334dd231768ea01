//! `cargo run -p npuc-isa-gen [--check]`: (re)writes backend/src/isa/generated.rs and
//! codecs/src/isa_fields.rs.

use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let files = match npuc_isa_gen::generate_all_from_repo() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("isa-gen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stale = false;
    for (path, text) in files {
        let out = npuc_isa_gen::repo_root().join(path);
        let current = std::fs::read_to_string(&out).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            eprintln!(
                "isa-gen: {} is stale; run `cargo run -p npuc-isa-gen`",
                out.display()
            );
            stale = true;
            continue;
        }
        if let Err(e) = std::fs::write(&out, text) {
            eprintln!("isa-gen: writing {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
        eprintln!("isa-gen: wrote {}", out.display());
    }
    if stale {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
