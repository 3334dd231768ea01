//! Snapshot of the text dump of a small quantized network, and an end-to-end run of it.

use npuc_ir::*;

/// conv 3x3 (per-channel, double rounding) -> relu6 -> avg pool (TFLite) -> reshape ->
/// fully connected (single rounding) -> sigmoid-like TABLE.
fn small_net() -> Graph {
    let mut b = GraphBuilder::new("small_net");
    let x = b.input("x", DType::Int8, [1, 4, 4, 2]);
    b.quant(x, Quantization::per_tensor(0.5, -1));
    let w: Vec<i8> = (0..36).map(|i| ((i * 7) % 11 - 5) as i8).collect();
    let w = b.const_i8("conv.w", [2, 3, 3, 2], &w);
    b.quant(w, Quantization::per_axis(0, vec![0.02, 0.03], vec![0, 0]));
    let bias = b.const_i32("conv.b", [2], &[100, -50]);
    let conv = ConvAttrs {
        pad: [1, 1, 1, 1],
        input_zp: -1,
        ..Default::default()
    };
    let acc = b.op("conv", Op::Conv2d(conv), &[x, w, bias]);
    let rq = RescaleAttrs {
        multiplier: vec![1_288_490_189, 1_932_735_283],
        shift: vec![36, 36],
        per_channel: true,
        output_zp: -128,
        ..RescaleAttrs::per_tensor(DType::Int8, 0, 0, RescaleRounding::DoubleRound)
    };
    let y = b.op("conv.rescale", Op::Rescale(rq), &[acc]);
    b.quant(y, Quantization::per_tensor(0.05, -128));
    let y = b.op("relu6", Op::Clamp(ClampAttrs { min: -128, max: -8 }), &[y]);
    let pool = AvgPool2dAttrs {
        kernel: [2, 2],
        stride: [2, 2],
        pad: [0; 4],
        input_zp: 0,
        output_zp: 0,
        rounding: AvgPoolRounding::Tflite,
    };
    let y = b.op("pool", Op::AvgPool2d(pool), &[y]);
    let y = b.op(
        "flatten",
        Op::Reshape(ReshapeAttrs {
            shape: Shape::from([1, 8]),
        }),
        &[y],
    );
    let fw: Vec<i8> = (0..24).map(|i| (i % 5 - 2) as i8).collect();
    let fw = b.const_i8("fc.w", [3, 8], &fw);
    let fb = b.const_i32("fc.b", [3], &[7, 0, -7]);
    let fc = b.op(
        "fc",
        Op::FullyConnected(FullyConnectedAttrs {
            input_zp: -128,
            weight_zp: 0,
        }),
        &[y, fw, fb],
    );
    let rq = RescaleAttrs {
        output_zp: 3,
        ..RescaleAttrs::per_tensor(DType::Int8, 1_717_986_918, 40, RescaleRounding::SingleRound)
    };
    let logits = b.op("fc.rescale", Op::Rescale(rq), &[fc]);
    b.quant(logits, Quantization::per_tensor(0.125, 3));
    let table: Vec<i8> = (0..256).map(|i| ((i - 128) / 2) as i8).collect();
    let out = b.op(
        "act",
        Op::Table(TableAttrs {
            table: TableData::I8(table),
        }),
        &[logits],
    );
    b.output(out);
    b.finish().expect("valid graph")
}

#[test]
fn dump_of_small_net() {
    insta::assert_snapshot!(dump(&small_net()));
}

#[test]
fn small_net_runs_end_to_end() {
    let g = small_net();
    let x: Vec<i64> = (0..32).map(|i| (i * 37 % 256) - 128).collect();
    let input = TensorValue::from_i64(DType::Int8, [1, 4, 4, 2], &x).unwrap();
    let values = run(&g, vec![input]).expect("defined");
    // Every op output is present, in execution order after the input.
    let names: Vec<&str> = values
        .keys()
        .map(|&t| g.tensor(t).unwrap().name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "x",
            "conv",
            "conv.rescale",
            "relu6",
            "pool",
            "flatten",
            "fc",
            "fc.rescale",
            "act"
        ]
    );
    let out = run_outputs(
        &g,
        vec![TensorValue::from_i64(DType::Int8, [1, 4, 4, 2], &x).unwrap()],
    )
    .unwrap();
    assert_eq!(out[0].shape().dims(), &[1, 3]);
    assert_eq!(&out[0], values.get(&g.outputs()[0]).unwrap());

    // Localising a divergence: perturb one intermediate and find it again.
    let mut other = values.clone();
    assert_eq!(first_mismatch(&values, &other), None);
    let pool = g.find_tensor("pool").unwrap();
    let bumped: Vec<i64> = other[&pool].to_i64_vec().iter().map(|v| v + 1).collect();
    other.insert(
        pool,
        TensorValue::from_i64(DType::Int8, [1, 2, 2, 2], &bumped).unwrap(),
    );
    assert_eq!(first_mismatch(&values, &other), Some(pool));
}

#[test]
fn display_is_the_dump() {
    let g = small_net();
    assert_eq!(g.to_string(), dump(&g));
}
