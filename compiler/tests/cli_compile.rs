//! `npuc compile`: container and `.tflite` outputs, the summary table, and the error that lists
//! the operators the NPU cannot run.

mod tflite_out_common;

use npuc_test_support::Scratch;
use std::process::{Command, Output};
use tflite_out_common::{conv_custom_conv, models};

fn npuc(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .output()
        .unwrap()
}

fn compile(model: &str, out: &std::path::Path, extra: &[&str]) -> Output {
    // (A made model's directory lives until npuc has read it.)
    let made = (model == "conv_custom_conv").then(|| Scratch::new("cli-compile-model"));
    let m = match &made {
        Some(dir) => {
            let p = dir.join("conv_custom_conv.tflite");
            std::fs::write(&p, conv_custom_conv()).unwrap();
            p
        }
        None => models().join(format!("tflite/{model}.tflite")),
    };
    let mut a: Vec<&std::ffi::OsStr> = vec!["compile".as_ref(), m.as_os_str(), "-o".as_ref()];
    a.push(out.as_os_str());
    a.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    npuc(&a)
}

#[test]
fn a_container_output_fails_listing_each_cpu_operator_and_suggests_tflite() {
    let dir = Scratch::new("cli-compile-cpu-container");
    let out = dir.join("two.bin");
    let o = compile("conv_custom_conv", &out, &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("operator 1 (npuc_test_cpu_only)"), "{err}");
    assert!(err.contains("-o MODEL.tflite"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_tflite_output_keeps_cpu_operators_and_prints_the_summary() {
    let dir = Scratch::new("cli-compile-cpu-tflite");
    let out = dir.join("two.tflite");
    let o = compile("conv_custom_conv", &out, &["--progress"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    for row in [
        "NPU segments                 2",
        "operators on NPU             2",
        "operators on CPU             1",
        "CPU: operator 1 (npuc_test_cpu_only)",
        "estimated cycles",
        "compiling NPU segment 2",
    ] {
        assert!(err.contains(row), "missing {row:?} in\n{err}");
    }
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[4..8], b"TFL3");
}

#[test]
fn a_container_output_of_a_supported_model_is_written_with_its_summary() {
    let dir = Scratch::new("cli-compile-conv");
    let out = dir.join("conv.bin");
    let o = compile("conv2d_3x3_relu", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("operators on CPU             0"), "{err}");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..4], b"NPUC");
}

#[test]
fn a_container_summary_counts_the_models_operators_not_the_npu_operations() {
    // One TFLite SOFTMAX becomes several NPU operations.
    let dir = Scratch::new("cli-compile-softmax");
    let out = dir.join("softmax.bin");
    let o = compile("softmax", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("operators on NPU             1\n"), "{err}");
    let kernels = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("NPU operations"))
        .and_then(|v| v.split_whitespace().next()?.parse::<usize>().ok())
        .expect("an NPU operation count");
    assert!(kernels > 1, "{err}");
    assert!(out.exists(), "{} was not written", out.display());
}

#[test]
fn the_summary_gives_the_weights_before_and_after_encoding() {
    // conv2d_3x3_relu: one CONV_2D with 3x3 weights; raw bytes are the weight count.
    let dir = Scratch::new("cli-compile-weights");
    let out = dir.join("weights.bin");
    let o = compile("conv2d_3x3_relu", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let row = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("weights"))
        .expect("a weights row")
        .trim()
        .to_string();
    let nums: Vec<u64> = row
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    let bytes = std::fs::read(models().join("tflite/conv2d_3x3_relu.tflite")).unwrap();
    let m = npuc::compile_file(&bytes, &npuc::compile::Options::default()).unwrap();
    let cin = *m.inputs[0].shape.last().unwrap() as u64;
    let cout = *m.outputs[0].shape.last().unwrap() as u64;
    assert_eq!(m.weights.weights, cout * 3 * 3 * cin);
    assert_eq!(nums[0], m.weights.weights, "{row}");
    assert_eq!(nums[1], m.weights.weight_stream_bytes, "{row}");
    assert!(
        m.weights.scale_stream_bytes >= cout * 10,
        "80-bit records per channel"
    );
    assert!(out.exists(), "{} was not written", out.display());
}

#[test]
fn the_summarys_estimated_cycles_are_npuc_reports_total() {
    // Same artifact, same (default) system configuration and memory mode: the compile
    // summary and `npuc report --json` give the same total.
    let dir = Scratch::new("cli-compile-report-agrees");
    let out = dir.join("report_agrees.tflite");
    let o = compile("mobilenet_tiny", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let summary: u64 = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("estimated cycles"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no estimated cycles in\n{err}"));
    let r = npuc(&[
        std::ffi::OsStr::new("report"),
        std::ffi::OsStr::new("--json"),
        out.as_os_str(),
    ]);
    assert!(r.status.success());
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(json["total_cycles"].as_u64(), Some(summary));
}

#[test]
fn compiling_a_compiled_model_again_is_an_error_naming_the_ethos_u_operator() {
    let dir = Scratch::new("cli-compile-again");
    for (input, output) in [
        ("vela/u85_256/conv2d_3x3_relu_vela.tflite", "again.tflite"),
        ("vela/u85_256/conv2d_3x3_relu_vela.tflite", "again.bin"),
    ] {
        let out = dir.join(output);
        let m = models().join(input);
        let o = npuc(&[
            "compile".as_ref(),
            m.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("operator 0 is an ethos-u operator") && err.contains("already compiled"),
            "{err}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn summary_verify_and_report_count_operations_and_commands_alike() {
    let dir = Scratch::new("cli-compile-counts");
    let out = dir.join("counts.bin");
    let o = compile("mobilenet_tiny", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let row = |name: &str| {
        err.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in\n{err}"))
            .trim()
            .to_string()
    };
    let npu_operations = row("NPU operations");
    let commands = row("commands");
    // verify: "whole graph (N NPU operations (k kernel commands, d DMA commands)): ..."
    let m = models().join("tflite/mobilenet_tiny.tflite");
    let v = npuc(&[
        "verify".as_ref(),
        m.as_os_str(),
        "--samples".as_ref(),
        "1".as_ref(),
    ]);
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{text}");
    assert!(
        text.contains(&format!("({npu_operations} NPU operations ({commands}))")),
        "{text}\n{err}"
    );
    // report: "commands: k kernel commands, d DMA commands", one table row per command.
    let r = npuc(&["report".as_ref(), out.as_os_str()]);
    let report = String::from_utf8_lossy(&r.stdout);
    assert!(
        report.contains(&format!("commands: {commands}\n")),
        "{report}"
    );
    let rows = report.lines().filter(|l| l.contains(" NPU_OP_")).count();
    let n: Vec<usize> = commands
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    assert_eq!(rows, n[0] + n[1], "{report}");
}

#[test]
fn json_prints_the_summary_as_data_with_each_operators_placement() {
    let dir = Scratch::new("cli-compile-json");
    let out = dir.join("json.tflite");
    let o = compile("conv_custom_conv", &out, &["--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("npuc compile summary"),
        "table on stderr: {err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["accelerator"], "ethos-u85-256");
    assert_eq!(j["system_config"], "Ethos_U85_SYS_DRAM_Mid");
    assert_eq!(j["memory_mode"], "Dedicated_Sram_384KB");
    assert_eq!(j["optimise"], "performance");
    assert_eq!(j["npu_segments"], 2);
    assert_eq!(j["npu_operators"], 2);
    assert_eq!(j["cpu_operators"], 1);
    let ops = j["operators"].as_array().unwrap();
    let placed: Vec<(u64, &str, &str, Option<u64>)> = ops
        .iter()
        .map(|o| {
            (
                o["index"].as_u64().unwrap(),
                o["opcode"].as_str().unwrap(),
                o["placement"].as_str().unwrap(),
                o["segment"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            (0, "CONV_2D", "npu", Some(0)),
            (1, "npuc_test_cpu_only", "cpu", None),
            (2, "CONV_2D", "npu", Some(1)),
        ]
    );
    assert!(ops[1]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(ops[0]["reason"].is_null());
    for key in [
        "kernel_commands",
        "dma_commands",
        "command_words",
        "arena_bytes",
        "arena_bytes_total",
        "fast_memory_bytes",
        "read_only_bytes",
        "weights_raw_bytes",
        "weights_encoded_bytes",
        "scale_bytes",
        "estimated_cycles",
    ] {
        assert!(j[key].is_u64(), "{key} in {j}");
    }
    assert!(j["kernel_commands"].as_u64() >= Some(2), "{j}");
    // The same figures as the table.
    let o = compile("conv_custom_conv", &out, &[]);
    let table = String::from_utf8_lossy(&o.stderr);
    let row = |name: &str| -> String {
        table
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in\n{table}"))
            .trim()
            .to_string()
    };
    assert_eq!(
        row("command stream"),
        format!("{} words", j["command_words"])
    );
    assert!(row("estimated cycles").starts_with(&format!("{} ", j["estimated_cycles"])));
    assert!(out.exists(), "{} was not written", out.display());
}

#[test]
fn json_of_a_tosa_container_names_its_configuration_and_tosa_operators() {
    let dir = Scratch::new("cli-compile-json-tosa");
    let out = dir.join("json_tosa.bin");
    let m = models().join("tosa/conv2d_3x3_relu.tosa");
    let o = npuc(&[
        "compile".as_ref(),
        m.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--json".as_ref(),
        "--accel".as_ref(),
        "ethos-u85-512".as_ref(),
        "--system-config".as_ref(),
        "Ethos_U85_SYS_Flash_High".as_ref(),
        "--memory-mode".as_ref(),
        "Sram_Only".as_ref(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["accelerator"], "ethos-u85-512");
    assert_eq!(j["system_config"], "Ethos_U85_SYS_Flash_High");
    assert_eq!(j["memory_mode"], "Sram_Only");
    assert_eq!(j["npu_segments"], 1);
    assert_eq!(j["cpu_operators"], 0);
    let ops = j["operators"].as_array().unwrap();
    assert!(ops.iter().any(|o| o["opcode"] == "CONV2D"), "{j}");
    assert!(ops
        .iter()
        .all(|o| o["placement"] == "npu" && o["segment"] == 0));
    assert!(ops.iter().all(|o| o["opcode"] != "CONST"), "{j}");
    assert_eq!(j["npu_operators"].as_u64(), Some(ops.len() as u64));
    assert!(out.exists(), "{} was not written", out.display());
}

#[test]
fn an_error_says_each_cause_once() {
    let dir = Scratch::new("cli-compile-garbage");
    let model = dir.join("garbage.tflite");
    std::fs::write(&model, b"garbage, not a model at all").unwrap();
    let out = dir.join("garbage.bin");
    let o = npuc(&[
        "compile".as_ref(),
        model.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("npuc: error: compiling "), "{err}");
    assert_eq!(err.matches("does not verify").count(), 1, "{err}");
    assert!(!out.exists());
}
