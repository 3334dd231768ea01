//! Running tests of the official TOSA conformance suite (`models/scripts/make_conformance.sh`)
//! through npuc: the reference interpreter on the lowered graph, and `compile` for
//! ethos-u85-256 + the simulator on the container, each compared byte for byte with the TOSA
//! reference model's results. Shared by the `#[ignore]`d whole-suite sweep and the committed
//! subset.

use npuc::compile::Options;
use npuc::run::npy::{self, Array, Dtype};
use npuc_backend::arch::Accelerator;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Tests whose inputs and results hold more bytes than this are not run (counted as skipped).
pub const MAX_TEST_BYTES: usize = 64 << 20;

/// How long one test (interpreter + compile + simulation) may take before it counts as a hang.
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// One conformance test: its directory, `test.tosa`, inputs and expected results.
pub struct Case {
    /// `<set>/<op>/<test>` for reports.
    pub name: String,
    /// The operator (desc.json `test_details.operator`, else the directory name).
    pub operator: String,
    /// The `test.tosa` bytes.
    pub model: Vec<u8>,
    /// Inputs in desc.json `ifm_file` order.
    pub inputs: Vec<Array>,
    /// Expected results in desc.json `ofm_file` order.
    pub expected: Vec<Array>,
}

/// What happened to one side (interpreter, or compile + simulator) of one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every output byte equals the reference model's.
    Exact,
    /// npuc refused with an error (the message).
    Refused(String),
    /// npuc produced a result that differs (what differs).
    Wrong(String),
    /// npuc panicked (the panic message).
    Crash(String),
    /// The test did not finish within [`TIMEOUT`].
    Hang,
}

/// The result of one test.
#[derive(Debug, Clone)]
pub struct Report {
    /// `Case::name`.
    pub name: String,
    /// `Case::operator`.
    pub operator: String,
    /// The reference interpreter on the lowered graph.
    pub interpreter: Outcome,
    /// Compile for ethos-u85-256 and simulate the container.
    pub compiled: Outcome,
}

fn read_npy(p: &Path) -> Result<Array, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    npy::read(&bytes).map_err(|e| format!("{}: {e}", p.display()))
}

fn strings(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every test directory (holding a `desc.json`) under `root`, sorted.
pub fn test_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "desc.json") {
                out.push(d.clone());
            }
        }
    }
    out.sort();
    out
}

/// Reads the test in `dir`; `Err` when it is incomplete (no results) or too large.
pub fn load(root: &Path, dir: &Path) -> Result<Case, String> {
    let desc: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("desc.json")).map_err(|e| format!("desc.json: {e}"))?,
    )
    .map_err(|e| format!("desc.json: {e}"))?;
    let model_file = desc["tosa_file"].as_str().unwrap_or("test.tosa");
    let model = std::fs::read(dir.join(model_file)).map_err(|e| format!("{model_file}: {e}"))?;
    let inputs = strings(&desc, "ifm_file")
        .iter()
        .map(|f| read_npy(&dir.join(f)))
        .collect::<Result<Vec<_>, _>>()?;
    let expected = strings(&desc, "ofm_file")
        .iter()
        .map(|f| read_npy(&dir.join(f)))
        .collect::<Result<Vec<_>, _>>()?;
    let bytes: usize = inputs
        .iter()
        .chain(&expected)
        .map(|a| a.data.len())
        .sum::<usize>()
        + model.len();
    if bytes > MAX_TEST_BYTES {
        return Err(format!("{bytes} bytes of data (limit {MAX_TEST_BYTES})"));
    }
    let name = dir
        .strip_prefix(root)
        .unwrap_or(dir)
        .to_string_lossy()
        .replace("/operators/", "/");
    let operator = desc["test_details"]["operator"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            dir.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().to_uppercase())
                .unwrap_or_default()
        });
    Ok(Case {
        name,
        operator,
        model,
        inputs,
        expected,
    })
}

/// Element values of an integer or bool array, widened to i64 (None for float data).
fn values(a: &Array) -> Option<Vec<i64>> {
    let size = a.dtype.size();
    let v = a.data.chunks_exact(size).map(|c| match a.dtype {
        Dtype::Bool | Dtype::U8 => i64::from(c[0]),
        Dtype::I8 => i64::from(c[0] as i8),
        Dtype::I16 => i64::from(i16::from_le_bytes([c[0], c[1]])),
        Dtype::U16 => i64::from(u16::from_le_bytes([c[0], c[1]])),
        Dtype::I32 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        Dtype::U32 => i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        Dtype::I64 => i64::from_le_bytes(c.try_into().unwrap()),
        Dtype::F32 => 0,
    });
    (a.dtype != Dtype::F32).then(|| v.collect())
}

/// Compares npuc's outputs with the reference model's: byte for byte when the dtypes agree,
/// else value for value (the reference model writes INT48 as int64, INT4 as int8).
pub fn compare(got: &[Array], want: &[Array]) -> Outcome {
    if got.len() != want.len() {
        return Outcome::Wrong(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let gn: usize = g.shape.iter().product();
        let wn: usize = w.shape.iter().product();
        if gn != wn {
            return Outcome::Wrong(format!(
                "output {k}: shape {:?}, expected {:?}",
                g.shape, w.shape
            ));
        }
        if g.dtype == w.dtype {
            if let Some(pos) = g.data.iter().zip(&w.data).position(|(a, b)| a != b) {
                let n = g.data.iter().zip(&w.data).filter(|(a, b)| a != b).count();
                return Outcome::Wrong(format!(
                    "output {k}: {n} bytes differ, the first at byte {pos}: expected {:#04x}, got {:#04x}",
                    w.data[pos], g.data[pos]
                ));
            }
            continue;
        }
        match (values(g), values(w)) {
            (Some(gv), Some(wv)) => {
                if let Some(pos) = gv.iter().zip(&wv).position(|(a, b)| a != b) {
                    return Outcome::Wrong(format!(
                        "output {k} ({} vs expected {}): element {pos}: expected {}, got {}",
                        g.dtype, w.dtype, wv[pos], gv[pos]
                    ));
                }
            }
            _ => {
                return Outcome::Wrong(format!(
                    "output {k}: dtype {}, expected {}",
                    g.dtype, w.dtype
                ))
            }
        }
    }
    Outcome::Exact
}

/// Runs `f`, turning a panic into [`Outcome::Crash`].
fn guarded(f: impl FnOnce() -> Outcome) -> Outcome {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(o) => o,
        Err(p) => Outcome::Crash(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into()),
        ),
    }
}

/// The reference interpreter on the lowered graph.
pub fn interpret(case: &Case) -> Outcome {
    guarded(
        || match npuc::reference::run_file(&case.model, &case.inputs) {
            Ok(out) => compare(&out, &case.expected),
            Err(e) => Outcome::Refused(e.to_string()),
        },
    )
}

/// Compiles for `accel` and runs the container on the simulator.
pub fn compile_and_run(case: &Case, accel: Accelerator) -> Outcome {
    guarded(|| {
        let container = match npuc::compile_file_to_container(&case.model, &Options::new(accel)) {
            Ok(c) => c,
            Err(e) => return Outcome::Refused(e.to_string()),
        };
        match npuc::run::run_container(&container, &case.inputs) {
            Ok(run) => compare(&run.outputs, &case.expected),
            // The stream was emitted, so a failure to run it is a wrong result.
            Err(e) => Outcome::Wrong(format!("the compiled container does not run: {e}")),
        }
    })
}

/// Runs one test on both sides, in a thread bounded by [`TIMEOUT`] (a hung thread is left
/// behind and reported as [`Outcome::Hang`]).
pub fn run(case: Case, accel: Accelerator) -> Report {
    let (name, operator) = (case.name.clone(), case.operator.clone());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let interpreter = interpret(&case);
        let compiled = compile_and_run(&case, accel);
        let _ = tx.send((interpreter, compiled));
    });
    let (interpreter, compiled) = rx
        .recv_timeout(TIMEOUT)
        .unwrap_or((Outcome::Hang, Outcome::Hang));
    Report {
        name,
        operator,
        interpreter,
        compiled,
    }
}

/// The class of a refusal: its message with numbers, names in quotes and shapes replaced,
/// so that refusals for one reason share one class.
pub fn refusal_class(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    // Drop the "operator N (NAME): " style prefixes' numbers and every other number.
    let mut out = String::new();
    let mut in_digits = false;
    let mut in_brackets = 0usize;
    for ch in first.chars() {
        match ch {
            '[' => {
                in_brackets += 1;
                if in_brackets == 1 {
                    out.push_str("[..]");
                }
                continue;
            }
            ']' => {
                in_brackets = in_brackets.saturating_sub(1);
                continue;
            }
            _ if in_brackets > 0 => continue,
            c if c.is_ascii_digit() => {
                if !in_digits {
                    out.push('#');
                }
                in_digits = true;
                continue;
            }
            _ => in_digits = false,
        }
        out.push(ch);
    }
    out.chars().take(110).collect()
}

/// Counts of one set of reports.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Tests run.
    pub total: usize,
    /// Interpreter exact.
    pub interp_exact: usize,
    /// Interpreter refused / wrong / crash / hang, with the test names.
    pub interp_failures: Vec<String>,
    /// Compiled and simulated exactly.
    pub compile_exact: usize,
    /// Refusals by class: count and one example (test, message).
    pub refused: BTreeMap<String, (usize, String)>,
    /// Wrong compiled results (test: what).
    pub wrong: Vec<String>,
    /// Compile panics or hangs (test: what).
    pub crash: Vec<String>,
}

impl Summary {
    /// Adds one report.
    pub fn add(&mut self, r: &Report) {
        self.total += 1;
        match &r.interpreter {
            Outcome::Exact => self.interp_exact += 1,
            o => self
                .interp_failures
                .push(format!("{} ({}): {o:?}", r.name, r.operator)),
        }
        match &r.compiled {
            Outcome::Exact => self.compile_exact += 1,
            Outcome::Refused(m) => {
                let e = self
                    .refused
                    .entry(refusal_class(m))
                    .or_insert((0, format!("{}: {m}", r.name)));
                e.0 += 1;
            }
            Outcome::Wrong(m) => self.wrong.push(format!("{} ({}): {m}", r.name, r.operator)),
            Outcome::Crash(m) => self.crash.push(format!("{} ({}): {m}", r.name, r.operator)),
            Outcome::Hang => self
                .crash
                .push(format!("{} ({}): hang", r.name, r.operator)),
        }
    }

    /// Refused tests.
    pub fn refused_total(&self) -> usize {
        self.refused.values().map(|v| v.0).sum()
    }

    /// A table of the figures, refusal classes largest first, and every failure.
    pub fn table(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{title}: {} tests | interpreter exact {}/{} | compile exact {} ({:.1} %), refused {} ({:.1} %), wrong {}, crash/hang {}",
            self.total,
            self.interp_exact,
            self.total,
            self.compile_exact,
            pct(self.compile_exact, self.total),
            self.refused_total(),
            pct(self.refused_total(), self.total),
            self.wrong.len(),
            self.crash.len()
        );
        let mut classes: Vec<_> = self.refused.iter().collect();
        classes.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
        for (class, (n, example)) in classes {
            let _ = writeln!(s, "  refused {n:5}  {class}");
            let _ = writeln!(s, "                 e.g. {}", first_line(example));
        }
        for f in &self.interp_failures {
            let _ = writeln!(s, "  INTERPRETER {}", first_line(f));
        }
        for f in &self.wrong {
            let _ = writeln!(s, "  WRONG {}", first_line(f));
        }
        for f in &self.crash {
            let _ = writeln!(s, "  CRASH {}", first_line(f));
        }
        s
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(300).collect()
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}
