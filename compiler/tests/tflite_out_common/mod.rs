//! Test models for the `.tflite` output tests.
#![allow(dead_code)]

use npuc_frontend_tflite::schema::{self, BuiltinOperator, BuiltinOptionsT, OperatorCodeT};
use std::path::PathBuf;

pub fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

pub fn read(rel: &str) -> Vec<u8> {
    std::fs::read(models().join(rel)).unwrap()
}

/// `two_npu_subgraphs.tflite` (CONV_2D, SPACE_TO_DEPTH, CONV_2D) with its middle operator
/// turned into a custom operator no NPU path will ever support, so that the partition has two
/// NPU segments around one CPU operator whatever the compiler learns.
pub fn conv_custom_conv() -> Vec<u8> {
    let bytes = read("tflite/two_npu_subgraphs.tflite");
    let mut m = schema::root_as_model(&bytes).unwrap().unpack();
    let codes = m.operator_codes.as_mut().unwrap();
    let mut c = OperatorCodeT::default();
    c.deprecated_builtin_code = BuiltinOperator::CUSTOM.0 as i8;
    c.builtin_code = BuiltinOperator::CUSTOM;
    c.custom_code = Some("npuc_test_cpu_only".into());
    codes.push(c);
    let code = (codes.len() - 1) as u32;
    let op = &mut m.subgraphs.as_mut().unwrap()[0].operators.as_mut().unwrap()[1];
    op.opcode_index = code;
    op.builtin_options = BuiltinOptionsT::NONE;
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let root = m.pack(&mut fbb);
    schema::finish_model_buffer(&mut fbb, root);
    fbb.finished_data().to_vec()
}
