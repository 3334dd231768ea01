//! `npuc._native`: the npuc library for Python. The `npuc` package (`npuc/__init__.py`) wraps
//! these functions: it turns numpy arrays into `(descr, shape, bytes)` triples and back, and
//! JSON text into dicts. Every failure raises `NpucError` with the message `npuc` prints on
//! the command line (after `npuc: error: `). The GIL is released while npuc works.

use anyhow::Context;
use npuc::run::npy::{Array, Dtype};
use npuc::{
    Accelerator, IniFile, Optimise, Options, OutputFormat, DEFAULT_MEMORY_MODE,
    DEFAULT_SYSTEM_CONFIG,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value};
use std::path::PathBuf;

create_exception!(
    _native,
    NpucError,
    PyException,
    "An error of npuc; the message is the one the command line prints."
);

/// The message of an error as the command line prints it (after `npuc: error: `).
fn py_err(e: anyhow::Error) -> PyErr {
    NpucError::new_err(npuc::error_message(e.as_ref()))
}

/// A model given as bytes or as a path: its bytes and how to name it in messages.
fn model_bytes(data: Option<Vec<u8>>, path: Option<PathBuf>) -> anyhow::Result<(Vec<u8>, String)> {
    match (data, path) {
        (Some(d), None) => Ok((d, "the model".to_string())),
        (None, Some(p)) => {
            let d = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
            Ok((d, p.display().to_string()))
        }
        _ => anyhow::bail!("give the model as bytes or as a path"),
    }
}

/// The target options, named as on the command line (`--accelerator-config`,
/// `--system-config`, `--memory-mode`, `--config`, `--optimise`): the `npuc` package passes
/// them as one dict to every function that compiles.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct TargetArgs {
    accelerator: String,
    system_config: Option<String>,
    memory_mode: Option<String>,
    config: Option<PathBuf>,
    optimise: String,
}

impl TargetArgs {
    /// The compile options these name.
    fn options(self) -> anyhow::Result<Options> {
        let accelerator: Accelerator = self.accelerator.parse()?;
        let optimise: Optimise = self
            .optimise
            .to_ascii_lowercase()
            .parse()
            .map_err(anyhow::Error::msg)?;
        let file = match self.config {
            Some(p) => Some(IniFile::read(&p)?),
            None => None,
        };
        Ok(Options::from_names(
            accelerator,
            self.system_config
                .as_deref()
                .unwrap_or(DEFAULT_SYSTEM_CONFIG),
            self.memory_mode.as_deref().unwrap_or(DEFAULT_MEMORY_MODE),
            file,
            optimise,
        )?)
    }
}

/// What `compile` returns: the file, the summary (JSON), the per-command report (JSON), the
/// estimated cycles, the per-source-operator report (JSON).
type Compiled = (Vec<u8>, String, String, u64, String);

fn compile_impl(
    data: Option<Vec<u8>>,
    path: Option<PathBuf>,
    target: TargetArgs,
    output: &str,
) -> anyhow::Result<Compiled> {
    let (bytes, name) = model_bytes(data, path)?;
    let options = target.options()?;
    let format = match output {
        "tflite" => OutputFormat::Tflite,
        "container" => OutputFormat::Container,
        "raw" => OutputFormat::Raw,
        other => anyhow::bail!("unknown output {other:?} (tflite, container or raw)"),
    };
    let out = npuc::compile_artifact(&bytes, format, &options, &mut |_| {})
        .with_context(|| format!("compiling {name} for {}", options.accelerator))?;
    let report = out.report().context("estimating the compiled model")?;
    // The layer map the output records (a raw .npz records none: from the compiled segments).
    let segments: Vec<&npuc::CompiledModel> = out.segments.iter().collect();
    let maps =
        npuc::layers::layer_maps(&out.bytes).or_else(|| npuc::vela_output::layer_maps(&segments));
    let per_layer = report.per_layer(maps.as_ref());
    Ok((
        out.bytes.clone(),
        serde_json::to_string(&out.summary)?,
        serde_json::to_string(&report.json()["ops"])?,
        out.cycles(),
        serde_json::to_string(&per_layer.json(&report)["layers"])?,
    ))
}

/// Compiles a model; see `npuc.compile`.
#[pyfunction]
#[pyo3(signature = (data, path, target, output))]
fn compile<'py>(
    py: Python<'py>,
    data: Option<Vec<u8>>,
    path: Option<PathBuf>,
    target: TargetArgs,
    output: &str,
) -> PyResult<(Bound<'py, PyBytes>, String, String, u64, String)> {
    let (bytes, summary, layers, cycles, per_layer) = py
        .detach(|| compile_impl(data, path, target, output))
        .map_err(py_err)?;
    Ok((PyBytes::new(py, &bytes), summary, layers, cycles, per_layer))
}

const DTYPES: [Dtype; 9] = [
    Dtype::Bool,
    Dtype::I8,
    Dtype::U8,
    Dtype::I16,
    Dtype::U16,
    Dtype::I32,
    Dtype::U32,
    Dtype::I64,
    Dtype::F32,
];

/// An input array from its numpy `descr`, shape and little-endian bytes.
fn array(index: usize, descr: &str, shape: Vec<usize>, data: Vec<u8>) -> anyhow::Result<Array> {
    let dtype = DTYPES
        .into_iter()
        .find(|d| d.descr() == descr)
        .with_context(|| format!("input {index}: arrays of dtype {descr:?} are not supported"))?;
    let n: usize = shape.iter().product();
    if n * dtype.size() != data.len() {
        anyhow::bail!(
            "input {index}: {} bytes for shape {shape:?} of {descr}",
            data.len()
        );
    }
    Ok(Array { dtype, shape, data })
}

/// An array as `(numpy descr, shape, little-endian bytes)`.
type Triple = (String, Vec<usize>, Vec<u8>);

/// An output array for Python: `(numpy descr, shape, bytes)`.
type PyTriple<'py> = (String, Vec<usize>, Bound<'py, PyBytes>);

fn run_impl(artifact: Vec<u8>, inputs: Vec<Triple>) -> anyhow::Result<Vec<Triple>> {
    let inputs = inputs
        .into_iter()
        .enumerate()
        .map(|(k, (d, s, b))| array(k, &d, s, b))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let outputs = if artifact.starts_with(&npuc::container::MAGIC) {
        npuc::run::run_container(&artifact, &inputs)?.outputs
    } else if npuc::run::is_npu_compiled(&artifact) {
        npuc::run::run_vela(&artifact, &inputs)?.outputs
    } else {
        npuc::reference::run_file(&artifact, &inputs)
            .context("running the model on the reference interpreter")?
    };
    Ok(outputs
        .into_iter()
        .map(|a| (a.dtype.descr().to_string(), a.shape, a.data))
        .collect())
}

/// Runs a compiled model on the simulator (or a plain model on the reference interpreter);
/// see `npuc.run`.
#[pyfunction]
fn run<'py>(
    py: Python<'py>,
    artifact: Vec<u8>,
    inputs: Vec<Triple>,
) -> PyResult<Vec<PyTriple<'py>>> {
    let outputs = py.detach(|| run_impl(artifact, inputs)).map_err(py_err)?;
    Ok(outputs
        .into_iter()
        .map(|(d, s, b)| (d, s, PyBytes::new(py, &b)))
        .collect())
}

fn verify_impl(
    data: Option<Vec<u8>>,
    path: Option<PathBuf>,
    target: TargetArgs,
    samples: usize,
    seed: u64,
) -> anyhow::Result<String> {
    let (bytes, name) = model_bytes(data, path)?;
    let options = target.options()?;
    let opts = npuc::verify::VerifyOptions { samples, seed };
    let parts = npuc::verify::verify_file(&bytes, &options, &opts)
        .with_context(|| format!("verifying {name}"))?;
    let parts: Vec<Value> = parts
        .iter()
        .map(|p| {
            let r = &p.report;
            json!({
                "part": p.part,
                "npu_operations": p.counts.npu_operations,
                "kernel_commands": p.counts.kernel_commands,
                "dma_commands": p.counts.dma_commands,
                "bit_exact": r.is_bit_exact(),
                "samples": r.samples,
                "bytes_compared": r.bytes_compared,
                "description": r.describe(),
                "mismatches": r.mismatches.iter().map(|m| json!({
                    "sample": m.sample,
                    "output": m.output,
                    "name": m.name,
                    "byte": m.byte,
                    "expected": m.expected,
                    "actual": m.actual,
                    "differing": m.differing,
                })).collect::<Vec<_>>(),
                "divergence": r.divergence.as_ref().map(|d| json!({
                    "index": d.index,
                    "name": d.name,
                    "fused": d.fused,
                    "params": d.params,
                    "byte": d.byte,
                    "expected": d.expected,
                    "actual": d.actual,
                    "differing": d.differing,
                })),
            })
        })
        .collect();
    let exact = parts.iter().all(|p| p["bit_exact"] == json!(true));
    Ok(serde_json::to_string(&json!({
        "bit_exact": exact,
        "accelerator": options.accelerator.name(),
        "system_config": options.system_config.name,
        "memory_mode": options.memory_mode.name,
        "parts": parts,
    }))?)
}

/// Compiles a model and compares the simulator with the reference interpreter; see
/// `npuc.verify`.
#[pyfunction]
#[pyo3(signature = (data, path, target, samples, seed))]
fn verify(
    py: Python<'_>,
    data: Option<Vec<u8>>,
    path: Option<PathBuf>,
    target: TargetArgs,
    samples: usize,
    seed: u64,
) -> PyResult<String> {
    py.detach(|| verify_impl(data, path, target, samples, seed))
        .map_err(py_err)
}

/// Disassembles every command stream of a compiled artifact; see `npuc.disasm`.
#[pyfunction]
fn disasm(py: Python<'_>, artifact: Vec<u8>) -> PyResult<String> {
    py.detach(|| -> anyhow::Result<String> {
        let a = npuc::artifact::Artifact::from_bytes(&artifact)?;
        Ok(npuc::disasm::text(&a)?)
    })
    .map_err(py_err)
}

/// npuc's native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NpucError", m.py().get_type::<NpucError>())?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(disasm, m)?)?;
    Ok(())
}
