//! TABLE on the NPU: the LUT activation with the table DMA'd into the LUT RAM, fused into the
//! producing operation where possible, otherwise a pass-through operation. Every graph runs
//! on all five configurations, simulator against interpreter byte for byte.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::isa::{decode_stream, Command};
use npuc_ir::*;

fn random_table(rng: &mut Rng) -> Op {
    Op::Table(TableAttrs {
        table: TableData::I8(rng.i8s(256)),
    })
}

/// Number of DMA_START commands and NPU kernel operations of a compiled graph.
fn dmas_and_ops(g: &Graph) -> (usize, usize) {
    let m = compile(g, &Options::default()).unwrap();
    let d = decode_stream(&m.command_stream).unwrap();
    let dmas = d
        .iter()
        .filter(|c| matches!(c.command, Command::OpDmaStart(_)))
        .count();
    (dmas, m.operators.len())
}

/// A TABLE on a graph input with odd sizes: a standalone pass-through operation.
fn table_standalone(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_standalone");
    let x = b.input("x", DType::Int8, [1, 3, 5, 7]);
    let y = b.op("table", random_table(rng), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// A rank-2 TABLE.
fn table_rank2(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_rank2");
    let x = b.input("x", DType::Int8, [7, 13]);
    let y = b.op("table", random_table(rng), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// CONV2D + RESCALE + CLAMP + TABLE: one CONV operation with the LUT (clamp before lookup).
fn table_after_conv(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_after_conv");
    let (ic, oc) = (5, 12);
    let x = b.input("x", DType::Int8, [1, 6, 7, ic]);
    let wt = b.const_i8("w", [oc, 3, 3, ic], &rng.i8s(oc * 9 * ic));
    let bt = b.const_i32("b", [oc], &vec![300; oc]);
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 1],
        input_zp: 4,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, oc, 38, RescaleRounding::DoubleRound, -9);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let c = b.op("clamp", Op::Clamp(ClampAttrs { min: -40, max: 70 }), &[y]);
    let t = b.op("table", random_table(rng), &[c]);
    b.output(t);
    b.finish().unwrap()
}

/// MAX_POOL2D whose output is both a graph output and the TABLE input: not fused.
fn table_shared_input(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_shared_input");
    let x = b.input("x", DType::Int8, [1, 6, 6, 9]);
    let attrs = PoolAttrs {
        kernel: [2, 2],
        stride: [2, 2],
        pad: [0; 4],
    };
    let p = b.op("pool", Op::MaxPool2d(attrs), &[x]);
    let t = b.op("table", random_table(rng), &[p]);
    b.output(p);
    b.output(t);
    b.finish().unwrap()
}

/// Eleven TABLEs in a row, the first table repeated at the end: more tables than LUT slots
/// (eviction) and a table still resident (no second DMA).
fn table_chain(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_chain");
    let mut t = b.input("x", DType::Int8, [1, 4, 3, 17]);
    let first = random_table(rng);
    for i in 0..10 {
        let op = if i == 0 {
            first.clone()
        } else {
            random_table(rng)
        };
        t = b.op(&format!("table{i}"), op, &[t]);
    }
    t = b.op("table_again", first, &[t]);
    b.output(t);
    b.finish().unwrap()
}

macro_rules! lut_tests {
    ($($name:ident),* $(,)?) => {
        mod sim_equals_interpreter {
            use super::*;
            $(#[test] fn $name() {
                check(stringify!($name), super::$name);
            })*
        }
    };
}

lut_tests!(
    table_standalone,
    table_rank2,
    table_after_conv,
    table_shared_input,
    table_chain,
);

#[test]
fn a_table_after_a_convolution_fuses_into_it() {
    assert_eq!(dmas_and_ops(&table_after_conv(&mut Rng(1))), (1, 1));
}

#[test]
fn a_table_whose_input_is_also_read_elsewhere_is_a_separate_operation() {
    assert_eq!(dmas_and_ops(&table_shared_input(&mut Rng(1))), (1, 2));
}

#[test]
fn tables_are_loaded_once_while_resident_and_evicted_least_recently_used() {
    // Ten distinct tables need ten loads; the first one was evicted by the ninth load, so
    // the repeat needs an eleventh. A table resident in a slot is not loaded again.
    assert_eq!(dmas_and_ops(&table_chain(&mut Rng(1))), (11, 11));
    let mut b = GraphBuilder::new("same_table_twice");
    let x = b.input("x", DType::Int8, [1, 2, 2, 16]);
    let op = random_table(&mut Rng(3));
    let y = b.op("t0", op.clone(), &[x]);
    let z = b.op("t1", op, &[y]);
    b.output(z);
    assert_eq!(dmas_and_ops(&b.finish().unwrap()), (1, 2));
}
