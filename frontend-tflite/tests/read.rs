//! Reading valid models: what `TfliteModel::parse` exposes.

mod common;

use common::*;
use npuc_frontend_tflite::schema::{
    self, ActivationFunctionType, BuiltinOperator, OperatorCodeT, SignatureDefT, TensorMapT,
    TensorType as FbType,
};
use npuc_frontend_tflite::{
    BufferId, BufferStorage, BuiltinOptionsT, OpId, OpcodeId, SubgraphId, TensorId, TensorType,
    TfliteError, TfliteModel,
};

#[test]
fn a_conv_model_exposes_its_header_opcodes_and_graph_io() {
    let model = TfliteModel::parse(&finish(&conv_model())).unwrap();
    assert_eq!(model.version(), 3);
    assert_eq!(model.description(), Some("one conv"));
    assert_eq!(model.operator_codes().len(), 1);
    assert_eq!(model.operator_codes()[0].builtin, BuiltinOperator::CONV_2D);
    assert_eq!(model.operator_codes()[0].name(), "CONV_2D");
    assert_eq!(model.subgraphs().len(), 1);

    let main = model.main_subgraph();
    assert_eq!(main.id, SubgraphId::new(0));
    assert_eq!(main.name.as_deref(), Some("main"));
    assert_eq!(main.inputs, [TensorId::new(0)]);
    assert_eq!(main.outputs, [TensorId::new(3)]);
}

#[test]
fn tensors_carry_name_shape_type_buffer_and_quantization() {
    let model = TfliteModel::parse(&finish(&conv_model())).unwrap();
    let main = model.main_subgraph();
    let names: Vec<&str> = main.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["input", "weights", "bias", "output"]);

    let input = main.tensor(TensorId::new(0)).unwrap();
    assert_eq!(input.shape, [1, 8, 8, 3]);
    assert_eq!(input.dtype, TensorType::Int8);
    assert_eq!(input.buffer, BufferId::new(0));
    assert_eq!(model.tensor_data(input), None);
    let q = input.quantization.as_ref().unwrap();
    assert!(q.is_per_tensor());
    assert_eq!(
        (q.scale.as_slice(), q.zero_point.as_slice()),
        (&[0.5][..], &[-1][..])
    );

    let weights = main.tensor(TensorId::new(1)).unwrap();
    assert_eq!(weights.static_shape().unwrap(), [4, 3, 3, 3]);
    assert_eq!(weights.byte_size(), Some(108));
    let data = model.tensor_data(weights).unwrap();
    assert_eq!(data, (0..108u8).collect::<Vec<_>>());
    let q = weights.quantization.as_ref().unwrap();
    assert!(q.is_per_axis());
    assert_eq!(q.scale, [0.1, 0.2, 0.3, 0.4]);
    assert_eq!(q.quantized_dimension, 0);

    let bias = main.tensor(TensorId::new(2)).unwrap();
    assert_eq!(bias.dtype, TensorType::Int32);
    assert_eq!(bias.quantization, None);
    assert_eq!(model.tensor_data(bias).unwrap(), i32_words(&[1, -2, 3, -4]));
}

#[test]
fn inline_buffers_record_where_their_bytes_are_in_the_file() {
    let bytes = finish(&conv_model());
    let model = TfliteModel::parse(&bytes).unwrap();
    assert_eq!(model.buffers()[0].storage, BufferStorage::Empty);
    let weights = &model.buffers()[1];
    let BufferStorage::Inline { file_offset } = weights.storage else {
        panic!("weights stored as {:?}", weights.storage);
    };
    assert_eq!(
        &bytes[file_offset..file_offset + 108],
        weights.data.as_slice()
    );
}

#[test]
fn operators_resolve_their_opcode_and_keep_builtin_options() {
    let model = TfliteModel::parse(&finish(&conv_model())).unwrap();
    let op = model.main_subgraph().operator(OpId::new(0)).unwrap();
    assert_eq!(op.opcode_index, OpcodeId::new(0));
    assert_eq!(op.opcode.name(), "CONV_2D");
    assert_eq!(
        op.inputs,
        [
            Some(TensorId::new(0)),
            Some(TensorId::new(1)),
            Some(TensorId::new(2))
        ]
    );
    assert_eq!(op.outputs, [TensorId::new(3)]);
    assert_eq!(op.builtin_options_type(), Some("Conv2DOptions"));
    let BuiltinOptionsT::Conv2DOptions(options) = &op.builtin_options else {
        panic!("options: {:?}", op.builtin_options);
    };
    assert_eq!(options.stride_w, 1);
    assert_eq!(
        options.fused_activation_function,
        ActivationFunctionType::RELU
    );
    assert!(op.custom_options.is_empty());
}

#[test]
fn optional_inputs_written_as_minus_one_read_as_none() {
    let mut m = conv_model();
    operators_mut(&mut m)[0].inputs = Some(vec![0, 1, -1]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let op = &model.main_subgraph().operators[0];
    assert_eq!(op.inputs[2], None);
}

#[test]
fn old_files_carry_the_builtin_code_only_in_the_deprecated_byte() {
    let mut m = conv_model();
    let mut code = OperatorCodeT::default();
    code.deprecated_builtin_code = 3; // CONV_2D
    code.builtin_code = BuiltinOperator(0); // the default, so not even written
    m.operator_codes = Some(vec![code]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    assert_eq!(model.operator_codes()[0].builtin, BuiltinOperator::CONV_2D);
}

#[test]
fn codes_above_127_come_from_the_extended_field() {
    let mut m = conv_model();
    m.operator_codes = Some(vec![builtin_code(BuiltinOperator::BROADCAST_TO)]);
    const { assert!(BuiltinOperator::BROADCAST_TO.0 > 127) };
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let code = &model.operator_codes()[0];
    assert_eq!(code.builtin, BuiltinOperator::BROADCAST_TO);
    assert_eq!(code.name(), "BROADCAST_TO");
}

#[test]
fn custom_and_unknown_operators_are_named_by_their_code() {
    let mut m = conv_model();
    m.operator_codes = Some(vec![
        custom_code("MyOp"),
        builtin_code(BuiltinOperator(10_000)),
    ]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    assert!(model.operator_codes()[0].is_custom());
    assert_eq!(model.operator_codes()[0].name(), "MyOp");
    assert_eq!(model.operator_codes()[1].name(), "UNKNOWN_BUILTIN(10000)");
}

#[test]
fn a_dimension_dynamic_in_the_signature_takes_its_stored_size() {
    // TFLite's interpreter allocates the stored shape until the input is resized; Vela
    // compiles it so (decision F10).
    let mut m = conv_model();
    tensors_mut(&mut m)[0].shape_signature = Some(vec![-1, 8, 8, 3]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let input = &model.main_subgraph().tensors[0];
    assert_eq!(input.shape, [1, 8, 8, 3]);
    assert_eq!(input.shape_signature.as_deref(), Some(&[-1, 8, 8, 3][..]));
    assert!(input.is_dynamic());
    assert_eq!(input.static_shape().unwrap(), [1, 8, 8, 3]);
}

#[test]
fn a_dimension_unknown_in_the_stored_shape_is_rejected_by_static_shape() {
    let mut m = conv_model();
    tensors_mut(&mut m)[0].shape = Some(vec![-1, 8, 8, 3]);
    tensors_mut(&mut m)[0].shape_signature = Some(vec![-1, 8, 8, 3]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let input = &model.main_subgraph().tensors[0];
    assert!(input.is_dynamic());
    let err = input.static_shape().unwrap_err();
    assert!(matches!(err, TfliteError::DynamicShape { .. }), "{err}");
    assert!(err.to_string().contains("\"input\""), "{err}");
}

#[test]
fn buffers_past_the_flatbuffer_are_read_through_offset_and_size() {
    // Models over 2 GiB keep constant data after the flatbuffer and point at it with
    // absolute file offsets. Build once to learn the flatbuffer size, then point there.
    let weights: Vec<u8> = (0..108u8).rev().collect();
    let mut m = conv_model();
    let with_offset = |m: &mut schema::ModelT, offset: u64| {
        buffers_mut(m)[1] = appended_buffer(offset, 108);
    };
    with_offset(&mut m, 2);
    let flatbuffer_len = finish(&m).len() as u64;
    let offset = flatbuffer_len.next_multiple_of(16);
    with_offset(&mut m, offset);
    let mut bytes = finish(&m);
    assert_eq!(bytes.len() as u64, flatbuffer_len);
    bytes.resize(offset as usize, 0);
    bytes.extend_from_slice(&weights);

    let model = TfliteModel::parse(&bytes).unwrap();
    let buffer = &model.buffers()[1];
    assert_eq!(
        buffer.storage,
        BufferStorage::Appended {
            file_offset: offset
        }
    );
    assert_eq!(
        model.tensor_data(&model.main_subgraph().tensors[1]),
        Some(&weights[..])
    );
}

#[test]
fn metadata_entries_are_found_by_name() {
    let mut m = conv_model();
    buffers_mut(&mut m).push(buffer(b"2.11.0\0\0"));
    m.metadata = Some(vec![metadata("min_runtime_version", 3)]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    assert_eq!(model.metadata()[0].name, "min_runtime_version");
    assert_eq!(model.metadata()[0].buffer, BufferId::new(3));
    assert_eq!(
        model.metadata_bytes("min_runtime_version"),
        Some(&b"2.11.0\0\0"[..])
    );
    assert_eq!(model.metadata_bytes("absent"), None);
}

#[test]
fn signature_defs_name_graph_inputs_and_outputs() {
    let mut m = conv_model();
    let map = |name: &str, tensor_index| {
        let mut t = TensorMapT::default();
        t.name = Some(name.to_owned());
        t.tensor_index = tensor_index;
        t
    };
    let mut sig = SignatureDefT::default();
    sig.signature_key = Some("serving_default".to_owned());
    sig.inputs = Some(vec![map("x", 0)]);
    sig.outputs = Some(vec![map("y", 3)]);
    m.signature_defs = Some(vec![sig]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let sig = &model.signature_defs()[0];
    assert_eq!(sig.key, "serving_default");
    assert_eq!(sig.inputs, [("x".to_owned(), TensorId::new(0))]);
    assert_eq!(sig.outputs, [("y".to_owned(), TensorId::new(3))]);
}

#[test]
fn large_custom_options_are_read_from_past_the_flatbuffer() {
    let mut m = ethos_u_model();
    let set = |m: &mut schema::ModelT, offset: u64| {
        let op = &mut operators_mut(m)[0];
        op.custom_options = None;
        op.large_custom_options_offset = offset;
        op.large_custom_options_size = 4;
    };
    set(&mut m, 2);
    let offset = finish(&m).len() as u64;
    set(&mut m, offset);
    let mut bytes = finish(&m);
    bytes.extend_from_slice(b"opts");
    let model = TfliteModel::parse(&bytes).unwrap();
    assert_eq!(model.main_subgraph().operators[0].custom_options, b"opts");
}

#[test]
fn a_flatbuffer_without_file_identifier_is_accepted() {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let root = conv_model().pack(&mut fbb);
    fbb.finish(root, None);
    let model = TfliteModel::parse(fbb.finished_data()).unwrap();
    assert_eq!(model.main_subgraph().tensors.len(), 4);
}

#[test]
fn sub_byte_constants_are_packed_two_per_byte() {
    let mut m = conv_model();
    tensors_mut(&mut m)[1].type_ = FbType::INT4;
    buffers_mut(&mut m)[1] = buffer(&[0x21; 54]);
    let model = TfliteModel::parse(&finish(&m)).unwrap();
    let weights = &model.main_subgraph().tensors[1];
    assert_eq!(weights.dtype, TensorType::Int4);
    assert_eq!(weights.byte_size(), Some(54));
}
