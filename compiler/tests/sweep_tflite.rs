//! Randomized sweep over TFLite elementwise, data-movement, reduction, resize, softmax and
//! LUT operators (`sweep/`): every seeded case is built as a TFLite flatbuffer, lowered by the
//! frontend, compiled and run on the simulator against the reference interpreter.
//!
//! The default run takes a small fixed-seed subset, each case on one configuration and memory
//! mode; the full sweep (`cargo test --release -p npuc --test sweep_tflite -- --ignored`)
//! runs many more cases on all five configurations in both memory modes. Set
//! `NPUC_SWEEP_CASES` (cases per family), `NPUC_SWEEP_SEED` and `NPUC_SWEEP_FAMILY` (a name
//! filter) to explore.

mod sweep;

use npuc_backend::arch::Accelerator;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn families() -> Vec<(&'static str, sweep::Gen)> {
    let filter = std::env::var("NPUC_SWEEP_FAMILY").unwrap_or_default();
    sweep::families()
        .into_iter()
        .filter(|(n, _)| filter.is_empty() || filter.split(',').any(|f| n.contains(f)))
        .collect()
}

/// A fixed-seed subset: a few cases per family, each on one configuration and memory mode
/// (rotating), two samples each.
#[test]
fn fixed_seed_subset() {
    let one = |i: usize| {
        let a = Accelerator::ALL[i % Accelerator::ALL.len()];
        vec![(a, (i / Accelerator::ALL.len()) % sweep::MODES.len())]
    };
    let r = sweep::sweep(&families(), 6, 0x5eed_2025, &one);
    eprintln!("{}", r.summary());
    assert!(r.failed.is_empty(), "{} failures", r.failed.len());
}

#[test]
#[ignore]
fn full_sweep() {
    let cases = env("NPUC_SWEEP_CASES", 60) as usize;
    let seed = env("NPUC_SWEEP_SEED", 1);
    let all = |_: usize| {
        let mut v = vec![];
        for a in Accelerator::ALL {
            for m in 0..sweep::MODES.len() {
                v.push((a, m));
            }
        }
        v
    };
    let r = sweep::sweep(&families(), cases, seed, &all);
    eprintln!("{}", r.summary());
    assert!(r.failed.is_empty(), "{} failures", r.failed.len());
}

fn sweep_dir() -> std::path::PathBuf {
    std::env::var("NPUC_SWEEP_DIR")
        .unwrap_or_else(|_| "/tmp/npuc_sweep".into())
        .into()
}

/// Writes the sweep's models for `models/scripts/sweep_reference.py` (TFLite reference
/// kernels): `$NPUC_SWEEP_DIR/<k>/model.tflite` and `case.json`.
#[test]
#[ignore]
fn dump_cases() {
    let cases = env("NPUC_SWEEP_CASES", 60) as usize;
    let seed = env("NPUC_SWEEP_SEED", 1);
    let dir = sweep_dir();
    let _ = std::fs::remove_dir_all(&dir);
    for (k, (fam, i, case)) in sweep::cases(&families(), cases, seed)
        .into_iter()
        .enumerate()
    {
        let d = dir.join(format!("{k:05}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("model.tflite"), &case.bytes).unwrap();
        let json = format!(
            "{{\"name\": {:?}, \"family\": {fam:?}, \"index\": {i}, \"seed\": {k}, \"value_range\": {}, \"index_range\": [{}, {}]}}\n",
            case.name,
            case.value_range
                .map_or("null".to_string(), |(a, b)| format!("[{a}, {b}]")),
            case.index_range.0,
            case.index_range.1
        );
        std::fs::write(d.join("case.json"), json).unwrap();
    }
}

/// Compares the frontend's reference interpreter and the compiled container (default options,
/// every configuration) with the TFLite reference-kernel outputs that
/// `sweep_reference.py` wrote next to the dumped models.
#[test]
#[ignore]
fn tflite_reference() {
    use npuc::run::npy;
    let dir = sweep_dir();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("run dump_cases and sweep_reference.py first")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let (mut ok, mut tfl_refused, mut refused, mut bad) = (0, 0, vec![], vec![]);
    for d in entries {
        let meta = std::fs::read_to_string(d.join("case.json")).unwrap();
        let name = meta.split('"').nth(3).unwrap_or("?").to_string();
        if d.join("error.txt").exists() {
            tfl_refused += 1;
            continue;
        }
        let read_all = |prefix: &str| -> Vec<npy::Array> {
            (0..)
                .map(|k| d.join(format!("{prefix}{k}.npy")))
                .take_while(|p| p.exists())
                .map(|p| npy::read(&std::fs::read(p).unwrap()).unwrap())
                .collect()
        };
        let (ins, want) = (read_all("input"), read_all("output"));
        let bytes = std::fs::read(d.join("model.tflite")).unwrap();
        let tag = format!("{} {name}", d.file_name().unwrap().to_string_lossy());
        let graph = match npuc::reference::lower_file(&bytes) {
            Ok(g) => g,
            Err(e) => {
                refused.push(format!("{tag}: frontend: {e}"));
                continue;
            }
        };
        let diff = |got: &[npy::Array]| -> Option<String> {
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                if g.shape != w.shape || g.data.len() != w.data.len() {
                    return Some(format!("output {k}: shape {:?} vs {:?}", g.shape, w.shape));
                }
                if let Some(p) = g.data.iter().zip(&w.data).position(|(a, b)| a != b) {
                    let n = g.data.iter().zip(&w.data).filter(|(a, b)| a != b).count();
                    return Some(format!(
                        "output {k}: {n} of {} bytes differ, first at {p}: TFLite {:#04x}, npuc {:#04x}",
                        w.data.len(),
                        w.data[p],
                        g.data[p]
                    ));
                }
            }
            None
        };
        match npuc::reference::run_graph(&graph, &ins) {
            Ok(got) => {
                if let Some(e) = diff(&got) {
                    bad.push(format!("{tag}: reference interpreter: {e}"));
                    continue;
                }
            }
            Err(e) => {
                bad.push(format!("{tag}: reference interpreter: {e}"));
                continue;
            }
        }
        let mut compiled = true;
        for accel in Accelerator::ALL {
            let opts = npuc::compile::Options::new(accel);
            match npuc::compile_file_to_container(&bytes, &opts) {
                Ok(c) => match npuc::run::run_container(&c, &ins) {
                    Ok(r) => {
                        if let Some(e) = diff(&r.outputs) {
                            bad.push(format!("{tag} on {accel}: container: {e}"));
                        }
                    }
                    Err(e) => bad.push(format!("{tag} on {accel}: run: {e}")),
                },
                Err(e) => {
                    refused.push(format!("{tag}: compile: {e}"));
                    compiled = false;
                    break;
                }
            }
        }
        if compiled {
            ok += 1;
        }
    }
    eprintln!(
        "{ok} compiled and matched TFLite on all configurations; TFLite refused {tfl_refused}; npuc refused {}; {} wrong",
        refused.len(),
        bad.len()
    );
    for r in &refused {
        eprintln!("REFUSED {r}");
    }
    for b in &bad {
        eprintln!("WRONG {b}");
    }
    assert!(bad.is_empty());
}

/// int16 MUL: TFLite computes the multiplier `s1 * s2 / so` in `float` (mul.cc Prepare), so
/// 18713 x 20165 with these scales (26199.50004 in exact arithmetic) gives 26199, as TF 2.21
/// does; the `double` multiplier would round it to 26200 (found by `tflite_reference`).
#[test]
fn int16_mul_multiplier_is_computed_in_f32() {
    use npuc_frontend_tflite::schema::{BuiltinOperator as B, BuiltinOptionsT};
    use npuc_ir::{TensorData, TensorValue};
    use sweep::tfl::{Tfl, Ty};
    let mut t = Tfl::new();
    let x = t.input(&[2], Ty::I16, Some((0.000_543_560_9, 0)));
    let c = t.constant(&[2], Ty::I16, Some((0.017_708_203, 0)), &[20165, -20625]);
    let y = t.act(&[2], Ty::I16, Some((0.138_634_5, 0)));
    let opts = BuiltinOptionsT::MulOptions(Box::default());
    t.op(B::MUL, &[x, c], &[y], opts);
    t.output(y);
    let case = sweep::Case::new("mul", t.finish());
    let g = sweep::run::lower(&case).unwrap_or_else(|_| panic!("lowers"));
    let input = TensorValue::new(vec![2usize], TensorData::I16(vec![18713, 3721])).unwrap();
    let out = npuc_ir::run_outputs(&g, vec![input]).unwrap();
    assert_eq!(out[0].to_i64_vec(), [26199, -5328]);
}
