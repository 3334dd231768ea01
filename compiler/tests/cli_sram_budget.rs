//! `--sram-budget BYTES`: a hard cap on the SRAM a compiled model uses. In the
//! `Dedicated_Sram` modes the scheduler fills at most that much fast memory (feature maps
//! that do not fit stay in the DRAM arena) and the stream stays bit-exact; where the arena
//! itself is in SRAM (`Sram_Only`) a model whose feature maps need more is refused, naming the
//! operation that needs the most.

use npuc_test_support::Scratch;
use std::path::Path;
use std::process::{Command, Output};

const MODEL: &str = "models/tflite/mobilenet_v1_025_96.tflite";

fn npuc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("npuc runs")
}

fn peak_sram(container: &Path) -> u64 {
    let out = npuc(&["report", "--json", container.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["peak_sram_bytes"].as_u64().unwrap()
}

#[test]
fn the_fast_memory_stays_within_the_budget_and_the_stream_is_exact() {
    let dir = Scratch::new("sram-budget");
    let free = dir.join("free.bin");
    let out = npuc(&["compile", MODEL, "-o", free.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let unbounded = peak_sram(&free);
    for budget in [unbounded / 2, 8 * 1024] {
        let bin = dir.join(format!("b{budget}.bin"));
        let b = budget.to_string();
        let out = npuc(&[
            "compile",
            MODEL,
            "--sram-budget",
            &b,
            "-o",
            bin.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let peak = peak_sram(&bin);
        assert!(peak <= budget, "budget {budget}: peak SRAM {peak}");
        assert!(peak < unbounded);
        let out = npuc(&["verify", MODEL, "--sram-budget", &b]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("bit-exact"), "{text}");
    }
}

#[test]
fn a_model_whose_sram_arena_exceeds_the_budget_is_refused_naming_the_operation() {
    let out = npuc(&[
        "compile",
        MODEL,
        "--system-config",
        "Ethos_U85_SYS_Flash_High",
        "--memory-mode",
        "Sram_Only",
        "--sram-budget",
        "30000",
        "-o",
        "/dev/null",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("over the budget of 30000 bytes") && err.contains("operation op"),
        "{err}"
    );
    assert_eq!(err.matches("over the budget").count(), 1, "{err}");
}
