//! `npuc disasm` as a user runs it.

use std::path::PathBuf;
use std::process::Command;

fn npuc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
}

fn model(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(rel)
}

#[test]
fn text_disassembly_of_a_vela_model_with_two_npu_operators() {
    let out = npuc()
        .args(["disasm"])
        .arg(model("vela/u85_256/two_npu_subgraphs_vela.tflite"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("# ethos-u operator"))
        .collect();
    assert_eq!(headers.len(), 2, "{text}");
    assert!(headers[0].starts_with("# ethos-u operator 0 (subgraph 0, operator 0): ethos-u85-256"));
    assert!(headers[1].starts_with("# ethos-u operator 1 (subgraph 0, operator 2): ethos-u85-256"));
    assert_eq!(
        text.lines()
            .filter(|l| l.ends_with("NPU_OP_STOP mask=0xffff"))
            .count(),
        2
    );
}

#[test]
fn json_disassembly_is_a_versioned_object_of_streams_and_raw_fields() {
    let out = npuc()
        .args(["disasm", "--json"])
        .arg(model("vela/u85_2048/conv2d_3x3_relu_vela.tflite"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], 1);
    let streams = v["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0]["accelerator"], "ethos-u85-2048");
    assert_eq!(streams[0]["origin"], "ethos-u operator");
    assert!(streams[0]["words"].as_u64().unwrap() > 0);
    let first = &v["commands"].as_array().unwrap()[0];
    assert_eq!(first["op"], 0);
    assert_eq!(first["offset"], 0);
    assert!(first["name"].as_str().unwrap().starts_with("NPU_"));
    assert!(first["fields"].is_object());
}

#[test]
fn a_raw_stream_file_disassembles() {
    let dir = npuc_test_support::Scratch::new("cli-disasm-stream");
    let path = dir.join("stream.bin");
    // NPU_SET_IFM_PAD_TOP 3; NPU_SET_OFM_BASE0 0x1234; NPU_OP_STOP.
    let words: [u32; 4] = [0x0003_0100, 0x0000_4010, 0x1234, 0xffff_0000];
    std::fs::write(
        &path,
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let out = npuc().arg("disasm").arg(&path).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "# command stream 0, 4 words\n0x0000 NPU_SET_IFM_PAD_TOP pad=3\n0x0004 NPU_SET_OFM_BASE0 addr=0x1234\n0x000c NPU_OP_STOP mask=0xffff\n"
    );
}

#[test]
fn bad_input_gives_a_clear_error_and_exit_status_1() {
    let dir = npuc_test_support::Scratch::new("cli-disasm-bad");
    let truncated = dir.join("truncated.tflite");
    let full = std::fs::read(model("vela/u85_256/conv2d_3x3_relu_vela.tflite")).unwrap();
    std::fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let cases = [
        (dir.join("missing.tflite"), "missing.tflite"),
        (truncated, "truncated.tflite"),
    ];
    for (path, name) in cases {
        let out = npuc().arg("disasm").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("npuc: error: reading "), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
    }
    // A stream whose second word has reserved control bits: the first line is printed, then
    // the error names the offset.
    let bad = dir.join("bad.bin");
    std::fs::write(&bad, [0x00, 0x01, 0x01, 0x00, 0x00, 0x80, 0x00, 0x00]).unwrap();
    let out = npuc().arg("disasm").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "# command stream 0, 2 words\n0x0000 NPU_SET_IFM_PAD_TOP pad=1\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("offset 0x4") && err.contains("reserved control bits"),
        "{err}"
    );
}

#[test]
fn a_plain_tflite_model_is_not_an_npu_artifact() {
    let out = npuc()
        .arg("disasm")
        .arg(model("tflite/conv2d_3x3_relu.tflite"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no ethos-u operators"));
}

#[test]
fn npuc_compile_output_disassembles() {
    let dir = npuc_test_support::Scratch::new("cli-disasm-container");
    let bin = dir.join("conv.bin");
    let out = npuc()
        .arg("compile")
        .arg(model("tflite/conv2d_3x3_relu.tflite"))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = npuc().arg("disasm").arg(&bin).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("# npuc container: ethos-u85-256, "),
        "{text}"
    );
    assert!(text.contains(" NPU_OP_CONV weights_ifm2=0\n"), "{text}");
    assert!(
        text.trim_end().ends_with("NPU_OP_STOP mask=0xffff"),
        "{text}"
    );
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly_with_status_0() {
    // `npuc disasm X | head`: the pipe closes before the (long) listing is written.
    let mut child = npuc()
        .arg("disasm")
        .arg(model("vela/u85_256/mobilenet_tiny_vela.tflite"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
