//! Randomized sweeps over TFLite operator parameters: models are built as flatbuffers, compiled
//! with `npuc::compile_file` (the TFLite frontend and the compiler, as `npuc compile` runs
//! them) for several configurations and memory modes, and run on the simulator against the
//! reference interpreter on the lowered graph (`npuc::verify::verify_graph`). A model Vela 5.2
//! accepts on the U85 must compile; any model npuc refuses must be refused with an error, never
//! a panic.
#![allow(dead_code)]

pub mod conv;
pub mod tflite;

use npuc::verify::{verify_graph, VerifyOptions};
use npuc_backend::arch::Accelerator;
use npuc_backend::system::presets;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// xorshift64* — deterministic parameters without a dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    pub fn usize(&mut self, lo: usize, hi: usize) -> usize {
        self.range(lo as i64, hi as i64) as usize
    }
    /// True with probability `p` percent.
    pub fn pct(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize]
    }
    /// Uniform in `[lo, hi)` as f64.
    pub fn f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// `2^u` with `u` uniform in `[lo, hi)`.
    pub fn log2(&mut self, lo: f64, hi: f64) -> f64 {
        self.f64(lo, hi).exp2()
    }
}

/// One generated model.
pub struct Model {
    /// The parameters, for failure messages.
    pub desc: String,
    pub bytes: Vec<u8>,
    /// Whether Vela 5.2 places the operator on the U85 (`Err`: the constraint it fails).
    pub vela: Result<(), String>,
}

/// A configuration with its system configuration and memory mode.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub accel: Accelerator,
    pub system: &'static str,
    pub mode: &'static str,
}

/// Every configuration in the default memory mode (`Dedicated_Sram_384KB`: feature maps in the
/// 384 KB fast memory, spilling to the DRAM arena), in `Sram_Only` (flash constants) and in
/// `Shared_Sram`.
pub fn all_targets() -> Vec<Target> {
    let mut v = Vec::new();
    for accel in Accelerator::ALL {
        for (system, mode) in [
            (presets::DEFAULT_SYSTEM_CONFIG, presets::DEFAULT_MEMORY_MODE),
            ("Ethos_U85_SYS_Flash_High", "Sram_Only"),
            ("Ethos_U85_SYS_DRAM_Low", "Shared_Sram"),
        ] {
            v.push(Target {
                accel,
                system,
                mode,
            });
        }
    }
    v
}

fn options(t: &Target) -> npuc::compile::Options {
    npuc::compile::Options {
        accelerator: t.accel,
        system_config: presets::system_config(t.system).unwrap(),
        memory_mode: presets::memory_mode(t.mode).unwrap(),
        ..npuc::compile::Options::default()
    }
}

/// What happened to one model.
#[derive(Debug, Default)]
pub struct Tally {
    pub passed: usize,
    /// Refused by npuc and by Vela (with npuc's message).
    pub refused: Vec<String>,
    /// Everything that must not happen: panics, wrong results, refusals of models Vela takes.
    pub failures: Vec<String>,
    /// Target runs whose random inputs the reference leaves undefined (an i32 overflow in a
    /// RESCALE of extreme scales): nothing to compare.
    pub undefined: usize,
}

impl Tally {
    pub fn merge(&mut self, o: Tally) {
        self.passed += o.passed;
        self.undefined += o.undefined;
        self.refused.extend(o.refused);
        self.failures.extend(o.failures);
    }
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "?".into())
}

/// Compiles `m` for every target and compares `samples` random inputs with the reference.
pub fn check_model(m: &Model, targets: &[Target], samples: usize) -> Tally {
    let mut tally = Tally::default();
    let graph = match npuc::reference::lower_file(&m.bytes) {
        Ok(g) => g,
        Err(e) => {
            let msg = format!("{}: frontend: {e}", m.desc);
            if m.vela.is_ok() {
                tally.failures.push(msg);
            } else {
                tally.refused.push(msg);
            }
            return tally;
        }
    };
    for t in targets {
        let opts = options(t);
        let what = format!("{} on {} {}", m.desc, t.accel, t.mode);
        let compiled = catch_unwind(AssertUnwindSafe(|| npuc::compile_file(&m.bytes, &opts)));
        let model = match compiled {
            Err(p) => {
                tally
                    .failures
                    .push(format!("{what}: compile panicked: {}", panic_text(p)));
                return tally;
            }
            Ok(Err(e)) => {
                let text = e.to_string();
                let text: Vec<&str> = text
                    .lines()
                    .filter(|l| {
                        !l.starts_with("write a .tflite") && !l.contains("cannot be one npuc")
                    })
                    .map(str::trim)
                    .collect();
                let msg = format!("{what}: {}", text.join(" | "));
                if m.vela.is_ok() {
                    tally
                        .failures
                        .push(format!("refused (Vela accepts): {msg}"));
                } else {
                    tally.refused.push(msg);
                }
                return tally;
            }
            Ok(Ok(model)) => model,
        };
        let vo = VerifyOptions { samples, seed: 7 };
        match catch_unwind(AssertUnwindSafe(|| verify_graph(&graph, &model, &vo))) {
            Err(p) => tally
                .failures
                .push(format!("{what}: verify panicked: {}", panic_text(p))),
            Ok(Err(e)) if e.to_string().contains("undefined result") => tally.undefined += 1,
            Ok(Err(e)) => tally.failures.push(format!("{what}: verify: {e}")),
            Ok(Ok(r)) if !r.is_bit_exact() => {
                tally.failures.push(format!("{what}: {}", r.describe()))
            }
            Ok(Ok(_)) => tally.passed += 1,
        }
    }
    tally
}

/// Runs `models` and prints a summary (and every refusal and failure).
pub fn run_sweep(name: &str, models: impl Iterator<Item = Model>, targets: &[Target]) -> Tally {
    let mut tally = Tally::default();
    let mut n = 0;
    for m in models {
        n += 1;
        if std::env::var_os("SWEEP_VERBOSE").is_some() {
            eprintln!("{name} #{n}: {}", m.desc);
        }
        tally.merge(check_model(&m, targets, 2));
    }
    eprintln!(
        "{name}: {n} models, {} target runs bit-exact, {} undefined in the reference, {} refused (Vela refuses too), {} failures",
        tally.passed,
        tally.undefined,
        tally.refused.len(),
        tally.failures.len()
    );
    for r in &tally.refused {
        eprintln!("  refused: {r}");
    }
    for f in &tally.failures {
        eprintln!("  FAILED: {f}");
    }
    tally
}

/// Panics listing every failure of a sweep.
pub fn assert_clean(name: &str, tally: &Tally) {
    assert!(
        tally.failures.is_empty(),
        "{name}: {} failures:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}
