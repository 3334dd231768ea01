//! Malformed files: every one gives an error that names what is wrong, none panics.

mod common;

use common::*;
use npuc_frontend_tflite::schema::ModelT;
use npuc_frontend_tflite::{BufferId, TfliteError, TfliteModel};

fn parse_err(m: &ModelT) -> TfliteError {
    match TfliteModel::parse(&finish(m)) {
        Ok(_) => panic!("malformed model parsed"),
        Err(e) => e,
    }
}

/// Everything a consumer might call on a model; must not panic whatever it returns.
fn read_everything(bytes: &[u8]) {
    if let Ok(model) = TfliteModel::parse(bytes) {
        let _ = model.ethos_u_ops();
        let _ = model.vela();
        for t in model.subgraphs().iter().flat_map(|sg| &sg.tensors) {
            let _ = t.static_shape();
            let _ = model.tensor_data(t);
        }
    }
}

#[test]
fn every_truncation_of_a_valid_file_is_an_error() {
    for model in [conv_model(), ethos_u_model()] {
        let bytes = finish(&model);
        assert!(TfliteModel::parse(&bytes).is_ok());
        for len in 0..bytes.len() {
            assert!(
                TfliteModel::parse(&bytes[..len]).is_err(),
                "truncated to {len} of {} bytes, still parsed",
                bytes.len()
            );
        }
    }
}

#[test]
fn corrupting_any_byte_never_panics() {
    for model in [conv_model(), ethos_u_model()] {
        let bytes = finish(&model);
        for i in 0..bytes.len() {
            for value in [0x00, 0x01, 0x7F, 0x80, 0xFF, bytes[i] ^ 0x10] {
                let mut corrupt = bytes.clone();
                corrupt[i] = value;
                read_everything(&corrupt);
            }
        }
    }
}

#[test]
fn files_shorter_than_a_header_are_too_short() {
    let err = TfliteModel::parse(b"TFL3").unwrap_err();
    assert!(matches!(err, TfliteError::TooShort { len: 4 }), "{err}");
}

#[test]
fn another_file_identifier_is_rejected() {
    let mut bytes = finish(&conv_model());
    bytes[4..8].copy_from_slice(b"TOSA");
    let err = TfliteModel::parse(&bytes).unwrap_err();
    assert!(matches!(err, TfliteError::WrongIdentifier { .. }), "{err}");
    assert!(err.to_string().contains("TOSA"), "{err}");
}

#[test]
fn garbage_is_rejected_by_the_verifier() {
    let err = TfliteModel::parse(&[0xFF; 64]).unwrap_err();
    assert!(
        matches!(err, TfliteError::InvalidFlatbuffer { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not a TFLite file"), "{err}");
}

/// A cut-off file says it is truncated, on one line (not the verifier's trace).
#[test]
fn a_truncated_file_says_truncated() {
    let bytes = finish(&conv_model());
    for cut in [bytes.len() / 2, bytes.len() - 1, 12] {
        let err = TfliteModel::parse(&bytes[..cut]).unwrap_err().to_string();
        assert!(
            err.contains("truncated") || err.contains("not a TFLite file"),
            "cut at {cut}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_model_without_subgraphs_is_rejected() {
    let mut m = conv_model();
    m.subgraphs = None;
    assert!(matches!(parse_err(&m), TfliteError::NoSubgraphs));
}

#[test]
fn a_tensor_buffer_index_out_of_range_names_the_tensor() {
    let mut m = conv_model();
    tensors_mut(&mut m)[1].buffer = 7;
    let err = parse_err(&m);
    assert!(
        matches!(
            err,
            TfliteError::BufferIndexOutOfRange {
                buffer: 7,
                num_buffers: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "subgraph 0 tensor 1 \"weights\": buffer index 7 out of range (model has 3 buffers)"
    );
}

#[test]
fn constant_data_must_match_shape_times_element_size() {
    let mut m = conv_model();
    buffers_mut(&mut m)[2] = buffer(&[0; 12]); // bias [4] x INT32 needs 16
    let err = parse_err(&m);
    assert!(
        matches!(
            err,
            TfliteError::DataSizeMismatch {
                expected: 16,
                actual: 12,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("\"bias\""), "{err}");
}

#[test]
fn constant_data_with_a_negative_dimension_is_rejected() {
    let mut m = conv_model();
    tensors_mut(&mut m)[2].shape = Some(vec![-4]);
    assert!(matches!(parse_err(&m), TfliteError::InvalidShape { .. }));
}

#[test]
fn unknown_tensor_types_are_rejected() {
    let mut m = conv_model();
    tensors_mut(&mut m)[0].type_ = npuc_frontend_tflite::schema::TensorType(100);
    let err = parse_err(&m);
    assert!(
        matches!(err, TfliteError::UnknownTensorType { code: 100, .. }),
        "{err}"
    );
}

#[test]
fn operator_tensor_indices_out_of_range_name_the_operator() {
    let mut m = conv_model();
    operators_mut(&mut m)[0].inputs = Some(vec![0, 1, 9]);
    let err = parse_err(&m);
    assert!(
        matches!(
            err,
            TfliteError::TensorIndexOutOfRange {
                index: 9,
                num_tensors: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("operator 0 (CONV_2D) input 2"),
        "{err}"
    );
}

#[test]
fn only_inputs_may_be_omitted() {
    let mut m = conv_model();
    operators_mut(&mut m)[0].outputs = Some(vec![-1]);
    let err = parse_err(&m);
    assert!(err.to_string().contains("output 0"), "{err}");
}

#[test]
fn negative_indices_other_than_minus_one_are_rejected() {
    let mut m = conv_model();
    operators_mut(&mut m)[0].inputs = Some(vec![0, -2, 2]);
    assert!(matches!(
        parse_err(&m),
        TfliteError::TensorIndexOutOfRange { index: -2, .. }
    ));
}

#[test]
fn graph_inputs_out_of_range_are_rejected() {
    let mut m = conv_model();
    m.subgraphs.as_mut().unwrap()[0].inputs = Some(vec![4]);
    let err = parse_err(&m);
    assert!(err.to_string().contains("graph input 0"), "{err}");
}

#[test]
fn opcode_index_out_of_range_is_rejected() {
    let mut m = conv_model();
    operators_mut(&mut m)[0].opcode_index = 1;
    let err = parse_err(&m);
    assert!(
        matches!(
            err,
            TfliteError::OpcodeIndexOutOfRange {
                index: 1,
                num_opcodes: 1,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn per_axis_scales_must_match_the_quantized_dimension() {
    let mut m = conv_model();
    // 4 scales along dimension 3, which has size 3.
    tensors_mut(&mut m)[1]
        .quantization
        .as_mut()
        .unwrap()
        .quantized_dimension = 3;
    let err = parse_err(&m);
    assert!(
        matches!(err, TfliteError::InvalidQuantization { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("\"weights\""), "{err}");

    let mut m = conv_model();
    tensors_mut(&mut m)[1]
        .quantization
        .as_mut()
        .unwrap()
        .quantized_dimension = 4;
    assert!(matches!(
        parse_err(&m),
        TfliteError::InvalidQuantization { .. }
    ));
}

#[test]
fn scales_and_zero_points_must_pair_up() {
    let mut m = conv_model();
    tensors_mut(&mut m)[1]
        .quantization
        .as_mut()
        .unwrap()
        .zero_point = Some(vec![0, 0]);
    let err = parse_err(&m);
    assert!(
        err.to_string().contains("4 scales but 2 zero points"),
        "{err}"
    );
}

#[test]
fn metadata_pointing_at_a_missing_buffer_is_rejected() {
    let mut m = conv_model();
    m.metadata = Some(vec![metadata("OfflineMemoryAllocation", 3)]);
    let err = parse_err(&m);
    assert!(
        matches!(err, TfliteError::MetadataBufferOutOfRange { buffer: 3, .. }),
        "{err}"
    );
}

#[test]
fn buffers_past_the_end_of_the_file_are_rejected() {
    let mut m = conv_model();
    buffers_mut(&mut m)[1] = appended_buffer(1 << 20, 108);
    let err = parse_err(&m);
    assert!(
        matches!(
            err,
            TfliteError::BufferOutOfFile {
                buffer,
                offset: 0x10_0000,
                size: 108,
                ..
            } if buffer == BufferId::new(1)
        ),
        "{err}"
    );
}

#[test]
fn buffer_offset_plus_size_overflow_is_rejected() {
    let mut m = conv_model();
    buffers_mut(&mut m)[1] = appended_buffer(16, u64::MAX);
    assert!(matches!(parse_err(&m), TfliteError::BufferOutOfFile { .. }));
}

#[test]
fn a_buffer_with_both_inline_and_appended_data_is_rejected() {
    let mut m = conv_model();
    buffers_mut(&mut m)[1].offset = 16;
    buffers_mut(&mut m)[1].size = 108;
    assert!(matches!(parse_err(&m), TfliteError::AmbiguousBuffer { .. }));
}

#[test]
fn large_custom_options_past_the_end_are_rejected() {
    let mut m = ethos_u_model();
    let op = &mut operators_mut(&mut m)[0];
    op.custom_options = None;
    op.large_custom_options_offset = 1 << 30;
    op.large_custom_options_size = 4;
    let err = parse_err(&m);
    assert!(
        matches!(err, TfliteError::CustomOptionsOutOfFile { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("operator 0 (ethos-u)"), "{err}");
}

#[test]
fn signature_defs_with_bad_indices_are_rejected() {
    use npuc_frontend_tflite::schema::{SignatureDefT, TensorMapT};
    let mut sig = SignatureDefT::default();
    sig.signature_key = Some("serving_default".to_owned());
    sig.subgraph_index = 1;
    let mut m = conv_model();
    m.signature_defs = Some(vec![sig.clone()]);
    assert!(matches!(
        parse_err(&m),
        TfliteError::SubgraphIndexOutOfRange { index: 1, .. }
    ));

    let mut input = TensorMapT::default();
    input.name = Some("x".to_owned());
    input.tensor_index = 40;
    sig.subgraph_index = 0;
    sig.inputs = Some(vec![input]);
    m.signature_defs = Some(vec![sig]);
    let err = parse_err(&m);
    assert!(err.to_string().contains("serving_default"), "{err}");
}
