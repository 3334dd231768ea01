//! The command-line tool under hostile or careless use (issue 16 C): it never destroys its
//! input, says each cause of an error once, never exits 0 without having done what it claims,
//! and leaves no partial output behind.

use npuc_test_support::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// A fresh, empty scratch directory for one test, removed when it ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("cli-hostile-{name}"))
}

fn npuc<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Fails when any part of the message (the pieces between `": "`) is said twice: each cause
/// of an error is printed once.
fn assert_said_once(msg: &str) {
    let parts: Vec<&str> = msg
        .trim()
        .split(": ")
        .map(str::trim)
        .filter(|p| p.len() > 8)
        .collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..]
                .iter()
                .any(|q| q.contains(p) || p.contains(q)),
            "{p:?} is said more than once in\n{msg}"
        );
    }
}

fn tflite(name: &str) -> PathBuf {
    models().join(format!("tflite/{name}.tflite"))
}

// ---- C6: compile never overwrites its input; the output kind ignores case ----

#[test]
fn compile_refuses_to_overwrite_its_input() {
    let d = scratch("overwrite");
    let m = d.join("m.tflite");
    std::fs::copy(tflite("add_relu"), &m).unwrap();
    let before = std::fs::read(&m).unwrap();
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    for out in [m.clone(), sub.join("../m.tflite"), d.join("./m.tflite")] {
        let o = npuc(&[
            "compile".as_ref(),
            m.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        let e = stderr(&o);
        assert!(!o.status.success(), "{}", out.display());
        assert!(e.contains("is the input"), "{e}");
        assert_eq!(std::fs::read(&m).unwrap(), before, "the model was changed");
    }
    // Through a symbolic link, too.
    #[cfg(unix)]
    {
        let link = d.join("link.bin");
        std::os::unix::fs::symlink(&m, &link).unwrap();
        let o = npuc(&[
            "compile".as_ref(),
            m.as_os_str(),
            "-o".as_ref(),
            link.as_os_str(),
        ]);
        assert!(!o.status.success());
        assert_eq!(std::fs::read(&m).unwrap(), before);
    }
}

#[test]
fn the_output_kind_follows_the_extension_in_any_case() {
    let d = scratch("case");
    let out = d.join("X.TFLITE");
    let m = tflite("add_relu");
    let o = npuc(&[
        "compile".as_ref(),
        m.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[4..8], b"TFL3", "X.TFLITE must be a TFLite file");
}

// ---- C7: errors said once, and in terms of the input ----

#[test]
fn a_truncated_model_says_truncated_once() {
    let d = scratch("truncated");
    let full = std::fs::read(tflite("conv2d_16x8")).unwrap();
    for cut in [full.len() / 2, 40, 7] {
        let m = d.join(format!("cut{cut}.tflite"));
        std::fs::write(&m, &full[..cut]).unwrap();
        let out = d.join("o.bin");
        let o = npuc(&[
            "compile".as_ref(),
            m.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        let e = stderr(&o);
        assert!(!o.status.success());
        assert!(
            e.contains("truncated") || e.contains("not a TFLite file"),
            "cut at {cut}: {e}"
        );
        assert_said_once(&e);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(!out.exists());
    }
}

#[test]
fn a_container_given_to_compile_is_named_a_container() {
    let d = scratch("container");
    let bin = d.join("m.bin");
    let m = tflite("add_relu");
    let o = npuc(&[
        "compile".as_ref(),
        m.as_os_str(),
        "-o".as_ref(),
        bin.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again = d.join("again.bin");
    let o = npuc(&[
        "compile".as_ref(),
        bin.as_os_str(),
        "-o".as_ref(),
        again.as_os_str(),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(e.contains("container"), "{e}");
    assert_said_once(&e);
    // A Vela-compiled model is named as such too.
    let vela = models().join("vela/u85_256/abs_vela.tflite");
    let o = npuc(&[
        "compile".as_ref(),
        vela.as_os_str(),
        "-o".as_ref(),
        again.as_os_str(),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(e.contains("already compiled"), "{e}");
    assert!(!again.exists());
}

#[test]
fn disasm_of_an_empty_file_is_an_error() {
    let d = scratch("empty");
    let empty = d.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    for f in [Path::new("/dev/null"), empty.as_path()] {
        if !f.exists() {
            continue;
        }
        for extra in [None, Some("--json")] {
            let mut a = vec!["disasm".as_ref(), f.as_os_str()];
            a.extend(extra.map(std::ffi::OsStr::new));
            let o = npuc(&a);
            let e = stderr(&o);
            assert!(!o.status.success(), "{}: exit 0", f.display());
            assert!(e.contains("empty"), "{e}");
            assert_said_once(&e);
        }
    }
}

#[test]
fn errors_of_disasm_report_and_run_are_said_once() {
    let d = scratch("said-once");
    // A container cut after its header: the container reader's error, once.
    let bin = d.join("m.bin");
    let m = tflite("add_relu");
    let o = npuc(&[
        "compile".as_ref(),
        m.as_os_str(),
        "-o".as_ref(),
        bin.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cut = d.join("cut.bin");
    std::fs::write(&cut, &std::fs::read(&bin).unwrap()[..40]).unwrap();
    for cmd in ["disasm", "report"] {
        let o = npuc(&[cmd.as_ref(), cut.as_os_str()]);
        assert!(!o.status.success());
        assert_said_once(&stderr(&o));
    }
    let o = npuc(&[
        "run".as_ref(),
        cut.as_os_str(),
        "--output-dir".as_ref(),
        d.join("out").as_os_str(),
    ]);
    assert!(!o.status.success());
    assert_said_once(&stderr(&o));
}

// ---- C5: verify exits 0 only after comparing output bytes ----

#[test]
fn verify_fails_when_it_compares_nothing() {
    let vela = models().join("vela/u85_256/abs_vela.tflite");
    let o = npuc(&["verify".as_ref(), vela.as_os_str()]);
    let e = stderr(&o);
    assert!(!o.status.success(), "a Vela .tflite verified: {e}");
    assert!(e.contains("already compiled"), "{e}");

    let m = tflite("add_relu");
    let o = npuc(&[
        "verify".as_ref(),
        m.as_os_str(),
        "--samples".as_ref(),
        "0".as_ref(),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success(), "--samples 0 verified: {e}");
    assert!(e.contains("--samples"), "{e}");

    let o = npuc(&["verify".as_ref(), m.as_os_str()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("output bytes compared"), "{out}");
}

// ---- C8: run writes all outputs or none ----

fn run_act(out_dir: &Path) -> Output {
    let g = models().join("golden/legacy_u8_act");
    let m = tflite("legacy_u8_act");
    npuc(&[
        "run".as_ref(),
        m.as_os_str(),
        "--input".as_ref(),
        g.join("input0_0.npy").as_os_str(),
        "--input".as_ref(),
        g.join("input1_0.npy").as_os_str(),
        "--output-dir".as_ref(),
        out_dir.as_os_str(),
    ])
}

#[test]
fn run_writes_every_output_or_none() {
    let d = scratch("atomic");
    // out3.npy cannot be written (a directory is in the way): nothing is written.
    std::fs::create_dir_all(d.join("out3.npy/x")).unwrap();
    let o = run_act(&d);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(e.contains("out3.npy"), "{e}");
    for k in 0..8 {
        if k != 3 {
            assert!(
                !d.join(format!("out{k}.npy")).exists(),
                "out{k}.npy left behind"
            );
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn run_clears_outputs_of_an_earlier_run() {
    let d = scratch("stale");
    for k in [8, 9, 12] {
        std::fs::write(d.join(format!("out{k}.npy")), b"stale").unwrap();
    }
    std::fs::write(d.join("notes.txt"), b"mine").unwrap();
    let o = run_act(&d);
    assert!(o.status.success(), "{}", stderr(&o));
    for k in 0..8 {
        assert!(d.join(format!("out{k}.npy")).exists());
    }
    for k in [8, 9, 12] {
        assert!(
            !d.join(format!("out{k}.npy")).exists(),
            "stale out{k}.npy kept"
        );
    }
    assert!(
        d.join("notes.txt").exists(),
        "a file that is not an output was removed"
    );
}

#[test]
fn run_with_an_output_dir_that_is_a_file() {
    let d = scratch("file-dir");
    let f = d.join("plain");
    std::fs::write(&f, b"x").unwrap();
    let o = run_act(&f);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(e.contains("is a file, not a directory"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), b"x");
}
