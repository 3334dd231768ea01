//! Running one sweep case: TFLite bytes -> frontend -> `npuc::compile` on one configuration
//! and memory mode -> simulator, every output byte against the reference interpreter.

use npuc::compile::{compile, CompiledModel, Options};
use npuc_backend::sim::Simulator;
use npuc_ir::{DType, Graph, TensorData, TensorValue};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A generated model.
pub struct Case {
    /// What it is (operator, shapes, options), unique within a sweep.
    pub name: String,
    pub bytes: Vec<u8>,
    /// Range of the values of int32/int64 graph inputs (indices), inclusive.
    pub index_range: (i64, i64),
    /// Range of the values of int8/int16 graph inputs (defaults to the full range).
    pub value_range: Option<(i64, i64)>,
}

impl Case {
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> Case {
        Case {
            name: name.into(),
            bytes,
            index_range: (0, 0),
            value_range: None,
        }
    }
}

/// What happened to a case on one configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Compiled, and the simulator reproduced the interpreter on every sample.
    Pass,
    /// A clear error (frontend or compiler): the reason.
    Refused(String),
    /// A panic, a simulator error or a wrong output: what went wrong.
    Fail(String),
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
}

fn inputs(g: &Graph, case: &Case, seed: u64) -> Vec<TensorValue> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    g.inputs()
        .iter()
        .map(|&t| {
            let ty = &g.tensor(t).unwrap().ty;
            let n = ty.shape.num_elements().unwrap();
            let (lo, hi) = case
                .value_range
                .unwrap_or((ty.dtype.min_value(), ty.dtype.max_value()));
            let (ilo, ihi) = case.index_range;
            let data = match ty.dtype {
                DType::Int8 => TensorData::I8((0..n).map(|_| rng.range(lo, hi) as i8).collect()),
                DType::Int16 => TensorData::I16((0..n).map(|_| rng.range(lo, hi) as i16).collect()),
                DType::Int32 => {
                    TensorData::I32((0..n).map(|_| rng.range(ilo, ihi) as i32).collect())
                }
                DType::Int64 => TensorData::I64((0..n).map(|_| rng.range(ilo, ihi)).collect()),
                DType::Bool => TensorData::Bool((0..n).map(|_| rng.next() & 1 == 1).collect()),
                other => panic!("sweep input type {other}"),
            };
            TensorValue::new(ty.shape.clone(), data).unwrap()
        })
        .collect()
}

fn simulate(m: &CompiledModel, inputs: &[TensorValue]) -> Result<Vec<Vec<u8>>, String> {
    let mut sim = Simulator::new(m.accelerator);
    let mut ro = m.read_only.clone();
    ro.resize(ro.len().max(16), 0);
    sim.memory_mut().add_region(0, ro);
    let mut mems = [
        vec![0x5au8; m.arena_size as usize],
        vec![0xa5u8; m.fast_size as usize],
    ];
    for (p, v) in m.inputs.iter().zip(inputs) {
        let bytes = v.to_le_bytes();
        let o = p.offset as usize;
        mems[usize::from(p.region == 2)]
            .get_mut(o..o + bytes.len())
            .ok_or("input outside its region")?
            .copy_from_slice(&bytes);
    }
    let [arena, fast] = mems;
    let id = sim.memory_mut().add_region(1, arena);
    let fast_id = (m.fast_size > 0).then(|| sim.memory_mut().add_region(2, fast));
    sim.run(&m.payload.command_words().unwrap())
        .map_err(|e| format!("simulator: {e}"))?;
    m.outputs
        .iter()
        .map(|p| {
            let buf = if p.region == 2 { fast_id.unwrap() } else { id };
            sim.memory()
                .buffer(buf)
                .get(p.offset as usize..(p.offset + p.size) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "output outside its region".to_string())
        })
        .collect()
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "?".into())
}

/// Lowers a case with the TFLite frontend (a refusal is `Err`).
pub fn lower(case: &Case) -> Result<Graph, Outcome> {
    let model = npuc_frontend_tflite::TfliteModel::parse(&case.bytes)
        .map_err(|e| Outcome::Fail(format!("builder: model does not parse: {e}")))?;
    match catch_unwind(AssertUnwindSafe(|| {
        npuc_frontend_tflite::lower::lower(&model)
    })) {
        Ok(Ok(l)) => Ok(l.graph),
        Ok(Err(e)) => Err(Outcome::Refused(format!("frontend: {e}"))),
        Err(p) => Err(Outcome::Fail(format!("frontend panic: {}", panic_text(p)))),
    }
}

/// Compiles a lowered case with `options` and compares `samples` random samples.
pub fn run(case: &Case, g: &Graph, options: &Options, samples: usize) -> Outcome {
    let m = match catch_unwind(AssertUnwindSafe(|| compile(g, options))) {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return Outcome::Refused(format!("compile: {e}")),
        Err(p) => return Outcome::Fail(format!("compile panic: {}", panic_text(p))),
    };
    let mut compared = 0;
    for sample in 0..samples as u64 * 4 {
        if compared == samples {
            break;
        }
        let ins = inputs(g, case, 0x5eed + sample);
        let values = match catch_unwind(AssertUnwindSafe(|| npuc_ir::run(g, ins.clone()))) {
            Ok(Ok(v)) => v,
            Ok(Err(npuc_ir::InterpError::Undefined { .. })) => continue,
            Ok(Err(e)) => return Outcome::Fail(format!("reference: {e}")),
            Err(p) => return Outcome::Fail(format!("reference panic: {}", panic_text(p))),
        };
        let got = match catch_unwind(AssertUnwindSafe(|| simulate(&m, &ins))) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Outcome::Fail(e),
            Err(p) => return Outcome::Fail(format!("simulator panic: {}", panic_text(p))),
        };
        for (k, (&t, o)) in g.outputs().iter().zip(&got).enumerate() {
            let e = values[&t].to_le_bytes();
            if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                let n = e.iter().zip(o).filter(|(a, b)| a != b).count();
                let div = npuc::verify::localise(g, &m, &ins, &values, 0)
                    .ok()
                    .flatten()
                    .map(|d| {
                        format!(
                            "; first diverging NPU op #{} {} (fused {}): {}",
                            d.index,
                            d.name,
                            d.fused.join(","),
                            d.params
                        )
                    })
                    .unwrap_or_default();
                return Outcome::Fail(format!(
                    "sample {sample} output {k}: {n} of {} bytes differ, first at {pos}: expected {:#04x} got {:#04x}{div}",
                    e.len(),
                    e[pos],
                    o[pos]
                ));
            }
            if e.len() != o.len() {
                return Outcome::Fail(format!("output {k}: size {} vs {}", o.len(), e.len()));
            }
        }
        compared += 1;
    }
    if compared == 0 {
        return Outcome::Fail("every sample undefined in the reference".into());
    }
    Outcome::Pass
}
