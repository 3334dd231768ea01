//! The validator names the offending operator (id, name, kind) and tensor.

use npuc_ir::*;

fn conv_graph(ic_weight: usize) -> Result<Graph, BuildError> {
    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [1, 4, 4, 3]);
    let w = b.const_i8("w", [2, 1, 1, ic_weight], &vec![1; 2 * ic_weight]);
    let bias = b.const_i32("bias", [2], &[0, 0]);
    let y = b.op("conv", Op::Conv2d(ConvAttrs::default()), &[x, w, bias]);
    b.output(y);
    b.finish()
}

#[test]
fn operand_error_names_op_and_tensor() {
    assert!(conv_graph(3).is_ok());
    let err = conv_graph(2).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("'conv'") && msg.contains("CONV2D") && msg.contains("input 1"),
        "{msg}"
    );
    // The same check through `validate` reports the tensor id and name.
    let mut g = Graph::new("g");
    let x = g.add_input("x", TensorType::new(DType::Int8, [1, 4, 4, 3]));
    let w = g
        .add_const("w", [2, 1, 1, 2], TensorData::I8(vec![1; 4]))
        .unwrap();
    let b = g
        .add_const("bias", [2], TensorData::I32(vec![0, 0]))
        .unwrap();
    let y = g.add_tensor("y", TensorType::new(DType::Int32, [1, 4, 4, 2]));
    let op = g
        .add_op("conv", Op::Conv2d(ConvAttrs::default()), &[x, w, b], &[y])
        .unwrap();
    match validate(&g).unwrap_err() {
        ValidationError::Op {
            op: o,
            name,
            kind,
            tensor,
            ..
        } => {
            assert_eq!((o, name.as_str(), kind), (op, "conv", "CONV2D"));
            assert_eq!(tensor, Some((w, "w".to_string())));
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn declared_output_type_must_match_inference() {
    let mut g = Graph::new("g");
    let x = g.add_input("x", TensorType::new(DType::Int32, [2]));
    let y = g.add_tensor("y", TensorType::new(DType::Int8, [2]));
    g.add_op("abs", Op::Abs, &[x], &[y]).unwrap();
    let msg = validate(&g).unwrap_err().to_string();
    assert!(
        msg.contains("'abs'") && msg.contains("'y'") && msg.contains("inferred i32[2]"),
        "{msg}"
    );
}

#[test]
fn operands_must_be_defined() {
    let mut g = Graph::new("g");
    let x = g.add_tensor("dangling", TensorType::new(DType::Int32, [2]));
    let y = g.add_tensor("y", TensorType::new(DType::Int32, [2]));
    g.add_op("abs", Op::Abs, &[x], &[y]).unwrap();
    let msg = validate(&g).unwrap_err().to_string();
    assert!(
        msg.contains("'dangling'") && msg.contains("never written"),
        "{msg}"
    );
}

#[test]
fn cycles_are_rejected() {
    let mut g = Graph::new("g");
    let a = g.add_tensor("a", TensorType::new(DType::Int32, [1]));
    let b = g.add_tensor("b", TensorType::new(DType::Int32, [1]));
    g.add_op("f", Op::Abs, &[a], &[b]).unwrap();
    g.add_op("g", Op::Abs, &[b], &[a]).unwrap();
    assert_eq!(g.topo_order(), Err(GraphError::Cycle));
    assert!(matches!(validate(&g), Err(ValidationError::Graph(_))));
}

#[test]
fn graph_inputs_and_constants_cannot_be_written() {
    let mut g = Graph::new("g");
    let x = g.add_input("x", TensorType::new(DType::Int32, [1]));
    let c = g.add_const("c", [1], TensorData::I32(vec![1])).unwrap();
    assert!(matches!(
        g.add_op("w", Op::Abs, &[c], &[x]),
        Err(GraphError::NotWritable { .. })
    ));
    assert!(matches!(
        g.add_op("w", Op::Abs, &[x], &[c]),
        Err(GraphError::NotWritable { .. })
    ));
}

#[test]
fn constant_data_must_match_shape() {
    let mut g = Graph::new("g");
    assert!(g
        .add_const("c", [2, 2], TensorData::I8(vec![1, 2, 3]))
        .is_err());
}

#[test]
fn quantization_records_are_checked() {
    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [1, 3]);
    b.quant(x, Quantization::per_axis(1, vec![0.5, 0.25], vec![0, 0]));
    let y = b.op("id", Op::Identity, &[x]);
    b.output(y);
    let msg = b.finish().unwrap_err().to_string();
    assert!(
        msg.contains("'x'") && msg.contains("needs 3 scales"),
        "{msg}"
    );

    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [1, 3]);
    b.quant(x, Quantization::per_tensor(0.5, 200));
    b.output(x);
    assert!(b.finish().is_err()); // zero point outside i8
}

#[test]
fn zero_extents_are_rejected() {
    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [1, 0]);
    b.output(x);
    assert!(b.finish().is_err());
}

#[test]
fn builder_reports_the_first_error() {
    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [2]);
    let y = b.op("bad", Op::IntDiv, &[x, x]); // INTDIV needs i32
    let z = b.op("after", Op::Abs, &[y]); // keeps building on a placeholder
    b.output(z);
    let msg = b.finish().unwrap_err().to_string();
    assert!(msg.contains("'bad'") && msg.contains("INTDIV"), "{msg}");
}

#[test]
fn interpreter_checks_input_values() {
    let mut b = GraphBuilder::new("g");
    let x = b.input("x", DType::Int8, [2]);
    b.output(x);
    let g = b.finish().unwrap();
    let wrong = TensorValue::from_i64(DType::Int16, [2], &[1, 2]).unwrap();
    assert!(matches!(
        run(&g, vec![wrong]),
        Err(InterpError::InputType { .. })
    ));
    assert!(matches!(
        run(&g, vec![]),
        Err(InterpError::InputCount { .. })
    ));
}
