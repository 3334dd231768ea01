//! NEGATE (TOSA §2.5) compiles as RESCALE -> SUB from 0 -> RESCALE (`compile::lower::negate`):
//! i8 with input and output zero points (saturating), i16, i32; bit-exact against the
//! reference interpreter on all five configurations.

mod compile_common;

use compile_common::*;
use npuc_ir::*;

fn negate_modes(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("negate_modes");
    let x = b.input("x", DType::Int8, [1, 5, 6, 7]);
    for (k, (input_zp, output_zp)) in [(0, 0), (17, -100), (-128, 127)].into_iter().enumerate() {
        let attrs = NegateAttrs {
            input_zp,
            output_zp,
        };
        let y = b.op(&format!("neg_i8_{k}"), Op::Negate(attrs), &[x]);
        b.output(y);
    }
    let z = NegateAttrs {
        input_zp: 0,
        output_zp: 0,
    };
    let h = b.input("h", DType::Int16, [2, 3, 4, 5]);
    let y = b.op("neg_i16", Op::Negate(z.clone()), &[h]);
    b.output(y);
    let w = b.input("w", DType::Int32, [3, 17]);
    let y = b.op("neg_i32", Op::Negate(z), &[w]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn negate_of_every_type_with_zero_points() {
    check("negate_modes", negate_modes);
}

#[test]
fn the_rewrite_is_a_named_pass_and_the_lowered_graph_says_it_ran() {
    // NEGATE is rewritten before lowering by the pass named in `rewrite::PASSES`; a graph
    // without NEGATE (or any other rewritten operator) runs no pass.
    let l = npuc::compile::lower::lower(&negate_modes(&mut Rng(1))).unwrap();
    assert_eq!(l.rewrites, ["negate-as-sub"]);
    let mut b = GraphBuilder::new("relu_only");
    let x = b.input("x", DType::Int8, [1, 4, 4, 8]);
    let attrs = ClampAttrs { min: -10, max: 100 };
    let y = b.op("clamp", Op::Clamp(attrs), &[x]);
    b.output(y);
    let l = npuc::compile::lower::lower(&b.finish().unwrap()).unwrap();
    assert!(l.rewrites.is_empty(), "{:?}", l.rewrites);
}
