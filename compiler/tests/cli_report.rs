//! `npuc report`: the JSON keys the issue fixes, per-operation sums equal the totals, memory
//! options change where the bytes go, and bad names or .ini files are clear errors.

use npuc_test_support::Scratch;
use std::path::Path;
use std::process::{Command, Output};

fn npuc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("npuc runs")
}

const MODEL: &str = "models/vela/u85_256/mobilenet_tiny_vela.tflite";

const KEYS: [&str; 10] = [
    "macs",
    "sram_read_bytes",
    "sram_write_bytes",
    "dram_read_bytes",
    "dram_write_bytes",
    "flash_read_bytes",
    "weight_bytes",
    "scale_bytes",
    "peak_sram_bytes",
    "total_cycles",
];

fn json(args: &[&str]) -> serde_json::Value {
    let out = npuc(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn json_totals_are_the_sums_of_the_operations() {
    let v = json(&["report", "--json", MODEL]);
    for k in KEYS {
        assert!(v[k].is_u64(), "{k} missing");
    }
    let ops = v["ops"].as_array().expect("ops");
    assert!(ops.len() > 10);
    for k in KEYS
        .iter()
        .filter(|k| !k.starts_with("peak") && **k != "total_cycles")
    {
        let sum: u64 = ops.iter().map(|o| o[*k].as_u64().expect(k)).sum();
        assert_eq!(sum, v[*k].as_u64().unwrap(), "{k}");
    }
    // DMAs overlap kernel operations: the total is the end of the last operation, at most the
    // sum of the operations' cycles and at least the kernel operations' sum.
    let total = v["total_cycles"].as_u64().unwrap();
    let cycles: u64 = ops.iter().map(|o| o["cycles"].as_u64().unwrap()).sum();
    let kernels: u64 = ops
        .iter()
        .filter(|o| o["instruction"] != "NPU_OP_DMA_START")
        .map(|o| o["cycles"].as_u64().unwrap())
        .sum();
    assert!(
        kernels <= total && total <= cycles,
        "{kernels} <= {total} <= {cycles}"
    );
    let last = ops
        .iter()
        .map(|o| o["start_cycle"].as_u64().unwrap() + o["cycles"].as_u64().unwrap())
        .max();
    assert_eq!(last, Some(total));
    // Vela's own count for this network: 229412 MACs, 20 of them in two pooling operations.
    assert_eq!(v["macs"], 229_392);
    // Default memory mode: the arena is in DRAM, the staging area in SRAM.
    assert_eq!(v["system_config"], "Ethos_U85_SYS_DRAM_Mid");
    assert_eq!(v["memory_mode"], "Dedicated_Sram_384KB");
    assert!(v["dram_read_bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["flash_read_bytes"], 0);
}

#[test]
fn sram_only_moves_constants_to_flash_and_the_arena_to_sram() {
    let v = json(&[
        "report",
        "--json",
        "--system-config",
        "Ethos_U85_SYS_Flash_High",
        "--memory-mode",
        "Sram_Only",
        MODEL,
    ]);
    assert_eq!(v["dram_read_bytes"], 0);
    assert_eq!(v["dram_write_bytes"], 0);
    assert!(v["flash_read_bytes"].as_u64().unwrap() > 0);
    let w = json(&["report", "--json", MODEL]);
    assert_eq!(v["macs"], w["macs"]);
    assert_eq!(v["weight_bytes"], w["weight_bytes"]);
}

#[test]
fn text_report_names_the_system_and_prints_a_total() {
    let out = npuc(&["report", MODEL]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Ethos_U85_SYS_DRAM_Mid"), "{text}");
    assert!(text.contains("NPU_OP_CONV"), "{text}");
    assert!(text.lines().any(|l| l.contains(" total ")), "{text}");
}

#[test]
fn unknown_names_and_bad_ini_files_are_clear_errors() {
    let out = npuc(&["report", "--memory-mode", "Huge_Sram", MODEL]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Huge_Sram") && err.contains("Dedicated_Sram_384KB"),
        "{err}"
    );

    let dir = Scratch::new("cli-report-ini");
    let ini = dir.join("mine.ini");
    std::fs::write(
        &ini,
        "[System_Config.Mine]\ncore_clock=1e9\naxi0_port=Sram\naxi1_port=Dram\nDram_clock_scale=oops\n",
    )
    .unwrap();
    let ini_s = ini.to_str().unwrap();
    let out = npuc(&[
        "report",
        "--config",
        ini_s,
        "--system-config",
        "Mine",
        MODEL,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mine.ini:5: key `dram_clock_scale`"), "{err}");

    std::fs::write(
        &ini,
        "[System_Config.Mine]\ncore_clock=1e9\naxi0_port=Sram\naxi1_port=Dram\nDram_clock_scale=0.25\n",
    )
    .unwrap();
    let v = json(&[
        "report",
        "--json",
        "--config",
        ini_s,
        "--system-config",
        "Mine",
        MODEL,
    ]);
    assert_eq!(v["system_config"], "Mine");
}

/// Compiles conv2d_3x3_relu to a container `NAME.bin` in `dir` with `extra` options.
fn container(dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.bin"));
    let mut args = vec![
        "compile",
        "models/tflite/conv2d_3x3_relu.tflite",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = npuc(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn a_container_is_reported_in_the_configuration_it_records_unless_told_otherwise() {
    let flash = [
        "--system-config",
        "Ethos_U85_SYS_Flash_High",
        "--memory-mode",
        "Sram_Only",
    ];
    let dir = Scratch::new("cli-report-recorded");
    let bin = container(&dir, "flash", &flash);
    let path = bin.to_str().unwrap();
    let recorded = json(&["report", "--json", path]);
    assert_eq!(recorded["system_config"], "Ethos_U85_SYS_Flash_High");
    assert_eq!(recorded["memory_mode"], "Sram_Only");
    let explicit = json(&[&["report", "--json"][..], &flash[..], &[path]].concat());
    assert_eq!(recorded, explicit);
    // An option given overrides the record.
    let dram = json(&[
        "report",
        "--json",
        "--system-config",
        "Ethos_U85_SYS_DRAM_Mid",
        "--memory-mode",
        "Dedicated_Sram_384KB",
        path,
    ]);
    assert_eq!(dram["system_config"], "Ethos_U85_SYS_DRAM_Mid");
    assert_ne!(dram["total_cycles"], recorded["total_cycles"]);
}

#[test]
fn every_column_label_of_the_text_table_sits_over_its_values() {
    let out = npuc(&["report", MODEL]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().skip(1);
    let header = lines.next().unwrap();
    let row = lines.next().unwrap();
    // Right-aligned columns: each label ends where the values below it end.
    let ends = |s: &str| -> Vec<usize> {
        let b = s.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
            .map(|i| i + 1)
            .collect()
    };
    let labels = [
        "str", "offset", "start", "cycles", "MACs", "SRAM rd", "SRAM wr", "DRAM rd", "DRAM wr",
        "flash rd", "weights",
    ];
    let label_ends: Vec<usize> = labels
        .iter()
        .map(|l| header.find(l).unwrap_or_else(|| panic!("{l} in {header}")) + l.len())
        .collect();
    // The row's values: str, offset, operation (left-aligned), then the numbers.
    let mut value_ends = ends(row);
    value_ends.remove(2);
    assert_eq!(label_ends, value_ends, "\n{header}\n{row}");
}

#[test]
fn the_accelerator_option_has_the_same_spellings_in_every_command() {
    let dir = Scratch::new("cli-report-accelerator");
    let raw = dir.join("raw.bin");
    // A raw stream names no configuration: NPU_OP_STOP only.
    std::fs::write(&raw, [0x00, 0x00, 0xff, 0xff]).unwrap();
    for opt in ["--accelerator-config", "--accelerator", "--accel"] {
        let v = json(&[
            "report",
            "--json",
            opt,
            "ethos-u85-512",
            raw.to_str().unwrap(),
        ]);
        assert_eq!(v["accelerator"], "ethos-u85-512", "{opt}");
        let bin = container(&dir, &format!("acc{opt}"), &[opt, "ethos-u85-512"]);
        let v = json(&["report", "--json", bin.to_str().unwrap()]);
        assert_eq!(v["accelerator"], "ethos-u85-512", "{opt}");
        let o = npuc(&[
            "verify",
            "models/tflite/conv2d_3x3_relu.tflite",
            "--samples",
            "1",
            opt,
            "ethos-u85-512",
        ]);
        assert!(
            o.status.success(),
            "{opt}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
