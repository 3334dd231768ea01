//! Snapshots of the IR dump of two small lowered models (review changes with
//! `cargo insta review`).

use npuc_frontend_tflite::lower::lower;
use npuc_frontend_tflite::TfliteModel;

fn dump_model(name: &str) -> String {
    let path = format!(
        "{}/../models/tflite/{name}.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(path).unwrap();
    let model = TfliteModel::parse(&bytes).unwrap();
    npuc_ir::dump(&lower(&model).unwrap().graph)
}

#[test]
fn dense_dump() {
    insta::assert_snapshot!(dump_model("dense"));
}

#[test]
fn add_broadcast_dump() {
    insta::assert_snapshot!(dump_model("add_broadcast"));
}

#[test]
fn unsupported_operator_is_an_error_naming_it() {
    // Every corpus operator lowers; a Vela-compiled model's `ethos-u` custom operator does not.
    let path = format!(
        "{}/../models/vela/u85_256/conv2d_3x3_relu_vela.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    let model = TfliteModel::parse(&std::fs::read(path).unwrap()).unwrap();
    let err = lower(&model).unwrap_err().to_string();
    assert_eq!(
        err,
        "operator 0 (ethos-u): custom operators are not supported"
    );
}
