//! Vela artifacts: `ethos-u` operators, `OfflineMemoryAllocation`, the runtime view.

mod common;

use common::*;
use npuc_frontend_tflite::schema::ModelT;
use npuc_frontend_tflite::{
    OfflineMemoryAllocation, OpId, SubgraphId, TensorId, TensorType, TfliteError, TfliteModel,
    VelaOp,
};

fn model(m: &ModelT) -> TfliteModel {
    TfliteModel::parse(&finish(m)).unwrap()
}

fn with_oma(words: &[i32]) -> ModelT {
    let mut m = ethos_u_model();
    buffers_mut(&mut m)[3] = buffer(&i32_words(words));
    m
}

#[test]
fn an_ethos_u_operator_exposes_payload_read_only_and_scratch_sizes() {
    let ops = model(&ethos_u_model()).ethos_u_ops().unwrap();
    assert_eq!(ops.len(), 1);
    let op = &ops[0];
    assert_eq!((op.subgraph, op.op), (SubgraphId::new(0), OpId::new(0)));
    assert_eq!(&op.payload[..4], b"COP1");
    assert_eq!(op.payload.len(), 20);
    assert_eq!(op.read_only, (0..32u8).collect::<Vec<_>>());
    assert_eq!(op.scratch_size, 4096);
    // scratch_fast is [2, 512] INT16: the size comes from shape x element size.
    assert_eq!(op.scratch_fast_size, 2048);
    assert_eq!(
        [
            op.payload_tensor,
            op.read_only_tensor,
            op.scratch_tensor,
            op.scratch_fast_tensor
        ],
        [0, 1, 2, 3].map(TensorId::new)
    );
}

#[test]
fn feature_maps_carry_shape_type_quantization_and_arena_offset() {
    let op = model(&ethos_u_model()).ethos_u_ops().unwrap().remove(0);
    assert_eq!(op.ifms.len(), 1);
    let ifm = &op.ifms[0];
    assert_eq!(ifm.tensor, TensorId::new(4));
    assert_eq!(ifm.name, "ifm");
    assert_eq!(ifm.shape, [1, 4, 4, 8]);
    assert_eq!(ifm.dtype, TensorType::Int8);
    assert_eq!(ifm.byte_size, 128);
    let q = ifm.quantization.as_ref().unwrap();
    assert_eq!((q.scale[0], q.zero_point[0]), (0.5, 3));
    // OfflineMemoryAllocation: [0, 1, 7, -1, -1, 0, -1, 1024, 2048, 3072]
    assert_eq!(ifm.arena_offset, Some(1024));

    assert_eq!(op.ofms.len(), 1);
    assert_eq!(op.ofms[0].name, "ofm");
    assert_eq!(op.ofms[0].arena_offset, Some(2048));
}

#[test]
fn the_runtime_view_lists_graph_io_and_operators_in_order() {
    let vela = model(&ethos_u_model()).vela().unwrap();
    assert_eq!(vela.subgraphs.len(), 1);
    let main = &vela.subgraphs[0];
    assert_eq!(main.inputs.len(), 1);
    assert_eq!(main.inputs[0].name, "ifm");
    assert_eq!(main.outputs[0].name, "probs");
    assert_eq!(main.outputs[0].arena_offset, Some(3072));
    assert_eq!(
        main.outputs[0].quantization.as_ref().unwrap().zero_point,
        [-128]
    );

    assert_eq!(main.ops.len(), 2);
    assert!(matches!(&main.ops[0], VelaOp::Npu(op) if op.op == OpId::new(0)));
    let VelaOp::Cpu(cpu) = &main.ops[1] else {
        panic!("second operator: {:?}", main.ops[1]);
    };
    assert_eq!(cpu.name, "SOFTMAX");
    assert_eq!(cpu.inputs, [Some(TensorId::new(5))]);
    assert_eq!(cpu.outputs, [TensorId::new(6)]);
    assert_eq!(vela.cpu_ops().count(), 1);
    assert_eq!(vela.ethos_u_ops().count(), 1);
}

#[test]
fn constants_and_the_scratch_arena_are_told_apart_by_minus_one() {
    let oma = model(&ethos_u_model())
        .offline_memory_allocation()
        .unwrap()
        .unwrap();
    assert_eq!(oma.num_subgraphs(), 1);
    let offsets: Vec<Option<u32>> = (0..7)
        .map(|t| oma.offset(SubgraphId::new(0), TensorId::new(t)))
        .collect();
    assert_eq!(
        offsets,
        [
            None,
            None,
            Some(0),
            None,
            Some(1024),
            Some(2048),
            Some(3072)
        ]
    );
    assert_eq!(oma.offset(SubgraphId::new(1), TensorId::new(0)), None);
}

#[test]
fn without_the_metadata_there_are_no_arena_offsets() {
    let mut m = ethos_u_model();
    m.metadata = None;
    let model = model(&m);
    assert_eq!(model.offline_memory_allocation().unwrap(), None);
    let op = model.ethos_u_ops().unwrap().remove(0);
    assert_eq!(op.ifms[0].arena_offset, None);
}

#[test]
fn a_model_without_ethos_u_operators_has_none() {
    let model = model(&conv_model());
    assert!(model.ethos_u_ops().unwrap().is_empty());
    let vela = model.vela().unwrap();
    assert_eq!(
        vela.cpu_ops()
            .map(|op| op.name.as_str())
            .collect::<Vec<_>>(),
        ["CONV_2D"]
    );
}

#[test]
fn a_custom_operator_with_another_code_is_a_cpu_operator() {
    let mut m = ethos_u_model();
    m.operator_codes.as_mut().unwrap()[0] = custom_code("ethos-u-not");
    let model = model(&m);
    assert!(model.ethos_u_ops().unwrap().is_empty());
    let names: Vec<String> = model
        .vela()
        .unwrap()
        .cpu_ops()
        .map(|op| op.name.clone())
        .collect();
    assert_eq!(names, ["ethos-u-not", "SOFTMAX"]);
}

#[test]
fn offline_memory_allocation_shorter_than_its_header_is_rejected() {
    let err = model(&with_oma(&[0, 1])).ethos_u_ops().unwrap_err();
    assert!(
        matches!(err, TfliteError::OfflineMemoryAllocation { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("8 bytes"), "{err}");
}

#[test]
fn offline_memory_allocation_missing_offsets_is_rejected() {
    let err = model(&with_oma(&[0, 1, 7, -1, -1, 0]))
        .ethos_u_ops()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("declares 7 tensor offsets but holds only 3"),
        "{err}"
    );
}

#[test]
fn offline_memory_allocation_must_match_the_model() {
    let cases: [(&[i32], &str); 4] = [
        (&[1, 1, 7, 0, 0, 0, 0, 0, 0, 0], "version 1"),
        (
            &[0, 2, 7, 0, 0, 0, 0, 0, 0, 0],
            "declares 2 subgraphs, the model has 1",
        ),
        (&[0, 1, 6, 0, 0, 0, 0, 0, 0], "declares 6 tensors"),
        (&[0, 1, 7, -1, -1, 0, -1, -5, 0, 0], "offset -5"),
    ];
    for (words, message) in cases {
        let err = model(&with_oma(words)).vela().unwrap_err();
        assert!(err.to_string().contains(message), "{words:?}: {err}");
    }
}

#[test]
fn offline_memory_allocation_can_be_decoded_on_its_own() {
    let bytes = i32_words(&[0, 2, 3, 16, -1, 0]);
    let oma = OfflineMemoryAllocation::parse(&bytes, &[2, 1]).unwrap();
    assert_eq!(oma.offset(SubgraphId::new(0), TensorId::new(0)), Some(16));
    assert_eq!(oma.offset(SubgraphId::new(0), TensorId::new(1)), None);
    assert_eq!(oma.offset(SubgraphId::new(1), TensorId::new(0)), Some(0));
}

#[test]
fn an_ethos_u_operator_needs_its_four_region_inputs() {
    let mut m = ethos_u_model();
    operators_mut(&mut m)[0].inputs = Some(vec![0, 1, 2]);
    let err = model(&m).ethos_u_ops().unwrap_err();
    assert!(matches!(err, TfliteError::EthosU { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("subgraph 0 operator 0 (ethos-u): not a valid ethos-u operator: 3 inputs"),
        "{err}"
    );

    let mut m = ethos_u_model();
    operators_mut(&mut m)[0].inputs = Some(vec![0, 1, -1, 3, 4]);
    let err = model(&m).ethos_u_ops().unwrap_err();
    assert!(
        err.to_string()
            .contains("input 2 (scratch (region 1)) is omitted"),
        "{err}"
    );
}

#[test]
fn an_ethos_u_operator_needs_a_command_stream() {
    let mut m = ethos_u_model();
    tensors_mut(&mut m)[0].buffer = 0;
    let err = model(&m).ethos_u_ops().unwrap_err();
    assert!(err.to_string().contains("command stream tensor 0"), "{err}");
}

#[test]
fn scratch_sizes_need_static_shapes() {
    let mut m = ethos_u_model();
    tensors_mut(&mut m)[2].shape = Some(vec![-1]);
    let err = model(&m).ethos_u_ops().unwrap_err();
    assert!(matches!(err, TfliteError::DynamicShape { .. }), "{err}");
    assert!(err.to_string().contains("\"scratch\""), "{err}");
}
