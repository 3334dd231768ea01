//! `npuc compile -o MODEL.bin` then `npuc run MODEL.bin`: the container runs on the simulator
//! and reproduces the TFLite reference-kernel goldens byte for byte; a damaged container is a
//! clear error, not a panic.

use npuc::run::npy;
use npuc_test_support::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn npuc(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .output()
        .unwrap()
}

/// A test's scratch directory, removed when it ends.
fn scratch(tag: &str) -> Scratch {
    Scratch::new(&format!("run-container-{tag}"))
}

fn compile(model: &str, dir: &Path) -> PathBuf {
    let bin = dir.join(format!("{model}.bin"));
    let src = models().join(format!("tflite/{model}.tflite"));
    let out = npuc(&[
        "compile".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        bin.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

fn run(bin: &Path, golden: &Path, sample: usize, dir: &Path) -> (std::process::Output, PathBuf) {
    let dir = dir.join(format!("out-{sample}"));
    let input = golden.join(format!("input0_{sample}.npy"));
    let out = npuc(&[
        "run".as_ref(),
        bin.as_os_str(),
        "--input".as_ref(),
        input.as_os_str(),
        "--output-dir".as_ref(),
        dir.as_os_str(),
    ]);
    (out, dir)
}

#[test]
fn a_compiled_container_reproduces_the_tflite_goldens() {
    let tmp = scratch("golden");
    let bin = compile("conv2d_3x3_relu", &tmp);
    let golden = models().join("golden/conv2d_3x3_relu");
    for sample in 0..3 {
        let (out, dir) = run(&bin, &golden, sample, &tmp);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = npy::read(&std::fs::read(dir.join("out0.npy")).unwrap()).unwrap();
        let want = npy::read(&std::fs::read(golden.join(format!("output0_{sample}.npy"))).unwrap())
            .unwrap();
        assert_eq!((got.dtype, &got.shape), (want.dtype, &want.shape));
        assert!(
            got.data == want.data,
            "sample {sample} differs from the golden"
        );
    }
}

#[test]
fn a_truncated_container_is_a_clear_error() {
    let tmp = scratch("truncated");
    let bin = compile("conv2d_3x3_relu", &tmp);
    let bytes = std::fs::read(&bin).unwrap();
    let cut = tmp.join("truncated.bin");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (out, _) = run(&cut, &models().join("golden/conv2d_3x3_relu"), 0, &tmp);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated container"), "{err}");
}

#[test]
fn a_wrong_input_shape_names_the_input() {
    let tmp = scratch("shape");
    let bin = compile("conv2d_3x3_relu", &tmp);
    // add_broadcast's first input has another shape than conv2d_3x3_relu's.
    let (out, _) = run(&bin, &models().join("golden/add_broadcast"), 0, &tmp);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("input 0"), "{err}");
}
