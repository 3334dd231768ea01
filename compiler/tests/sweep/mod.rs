//! Randomized sweeps over TFLite operators: models built with the flatbuffer object API from
//! seeded random parameters (shapes, broadcasts, quantization, options), lowered by the TFLite
//! frontend, compiled by `npuc::compile` and run on the simulator against the reference
//! interpreter.
#![allow(dead_code)]

pub mod gen_ew;
pub mod gen_move;
pub mod gen_reduce;
pub mod run;
pub mod tfl;

use npuc_backend::arch::Accelerator;
pub use run::{Case, Outcome};

/// xorshift64* — deterministic parameters without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
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
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.usize(0, xs.len() - 1)]
    }
    /// Log-uniform in `[lo, hi]`.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo.ln() + u * (hi.ln() - lo.ln())).exp()
    }
    pub fn values(&mut self, n: usize, lo: i64, hi: i64) -> Vec<i64> {
        (0..n).map(|_| self.range(lo, hi)).collect()
    }
    /// A random permutation of `0..n`.
    pub fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.usize(0, i);
            p.swap(i, j);
        }
        p
    }
}

/// A generator of cases of one family.
pub type Gen = fn(&mut Rng) -> Case;

/// Every family: (name, generator).
pub fn families() -> Vec<(&'static str, Gen)> {
    vec![
        ("binary", gen_ew::binary),
        ("unary", gen_ew::unary),
        ("logical", gen_ew::logical),
        ("concat", gen_move::concat),
        ("split", gen_move::split),
        ("slice", gen_move::slice),
        ("strided_slice", gen_move::strided_slice),
        ("pad", gen_move::pad),
        ("transpose", gen_move::transpose),
        ("reshape", gen_move::reshape),
        ("pack", gen_move::pack),
        ("gather", gen_move::gather),
        ("tile", gen_move::tile),
        ("reverse", gen_move::reverse),
        ("space_depth", gen_move::space_depth),
        ("reduce", gen_reduce::reduce),
        ("arg_max", gen_reduce::arg_max),
        ("resize", gen_reduce::resize),
        ("softmax", gen_reduce::softmax),
    ]
}

/// The system configurations and memory modes a sweep compiles in: the default
/// (`Dedicated_Sram_384KB`, region 2 fast memory) and `Sram_Only`.
pub const MODES: [(&str, &str); 2] = [
    ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
    ("Ethos_U85_SYS_Flash_High", "Sram_Only"),
];

pub fn options(accel: Accelerator, mode: usize) -> npuc::compile::Options {
    use npuc_backend::system::presets;
    let (sys, mem) = MODES[mode];
    npuc::compile::Options {
        accelerator: accel,
        system_config: presets::system_config(sys).unwrap(),
        memory_mode: presets::memory_mode(mem).unwrap(),
        ..npuc::compile::Options::default()
    }
}

/// The cases of a sweep: `cases` per family from `seed`, (family, case index, case).
pub fn cases(
    families: &[(&'static str, Gen)],
    cases: usize,
    seed: u64,
) -> Vec<(&'static str, usize, Case)> {
    let mut out = vec![];
    for &(fam, gen) in families {
        for i in 0..cases {
            let s = seed ^ (i as u64).wrapping_mul(0x1000_0000_01b3) ^ (fam.len() as u64 * 77);
            let mut rng = Rng::new(s ^ hash(fam));
            out.push((fam, i, gen(&mut rng)));
        }
    }
    out
}

/// Runs `cases` cases of every family from `seed`; each case on the configurations and modes
/// `targets` picks for it (case index -> list of (accelerator, mode)). Returns a report of
/// every failure and refusal.
pub fn sweep(
    families: &[(&'static str, Gen)],
    n: usize,
    seed: u64,
    targets: &dyn Fn(usize) -> Vec<(Accelerator, usize)>,
) -> Report {
    let mut report = Report::default();
    for (fam, i, case) in cases(families, n, seed) {
        report.cases += 1;
        let g = match run::lower(&case) {
            Ok(g) => g,
            Err(o) => {
                report.record(fam, &case.name, "-", o);
                continue;
            }
        };
        for (accel, mode) in targets(i) {
            let o = run::run(&case, &g, &options(accel, mode), 2);
            report.runs += 1;
            let at = format!("{accel}/{}", MODES[mode].1);
            let refused = matches!(o, Outcome::Refused(_));
            report.record(fam, &case.name, &at, o);
            if refused {
                break;
            }
        }
    }
    report
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[derive(Default)]
pub struct Report {
    pub cases: usize,
    pub runs: usize,
    pub passed: usize,
    pub refused: Vec<String>,
    pub failed: Vec<String>,
}

impl Report {
    pub fn record(&mut self, fam: &str, name: &str, at: &str, o: Outcome) {
        match o {
            Outcome::Pass => self.passed += 1,
            Outcome::Refused(r) => self.refused.push(format!("[{fam}] {name} @ {at}: {r}")),
            Outcome::Fail(r) => self.failed.push(format!("[{fam}] {name} @ {at}: {r}")),
        }
    }
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} cases, {} runs: {} passed, {} refused, {} failed\n",
            self.cases,
            self.runs,
            self.passed,
            self.refused.len(),
            self.failed.len()
        );
        for f in &self.failed {
            s.push_str(&format!("FAIL {f}\n"));
        }
        for r in &self.refused {
            s.push_str(&format!("REFUSED {r}\n"));
        }
        s
    }
}
