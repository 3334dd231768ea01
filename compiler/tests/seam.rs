//! The target seam (ARCHITECTURE.md, "The target seam"): which files of the driver
//! (`compiler/src`) may name the Ethos-U85 backend.
//!
//! Only the target registry (`targets/`) names a target's implementation (`U85Target`, the
//! crate `npuc-backend-schedule`); `compile()` gets its target from `targets::select` and
//! schedules, writes and estimates through it. The U85's scheduling passes live below the
//! driver (`backend/schedule`), which does not depend on the driver. The other files that
//! still use `npuc_backend` are the U85 options and readers of U85 artifacts, listed with
//! the reason; a new file of the driver that names the backend fails here, and the list only
//! shrinks.

use std::path::{Path, PathBuf};

/// The target registry: the one place the driver names a target's implementation.
const REGISTRY: &str = "targets/";

/// Files and directories of `compiler/src` that still name `npuc_backend`, and why.
const U85_PARTS_IN_DRIVER: &[(&str, &str)] = &[
    (
        "compile/mod.rs",
        "Options name the U85 accelerator and vela.ini systems; validation; re-exports \
         npuc-backend-lower as compile::lower",
    ),
    (
        "lib.rs",
        "re-exports Accelerator and the system configurations",
    ),
    (
        "cli/",
        "U85 options (--accelerator-config, vela.ini) and Vela's command line",
    ),
    (
        "artifact.rs",
        "opens U85 streams: containers, COP payloads, Vela .tflite",
    ),
    ("run.rs", "the U85 simulator"),
    ("verify.rs", "the U85 simulator"),
    ("vela_output.rs", "Vela's output files"),
    ("tflite_out/", "Vela's ethos-u operator (COP1 payload)"),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("compiler/src is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every source file under `dir` (relative to `compiler/`): (path relative to it, with `/`,
/// contents), in path order.
fn files_under(dir: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths = Vec::new();
    sources(&root, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&root)
                .expect("under the directory")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = std::fs::read_to_string(&p).expect("source is UTF-8");
            (rel, text)
        })
        .collect()
}

/// Every source file of the driver (`compiler/src`).
fn driver_files() -> Vec<(String, String)> {
    files_under("src")
}

/// Every source file of `npuc-target` (`compiler/target/src`).
fn interface_files() -> Vec<(String, String)> {
    files_under("target/src")
}

#[test]
fn only_the_registry_names_a_target_implementation() {
    let files = driver_files();
    assert!(files.iter().any(|(p, _)| p.starts_with(REGISTRY)));
    let offenders: Vec<&str> = files
        .iter()
        .filter(|(p, text)| !p.starts_with(REGISTRY) && text.contains("U85Target"))
        .map(|(p, _)| p.as_str())
        .collect();
    assert!(
        offenders.is_empty(),
        "outside {REGISTRY}, these files name U85Target: {offenders:?}"
    );
}

#[test]
fn files_naming_the_backend_are_the_known_u85_parts() {
    let known = |p: &str| {
        p.starts_with(REGISTRY) || U85_PARTS_IN_DRIVER.iter().any(|(k, _)| p.starts_with(k))
    };
    let offenders: Vec<String> = driver_files()
        .into_iter()
        .filter(|(p, text)| text.contains("npuc_backend") && !known(p))
        .map(|(p, _)| p)
        .collect();
    assert!(
        offenders.is_empty(),
        "these files of the driver name the U85 backend but are not known U85 parts \
         (go through arch_interface::Target, or move the code into backend/): {offenders:?}"
    );
}

#[test]
fn the_shared_parts_of_the_driver_name_no_backend() {
    // The schedule framework, allocation and the container are what any NPU target shares.
    let files = driver_files();
    for shared in [
        "disasm.rs",
        "layers.rs",
        "report.rs",
        "compile/schedule.rs",
        "compile/summary.rs",
        "container.rs",
        "counts.rs",
        "compile/emit/mod.rs",
        "compile/emit/describe.rs",
    ] {
        let (_, text) = files
            .iter()
            .find(|(p, _)| p == shared)
            .unwrap_or_else(|| panic!("{shared} exists"));
        assert!(!text.contains("npuc_backend"), "{shared} names the backend");
    }
}

#[test]
fn the_framework_reads_the_lowered_program_through_the_view() {
    // Allocation and the schedule read buffers, their lifetimes and each operation's
    // feature-map buffers through `arch_interface::LoweredView`, never the U85's `Lowered`.
    let files = driver_files();
    // `Target::lower` returns the program opaque (`Box<dyn LoweredView>`): the interface
    // names no lowered form of a target either.
    let interface = interface_files();
    for framework in [
        "arch_interface.rs",
        "alloc.rs",
        "objective.rs",
        "compile/schedule.rs",
    ] {
        let (_, text) = files
            .iter()
            .chain(&interface)
            .find(|(p, _)| p == framework)
            .unwrap_or_else(|| panic!("{framework} exists"));
        let text = text.replace("LoweredView", "");
        assert!(
            !text.contains("Lowered") && !text.contains("lower::"),
            "{framework} names the U85's lowered form"
        );
        assert!(
            !text.contains("npuc_backend"),
            "{framework} names the backend"
        );
    }
}

#[test]
fn the_cost_model_and_validation_are_reached_through_the_target() {
    // `npuc report`, Vela's CSVs and `compile()`'s validation ask the target that reads the
    // stream (`Target::estimate_stream`, `Target::validate`); only the registry runs the
    // U85's cost model and validator.
    let files = driver_files();
    for user in [
        "report.rs",
        "vela_output.rs",
        "compile/mod.rs",
        "compile/emit/mod.rs",
    ] {
        let (_, text) = files
            .iter()
            .find(|(p, _)| p == user)
            .unwrap_or_else(|| panic!("{user} exists"));
        for backend in [
            "npuc_backend::perf",
            "npuc_backend::sim::validate::validate",
        ] {
            assert!(!text.contains(backend), "{user} names {backend}");
        }
    }
}

#[test]
fn compile_lowers_through_the_target() {
    // The lowering recipes are the U85's (`npuc-backend-lower`); `compile()` asks its target.
    let files = driver_files();
    let (_, text) = files
        .iter()
        .find(|(p, _)| p == "compile/mod.rs")
        .expect("compile/mod.rs exists");
    assert!(
        text.contains("target.lower(graph)") && !text.contains("lower::lower("),
        "compile() must lower through Target::lower"
    );
    assert!(
        !files.iter().any(|(p, _)| p.starts_with("compile/lower/")),
        "the lowering recipes live in backend/lower, not in the driver"
    );
}

#[test]
fn the_interface_is_a_crate_below_the_driver() {
    // `arch_interface`, `payload`, `alloc` and `objective` are the crate `npuc-target`
    // (decisions A1-A4), which depends on the IR and the codecs only; the driver re-exports
    // them under the same paths. They name no module of the driver and no backend, only each
    // other.
    let files = interface_files();
    let modules = ["arch_interface", "payload", "alloc", "objective"];
    for interface in modules.map(|m| format!("{m}.rs")) {
        let (_, text) = files
            .iter()
            .find(|(p, _)| *p == interface)
            .unwrap_or_else(|| panic!("compiler/target/src/{interface} exists"));
        let outside: Vec<&str> = text
            .match_indices("crate::")
            .map(|(i, _)| {
                let rest = &text[i + "crate::".len()..];
                rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("")
            })
            .filter(|m| !modules.contains(m))
            .collect();
        assert!(
            outside.is_empty(),
            "{interface} names modules of the driver: {outside:?}"
        );
        for other in ["npuc_backend", "npuc::"] {
            assert!(!text.contains(other), "{interface} names {other}");
        }
    }
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/Cargo.toml"))
            .expect("compiler/target/Cargo.toml is readable");
    let npuc_deps: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.split_once(".workspace").map(|(name, _)| name.trim()))
        .filter(|name| name.starts_with("npuc"))
        .collect();
    assert_eq!(
        npuc_deps,
        ["npuc-ir", "npuc-codecs"],
        "npuc-target's npuc dependencies"
    );
    let driver = driver_files();
    for moved in modules.map(|m| format!("{m}.rs")) {
        assert!(
            !driver
                .iter()
                .any(|(p, _)| p.rsplit('/').next() == Some(moved.as_str())),
            "{moved} is back in the driver"
        );
    }
}

#[test]
fn the_driver_schedules_through_the_target() {
    // The scheduling passes are the target's (`Target::decide`, decision A4): `emit` asks the
    // target to decide and to write, then describes; `compile/emit` holds nothing else, and
    // no file of the driver outside the registry names the U85 target's crate.
    let files = driver_files();
    let (_, emit) = files
        .iter()
        .find(|(p, _)| p == "compile/emit/mod.rs")
        .expect("compile/emit/mod.rs exists");
    assert!(emit.contains("target.decide(program)") && emit.contains("target.write(program"));
    let in_emit: Vec<&str> = files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| p.starts_with("compile/emit/"))
        .collect();
    assert_eq!(in_emit, ["compile/emit/describe.rs", "compile/emit/mod.rs"]);
    let offenders: Vec<&str> = files
        .iter()
        .filter(|(p, text)| !p.starts_with(REGISTRY) && text.contains("npuc_backend_schedule"))
        .map(|(p, _)| p.as_str())
        .collect();
    assert!(
        offenders.is_empty(),
        "these files name the U85 target's crate: {offenders:?}"
    );
}

#[test]
fn the_u85_target_does_not_depend_on_the_driver() {
    // `backend/schedule` (`npuc-backend-schedule`) is below the driver: its manifest names no
    // `npuc` and its sources no `npuc::` path.
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/schedule/Cargo.toml"),
    )
    .expect("backend/schedule/Cargo.toml");
    let deps: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.split_once(".workspace").map(|(name, _)| name.trim()))
        .collect();
    assert!(
        deps.contains(&"npuc-target") && !deps.contains(&"npuc"),
        "{deps:?}"
    );
    let files = files_under("../backend/schedule/src");
    assert!(
        files.len() > 10,
        "the U85 passes are in backend/schedule/src"
    );
    for (p, text) in files {
        assert!(!text.contains("npuc::"), "{p} names the driver");
    }
}

#[test]
fn the_schedule_description_reads_only_neutral_decisions() {
    // `npuc explain`'s schedule is built from `arch_interface::Decisions` (the neutral part),
    // the target's `Written`, the cost model's estimate and `Target` methods (decision A3):
    // `describe.rs` names no U85 pass type, no register code and no lowered form.
    let files = driver_files();
    let (_, text) = files
        .iter()
        .find(|(p, _)| p == "compile/emit/describe.rs")
        .expect("describe.rs exists");
    let text = text.replace("LoweredView", "");
    for u85 in [
        "Lowered",
        "lower::",
        "OpPlan",
        "U85Plan",
        "Staged",
        "Encoded",
        "regs::",
        "super::",
        "npuc_backend",
    ] {
        assert!(!text.contains(u85), "describe.rs names {u85}");
    }
}

#[test]
fn every_listed_u85_part_still_names_the_backend() {
    // The allow-list says what is true: an entry whose files no longer name the backend
    // (moved below the driver, or made neutral) is removed, so the list only shrinks.
    let files = driver_files();
    let stale: Vec<&str> = U85_PARTS_IN_DRIVER
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| {
            !files
                .iter()
                .any(|(p, text)| p.starts_with(k) && text.contains("npuc_backend"))
        })
        .collect();
    assert!(stale.is_empty(), "stale allow-list entries: {stale:?}");
}
