//! `npuc explain`: the JSON the issue fixes (an `ops` list with `source`, `kernel`,
//! `ofm_block`, `microblock`, `weight_format` and `cycles`, and `total_cycles`), whose total is
//! `npuc report`'s for the compiled container, and the text form.

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
fn explain_total_is_the_reports_total_for_the_container() {
    let dir = Scratch::new("explain");
    // A network with staging and chaining (TFLite), and one in a TOSA file; three memory
    // systems.
    for (model, options) in [
        ("models/tflite/resnet8.tflite", &[][..]),
        (
            "models/tflite/ds_cnn.tflite",
            &["--accel", "ethos-u85-512", "--memory-mode", "Shared_Sram"][..],
        ),
        (
            "models/tosa/mobilenet_tiny.tosa",
            &[
                "--system-config",
                "Ethos_U85_SYS_Flash_High",
                "--memory-mode",
                "Sram_Only",
            ][..],
        ),
    ] {
        let mut args = vec!["explain", model, "--json"];
        args.extend_from_slice(options);
        let s = json(&args);
        let ops = s["ops"].as_array().unwrap();
        assert!(!ops.is_empty(), "{model}");
        for op in ops {
            for key in [
                "source",
                "kernel",
                "ofm_block",
                "microblock",
                "weight_format",
                "cycles",
            ] {
                assert!(op.get(key).is_some(), "{model}: no {key} in {op}");
            }
            assert!(
                !op["source"].as_array().unwrap().is_empty(),
                "{model}: {op}"
            );
        }
        // TFLite sources name the operator index; TOSA ones the operator.
        let first = &ops[0]["source"][0];
        assert_eq!(
            first["index"].is_u64(),
            model.ends_with(".tflite"),
            "{first}"
        );
        assert!(first["op"].as_str().unwrap().starts_with("CONV"), "{first}");
        let bin = dir.join("out.bin");
        let bin = bin.to_str().unwrap();
        let mut args = vec!["compile", model, "-o", bin];
        args.extend_from_slice(options);
        let out = npuc(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut args = vec!["report", bin, "--json"];
        // report takes the memory system, not the configuration (the container names it).
        let memory: Vec<&str> = options
            .chunks(2)
            .filter(|o| o[0] != "--accel")
            .flatten()
            .copied()
            .collect();
        args.extend_from_slice(&memory);
        let r = json(&args);
        assert_eq!(s["total_cycles"], r["total_cycles"], "{model} {options:?}");
        // The kernel operations' cycles are the report's kernel commands', and every DMA the
        // report lists is an operation's or a staging copy's: the byte counts add up.
        let report_ops = r["ops"].as_array().unwrap();
        let is_dma = |o: &serde_json::Value| o["instruction"] == "NPU_OP_DMA_START";
        let kernel_cycles: u64 = report_ops
            .iter()
            .filter(|o| !is_dma(o))
            .map(|o| o["cycles"].as_u64().unwrap())
            .sum();
        let explained: u64 = ops
            .iter()
            .filter(|o| o["kernel"] != "DMA")
            .map(|o| o["cycles"].as_u64().unwrap())
            .sum();
        assert_eq!(explained, kernel_cycles, "{model} {options:?}");
        let sram_written = |o: &serde_json::Value| -> u64 {
            o["memory"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["memory"] == "Sram")
                .map(|m| m["written"].as_u64().unwrap())
                .sum()
        };
        let explained_sram: u64 = ops
            .iter()
            .map(|o| {
                sram_written(o)
                    + o.get("dma")
                        .filter(|d| !d.is_null())
                        .map_or(0, sram_written)
            })
            .sum::<u64>()
            + s["const_copy"]["bytes"].as_u64().unwrap_or(0);
        assert_eq!(
            explained_sram,
            r["sram_write_bytes"].as_u64().unwrap(),
            "{model} {options:?}"
        );
    }
}

#[test]
fn explain_text_lists_every_operation() {
    let out = npuc(&["explain", "models/tflite/conv2d_3x3_relu.tflite"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("schedule ethos-u85-256 Ethos_U85_SYS_DRAM_Mid Dedicated_Sram_384KB\n")
    );
    assert!(text.contains("op 0 CONV"), "{text}");
    assert!(text.contains("  source   #0 CONV_2D -> "), "{text}");
    assert!(text.contains("  block    ofm "), "{text}");
}

#[test]
fn explain_names_a_model_it_cannot_read() {
    let out = npuc(&["explain", "no/such/model.tflite"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/model.tflite"));
}

#[test]
fn json_and_text_are_the_same_schedule() {
    // The JSON reads back into a Schedule whose text form is what `npuc explain` prints.
    let model = "models/tflite/resnet8.tflite";
    let args = ["--accel", "ethos-u85-128", "--memory-mode", "Shared_Sram"];
    let j = json(&[&["explain", model, "--json"][..], &args[..]].concat());
    let schedule: npuc::compile::schedule::Schedule = serde_json::from_value(j).unwrap();
    let out = npuc(&[&["explain", model][..], &args[..]].concat());
    assert!(out.status.success());
    assert_eq!(schedule.text(), String::from_utf8(out.stdout).unwrap());
    assert!(schedule.ops.iter().any(|o| matches!(
        o.chain,
        Some(npuc::compile::schedule::Chain::Producer { .. })
    )));
}

#[test]
fn explain_names_the_ir_rewrites_that_ran() {
    // TOSA NEGATE (no elementwise mode) runs as a SUB; the i32 arithmetic also tiles its
    // broadcast operands: the passes in the order they ran.
    for (model, rewrites) in [
        ("models/tosa/tosa_negate.tosa", &["negate-as-sub"][..]),
        (
            "models/tosa/tosa_ew_i32_arith.tosa",
            &["negate-as-sub", "tile-broadcast-operands"][..],
        ),
    ] {
        let s = json(&["explain", model, "--json"]);
        assert_eq!(s["rewrites"], serde_json::json!(rewrites), "{model}");
        let out = npuc(&["explain", model]);
        assert!(out.status.success(), "{model}");
        let text = String::from_utf8(out.stdout).unwrap();
        let line = format!("rewrites {}", rewrites.join(", "));
        assert!(text.lines().any(|l| l == line), "{model}: {text}");
    }
    // A graph no rewrite matches: an empty list, and no line.
    let s = json(&["explain", "models/tflite/conv2d_3x3_relu.tflite", "--json"]);
    assert_eq!(s["rewrites"], serde_json::json!([]));
    let out = npuc(&["explain", "models/tflite/conv2d_3x3_relu.tflite"]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("rewrites"));
}
