//! The `npuc` command-line tool.

mod cli;

use std::process::ExitCode;

/// mimalloc as the process's allocator: the passes' many short-lived vectors (the cost
/// model's per-candidate spans and runs, the encoder's symbols) are freed and made again on
/// every thread, and the feature-size buffers are reused instead of being mapped and faulted
/// in afresh (glibc's malloc maps each large buffer and returns it on free). Its 2.x line
/// (the crate's `v2` feature): 3.x's arenas took 36-65 % more transparent huge pages per
/// compile, each zeroed by the kernel (docs/compile_time.md, stop 30). The library leaves
/// the choice of allocator to its users.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
