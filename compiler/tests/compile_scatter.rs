//! SCATTER as DMA copies with the destination index mode (decision L14): simulator against
//! interpreter byte for byte on all five configurations, constant and run-time indices.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_ir::*;

/// SCATTER of an input `[n, w, c]` into a constant `[n, k, c]` at constant indices.
fn scatter_const(name: &str, dtype: DType, n: usize, k: usize, c: usize, idx: &[i32]) -> Graph {
    let w = idx.len() / n;
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", dtype, [n, w, c]);
    let fill: Vec<i64> = (0..n * k * c).map(|i| (i as i64 * 7) % 100 - 50).collect();
    let v = b.constant(
        "values",
        [n, k, c],
        TensorData::from_i64(dtype, &fill).unwrap(),
    );
    let i = b.const_i32("indices", [n, w], idx);
    let s = b.op("scatter", Op::Scatter, &[v, i, x]);
    b.output(s);
    b.finish().unwrap()
}

/// Unsorted constant indices into i8 rows, one batch (the scatter_nd corpus form).
pub fn scatter_unsorted(_rng: &mut Rng) -> Graph {
    scatter_const("scatter_unsorted", DType::Int8, 1, 6, 5, &[4, 0, 5, 2])
}

/// Two batches of i16 rows (a 3D DMA: one row of transfers per batch).
pub fn scatter_batches_i16(_rng: &mut Rng) -> Graph {
    scatter_const(
        "scatter_batches_i16",
        DType::Int16,
        2,
        5,
        3,
        &[1, 4, 0, 3, 0, 2],
    )
}

/// Indices replacing every row (a permutation): no initial copy of the values.
pub fn scatter_permutation(_rng: &mut Rng) -> Graph {
    scatter_const("scatter_permutation", DType::Int8, 1, 4, 7, &[2, 0, 3, 1])
}

/// The values come from an NPU operation (a MAXIMUM) rather than a constant.
pub fn scatter_into_feature_map(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("scatter_into_feature_map");
    let x = b.input("x", DType::Int8, [1, 2, 4]);
    let y = b.input("y", DType::Int8, [1, 5, 4]);
    let z = b.input("z", DType::Int8, [1, 5, 4]);
    let v = b.op("max", Op::Maximum, &[y, z]);
    let i = b.const_i32("indices", [1, 2], &[3, 1]);
    let s = b.op("scatter", Op::Scatter, &[v, i, x]);
    b.output(s);
    b.finish().unwrap()
}

/// The scattered tensor is an intermediate (placed in fast memory), read by a MINIMUM.
pub fn scatter_intermediate(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("scatter_intermediate");
    let x = b.input("x", DType::Int8, [1, 3, 6]);
    let y = b.input("y", DType::Int8, [1, 4, 6]);
    let v = b.const_i8("values", [1, 4, 6], &[9; 24]);
    let i = b.const_i32("indices", [1, 3], &[2, 3, 0]);
    let s = b.op("scatter", Op::Scatter, &[v, i, x]);
    let m = b.op("min", Op::Minimum, &[s, y]);
    b.output(m);
    b.finish().unwrap()
}

macro_rules! scatter_tests {
    ($($name:ident),* $(,)?) => {
        mod sim_equals_interpreter {
            use super::*;
            $(#[test] fn $name() { check(stringify!($name), super::$name); })*
        }
    };
}

scatter_tests!(
    scatter_unsorted,
    scatter_batches_i16,
    scatter_permutation,
    scatter_into_feature_map,
    scatter_intermediate,
);

#[test]
fn a_permutation_needs_one_dma_and_a_partial_scatter_two() {
    let kinds = |g: &Graph| -> Vec<String> {
        let m = compile(g, &Options::default()).unwrap();
        m.operators.iter().map(|o| o.kernel.clone()).collect()
    };
    assert_eq!(kinds(&scatter_permutation(&mut Rng(1))), ["DMA"]);
    assert_eq!(kinds(&scatter_unsorted(&mut Rng(1))), ["DMA", "DMA"]);
}

/// Indices given at run time (an i32 graph input): every permutation of three rows out of
/// five, on every configuration.
#[test]
fn run_time_indices() {
    let mut b = GraphBuilder::new("scatter_run_time");
    let v = b.input("values", DType::Int8, [1, 5, 3]);
    let i = b.input("indices", DType::Int32, [1, 3]);
    let x = b.input("x", DType::Int8, [1, 3, 3]);
    let s = b.op("scatter", Op::Scatter, &[v, i, x]);
    b.output(s);
    let g = b.finish().unwrap();
    let mut rng = Rng(7);
    for accel in Accelerator::ALL {
        let m = compile(&g, &Options::new(accel)).unwrap();
        for idx in [[0, 1, 2], [4, 2, 0], [1, 3, 4], [3, 0, 2]] {
            let inputs = vec![
                TensorValue::new([1, 5, 3], TensorData::I8(rng.i8s(15))).unwrap(),
                TensorValue::new([1, 3], TensorData::I32(idx.to_vec())).unwrap(),
                TensorValue::new([1, 3, 3], TensorData::I8(rng.i8s(9))).unwrap(),
            ];
            let expected = run_outputs(&g, inputs.clone()).unwrap();
            let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
            let got = simulate(&m, &bytes);
            assert_eq!(got[0], expected[0].to_le_bytes(), "{accel} {idx:?}");
        }
    }
}

#[test]
fn bad_constant_indices_are_clear_errors() {
    let e = |g: Graph| compile(&g, &Options::default()).unwrap_err().to_string();
    let repeated = e(scatter_const("r", DType::Int8, 1, 4, 2, &[1, 3, 1]));
    assert!(repeated.contains("index 1 repeated"), "{repeated}");
    let outside = e(scatter_const("o", DType::Int8, 1, 4, 2, &[1, 4]));
    assert!(
        outside.contains("index 4 (element 1) outside [0, 4)"),
        "{outside}"
    );
}

/// The DMA runs alongside kernel operations: it waits for the MAXIMUM writing its source
/// (KERNEL_WAIT 0 before DMA_START) and the stream waits for it before going on (DMA_WAIT 0
/// right after each DMA_START).
#[test]
fn dmas_are_fenced_against_kernels() {
    use npuc_backend::isa::{decode_stream, Command};
    let m = compile(&scatter_into_feature_map(&mut Rng(1)), &Options::default()).unwrap();
    let cmds: Vec<Command> = decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .into_iter()
        .map(|d| d.command)
        .collect();
    let kernel = cmds
        .iter()
        .position(|c| matches!(c, Command::OpElementwise(_)))
        .unwrap();
    let starts: Vec<usize> = (0..cmds.len())
        .filter(|&i| matches!(cmds[i], Command::OpDmaStart(_)))
        .collect();
    assert_eq!(starts.len(), 2);
    let wait = cmds
        .iter()
        .position(|c| matches!(c, Command::OpKernelWait(k) if k.n == 0))
        .unwrap();
    assert!(kernel < wait && wait < starts[0]);
    for s in starts {
        assert!(matches!(cmds[s + 1], Command::OpDmaWait(w) if w.k == 0));
    }
}
