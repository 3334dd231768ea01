//! Running a plain (not NPU-compiled) model on the reference interpreter of `npuc-ir`: a
//! `.tflite` without `ethos-u` operators is lowered with TFLite's integer semantics, a `.tosa`
//! with TOSA's, and the graph is interpreted. This is what `npuc run` does for such files, and
//! what every compiled model is checked against.

use crate::run::npy::{Array, Dtype};
use npuc_ir::{DType, Graph, TensorData, TensorValue};

/// Why a plain model could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The TFLite file is malformed.
    #[error("{0}")]
    Tflite(Box<npuc_frontend_tflite::TfliteError>),
    /// The TFLite graph cannot be lowered.
    #[error("{0}")]
    TfliteLower(Box<npuc_frontend_tflite::lower::LowerError>),
    /// The TOSA file is malformed.
    #[error("{0}")]
    Tosa(Box<npuc_frontend_tosa::TosaError>),
    /// The TOSA graph cannot be lowered.
    #[error("{0}")]
    TosaLower(Box<npuc_frontend_tosa::LowerError>),
    /// The inputs do not match the graph.
    #[error("input {index}: {reason}")]
    Input {
        /// Input number.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The interpreter stopped.
    #[error("{0}")]
    Interp(Box<npuc_ir::InterpError>),
    /// An output type has no `.npy` form.
    #[error("output {0} has type {1:?}, which has no .npy form here")]
    OutputType(usize, DType),
}

macro_rules! boxed_from {
    ($($variant:ident: $ty:ty),*) => {
        $(impl From<$ty> for ReferenceError {
            fn from(e: $ty) -> Self {
                ReferenceError::$variant(Box::new(e))
            }
        })*
    };
}

boxed_from!(
    Tflite: npuc_frontend_tflite::TfliteError,
    TfliteLower: npuc_frontend_tflite::lower::LowerError,
    Tosa: npuc_frontend_tosa::TosaError,
    TosaLower: npuc_frontend_tosa::LowerError,
    Interp: npuc_ir::InterpError
);

/// Whether `bytes` is a TOSA flatbuffer (identifier `TOSA` at byte 4).
pub fn is_tosa(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"TOSA")
}

/// Lowers a plain `.tflite` or `.tosa` file to the IR.
pub fn lower_file(bytes: &[u8]) -> Result<Graph, ReferenceError> {
    if is_tosa(bytes) {
        let model = npuc_frontend_tosa::TosaModel::parse(bytes)?;
        return Ok(npuc_frontend_tosa::lower(&model)?);
    }
    let model = npuc_frontend_tflite::TfliteModel::parse(bytes)?;
    Ok(npuc_frontend_tflite::lower::lower(&model)?.graph)
}

fn ir_dtype(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::Bool => DType::Bool,
        Dtype::I8 => DType::Int8,
        Dtype::U8 => DType::UInt8,
        Dtype::I16 => DType::Int16,
        Dtype::U16 => DType::UInt16,
        Dtype::I32 => DType::Int32,
        Dtype::I64 => DType::Int64,
        Dtype::F32 => DType::Float32,
        Dtype::U32 => return None,
    })
}

fn npy_dtype(d: DType) -> Option<Dtype> {
    Some(match d {
        DType::Bool => Dtype::Bool,
        DType::Int8 => Dtype::I8,
        DType::UInt8 => Dtype::U8,
        DType::Int16 => Dtype::I16,
        DType::UInt16 => Dtype::U16,
        DType::Int32 => Dtype::I32,
        DType::Int64 => Dtype::I64,
        DType::Float32 => Dtype::F32,
        DType::Int48 => return None,
    })
}

/// Interprets `graph` on `inputs` (in the graph's input order) and returns its outputs.
pub fn run_graph(graph: &Graph, inputs: &[Array]) -> Result<Vec<Array>, ReferenceError> {
    if inputs.len() != graph.inputs().len() {
        return Err(ReferenceError::Input {
            index: inputs.len().min(graph.inputs().len()),
            reason: format!(
                "the graph has {} inputs, {} given",
                graph.inputs().len(),
                inputs.len()
            ),
        });
    }
    let mut values = Vec::with_capacity(inputs.len());
    for (index, (&t, a)) in graph.inputs().iter().zip(inputs).enumerate() {
        let expected = graph.tensor(t).map(|x| x.ty.clone());
        let bad = |reason: String| ReferenceError::Input { index, reason };
        let ty = expected.ok_or_else(|| bad("the graph input is missing".into()))?;
        let dtype = ir_dtype(a.dtype)
            .ok_or_else(|| bad(format!("{} arrays are not supported", a.dtype)))?;
        // An INT48 input is given as int64 (`.npy` has no 48-bit type; the TOSA reference
        // model writes INT48 so): each value must fit 48 bits.
        if ty.dtype == DType::Int48 && dtype == DType::Int64 && a.shape == ty.shape.dims() {
            let wide = TensorData::from_le_bytes(DType::Int64, &a.data)
                .map_err(|e| bad(e.to_string()))?
                .to_i64_vec();
            let data = TensorData::from_i64(DType::Int48, &wide).map_err(|e| bad(e.to_string()))?;
            values.push(TensorValue::new(a.shape.clone(), data).map_err(|e| bad(e.to_string()))?);
            continue;
        }
        if dtype != ty.dtype || a.shape != ty.shape.dims() {
            return Err(bad(format!(
                "{} {:?} given, the graph expects {:?} {:?}",
                a.dtype,
                a.shape,
                ty.dtype,
                ty.shape.dims()
            )));
        }
        values.push(
            TensorValue::from_le_bytes(dtype, a.shape.clone(), &a.data)
                .map_err(|e| bad(e.to_string()))?,
        );
    }
    let outputs = npuc_ir::run_outputs(graph, values)?;
    outputs
        .into_iter()
        .enumerate()
        .map(|(k, v)| {
            let dt = v.dtype();
            // INT48 results as int64, as the TOSA reference model writes them.
            if dt == DType::Int48 {
                let wide: Vec<u8> = v
                    .to_i64_vec()
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                return Ok(Array {
                    dtype: Dtype::I64,
                    shape: v.shape().dims().to_vec(),
                    data: wide,
                });
            }
            let dtype = npy_dtype(dt).ok_or(ReferenceError::OutputType(k, dt))?;
            Ok(Array {
                dtype,
                shape: v.shape().dims().to_vec(),
                data: v.to_le_bytes(),
            })
        })
        .collect()
}

/// Lowers and interprets a plain `.tflite` or `.tosa` file.
pub fn run_file(bytes: &[u8], inputs: &[Array]) -> Result<Vec<Array>, ReferenceError> {
    run_graph(&lower_file(bytes)?, inputs)
}
