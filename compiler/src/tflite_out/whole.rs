//! A model compiled whole onto the NPU (e.g. from TOSA, which has no TFLite graph to keep) as
//! a TFLite file in Vela's format: one subgraph whose only operator is the `ethos-u` custom
//! operator, with the tensors Vela writes for TOSA input (`ethos_u_command_stream`,
//! `read_only`, `scratch`, `scratch_fast`, then the graph's inputs and outputs) and
//! `OfflineMemoryAllocation` placing the scratch tensors at 0 and each feature map at its
//! arena offset.

#![allow(clippy::field_reassign_with_default)] // the generated types are non-exhaustive

use super::write::{add_offline_allocation, ETHOS_U85_ID_WORD};
use super::TfliteOutError;
use crate::compile::{CompiledModel, TensorPlacement};
use npuc_backend::cop::write_cop1;
use npuc_frontend_tflite::schema::{
    self, BufferT, BuiltinOperator, ModelT, OperatorCodeT, OperatorT, QuantizationParametersT,
    SubGraphT, TensorT, TensorType,
};
use npuc_frontend_tflite::vela::ETHOS_U_CUSTOM_CODE;
use npuc_ir::{DType, Quantization};
use std::collections::BTreeMap;

fn tensor_type(d: DType) -> Result<TensorType, TfliteOutError> {
    Ok(match d {
        DType::Bool => TensorType::BOOL,
        DType::Int8 => TensorType::INT8,
        DType::UInt8 => TensorType::UINT8,
        DType::Int16 => TensorType::INT16,
        DType::UInt16 => TensorType::UINT16,
        DType::Int32 => TensorType::INT32,
        DType::Int64 => TensorType::INT64,
        DType::Float32 => TensorType::FLOAT32,
        DType::Int48 => {
            return Err(TfliteOutError::Write(
                "a graph input or output of type i48 has no TFLite type".into(),
            ))
        }
    })
}

fn quantization(q: &Quantization) -> QuantizationParametersT {
    let mut p = QuantizationParametersT::default();
    match q {
        Quantization::PerTensor { scale, zero_point } => {
            p.scale = Some(vec![*scale as f32]);
            p.zero_point = Some(vec![*zero_point]);
        }
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        } => {
            p.scale = Some(scales.iter().map(|&s| s as f32).collect());
            p.zero_point = Some(zero_points.clone());
            p.quantized_dimension = *axis as i32;
        }
    }
    p
}

fn bytes_tensor(name: &str, len: usize, buffer: u32) -> TensorT {
    let mut t = TensorT::default();
    t.name = Some(name.into());
    t.shape = Some(vec![i32::try_from(len).unwrap_or(i32::MAX)]);
    t.type_ = TensorType::UINT8;
    t.buffer = buffer;
    t
}

fn feature_map(p: &TensorPlacement) -> Result<TensorT, TfliteOutError> {
    let mut t = TensorT::default();
    t.name = Some(p.name.clone());
    t.shape = Some(
        p.shape
            .iter()
            .map(|&d| i32::try_from(d).unwrap_or(i32::MAX))
            .collect(),
    );
    t.type_ = tensor_type(p.dtype)?;
    t.quantization = p.quant.as_ref().map(|q| Box::new(quantization(q)));
    Ok(t)
}

/// Writes `m` as a `.tflite` with one `ethos-u` operator.
pub fn write_whole(m: &CompiledModel) -> Result<Vec<u8>, TfliteOutError> {
    let payload = write_cop1(
        m.config_word,
        ETHOS_U85_ID_WORD,
        &m.payload.command_words()?,
    )
    .ok_or_else(|| TfliteOutError::Write("the command stream is too long".into()))?;
    let mut buffers = vec![BufferT::default()];
    let mut data_buffer = |data: &[u8]| {
        if data.is_empty() {
            return 0;
        }
        let mut b = BufferT::default();
        b.data = Some(data.to_vec());
        buffers.push(b);
        (buffers.len() - 1) as u32
    };
    let cmd = data_buffer(&payload);
    let ro = data_buffer(&m.read_only);
    let mut tensors = vec![
        bytes_tensor("ethos_u_command_stream", payload.len(), cmd),
        bytes_tensor("read_only", m.read_only.len(), ro),
        bytes_tensor("scratch", m.arena_size as usize, 0),
        bytes_tensor("scratch_fast", m.fast_size as usize, 0),
    ];
    let mut offsets: BTreeMap<usize, i64> = BTreeMap::from([(2, 0), (3, 0)]);
    let mut add = |p: &TensorPlacement| -> Result<i32, TfliteOutError> {
        tensors.push(feature_map(p)?);
        let i = tensors.len() - 1;
        offsets.insert(i, p.offset as i64);
        Ok(i as i32)
    };
    let inputs = m
        .inputs
        .iter()
        .map(&mut add)
        .collect::<Result<Vec<_>, _>>()?;
    let outputs = m
        .outputs
        .iter()
        .map(&mut add)
        .collect::<Result<Vec<_>, _>>()?;

    let mut code = OperatorCodeT::default();
    code.deprecated_builtin_code = BuiltinOperator::CUSTOM.0 as i8;
    code.builtin_code = BuiltinOperator::CUSTOM;
    code.custom_code = Some(ETHOS_U_CUSTOM_CODE.into());
    code.version = 1;
    let mut op = OperatorT::default();
    op.opcode_index = 0;
    op.inputs = Some([vec![0, 1, 2, 3], inputs.clone()].concat());
    op.outputs = Some(outputs.clone());
    // As Vela writes it: a FlexBuffer holding the integer 1.
    op.custom_options = Some(vec![1, 4, 1]);
    let n_tensors = tensors.len();
    let mut sg = SubGraphT::default();
    sg.tensors = Some(tensors);
    sg.inputs = Some(inputs);
    sg.outputs = Some(outputs);
    sg.operators = Some(vec![op]);
    sg.name = Some("main".into());

    let mut model = ModelT::default();
    model.version = 3;
    model.description = Some("npuc".into());
    model.operator_codes = Some(vec![code]);
    model.subgraphs = Some(vec![sg]);
    model.buffers = Some(buffers);
    add_offline_allocation(&mut model, n_tensors, &offsets);
    let (operators, attributed) = crate::layers::operator_entries(m);
    let maps = crate::container::LayerMaps {
        version: if attributed {
            crate::layers::LAYERS_VERSION
        } else {
            0
        },
        streams: vec![crate::container::StreamLayers { operators }],
        cpu_operators: Vec::new(),
    };
    super::write::add_layers(&mut model, &maps);
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let root = model.pack(&mut fbb);
    schema::finish_model_buffer(&mut fbb, root);
    Ok(fbb.finished_data().to_vec())
}
