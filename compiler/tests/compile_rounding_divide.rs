//! gemmlowp's RoundingDivideByPOT after an 8/16-bit MUL (the frontends' `SELECT(GREATER(0,
//! x), SUB(0, r), r)` with `r = ASR(ABS(x), e, round)`) fused as the MUL's OFM rounding
//! `symmetric` (decision L22): one operation, exact for every input including every tie.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_ir::*;

/// `rdbpot(a * b, e)` of two i16 tensors (`b` a graph input, or the scalar `k`); with
/// `expose`, the shifted magnitude `r` is a second graph output (nothing fuses then).
fn product_rdbpot(name: &str, e: i32, k: Option<i16>, expose: bool) -> Graph {
    let shape = [1, 256, 256, 1];
    let mut b = GraphBuilder::new(name);
    let x = b.input("a", DType::Int16, shape);
    let y = match k {
        Some(k) => b.const_i16("k", [1, 1, 1, 1], &[k]),
        None => b.input("b", DType::Int16, shape),
    };
    let p = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[x, y]);
    let zero = |b: &mut GraphBuilder, n: &str| b.const_i32(n, [1, 1, 1, 1], &[0]);
    let a = b.op("abs", Op::Abs, &[p]);
    let ec = b.const_i32("exponent", [1, 1, 1, 1], &[e]);
    let r = b.op(
        "rdbpot",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[a, ec],
    );
    let z = zero(&mut b, "zero");
    let neg = b.op("neg", Op::Sub, &[z, r]);
    let z = zero(&mut b, "zero2");
    let is_neg = b.op("is_neg", Op::Greater, &[z, p]);
    let s = b.op("sign", Op::Select, &[is_neg, neg, r]);
    b.output(s);
    if expose {
        b.output(r);
    }
    b.finish().unwrap()
}

/// Simulator against interpreter on the input holding every i16 value once (and, for two
/// inputs, a second input of seeded noise).
fn exact(g: &Graph, accel: Accelerator) -> usize {
    let values: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    let mut rng = Rng(11);
    let inputs: Vec<TensorValue> = g
        .inputs()
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let ty = &g.tensor(t).unwrap().ty;
            let data = if i == 0 {
                values.clone()
            } else {
                rng.i16s(values.len())
            };
            TensorValue::new(ty.shape.clone(), TensorData::I16(data)).unwrap()
        })
        .collect();
    let expected = run_outputs(g, inputs.clone()).unwrap();
    let m = compile(g, &options(accel)).unwrap();
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
    let got = simulate(&m, &bytes);
    for (k, (e, o)) in expected.iter().zip(&got).enumerate() {
        let e = e.to_le_bytes();
        if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
            panic!(
                "{} on {accel}, output {k}: first mismatch at byte {pos}",
                g.name()
            );
        }
    }
    m.operators.len()
}

#[test]
fn every_tie_rounds_away_from_zero_in_one_operation() {
    // x * 1 >> 1: every odd x is a tie; x * 3 >> 2: x*3 = 4q + 2 ties too.
    for (e, k) in [(1, 1), (2, 3), (15, -32768), (30, 32767)] {
        let g = product_rdbpot("rdbpot_ties", e, Some(k), false);
        for accel in Accelerator::ALL {
            assert_eq!(exact(&g, accel), 1, "e {e} k {k} on {accel}");
        }
    }
}

#[test]
fn products_of_two_inputs_are_exact() {
    let g = product_rdbpot("rdbpot_products", 15, None, false);
    for accel in Accelerator::ALL {
        assert_eq!(exact(&g, accel), 1, "{accel}");
    }
}

#[test]
fn an_intermediate_read_elsewhere_keeps_the_operators() {
    let g = product_rdbpot("rdbpot_exposed", 13, None, true);
    let m = compile(&g, &Options::default()).unwrap();
    assert!(m.operators.len() > 1);
    exact(&g, Accelerator::U85_256);
}
