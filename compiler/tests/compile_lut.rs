//! TABLE on the NPU: the LUT activation with the table DMA'd into the LUT RAM, fused into the
//! producing operation where possible, otherwise a pass-through operation. Every graph runs
//! on all five configurations, simulator against interpreter byte for byte.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::isa::{decode_stream, ActivationFunction, Command};
use npuc_ir::*;

fn random_table(rng: &mut Rng) -> Op {
    Op::Table(TableAttrs {
        table: TableData::I8(rng.i8s(256)),
    })
}

/// The positions of the DMA_START commands that load the LUT RAM (internal destination;
/// other DMAs stage streams or feature maps).
fn lut_loads(cmds: &[Command]) -> Vec<usize> {
    let mut regs = npuc_backend::isa::RegisterFile::default();
    let mut out = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        regs.apply(c);
        if matches!(c, Command::OpDmaStart(_))
            && regs.dma0_dst_region.region_mode == npuc_backend::isa::DmaRegionMode::Internal
        {
            out.push(i);
        }
    }
    out
}

/// Number of LUT loads and NPU kernel operations of a compiled graph.
fn dmas_and_ops(g: &Graph) -> (usize, usize) {
    let m = compile(g, &Options::default()).unwrap();
    let d: Vec<Command> = decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .into_iter()
        .map(|c| c.command)
        .collect();
    (lut_loads(&d).len(), m.operators.len())
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
    table16_s32,
    table16_s16,
    table16_after_rescale,
    table16_i32_fused,
    table16_after_truncating_cast,
    table_8_16_8,
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

// ---- 16-bit tables (lut_s16_s32, lut_s16_s16; decision L15) ----

/// A TOSA 513-entry table: a random walk from -32768 to 32767 (every slope fits i16), so
/// the edge entries are the extremes of i16.
fn table513(rng: &mut Rng) -> Vec<i16> {
    let mut t = vec![-32768i64];
    for _ in 1..512 {
        let last = *t.last().unwrap();
        t.push((last + rng.range(-400, 1200)).clamp(-32768, 32767));
    }
    t.push(32767);
    t.into_iter().map(|v| v as i16).collect()
}

fn table16(rng: &mut Rng) -> Op {
    Op::Table(TableAttrs {
        table: TableData::I16(table513(rng)),
    })
}

/// The RESCALE that rounds a 16.7 table result to an integer: `(v + 64) >> 7`.
fn round7(out: DType) -> Op {
    Op::Rescale(RescaleAttrs {
        output_dtype: out,
        multiplier: vec![1 << 30],
        shift: vec![37],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    })
}

/// A per-tensor RESCALE between 8/16-bit types.
fn rescale(out: DType, multiplier: i32, shift: i8, input_zp: i64) -> Op {
    Op::Rescale(RescaleAttrs {
        output_dtype: out,
        multiplier: vec![multiplier],
        shift: vec![shift],
        scale32: true,
        rounding: RescaleRounding::DoubleRound,
        per_channel: false,
        input_zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    })
}

/// TABLE i16 -> i32 on a graph input: `lut_s16_s32` in a pass-through operation.
fn table16_s32(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table16_s32");
    let x = b.input("x", DType::Int16, [1, 3, 5, 7]);
    let y = b.op("table", table16(rng), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// TABLE + the rounding RESCALE to i16 (TFLite's int16 LUTLookup): `lut_s16_s16`.
fn table16_s16(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table16_s16");
    let x = b.input("x", DType::Int16, [1, 4, 9, 5]);
    let t = b.op("table", table16(rng), &[x]);
    let y = b.op("round", round7(DType::Int16), &[t]);
    b.output(y);
    b.finish().unwrap()
}

/// i8 -> RESCALE to i16 -> TABLE -> rounding RESCALE to i16: the LUT is fused into the
/// RESCALE's operation (its clamp to i16 acts before the lookup).
fn table16_after_rescale(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table16_after_rescale");
    let x = b.input("x", DType::Int8, [1, 6, 6, 3]);
    let w = b.op("widen", rescale(DType::Int16, 1_500_000_000, 22, -7), &[x]);
    let t = b.op("table", table16(rng), &[w]);
    let y = b.op("round", round7(DType::Int16), &[t]);
    b.output(y);
    b.finish().unwrap()
}

/// i16 -> RESCALE -> TABLE -> rounding RESCALE to i32 (the form of TFLite's int16 SOFTMAX):
/// the fused operation writes i32.
fn table16_i32_fused(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table16_i32_fused");
    let x = b.input("x", DType::Int16, [1, 2, 3, 40]);
    let w = b.op("scale", rescale(DType::Int16, 1_200_000_000, 31, 0), &[x]);
    let t = b.op("table", table16(rng), &[w]);
    let y = b.op("round", round7(DType::Int32), &[t]);
    b.output(y);
    b.finish().unwrap()
}

/// i16 widened to i32, plus a constant, CAST (truncating) to i16 -> TABLE (the form TOSA
/// conversions of TFLite's int16 SOFTMAX take): the sums leave i16, so the LUT must index
/// with the truncated value, not the 32-bit one: the TABLE is not fused into the ADD.
fn table16_after_truncating_cast(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table16_after_truncating_cast");
    let x = b.input("x", DType::Int16, [1, 1, 4, 24]);
    let w = b.op("widen", rescale(DType::Int32, 1 << 30, 30, 0), &[x]);
    let k = b.const_i32("k", [1, 1, 1, 1], &[30_000]);
    let s = b.op("add", Op::Add, &[w, k]);
    let c = b.op("cast", Op::Cast(CastAttrs { to: DType::Int16 }), &[s]);
    let t = b.op("table", table16(rng), &[c]);
    b.output(t);
    b.finish().unwrap()
}

/// 8- and 16-bit tables in turn: the 16-bit table takes the whole LUT RAM, evicting the
/// 8-bit ones, which are loaded again afterwards (after an operation without a table: the
/// narrowing RESCALE's output is also a graph output, so the last table is not fused).
fn table_8_16_8(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("table_8_16_8");
    let x = b.input("x", DType::Int8, [1, 5, 4, 6]);
    let first = random_table(rng);
    let t = b.op("t8a", first.clone(), &[x]);
    let t = b.op("t8b", random_table(rng), &[t]);
    let w = b.op("widen", rescale(DType::Int16, 1 << 30, 22, 0), &[t]);
    let t16 = b.op("t16", table16(rng), &[w]);
    let r = b.op("round", round7(DType::Int16), &[t16]);
    let n = b.op("narrow", rescale(DType::Int8, 1 << 30, 38, 0), &[r]);
    let t = b.op("t8a_again", first, &[n]);
    b.output(n);
    b.output(t);
    b.finish().unwrap()
}

/// Compiles `g` (one i16 input of 65536 elements) for the 256-MAC configuration and runs it on
/// the simulator with every i16 value once (-32768 first, 32767 last): the result must equal
/// the interpreter's for each.
fn every_i16_value(g: &Graph) {
    let values: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    let ty = &g.tensor(g.inputs()[0]).unwrap().ty;
    let input = TensorValue::new(ty.shape.clone(), TensorData::I16(values)).unwrap();
    let expected = npuc_ir::run_outputs(g, vec![input.clone()]).unwrap();
    let m = compile(g, &Options::default()).unwrap();
    let got = simulate(&m, &[input.to_le_bytes()]);
    let (e, o) = (expected[0].to_i64_vec(), &got[0]);
    let size = expected[0].dtype().byte_size();
    for (i, v) in e.iter().enumerate() {
        let bytes = &o[i * size..(i + 1) * size];
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(bytes);
        let got = i64::from_le_bytes(raw) << (64 - 8 * size) >> (64 - 8 * size);
        assert_eq!(got, *v, "input {}", i as i64 - 32768);
    }
}

/// One i16 input holding every value, then `ops` (each applied to the previous result).
fn all_values_graph(name: &str, ops: &[Op]) -> Graph {
    let mut b = GraphBuilder::new(name);
    let mut t = b.input("x", DType::Int16, [1, 256, 256, 1]);
    for (i, op) in ops.iter().enumerate() {
        t = b.op(&format!("op{i}"), op.clone(), &[t]);
    }
    b.output(t);
    b.finish().unwrap()
}

#[test]
fn lut_s16_s32_is_exact_for_every_input() {
    let t = table16(&mut Rng(5));
    every_i16_value(&all_values_graph("s32", &[t]));
}

#[test]
fn lut_s16_s16_is_exact_for_every_input() {
    let t = table16(&mut Rng(6));
    every_i16_value(&all_values_graph("s16", &[t, round7(DType::Int16)]));
}

#[test]
fn a_16_bit_table_fuses_into_its_producer() {
    assert_eq!(dmas_and_ops(&table16_after_rescale(&mut Rng(1))), (1, 1));
    assert_eq!(dmas_and_ops(&table16_i32_fused(&mut Rng(1))), (1, 1));
}

fn is_kernel(c: &Command) -> bool {
    matches!(
        c,
        Command::OpConv(_)
            | Command::OpDepthwise(_)
            | Command::OpPool(_)
            | Command::OpElementwise(_)
            | Command::OpResize(_)
    )
}

#[test]
fn a_16_bit_table_evicts_every_8_bit_table_after_the_kernels_using_them() {
    // t8a, t8b, the 16-bit table (all eight slots; fused into the widening RESCALE), the
    // narrowing RESCALE, t8a again: four loads.
    let g = table_8_16_8(&mut Rng(1));
    let m = compile(&g, &Options::default()).unwrap();
    let d = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let cmds: Vec<Command> = d.iter().map(|c| c.command).collect();
    let starts = lut_loads(&cmds);
    assert_eq!(starts.len(), 4);
    // The 16-bit load overwrites the slot the previous kernel (t8b) reads, and the last load
    // the slots of the 16-bit table the kernel before the previous one reads: each is
    // preceded by a KERNEL_WAIT for that kernel.
    let wait_before = |dma: usize| {
        cmds[..dma]
            .iter()
            .rev()
            .take_while(|c| !is_kernel(c))
            .find_map(|c| match c {
                Command::OpKernelWait(k) => Some(k.n),
                _ => None,
            })
    };
    assert_eq!(wait_before(starts[0]), None);
    assert_eq!(wait_before(starts[1]), None);
    assert_eq!(wait_before(starts[2]), Some(0));
    assert_eq!(wait_before(starts[3]), Some(1));
}

#[test]
fn a_16_bit_table_with_a_slope_outside_i16_is_refused() {
    let mut t = vec![0i16; 513];
    t[300] = 32767;
    t[301] = -2;
    let op = Op::Table(TableAttrs {
        table: TableData::I16(t),
    });
    let e = compile(&all_values_graph("steep", &[op]), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("entries 300 and 301"), "{e}");
}

// ---- 16-bit table lookups (GATHER from a table indexed by a rescaled input) ----

/// `x -> RESCALE(i32, multiplier, shift) -> CLAMP(lo, hi) -> ADD(-lo) -> RESHAPE -> GATHER(T)
/// -> RESHAPE` with `T[v - lo] = f(v)`: the frontends' form of a 16-bit unary function.
fn lookup_graph(
    name: &str,
    multiplier: i32,
    shift: i8,
    lo: i64,
    hi: i64,
    f: &dyn Fn(i64) -> i16,
) -> Graph {
    let mut b = GraphBuilder::new(name);
    let n = 65536;
    let x = b.input("x", DType::Int16, [1, 256, 256, 1]);
    let r = RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![multiplier],
        shift: vec![shift],
        scale32: true,
        rounding: RescaleRounding::SingleRound,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    };
    let v = b.op("scale", Op::Rescale(r), &[x]);
    let v = b.op("clamp", Op::Clamp(ClampAttrs { min: lo, max: hi }), &[v]);
    let off = b.const_i32("offset", [1, 1, 1, 1], &[-lo as i32]);
    let i = b.op("index", Op::Add, &[v, off]);
    let shape = |s: Vec<usize>| Op::Reshape(ReshapeAttrs { shape: s.into() });
    let i = b.op("flat", shape(vec![1, n]), &[i]);
    let table: Vec<i16> = (lo..=hi).map(f).collect();
    let t = b.const_i16("table", [1, table.len(), 1], &table);
    let y = b.op("lookup", Op::Gather, &[t, i]);
    let y = b.op("unflat", shape(vec![1, 256, 256, 1]), &[y]);
    b.output(y);
    b.finish().unwrap()
}

/// Random (base, slope) pairs evaluated as `lut_tanh` (8 fraction bits) or `lut_sigmoid` (9).
fn interpolated(rng: &mut Rng, frac: u32) -> impl Fn(i64) -> i16 {
    let pairs: Vec<(i64, i64)> = (0..512)
        .map(|_| (rng.range(-30000, 30000), rng.range(-100, 100)))
        .collect();
    move |v| {
        let (b, m) = pairs[(256 + (v >> frac)) as usize];
        let f = v & ((1 << frac) - 1);
        let r = if frac == 8 {
            ((b << 8) + f * m + if v >= 0 { 0x80 } else { 0x7f }) >> 8
        } else {
            ((b << 9) + f * m + if v >= 0 { 0x100_0200 } else { 0x100_01ff }) >> 10
        };
        r as i16
    }
}

/// The LUT mode of the (single) operation of a compiled graph.
fn lut_mode(g: &Graph) -> ActivationFunction {
    let m = compile(g, &Options::default()).unwrap();
    decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .iter()
        .find_map(|c| match c.command {
            Command::SetActivation(a) => Some(a.activation_function),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_tanh_shaped_lookup_is_lut_tanh_after_the_input_rescale() {
    // v = round(1.125 x), the scaling of TFLite's TANH for input scale 2^-12 * 0.75.
    let f = interpolated(&mut Rng(7), 8);
    let g = lookup_graph("tanh", 18432 << 2, 16, -65536, 65535, &f);
    every_i16_value(&g);
    assert_eq!(lut_mode(&g), ActivationFunction::LutTanh);
}

#[test]
fn a_sigmoid_shaped_lookup_is_lut_sigmoid_after_the_input_rescale() {
    // v = round(2.8 x): inputs beyond the sigmoid mode's range are clamped by both.
    let f = interpolated(&mut Rng(8), 9);
    let g = lookup_graph("sigmoid", 183_500, 16, -0x1f000, 0x1efff, &f);
    every_i16_value(&g);
    assert_eq!(lut_mode(&g), ActivationFunction::LutSigmoid);
}

#[test]
fn a_65536_entry_table_of_a_piecewise_linear_function_is_lut_s16_s16() {
    // y = T[x + 32768] for TFLite's LUTLookup of a 513-entry table with slopes beyond i16
    // (they wrap, as in TFLite and in the hardware).
    let lut: Vec<i64> = (0..513)
        .map(|i| if i % 2 == 0 { -30000 } else { 30000 })
        .collect();
    let f = move |x: i64| {
        let (i, o) = ((256 + (x >> 7)) as usize, x & 0x7f);
        let slope = (lut[i + 1] - lut[i]) as i16 as i64;
        (lut[i] + ((slope * o + 64) >> 7)) as i16
    };
    let g = lookup_graph("s16", 1 << 30, 30, -32768, 32767, &f);
    every_i16_value(&g);
    assert_eq!(lut_mode(&g), ActivationFunction::LutS16S16);
}

// ---- ABS and leaky ReLU (ELEMENTWISE abs / lrelu) ----

fn rescale_attrs(
    out: DType,
    multiplier: i32,
    shift: i8,
    rounding: RescaleRounding,
) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: out,
        multiplier: vec![multiplier],
        shift: vec![shift],
        scale32: true,
        rounding,
        per_channel: false,
        input_zp: 0,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// TFLite's int16 ABS with a requantization by 0.73: widen, ABS, RESCALE (double rounding).
fn abs16(shape: &[usize]) -> Graph {
    let mut b = GraphBuilder::new("abs16");
    let x = b.input("x", DType::Int16, shape.to_vec());
    let w = b.op(
        "widen",
        Op::Rescale(rescale_attrs(
            DType::Int32,
            1 << 30,
            30,
            RescaleRounding::SingleRound,
        )),
        &[x],
    );
    let a = b.op("abs", Op::Abs, &[w]);
    let y = b.op(
        "requant",
        Op::Rescale(rescale_attrs(
            DType::Int16,
            1_567_663_063,
            31,
            RescaleRounding::DoubleRound,
        )),
        &[a],
    );
    b.output(y);
    b.finish().unwrap()
}

/// TFLite's int16 LEAKY_RELU with output scale 0.4 of the input's and alpha 0.3:
/// `SELECT(x >= 0, RESCALE(x, 2.5), RESCALE(x, 0.75))`.
fn leaky_relu16(shape: &[usize]) -> Graph {
    let mut b = GraphBuilder::new("leaky_relu16");
    let x = b.input("x", DType::Int16, shape.to_vec());
    let zero = b.const_i16("zero", vec![1; shape.len()], &[0]);
    let c = b.op("non_negative", Op::GreaterEqual, &[x, zero]);
    let p = b.op(
        "pos",
        Op::Rescale(rescale_attrs(
            DType::Int16,
            1_342_177_280,
            29,
            RescaleRounding::DoubleRound,
        )),
        &[x],
    );
    let n = b.op(
        "neg",
        Op::Rescale(rescale_attrs(
            DType::Int16,
            1_610_612_736,
            31,
            RescaleRounding::DoubleRound,
        )),
        &[x],
    );
    let y = b.op("select", Op::Select, &[c, p, n]);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn abs_is_elementwise_abs_and_exact_for_every_input() {
    every_i16_value(&abs16(&[1, 256, 256, 1]));
    check_sim("abs16", &abs16(&[1, 3, 7, 5]), 2);
}

#[test]
fn leaky_relu_is_elementwise_lrelu_and_exact_for_every_input() {
    // The positive half saturates (x * 2.5 leaves i16) as the graph's RESCALE does.
    every_i16_value(&leaky_relu16(&[1, 256, 256, 1]));
    check_sim("leaky_relu16", &leaky_relu16(&[1, 5, 3, 9]), 2);
}
