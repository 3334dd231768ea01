//! `.tflite` output in Vela's format: one `ethos-u` operator per NPU segment with a COP1
//! payload, `read_only` / `scratch` / `scratch_fast`, `OfflineMemoryAllocation` offsets, and
//! the operators the NPU cannot run left as ordinary TFLite operators.

mod tflite_out_common;

use npuc::compile::Options;
use npuc::run::npy;
use npuc::tflite_out::compile_tflite;
use npuc_frontend_tflite::vela::VelaOp;
use npuc_frontend_tflite::TfliteModel;
use tflite_out_common::{conv_custom_conv, models, read};

fn golden(name: &str, what: &str, k: usize) -> Vec<npy::Array> {
    let mut v = Vec::new();
    let mut i = 0;
    while let Ok(b) = std::fs::read(models().join(format!("golden/{name}/{what}{i}_{k}.npy"))) {
        v.push(npy::read(&b).unwrap());
        i += 1;
    }
    v
}

#[test]
fn a_fully_supported_model_becomes_one_ethos_u_operator_that_reproduces_the_golden() {
    for name in [
        "conv2d_3x3_relu",
        "add_same",
        "dw_3x3_s2_same_relu",
        "maxpool",
    ] {
        let bytes = read(&format!("tflite/{name}.tflite"));
        let out = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
        assert_eq!(out.partition.cpu_ops().count(), 0, "{name}");
        assert_eq!(out.partition.segments.len(), 1, "{name}");
        let m = TfliteModel::parse(&out.bytes).unwrap();
        let v = m.vela().unwrap();
        let ops: Vec<_> = v.ethos_u_ops().collect();
        assert_eq!(ops.len(), 1, "{name}");
        assert_eq!(v.cpu_ops().count(), 0, "{name}");
        // The payload carries exactly the compiled stream, and the whole-graph compile of the
        // same model gives the same stream.
        let payload = npuc_backend::cop::parse_payload(&ops[0].payload).unwrap();
        let whole = npuc::compile_file(&bytes, &Options::default()).unwrap();
        assert_eq!(
            payload.words,
            whole.payload.command_words().unwrap(),
            "{name}"
        );
        assert_eq!(ops[0].read_only, whole.read_only, "{name}");
        assert_eq!(ops[0].scratch_size as u64, whole.arena_size, "{name}");
        // Folded weights are gone: only the payload, read_only, scratch (also passed as
        // scratch_fast unless the stream uses the fast memory, region 2: a tensor of its own)
        // and the feature maps remain.
        let n_tensors = m.main_subgraph().tensors.len();
        let fast = usize::from(whole.fast_size > 0);
        assert_eq!(
            n_tensors,
            3 + fast + ops[0].ifms.len() + ops[0].ofms.len(),
            "{name}"
        );
        for k in 0..3 {
            let inputs = golden(name, "input", k);
            let run = npuc::run::run_vela(&out.bytes, &inputs).unwrap();
            assert_eq!(run.outputs, golden(name, "output", k), "{name} sample {k}");
        }
    }
}

#[test]
fn an_unsupported_operator_stays_on_the_cpu_between_two_segments() {
    let bytes = conv_custom_conv();
    let out = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
    let cpu: Vec<_> = out.partition.cpu_ops().collect();
    assert_eq!(cpu.len(), 1);
    assert_eq!(
        (cpu[0].op, cpu[0].opcode.as_str()),
        (1, "npuc_test_cpu_only")
    );
    assert!(cpu[0]
        .cpu_reason
        .as_deref()
        .unwrap()
        .contains("custom operators"));
    assert_eq!(out.partition.segments.len(), 2);

    let m = TfliteModel::parse(&out.bytes).unwrap();
    let v = m.vela().unwrap();
    let kinds: Vec<&str> = v.subgraphs[0]
        .ops
        .iter()
        .map(|o| match o {
            VelaOp::Npu(_) => "ethos-u",
            VelaOp::Cpu(c) => c.name.as_str(),
        })
        .collect();
    assert_eq!(kinds, ["ethos-u", "npuc_test_cpu_only", "ethos-u"]);
    // Each segment has its own scratch area; the second starts after the first, and every
    // feature map of a segment lies inside its segment's area.
    let oma = v.offline_memory_allocation.as_ref().unwrap();
    let sg = m.main_subgraph();
    let mut end = 0u32;
    for op in v.ethos_u_ops() {
        let base = oma.offset(sg.id, op.scratch_tensor).unwrap();
        assert!(base >= end, "segments overlap");
        // (scratch_fast is a tensor of its own when the segment stages weights in region 2,
        // as the schedule of the calibrated cost model does here.)
        end = base + op.scratch_size as u32;
        for fm in op.ifms.iter().chain(&op.ofms) {
            let o = fm.arena_offset.unwrap();
            assert!(o >= base && o as usize + fm.byte_size <= end as usize);
        }
    }
}

#[test]
fn the_output_is_deterministic() {
    let bytes = conv_custom_conv();
    let a = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
    let b = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
    assert_eq!(a.bytes, b.bytes);
}

#[test]
fn a_container_output_lists_every_operator_that_cannot_run_on_the_npu() {
    let bytes = conv_custom_conv();
    let err = npuc::compile_file(&bytes, &Options::default()).unwrap_err();
    let npuc::Error::NotOnNpu(ops) = &err else {
        panic!("expected NotOnNpu, got {err}");
    };
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].op, 1);
    let text = err.to_string();
    assert!(text.contains("operator 1 (npuc_test_cpu_only)"), "{text}");
    assert!(text.contains(".tflite"), "{text}");
}

#[test]
fn softmax_models_and_networks_reproduce_the_golden_through_npuc_run() {
    // The int8 SOFTMAX, SQUARED_DIFFERENCE and the corpus networks run entirely on the NPU:
    // `npuc run` executes the single ethos-u operator on the simulator.
    for name in [
        "softmax",
        "softmax_1x100",
        "softmax_4d",
        "softmax_beta2",
        "squared_difference",
        "squared_difference_bcast",
        "mobilenet_tiny",
        "mobilenet_v1_025_96",
        "mobilenet_v1_050_128_clustered",
        "mobilenet_v2_035_96",
        "mobilenet_v2_050_128_pruned",
        "resnet8",
        "ds_cnn",
        "unet_small",
        "efficientnet_se",
        "transformer_encoder",
    ] {
        let bytes = read(&format!("tflite/{name}.tflite"));
        let out = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
        assert_eq!(out.partition.cpu_ops().count(), 0, "{name}");
        for k in 0..3 {
            let run = npuc::run::run_vela(&out.bytes, &golden(name, "input", k)).unwrap();
            assert_eq!(run.outputs, golden(name, "output", k), "{name} sample {k}");
        }
    }
}

#[test]
fn a_network_with_cpu_operators_reproduces_the_golden_through_npuc_run() {
    // ds_cnn_16x8 keeps operators on the CPU (int16 SOFTMAX, while it does): `npuc run` executes
    // the ethos-u operators on the simulator and the rest on the reference interpreter.
    let name = "ds_cnn_16x8";
    let bytes = read(&format!("tflite/{name}.tflite"));
    let out = compile_tflite(&bytes, &Options::default(), &mut |_| {}).unwrap();
    for k in 0..3 {
        let run = npuc::run::run_vela(&out.bytes, &golden(name, "input", k)).unwrap();
        assert_eq!(run.outputs, golden(name, "output", k), "{name} sample {k}");
    }
}
