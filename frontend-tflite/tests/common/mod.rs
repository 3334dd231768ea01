//! Builders for small TFLite models, written with the generated object API.
//!
//! The generated `*T` types are `#[non_exhaustive]`, so they are built from `default()`.
#![allow(dead_code)] // each test binary uses a different subset

use npuc_frontend_tflite::schema::{
    finish_model_buffer, ActivationFunctionType, BufferT, BuiltinOperator, BuiltinOptionsT,
    Conv2DOptionsT, MetadataT, ModelT, OperatorCodeT, OperatorT, Padding, QuantizationParametersT,
    SubGraphT, TensorT, TensorType,
};

/// Serialises a model with the `TFL3` identifier.
pub fn finish(model: &ModelT) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let root = model.pack(&mut fbb);
    finish_model_buffer(&mut fbb, root);
    fbb.finished_data().to_vec()
}

pub fn buffer(data: &[u8]) -> BufferT {
    let mut b = BufferT::default();
    b.data = Some(data.to_vec());
    b
}

/// A buffer whose data is past the flatbuffer, at an absolute file offset.
pub fn appended_buffer(offset: u64, size: u64) -> BufferT {
    let mut b = BufferT::default();
    b.offset = offset;
    b.size = size;
    b
}

pub fn empty_buffer() -> BufferT {
    BufferT::default()
}

pub fn tensor(name: &str, shape: &[i32], dtype: TensorType, buffer: u32) -> TensorT {
    let mut t = TensorT::default();
    t.name = Some(name.to_owned());
    t.shape = Some(shape.to_vec());
    t.type_ = dtype;
    t.buffer = buffer;
    t
}

pub fn quantized(mut t: TensorT, scale: &[f32], zero_point: &[i64], dim: i32) -> TensorT {
    let mut q = QuantizationParametersT::default();
    q.scale = Some(scale.to_vec());
    q.zero_point = Some(zero_point.to_vec());
    q.quantized_dimension = dim;
    t.quantization = Some(Box::new(q));
    t
}

/// An operator code the way current converters write it: both fields, the i8 one
/// saturated at 127 for codes that do not fit.
pub fn builtin_code(op: BuiltinOperator) -> OperatorCodeT {
    let mut c = OperatorCodeT::default();
    c.deprecated_builtin_code = op.0.clamp(0, 127) as i8;
    c.builtin_code = op;
    c.version = 1;
    c
}

pub fn custom_code(code: &str) -> OperatorCodeT {
    let mut c = builtin_code(BuiltinOperator::CUSTOM);
    c.custom_code = Some(code.to_owned());
    c
}

pub fn operator(opcode_index: u32, inputs: &[i32], outputs: &[i32]) -> OperatorT {
    let mut op = OperatorT::default();
    op.opcode_index = opcode_index;
    op.inputs = Some(inputs.to_vec());
    op.outputs = Some(outputs.to_vec());
    op
}

pub fn metadata(name: &str, buffer: u32) -> MetadataT {
    let mut m = MetadataT::default();
    m.name = Some(name.to_owned());
    m.buffer = buffer;
    m
}

pub fn subgraph(
    tensors: Vec<TensorT>,
    inputs: &[i32],
    outputs: &[i32],
    ops: Vec<OperatorT>,
) -> SubGraphT {
    let mut sg = SubGraphT::default();
    sg.name = Some("main".to_owned());
    sg.tensors = Some(tensors);
    sg.inputs = Some(inputs.to_vec());
    sg.outputs = Some(outputs.to_vec());
    sg.operators = Some(ops);
    sg
}

/// Little-endian i32 words, the layout of `OfflineMemoryAllocation`.
pub fn i32_words(words: &[i32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Mutable access to subgraph 0's tensors / operators of a model under construction.
pub fn tensors_mut(m: &mut ModelT) -> &mut Vec<TensorT> {
    m.subgraphs.as_mut().unwrap()[0].tensors.as_mut().unwrap()
}

pub fn operators_mut(m: &mut ModelT) -> &mut Vec<OperatorT> {
    m.subgraphs.as_mut().unwrap()[0].operators.as_mut().unwrap()
}

pub fn buffers_mut(m: &mut ModelT) -> &mut Vec<BufferT> {
    m.buffers.as_mut().unwrap()
}

/// One int8 CONV_2D, 3x3, 3 -> 4 channels, per-channel quantized weights:
///
/// | tensor | name | shape | type | buffer |
/// |---|---|---|---|---|
/// | 0 | input | [1, 8, 8, 3] | INT8 | 0 |
/// | 1 | weights | [4, 3, 3, 3] | INT8 | 1 (108 bytes: 0, 1, .. 107) |
/// | 2 | bias | [4] | INT32 | 2 (1, -2, 3, -4) |
/// | 3 | output | [1, 8, 8, 4] | INT8 | 0 |
pub fn conv_model() -> ModelT {
    let weights: Vec<u8> = (0..108u8).collect();
    let bias = i32_words(&[1, -2, 3, -4]);
    let mut options = Conv2DOptionsT::default();
    options.padding = Padding::SAME;
    options.stride_w = 1;
    options.stride_h = 1;
    options.fused_activation_function = ActivationFunctionType::RELU;
    options.dilation_w_factor = 1;
    options.dilation_h_factor = 1;
    let mut conv = operator(0, &[0, 1, 2], &[3]);
    conv.builtin_options = BuiltinOptionsT::Conv2DOptions(Box::new(options));

    let mut m = ModelT::default();
    m.version = 3;
    m.description = Some("one conv".to_owned());
    m.operator_codes = Some(vec![builtin_code(BuiltinOperator::CONV_2D)]);
    m.buffers = Some(vec![empty_buffer(), buffer(&weights), buffer(&bias)]);
    m.subgraphs = Some(vec![subgraph(
        vec![
            quantized(
                tensor("input", &[1, 8, 8, 3], TensorType::INT8, 0),
                &[0.5],
                &[-1],
                0,
            ),
            quantized(
                tensor("weights", &[4, 3, 3, 3], TensorType::INT8, 1),
                &[0.1, 0.2, 0.3, 0.4],
                &[0, 0, 0, 0],
                0,
            ),
            tensor("bias", &[4], TensorType::INT32, 2),
            quantized(
                tensor("output", &[1, 8, 8, 4], TensorType::INT8, 0),
                &[0.25],
                &[-128],
                0,
            ),
        ],
        &[0],
        &[3],
        vec![conv],
    )]);
    m
}

/// A Vela-style output: graph input `ifm` -> `ethos-u` -> `ofm` -> CPU `SOFTMAX` -> `probs`.
///
/// | tensor | name | shape | type | buffer |
/// |---|---|---|---|---|
/// | 0 | command_stream | [20] | UINT8 | 1 (`COP1` + 16 bytes of 0xAB) |
/// | 1 | read_only | [32] | UINT8 | 2 (0, 1, .. 31) |
/// | 2 | scratch | [4096] | UINT8 | 0 |
/// | 3 | scratch_fast | [2, 512] | INT16 | 0 (2048 bytes) |
/// | 4 | ifm | [1, 4, 4, 8] | INT8 | 0 |
/// | 5 | ofm | [1, 10] | INT8 | 0 |
/// | 6 | probs | [1, 10] | INT8 | 0 |
///
/// Metadata `OfflineMemoryAllocation` (buffer 3): `[0, 1, 7, -1, -1, 0, -1, 1024, 2048, 3072]`.
pub fn ethos_u_model() -> ModelT {
    let mut payload = b"COP1".to_vec();
    payload.extend_from_slice(&[0xAB; 16]);
    let read_only: Vec<u8> = (0..32u8).collect();
    let oma = i32_words(&[0, 1, 7, -1, -1, 0, -1, 1024, 2048, 3072]);
    let mut npu = operator(0, &[0, 1, 2, 3, 4], &[5]);
    npu.custom_options = Some(vec![1, 2, 3]);

    let mut m = ModelT::default();
    m.version = 3;
    m.description = Some("Vela Optimised".to_owned());
    m.operator_codes = Some(vec![
        custom_code("ethos-u"),
        builtin_code(BuiltinOperator::SOFTMAX),
    ]);
    m.buffers = Some(vec![
        empty_buffer(),
        buffer(&payload),
        buffer(&read_only),
        buffer(&oma),
    ]);
    m.metadata = Some(vec![metadata("OfflineMemoryAllocation", 3)]);
    m.subgraphs = Some(vec![subgraph(
        vec![
            tensor("command_stream", &[20], TensorType::UINT8, 1),
            tensor("read_only", &[32], TensorType::UINT8, 2),
            tensor("scratch", &[4096], TensorType::UINT8, 0),
            tensor("scratch_fast", &[2, 512], TensorType::INT16, 0),
            quantized(
                tensor("ifm", &[1, 4, 4, 8], TensorType::INT8, 0),
                &[0.5],
                &[3],
                0,
            ),
            quantized(
                tensor("ofm", &[1, 10], TensorType::INT8, 0),
                &[0.25],
                &[-7],
                0,
            ),
            quantized(
                tensor("probs", &[1, 10], TensorType::INT8, 0),
                &[1.0 / 256.0],
                &[-128],
                0,
            ),
        ],
        &[4],
        &[6],
        vec![npu, operator(1, &[5], &[6])],
    )]);
    m
}
