//! Vela's command line on `npuc compile`: a Vela command with `vela` replaced by `npuc compile`
//! writes the files Vela writes (names, CSV columns, `.npz` keys with their dtypes and shapes,
//! compared with Vela 5.2's own output in `models/vela_cli/`, made by
//! `models/scripts/make_vela_cli.sh`), and the `.tflite` it writes reproduces the reference
//! goldens in the simulator. TOSA input gives both formats too.

use npuc::run::npy;
use npuc_test_support::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn npuc(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_npuc"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("npuc runs")
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn header(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().next().unwrap().to_string()
}

fn golden(dir: &str, name: &str, what: &str, k: usize) -> Vec<npy::Array> {
    let mut v = Vec::new();
    let mut i = 0;
    while let Ok(b) = std::fs::read(models().join(format!("{dir}/{name}/{what}{i}_{k}.npy"))) {
        v.push(npy::read(&b).unwrap());
        i += 1;
    }
    assert!(!v.is_empty(), "{dir}/{name}: no {what}s");
    v
}

/// The members of a stored `.npz` (what `numpy.savez` writes): name -> (descr, shape).
fn npz_members(bytes: &[u8]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut p = 0;
    while bytes.get(p..p + 4) == Some(b"PK\x03\x04") {
        let u16_at = |o: usize| u16::from_le_bytes([bytes[p + o], bytes[p + o + 1]]) as usize;
        let mut size = u32::from_le_bytes(bytes[p + 18..p + 22].try_into().unwrap()) as usize;
        assert_eq!(u16_at(8), 0, "stored members only");
        let (n, x) = (u16_at(26), u16_at(28));
        if size == 0xffff_ffff {
            // NumPy forces ZIP64: the sizes are in the extra field (id 1: original size,
            // then compressed size, 8 bytes each).
            let e = p + 30 + n;
            assert_eq!(u16_at(30 + n), 1, "ZIP64 extra field");
            size = u64::from_le_bytes(bytes[e + 12..e + 20].try_into().unwrap()) as usize;
        }
        let name = String::from_utf8(bytes[p + 30..p + 30 + n].to_vec()).unwrap();
        let data = &bytes[p + 30 + n + x..p + 30 + n + x + size];
        assert_eq!(&data[..6], b"\x93NUMPY");
        let hl = u16::from_le_bytes([data[8], data[9]]) as usize;
        let h = String::from_utf8_lossy(&data[10..10 + hl]).into_owned();
        let field = |k: &str| {
            let s = &h[h.find(k).unwrap() + k.len()..];
            s.trim_start_matches([':', ' ']).to_string()
        };
        let descr = field("'descr'");
        let descr = descr[1..descr[1..].find('\'').unwrap() + 1].to_string();
        let shape = field("'shape'");
        let shape = shape[..shape.find(')').unwrap() + 1].to_string();
        out.push((name.trim_end_matches(".npy").to_string(), descr, shape));
        p += 30 + n + x + size;
    }
    out
}

/// A Vela command line: accelerator, system configuration, memory mode, config file, output
/// directory and verbose performance.
#[test]
fn a_vela_command_line_writes_velas_file_names_and_a_bit_exact_tflite() {
    let dir = Scratch::new("cli-vela-tflite");
    // A config file as Vela scripts pass one (a copy of the preset's sections).
    let ini = dir.join("my.ini");
    std::fs::write(
        &ini,
        "[System_Config.My_Flash_High]\ncore_clock=500e6\naxi0_port=Sram\naxi1_port=OffChipFlash\n\
         Sram_clock_scale=1.0\nSram_burst_length=32\nSram_read_latency=32\nSram_write_latency=32\n\
         OffChipFlash_clock_scale=0.25\nOffChipFlash_burst_length=128\nOffChipFlash_read_latency=64\n\
         OffChipFlash_write_latency=64\n",
    )
    .unwrap();
    let model = models().join("tflite/conv2d_3x3_relu.tflite");
    let out = dir.join("out");
    let o = npuc(
        &[
            "compile",
            model.to_str().unwrap(),
            "--accelerator-config",
            "ethos-u85-256",
            "--config",
            ini.to_str().unwrap(),
            "--system-config",
            "Ethos_U85_SYS_Flash_High",
            "--memory-mode",
            "Sram_Only",
            "--output-dir",
            out.to_str().unwrap(),
            "--verbose-performance",
            "--optimise",
            "Performance",
        ],
        &dir,
    );
    ok(&o);
    let vela = models().join("vela_cli/tflite");
    assert_eq!(names(&out), names(&vela));
    for f in names(&vela).iter().filter(|f| f.ends_with(".csv")) {
        assert_eq!(header(&out.join(f)), header(&vela.join(f)), "{f}");
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        let columns = header(&vela.join(f)).split(',').count();
        for line in text.lines().skip(1) {
            assert_eq!(line.split(',').count(), columns, "{f}: {line}");
        }
    }
    let summary =
        std::fs::read_to_string(out.join("conv2d_3x3_relu_summary_Ethos_U85_SYS_Flash_High.csv"))
            .unwrap();
    let row: Vec<&str> = summary.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(
        &row[..5],
        [
            "default",
            "conv2d_3x3_relu",
            "Ethos_U85_256",
            "Ethos_U85_SYS_Flash_High",
            "Sram_Only"
        ]
    );
    let tflite = std::fs::read(out.join("conv2d_3x3_relu_vela.tflite")).unwrap();
    for k in 0..3 {
        let inputs = golden("golden", "conv2d_3x3_relu", "input", k);
        let run = npuc::run::run_vela(&tflite, &inputs).unwrap();
        assert_eq!(
            run.outputs,
            golden("golden", "conv2d_3x3_relu", "output", k),
            "sample {k}"
        );
    }
}

#[test]
fn without_an_output_option_the_files_go_to_output_as_velas_do() {
    let dir = Scratch::new("cli-vela-default-dir");
    let model = models().join("tflite/conv2d_3x3_relu.tflite");
    ok(&npuc(&["compile", model.to_str().unwrap()], &dir));
    assert_eq!(
        names(&dir.join("output")),
        [
            "conv2d_3x3_relu_summary_Ethos_U85_SYS_DRAM_Mid.csv",
            "conv2d_3x3_relu_vela.tflite"
        ]
    );
}

fn raw_matches_velas(model: &str, vela_dir: &str) -> Vec<u8> {
    let dir = Scratch::new(&format!("cli-vela-{vela_dir}"));
    let o = npuc(
        &[
            "compile",
            models().join(model).to_str().unwrap(),
            "--accelerator-config",
            "ethos-u85-256",
            "--output-format",
            "raw",
            "--output-dir",
            "out",
        ],
        &dir,
    );
    ok(&o);
    let vela = models().join("vela_cli").join(vela_dir);
    let out = dir.join("out");
    assert_eq!(names(&out), names(&vela));
    let npz = names(&vela)
        .into_iter()
        .find(|f| f.ends_with(".npz"))
        .unwrap();
    let ours = std::fs::read(out.join(&npz)).unwrap();
    let theirs = npz_members(&std::fs::read(vela.join(&npz)).unwrap());
    let mine = npz_members(&ours);
    let keys = |v: &[(String, String, String)]| v.iter().map(|m| m.0.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&mine), keys(&theirs));
    for (a, b) in mine.iter().zip(&theirs) {
        match a.0.as_str() {
            // Sizes of the stream and the weights are npuc's own.
            "cmd_data" | "weight_data" => assert!(a.1.starts_with("|S") && b.1.starts_with("|S")),
            _ => assert_eq!(a, b),
        }
    }
    ours
}

#[test]
fn raw_output_has_velas_keys_dtypes_and_shapes_for_tflite_and_tosa() {
    let npz = raw_matches_velas("tflite/conv2d_3x3_relu.tflite", "raw");
    // cmd_data is the COP1 payload of the stream npuc compiles for the model, weight_data its
    // read-only region.
    let bytes = std::fs::read(models().join("tflite/conv2d_3x3_relu.tflite")).unwrap();
    let m = npuc::compile_file(&bytes, &npuc::Options::default()).unwrap();
    assert_eq!(npz, npuc::vela_output::raw_npz(&m).unwrap());
    raw_matches_velas("tosa/add_relu.tosa", "tosa_raw");
}

#[test]
fn a_tosa_model_compiles_to_a_vela_format_tflite_that_reproduces_its_goldens() {
    let dir = Scratch::new("cli-vela-tosa");
    for name in ["add_relu", "conv2d_16x8"] {
        let model = models().join(format!("tosa/{name}.tosa"));
        ok(&npuc(
            &["compile", model.to_str().unwrap(), "--output-dir", "out"],
            &dir,
        ));
        let tflite = std::fs::read(dir.join(format!("out/{name}_vela.tflite"))).unwrap();
        let m = npuc_frontend_tflite::TfliteModel::parse(&tflite).unwrap();
        assert_eq!(m.vela().unwrap().ethos_u_ops().count(), 1, "{name}");
        for k in 0..3 {
            let inputs = golden("golden-tosa", name, "input", k);
            let run = npuc::run::run_vela(&tflite, &inputs).unwrap();
            assert_eq!(
                run.outputs,
                golden("golden-tosa", name, "output", k),
                "{name} sample {k}"
            );
        }
    }
}

#[test]
fn vela_options_npuc_has_no_use_for_are_accepted_with_a_one_line_note() {
    let dir = Scratch::new("cli-vela-ignored");
    let model = models().join("tflite/conv2d_3x3_relu.tflite");
    let o = npuc(
        &[
            "compile",
            model.to_str().unwrap(),
            "--output-dir",
            "out",
            "--verbose-all",
            "--tensor-allocator",
            "HillClimb",
            "--cpu-tensor-alignment",
            "16",
            "--show-cpu-operations",
            "--arena-cache-size",
            "400000",
            "--optimise",
            "Size",
        ],
        &dir,
    );
    let err = ok(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(notes.len(), 3, "{err}");
    for opt in [
        "--verbose-all",
        "--tensor-allocator",
        "--cpu-tensor-alignment",
    ] {
        assert!(notes.iter().any(|n| n.contains(opt)), "{err}");
    }
    assert!(dir.join("out/conv2d_3x3_relu_vela.tflite").exists());
}

#[test]
fn list_configs_lists_a_files_sections_and_velas_bundled_name_lists_the_presets() {
    let dir = Scratch::new("cli-vela-list");
    let o = npuc(&["compile", "--list-configs", "Arm/vela.ini"], &dir);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    ok(&o);
    for s in [
        "System_Config.Ethos_U85_SYS_DRAM_Mid",
        "Memory_Mode.Dedicated_Sram_384KB",
    ] {
        assert!(out.contains(s), "{out}");
    }
    std::fs::write(
        dir.join("a.ini"),
        "[Memory_Mode.Mine]\nconst_mem_area=Axi1\narena_mem_area=Axi0\ncache_mem_area=Axi0\n",
    )
    .unwrap();
    let o = npuc(&["compile", "--list-configs", "a.ini"], &dir);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    ok(&o);
    assert_eq!(out.lines().nth(1), Some("   Memory_Mode.Mine"), "{out}");
}

#[test]
fn the_per_layer_csv_has_the_rows_of_npuc_report_per_layer() {
    let dir = Scratch::new("cli-vela-per-layer");
    let model = models().join("tflite/mobilenet_tiny.tflite");
    ok(&npuc(
        &[
            "compile",
            model.to_str().unwrap(),
            "--output-dir",
            "out",
            "--verbose-performance",
        ],
        &dir,
    ));
    let csv = std::fs::read_to_string(dir.join("out/mobilenet_tiny_per-layer.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.splitn(16, ',').collect())
        .collect();
    let tflite = dir.join("out/mobilenet_tiny_vela.tflite");
    let report = npuc(
        &["report", "--per-layer", "--json", tflite.to_str().unwrap()],
        &dir,
    );
    ok(&report);
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let layers = v["layers"].as_array().unwrap();
    assert_eq!(rows.len(), layers.len());
    let mut cycles = 0u64;
    for (r, l) in rows.iter().zip(layers) {
        assert_eq!(r[0], l["operator"].as_str().unwrap());
        assert_eq!(r[5], l["cycles"].to_string());
        assert_eq!(r[12], l["macs"].to_string());
        assert_eq!(r[15], l["output"].as_str().unwrap());
        cycles += r[5].parse::<u64>().unwrap();
    }
    // One row per source operator, which add up to the total.
    assert_eq!(rows[0][0], "CONV_2D");
    assert_eq!(rows.last().unwrap()[0], "SOFTMAX");
    assert_eq!(cycles, v["total_cycles"].as_u64().unwrap());
}
