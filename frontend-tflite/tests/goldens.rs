//! Golden test: every model in `models/tflite/` with goldens in `models/golden/<name>/` is
//! lowered to the IR and run on the reference interpreter; every output byte must equal the
//! TFLite reference-kernel output.
//!
//! Models that cannot be lowered yet, or differ for a known reason, are listed in [`KNOWN`]
//! with the reason. Listed models are still run: a listed model that passes fails the test
//! (remove it from the table), so the table can only shrink.

use npuc_frontend_tflite::lower::lower;
use npuc_frontend_tflite::TfliteModel;
use npuc_ir::{DType, TensorValue};
use std::path::{Path, PathBuf};

/// `(model, reason)` for models that are expected not to match yet.
const KNOWN: &[(&str, &str)] = &[
    ("abs_16x8", "ABS: ABS is lowered for int8 only"),
    ("ds_cnn_16x8", "SOFTMAX: only int8 softmax is lowered"),
    ("elu", "float model: the converter left DEQUANTIZE/float operators (TF 2.21 quirk); the IR is integer-only"),
    ("exp_16x8", "EXP: EXP is lowered for int8 only"),
    ("leaky_relu_16x8", "LEAKY_RELU: LEAKY_RELU is lowered for int8 only"),
    ("log_16x8", "LOG: LOG is lowered for int8 only"),
    ("log_softmax", "LOG_SOFTMAX: LOG_SOFTMAX is not lowered yet"),
    ("logistic_16x8", "LOGISTIC: LOGISTIC is lowered for int8 only"),
    ("mean_16x8", "MEAN: i16 MEAN is not lowered yet"),
    ("neg", "float model: the converter left DEQUANTIZE/float operators (TF 2.21 quirk); the IR is integer-only"),
    ("not_equal", "float model: the converter left DEQUANTIZE/float operators (TF 2.21 quirk); the IR is integer-only"),
    ("prelu", "PRELU: operator PRELU is not supported yet"),
    ("resize_bilinear_16x8", "RESIZE_BILINEAR: i16 bilinear resize is not supported yet (int8 only)"),
    ("rsqrt_16x8", "RSQRT: RSQRT is lowered for int8 only"),
    ("scatter_nd", "SCATTER_ND: operator SCATTER_ND is not supported yet"),
    ("softmax_16x8", "SOFTMAX: only int8 softmax is lowered"),
    ("tanh_16x8", "TANH: TANH is lowered for int8 only"),
];

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// Minimal `.npy` reader (format 1.0/2.0/3.0, little-endian, C order): `|i1`, `|u1`, `<i2`,
/// `<u2`, `<i4`, `<i8`, `|b1`.
fn read_npy(path: &Path) -> Result<TensorValue, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err(format!("{}: not an npy file", path.display()));
    }
    let (hlen, start) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
    };
    let header = std::str::from_utf8(&b[start..start + hlen]).map_err(|e| e.to_string())?;
    let field = |key: &str| -> Result<&str, String> {
        let i = header
            .find(&format!("'{key}'"))
            .ok_or(format!("no {key} in {header}"))?;
        Ok(header[i + key.len() + 3..].trim_start())
    };
    let descr = field("descr")?;
    let descr = &descr[1..descr[1..].find('\'').ok_or("bad descr")? + 1];
    if field("fortran_order")?.starts_with("True") {
        return Err("fortran order is not supported".into());
    }
    let shape_s = field("shape")?;
    let shape_s = &shape_s[1..shape_s.find(')').ok_or("bad shape")?];
    let shape: Vec<usize> = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let dtype = match descr {
        "|i1" => DType::Int8,
        "|u1" => DType::UInt8,
        "<i2" => DType::Int16,
        "<u2" => DType::UInt16,
        "<i4" => DType::Int32,
        "<i8" => DType::Int64,
        "|b1" => DType::Bool,
        other => return Err(format!("dtype {other} is not supported")),
    };
    TensorValue::from_le_bytes(dtype, shape, &b[start + hlen..]).map_err(|e| e.to_string())
}

/// Lowers and runs one model on all its golden samples; `Err` describes the first problem.
fn check_model(name: &str) -> Result<usize, String> {
    let dir = models_dir();
    let bytes =
        std::fs::read(dir.join(format!("tflite/{name}.tflite"))).map_err(|e| e.to_string())?;
    let model = TfliteModel::parse(&bytes).map_err(|e| format!("parse: {e}"))?;
    let lowered = lower(&model).map_err(|e| format!("lower: {e}"))?;
    let g = &lowered.graph;
    let gdir = dir.join(format!("golden/{name}"));
    let mut checked = 0;
    for k in 0.. {
        let first = gdir.join(format!("input0_{k}.npy"));
        if !first.exists() {
            break;
        }
        let inputs = (0..g.inputs().len())
            .map(|i| read_npy(&gdir.join(format!("input{i}_{k}.npy"))))
            .collect::<Result<Vec<_>, _>>()?;
        let outs = npuc_ir::run_outputs(g, inputs).map_err(|e| format!("sample {k}: run: {e}"))?;
        for (j, got) in outs.iter().enumerate() {
            let want = read_npy(&gdir.join(format!("output{j}_{k}.npy")))?;
            if got.shape() != want.shape() || got.dtype() != want.dtype() {
                return Err(format!(
                    "sample {k} output {j}: got {} expected {}",
                    got.tensor_type(),
                    want.tensor_type()
                ));
            }
            let (a, b) = (got.to_i64_vec(), want.to_i64_vec());
            let diffs: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
            if let Some(&i) = diffs.first() {
                let maxd = diffs
                    .iter()
                    .map(|&i| (a[i] - b[i]).abs())
                    .max()
                    .unwrap_or(0);
                return Err(format!(
                    "sample {k} output {j}: {} of {} elements differ (max |diff| {maxd}); first at {i}: got {} expected {}",
                    diffs.len(),
                    a.len(),
                    a[i],
                    b[i]
                ));
            }
            checked += 1;
        }
    }
    if checked == 0 {
        return Err("no golden samples".into());
    }
    Ok(checked)
}

fn golden_models() -> Vec<String> {
    let dir = models_dir();
    let mut names: Vec<String> = std::fs::read_dir(dir.join("tflite"))
        .expect("models/tflite")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "tflite" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .filter(|n| dir.join(format!("golden/{n}/meta.json")).exists())
        .collect();
    names.sort();
    names
}

#[test]
fn npy_reader_reads_a_golden() {
    let v = read_npy(&models_dir().join("golden/dense/output0_0.npy")).unwrap();
    assert_eq!(v.shape().dims(), &[1, 13]);
    assert_eq!(v.dtype(), DType::Int8);
}

#[test]
fn goldens_bit_exact() {
    let names = golden_models();
    assert!(!names.is_empty());
    let mut unexpected = vec![];
    let mut passed = 0;
    for name in &names {
        let known = KNOWN.iter().find(|(n, _)| n == name);
        match (check_model(name), known) {
            (Ok(_), None) => passed += 1,
            (Ok(_), Some(_)) => {
                unexpected.push(format!("{name}: passes now; remove it from KNOWN"))
            }
            (Err(e), None) => unexpected.push(format!("{name}: {e}")),
            (Err(e), Some((_, why))) => eprintln!("known: {name}: {why} ({e})"),
        }
    }
    eprintln!(
        "{passed} of {} models bit-exact, {} known",
        names.len(),
        KNOWN.len()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
