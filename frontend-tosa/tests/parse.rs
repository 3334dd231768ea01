//! Reader tests: the owned view of a valid file, and errors (never panics) on bad files.

mod common;

use common::*;
use npuc_frontend_tosa::schema::{DType as D, Op, RoundingMode};
use npuc_frontend_tosa::{lower, Name, TosaError, TosaModel};
use proptest::prelude::*;

fn sample() -> Vec<u8> {
    let mut b = B::new();
    b.input("x", &[1, 3], D::INT8)
        .shape("padding", &[0, 0, 1, 2])
        .scalar("pv", D::INT8, 7)
        .konst(
            "w48",
            &[2],
            D::INT48,
            vec![1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        )
        .tensor("p", &[1, 6], D::INT8)
        .konst("m", &[1], D::INT32, i32s(&[1 << 30]))
        .konst("s", &[1], D::INT8, i8s(&[30]))
        .scalar("izp", D::INT8, 0)
        .scalar("ozp", D::INT8, 0)
        .output("y", &[1, 6], D::INT8)
        .op(Op::PAD, empty(Op::PAD), &["x", "padding", "pv"], &["p"])
        .op(
            Op::RESCALE,
            rescale_attr(true, RoundingMode::SINGLE_ROUND, false),
            &["p", "m", "s", "izp", "ozp"],
            &["y"],
        );
    b.finish()
}

#[test]
fn owned_view() {
    let m = TosaModel::parse(&sample()).unwrap();
    assert_eq!(m.version.to_string(), "1.0.0");
    let b = m.main_block().unwrap();
    assert_eq!(b.inputs, ["x"]);
    assert_eq!(b.outputs, ["y"]);
    assert_eq!(b.shape_value("padding"), Some(vec![0, 0, 1, 2]));
    assert_eq!(b.lookup("padding"), Some(Name::Shape(0)));
    let w = b.tensor("w48").unwrap();
    assert_eq!(w.dtype, D::INT48);
    assert_eq!(w.data.as_ref().unwrap().len(), 12);
    assert!(w.data_offset.is_some());
    let ops: Vec<String> = b.operators.iter().map(|o| o.name()).collect();
    assert!(ops.contains(&"PAD".to_string()) && ops.contains(&"RESCALE".to_string()));
    lower(&m).unwrap();
}

#[test]
fn truncated_at_every_length() {
    let bytes = sample();
    for n in 0..bytes.len() {
        assert!(
            TosaModel::parse(&bytes[..n]).is_err(),
            "prefix of {n} bytes parsed"
        );
    }
}

#[test]
fn wrong_identifier() {
    let mut bytes = sample();
    bytes[4..8].copy_from_slice(b"TFL3");
    match TosaModel::parse(&bytes) {
        Err(TosaError::WrongIdentifier { found }) => assert_eq!(found, "TFL3"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        TosaModel::parse(b"abc"),
        Err(TosaError::TooShort { len: 3 })
    ));
}

#[test]
fn dangling_names() {
    let mut b = B::new();
    b.input("x", &[2], D::INT32).output("y", &[2], D::INT32).op(
        Op::ADD,
        empty(Op::ADD),
        &["x", "nope"],
        &["y"],
    );
    let e = TosaModel::parse(&b.finish()).unwrap_err();
    assert!(
        matches!(&e, TosaError::DanglingName { name, .. } if name == "nope"),
        "{e}"
    );
    assert!(e.to_string().contains("operator 0 (ADD) input 1"), "{e}");

    let mut b = B::new();
    b.input("x", &[2], D::INT32);
    b.outputs_clear();
    let e = TosaModel::parse(&b.clone_with_output("ghost").finish()).unwrap_err();
    assert!(e.to_string().contains("ghost"), "{e}");
}

#[test]
fn duplicate_names() {
    let mut b = B::new();
    b.input("x", &[2], D::INT32).tensor("x", &[2], D::INT32);
    let e = TosaModel::parse(&b.finish()).unwrap_err();
    assert!(matches!(e, TosaError::DuplicateName { .. }), "{e}");
}

#[test]
fn data_size_checks() {
    // INT32 [3] needs 12 bytes; 8 is short.
    let mut b = B::new();
    b.konst("c", &[3], D::INT32, vec![0; 8]);
    let e = TosaModel::parse(&b.finish()).unwrap_err();
    assert!(
        matches!(
            e,
            TosaError::DataSizeMismatch {
                expected: 12,
                actual: 8,
                ..
            }
        ),
        "{e}"
    );
    // Padding to 8 bytes (as tosa-opt writes) is accepted and removed.
    let mut b = B::new();
    b.konst("c", &[3], D::INT8, vec![1, 2, 3, 0, 0, 0, 0, 0]);
    let m = TosaModel::parse(&b.finish()).unwrap();
    assert_eq!(
        m.main_block().unwrap().tensor("c").unwrap().data,
        Some(vec![1, 2, 3])
    );
    // INT4: 3 elements in 2 bytes.
    let mut b = B::new();
    b.konst("c", &[3], D::INT4, vec![0x21, 0x03]);
    TosaModel::parse(&b.finish()).unwrap();
    // A negative dimension on a constant.
    let mut b = B::new();
    b.konst("c", &[-1], D::INT8, vec![1]);
    let e = TosaModel::parse(&b.finish()).unwrap_err();
    assert!(matches!(e, TosaError::InvalidShape { .. }), "{e}");
}

#[test]
fn wrong_dtypes_are_lowering_errors() {
    // TABLE with an INT16 table for INT8 input.
    let mut b = B::new();
    b.input("x", &[4], D::INT8)
        .konst("t", &[256], D::INT16, i16s(&[0; 256]))
        .output("y", &[4], D::INT8)
        .op(Op::TABLE, empty(Op::TABLE), &["x", "t"], &["y"]);
    let e = lower_err(&b.finish());
    assert!(e.contains("TABLE") && e.contains("INT16"), "{e}");
    // MUL with an INT16 shift tensor.
    let mut b = B::new();
    b.input("a", &[2], D::INT32)
        .input("b", &[2], D::INT32)
        .scalar("sh", D::INT16, 1)
        .output("y", &[2], D::INT32)
        .op(Op::MUL, empty(Op::MUL), &["a", "b", "sh"], &["y"]);
    let e = lower_err(&b.finish());
    assert!(e.contains("\"sh\""), "{e}");
    // An output declared INT8 where CONV2D produces INT32.
    let mut b = B::new();
    b.input("a", &[2], D::INT32)
        .input("b", &[2], D::INT16)
        .output("y", &[2], D::INT32)
        .op(Op::ADD, empty(Op::ADD), &["a", "b"], &["y"]);
    let e = lower_err(&b.finish());
    assert!(e.contains("\"b\""), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if bytes.len() >= 8 {
            bytes[4..8].copy_from_slice(b"TOSA");
        }
        if let Ok(m) = TosaModel::parse(&bytes) {
            let _ = lower(&m);
        }
    }

    #[test]
    fn mutated_valid_file_never_panics(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = sample();
        let n = bytes.len();
        for (i, v) in edits {
            bytes[i % n] = v;
        }
        if let Ok(m) = TosaModel::parse(&bytes) {
            let _ = lower(&m);
        }
    }
}
