//! GATHER with computed indices as a DMA in the source index mode (decision L21): the
//! fallback when no activation LUT does the lookup. Simulator against interpreter byte for
//! byte on every configuration and memory mode; an index that is not provably inside the
//! table is clamped into it first (the DMA would skip it silently; decision L31).

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command, DmaIdxMode};
use npuc_ir::*;

fn widen(x_zp: i64) -> Op {
    Op::Rescale(RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![1 << 30],
        shift: vec![30],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: x_zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    })
}

fn reshape(s: Vec<usize>) -> Op {
    Op::Reshape(ReshapeAttrs { shape: s.into() })
}

/// `y = T[x + 32768]` for every element of an i16 `[1, 256, 256, 1]` input, `T` a 65536-entry
/// i16 table of noise: the LSTM's form (widen, ADD, RESHAPE, GATHER, RESHAPE), which no LUT
/// mode reproduces.
fn noise_lookup(tables: usize) -> Graph {
    let mut b = GraphBuilder::new("noise_lookup");
    let x = b.input("x", DType::Int16, [1, 256, 256, 1]);
    let mut rng = Rng(9);
    let mut outs = Vec::new();
    let table: Vec<i16> = rng.i16s(65536);
    let t = b.const_i16("table", [1, 65536, 1], &table);
    for j in 0..tables {
        let w = b.op(&format!("widen{j}"), widen(0), &[x]);
        let off = b.const_i32(&format!("offset{j}"), [1, 1, 1, 1], &[32768]);
        let i = b.op(&format!("index{j}"), Op::Add, &[w, off]);
        let i = b.op(&format!("flat{j}"), reshape(vec![1, 65536]), &[i]);
        let y = b.op(&format!("lookup{j}"), Op::Gather, &[t, i]);
        let y = b.op(&format!("unflat{j}"), reshape(vec![1, 256, 256, 1]), &[y]);
        outs.push(y);
    }
    for y in outs {
        b.output(y);
    }
    b.finish().unwrap()
}

/// Compiles `g` with `options` and checks every output against the interpreter on the input
/// holding every i16 value once.
fn every_i16_value(g: &Graph, options: &Options, what: &str) {
    let values: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    let ty = &g.tensor(g.inputs()[0]).unwrap().ty;
    let input = TensorValue::new(ty.shape.clone(), TensorData::I16(values)).unwrap();
    let expected = npuc_ir::run_outputs(g, vec![input.clone()]).unwrap();
    let m = compile(g, options).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = simulate(&m, &[input.to_le_bytes()]);
    for (k, (e, o)) in expected.iter().zip(&got).enumerate() {
        let e = e.to_le_bytes();
        if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
            panic!("{what}, output {k}: first mismatch at byte {pos}");
        }
    }
}

#[test]
fn a_65536_entry_lookup_no_lut_reproduces_is_exact_on_every_configuration() {
    let g = noise_lookup(1);
    for accel in Accelerator::ALL {
        every_i16_value(&g, &options(accel), &accel.to_string());
    }
}

#[test]
fn the_table_is_read_in_place_in_every_memory_mode() {
    let g = noise_lookup(1);
    for (sys, mode) in [
        ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
        ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_256KB"),
        ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_512KB"),
        ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram"),
        ("Ethos_U85_SYS_DRAM_Mid", "Shared_Sram"),
        ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
        ("Ethos_U85_SYS_Flash_High", "Shared_Sram"),
        ("Ethos_U85_SYS_Flash_Low", "Sram_Only"),
    ] {
        let o = options_in(Accelerator::U85_256, sys, mode);
        every_i16_value(&g, &o, &format!("{sys} {mode}"));
    }
}

#[test]
fn the_index_is_one_elementwise_operation_and_the_lookup_one_dma() {
    // widen + 32768 is one SUB of -32768 (the scalar fits the 16-bit operand).
    let m = compile(&noise_lookup(1), &Options::default()).unwrap();
    let kinds: Vec<&str> = m.operators.iter().map(|o| o.kernel.as_str()).collect();
    assert_eq!(kinds, ["ELEMENTWISE", "DMA"]);
}

/// The DMA0 source-region commands of a compiled graph.
fn dma_sources(m: &npuc::compile::CompiledModel) -> Vec<(u8, DmaIdxMode)> {
    decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .iter()
        .filter_map(|c| match c.command {
            Command::SetDma0SrcRegion(r) => Some((r.region, r.idx_mode)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_table_read_by_two_lookups_is_stored_once_and_gathered_from_region_0() {
    let m = compile(&noise_lookup(2), &Options::default()).unwrap();
    // 65536 indices: rows of 32768 (DMA0_SIZE0 is 16 bits), one DMA per lookup, both
    // gathering from region 0 (the registers are written once: the second DMA repeats them).
    assert_eq!(dma_sources(&m), [(0, DmaIdxMode::Enabled)]);
    let starts = decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .iter()
        .filter(|c| matches!(c.command, Command::OpDmaStart(_)))
        .count();
    assert_eq!(starts, 2);
    assert!(
        m.read_only.len() < 2 * 131072,
        "{} read-only bytes",
        m.read_only.len()
    );
    assert!(m.operators.iter().filter(|o| o.kernel == "DMA").count() == 2);
}

/// `out[b][j] = T[b][clamp(x[b][j] - zp)]` style gathers from a `[n, k, c]` table of `dtype`
/// with an i8 index input `[n, w]` widened (minus `zp`) then `ops` applied.
fn table_gather(
    name: &str,
    dtype: DType,
    n: usize,
    k: usize,
    c: usize,
    w: usize,
    ops: &[Op],
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = b.input("x", DType::Int8, [n, w]);
    let mut i = b.op("widen", widen(-128), &[x]);
    for (j, op) in ops.iter().enumerate() {
        i = match op {
            Op::Add => {
                let off = b.const_i32(&format!("c{j}"), [1, 1], &[3]);
                b.op(&format!("op{j}"), Op::Add, &[i, off])
            }
            _ => b.op(&format!("op{j}"), op.clone(), &[i]),
        };
    }
    let fill: Vec<i64> = (0..n * k * c)
        .map(|v| (v as i64 * 37) % 251 - 125)
        .collect();
    let t = b.constant(
        "table",
        [n, k, c],
        TensorData::from_i64(dtype, &fill).unwrap(),
    );
    let y = b.op("gather", Op::Gather, &[t, i]);
    b.output(y);
    b.finish().unwrap()
}

fn clamp(min: i64, max: i64) -> Op {
    Op::Clamp(ClampAttrs { min, max })
}

/// Two batches of 7 rows of three i8 from a 300-row table, index `x + 128 + 3`: a 3D DMA.
fn gather_batches_i8(_rng: &mut Rng) -> Graph {
    table_gather("gather_batches_i8", DType::Int8, 2, 300, 3, 7, &[Op::Add])
}

/// i32 rows of 5 from a 260-row table, index clamped to `0..=259` after the offset.
fn gather_i32_clamped(_rng: &mut Rng) -> Graph {
    table_gather(
        "gather_i32_clamped",
        DType::Int32,
        1,
        260,
        5,
        9,
        &[Op::Add, clamp(0, 259)],
    )
}

/// An i16 table of 150 rows, the index clamped into it (most indices saturate at 149).
fn gather_i16_saturating(_rng: &mut Rng) -> Graph {
    table_gather(
        "gather_i16_saturating",
        DType::Int16,
        1,
        150,
        2,
        40,
        &[clamp(20, 149)],
    )
}

/// The values are a feature map (a MAXIMUM), gathered at a clamped computed index.
fn gather_from_feature_map(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("gather_from_feature_map");
    let y = b.input("y", DType::Int8, [1, 5, 4]);
    let z = b.input("z", DType::Int8, [1, 5, 4]);
    let x = b.input("x", DType::Int8, [1, 6]);
    let v = b.op("max", Op::Maximum, &[y, z]);
    let i = b.op("widen", widen(0), &[x]);
    let i = b.op("clamp", clamp(0, 4), &[i]);
    let g = b.op("gather", Op::Gather, &[v, i]);
    b.output(g);
    b.finish().unwrap()
}

macro_rules! gather_tests {
    ($($name:ident),* $(,)?) => {
        mod sim_equals_interpreter {
            use super::*;
            $(#[test] fn $name() { check(stringify!($name), super::$name); })*
        }
    };
}

gather_tests!(
    gather_batches_i8,
    gather_i32_clamped,
    gather_i16_saturating,
    gather_from_feature_map,
);

#[test]
fn a_batched_gather_is_one_dma_in_the_source_index_mode() {
    let m = compile(&gather_batches_i8(&mut Rng(1)), &Options::default()).unwrap();
    assert_eq!(dma_sources(&m), [(0, DmaIdxMode::Enabled)]);
}

/// Runs `g` (GATHER of a constant `table` of `k` rows of one i8 at i32 indices `idx`, the
/// graph's only input) on the simulator; returns the gathered bytes.
fn gathered(g: &Graph, accel: Accelerator, idx: &[i32]) -> Vec<u8> {
    let m = compile(g, &options(accel)).unwrap();
    let bytes: Vec<u8> = idx.iter().flat_map(|v| v.to_le_bytes()).collect();
    simulate(&m, &[bytes]).remove(0)
}

#[test]
fn an_index_not_provably_inside_the_table_is_clamped_into_it() {
    // x + 128 + 3 lies in 3..=258: inside a table of 259 rows (no clamp needed) and, clamped,
    // inside one of 258 (the index 258 reads row 257).
    for k in [259, 258] {
        let g = table_gather("over", DType::Int8, 1, k, 1, 4, &[Op::Add]);
        check_sim(&format!("table of {k}"), &g, 2);
    }
    // Indices given at run time can be anything: TOSA leaves an index outside the table
    // unpredictable; npuc reads the nearest row (decision L31). Tables whose last row fits
    // 16 bits (one clamping pool) and does not (MAX and MIN with scalars).
    let idx = [
        -5,
        0,
        7,
        299,
        300,
        100_000,
        i32::MIN,
        i32::MAX,
        39_999,
        40_000,
        1,
        2,
    ];
    for k in [300usize, 40_000] {
        let mut b = GraphBuilder::new("run_time");
        let i = b.input("i", DType::Int32, [1, idx.len()]);
        let rows: Vec<i8> = (0..k).map(|r| (r % 251) as i8).collect();
        let t = b.const_i8("table", [1, k, 1], &rows);
        let y = b.op("gather", Op::Gather, &[t, i]);
        b.output(y);
        let g = b.finish().unwrap();
        let want: Vec<u8> = idx
            .iter()
            .map(|&v| rows[v.clamp(0, k as i32 - 1) as usize] as u8)
            .collect();
        for accel in Accelerator::ALL {
            assert_eq!(gathered(&g, accel, &idx), want, "table of {k} on {accel}");
        }
    }
}
