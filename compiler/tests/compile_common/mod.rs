//! Shared helpers of the `compile_*` tests: small IR graphs, a seeded generator, and running a
//! compiled model on the simulator next to the reference interpreter.
#![allow(dead_code)]

use npuc::compile::CompiledModel;
use npuc_backend::sim::Simulator;
use npuc_ir::*;

mod check;
mod movement;
mod reduce;
#[allow(unused_imports)]
pub use check::check;
#[allow(unused_imports)]
pub use movement::*;
#[allow(unused_imports)]
pub use reduce::*;

/// xorshift64* — deterministic test data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    pub fn i8s(&mut self, n: usize) -> Vec<i8> {
        (0..n).map(|_| self.range(-128, 127) as i8).collect()
    }
    pub fn i16s(&mut self, n: usize) -> Vec<i16> {
        (0..n).map(|_| self.range(-32768, 32767) as i16).collect()
    }
}

/// A per-channel (or per-tensor) i32 -> i8 rescale.
pub fn out_rescale(
    rng: &mut Rng,
    channels: usize,
    shift: i8,
    rounding: RescaleRounding,
    output_zp: i64,
) -> RescaleAttrs {
    let multiplier: Vec<i32> = (0..channels)
        .map(|_| (1 << 30) + rng.range(0, (1 << 30) - 1) as i32)
        .collect();
    let shift = (0..channels)
        .map(|_| shift + rng.range(0, 1) as i8)
        .collect();
    RescaleAttrs {
        output_dtype: DType::Int8,
        multiplier,
        shift,
        scale32: true,
        rounding,
        per_channel: channels > 1,
        input_zp: 0,
        output_zp,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// CONV2D 3x3 pad 1 + per-channel RESCALE (double rounding) + ReLU CLAMP.
pub fn conv3x3_relu(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (8, 8, 3, 16);
    let mut b = GraphBuilder::new("conv3x3_relu");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    b.quant(x, Quantization::per_tensor(0.05, -3));
    let wt = b.const_i8("w", [oc, 3, 3, ic], &rng.i8s(oc * 9 * ic));
    let bias: Vec<i32> = (0..oc).map(|_| rng.range(-5000, 5000) as i32).collect();
    let bt = b.const_i32("b", [oc], &bias);
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 1],
        input_zp: -3,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, oc, 40, RescaleRounding::DoubleRound, -128);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let z = b.op(
        "relu",
        Op::Clamp(ClampAttrs {
            min: -128,
            max: 127,
        }),
        &[y],
    );
    b.quant(z, Quantization::per_tensor(0.1, -128));
    b.output(z);
    b.finish().unwrap()
}

/// CONV2D 1x1 over a batch of 6 (TOSA's fully connected form `N x 1 x 1 x C`, and a batch of
/// 2 x 3 x 2 images): the batch folds into the height.
pub fn conv1x1_batched(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("conv1x1_batched");
    let mut outs = Vec::new();
    for (i, (n, h, w)) in [(6usize, 1usize, 1usize), (2, 3, 2)]
        .into_iter()
        .enumerate()
    {
        let (ic, oc) = (24, 10);
        let x = b.input(&format!("x{i}"), DType::Int8, [n, h, w, ic]);
        let wt = b.const_i8(&format!("w{i}"), [oc, 1, 1, ic], &rng.i8s(oc * ic));
        let bias: Vec<i32> = (0..oc).map(|_| rng.range(-5000, 5000) as i32).collect();
        let bt = b.const_i32(&format!("b{i}"), [oc], &bias);
        let attrs = ConvAttrs {
            input_zp: 5,
            ..ConvAttrs::default()
        };
        let acc = b.op(&format!("conv{i}"), Op::Conv2d(attrs), &[x, wt, bt]);
        let r = out_rescale(rng, oc, 38, RescaleRounding::DoubleRound, -7);
        outs.push(b.op(&format!("rescale{i}"), Op::Rescale(r), &[acc]));
    }
    for y in outs {
        b.output(y);
    }
    b.finish().unwrap()
}

/// CONV2D 3x3 stride 2, asymmetric padding, dilation 1, then a 1x1 dilation-free conv, then a
/// clamp-free rescale.
pub fn conv_s2(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (9, 10, 8, 24);
    let mut b = GraphBuilder::new("conv_s2");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, 3, 3, ic], &rng.i8s(oc * 9 * ic));
    let bias: Vec<i32> = (0..oc).map(|_| rng.range(-50000, 50000) as i32).collect();
    let bt = b.const_i32("b", [oc], &bias);
    let attrs = ConvAttrs {
        pad: [0, 1, 1, 1],
        stride: [2, 2],
        input_zp: 7,
        weight_zp: 0,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, oc, 41, RescaleRounding::DoubleRound, 5);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// CONV2D 3x3 dilation 2, single rounding, per-tensor rescale, clamp to [-20, 90].
pub fn conv_dilated(rng: &mut Rng) -> Graph {
    let (h, w, ic, oc) = (11, 9, 20, 8);
    let mut b = GraphBuilder::new("conv_dilated");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    let wt = b.const_i8("w", [oc, 3, 3, ic], &rng.i8s(oc * 9 * ic));
    let bt = b.const_i32("b", [1], &[1234]);
    let attrs = ConvAttrs {
        pad: [2, 2, 2, 2],
        dilation: [2, 2],
        input_zp: -128,
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, 1, 42, RescaleRounding::SingleRound, 0);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let z = b.op("clamp", Op::Clamp(ClampAttrs { min: -20, max: 90 }), &[y]);
    b.output(z);
    b.finish().unwrap()
}

/// DEPTHWISE_CONV2D 3x3 pad 1 + per-channel RESCALE + ReLU6-like CLAMP.
pub fn depthwise(rng: &mut Rng) -> Graph {
    let (h, w, c) = (9, 9, 24);
    let mut b = GraphBuilder::new("depthwise");
    let x = b.input("x", DType::Int8, [1, h, w, c]);
    let wt = b.const_i8("w", [3, 3, c, 1], &rng.i8s(9 * c));
    let bias: Vec<i32> = (0..c).map(|_| rng.range(-3000, 3000) as i32).collect();
    let bt = b.const_i32("b", [c], &bias);
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 1],
        input_zp: 12,
        ..ConvAttrs::default()
    };
    let acc = b.op("dw", Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, c, 36, RescaleRounding::DoubleRound, -10);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let z = b.op("relu6", Op::Clamp(ClampAttrs { min: -10, max: 100 }), &[y]);
    b.output(z);
    b.finish().unwrap()
}

/// FULLY_CONNECTED [2, 40] x [12, 40] + single-round per-channel RESCALE.
pub fn fully_connected(rng: &mut Rng) -> Graph {
    let (n, ic, oc) = (2, 40, 12);
    let mut b = GraphBuilder::new("fc");
    let x = b.input("x", DType::Int8, [n, ic]);
    let wt = b.const_i8("w", [oc, ic], &rng.i8s(oc * ic));
    let bias: Vec<i32> = (0..oc).map(|_| rng.range(-9000, 9000) as i32).collect();
    let bt = b.const_i32("b", [oc], &bias);
    let attrs = FullyConnectedAttrs {
        input_zp: -1,
        weight_zp: 0,
    };
    let acc = b.op("fc", Op::FullyConnected(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, oc, 39, RescaleRounding::SingleRound, 3);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    b.finish().unwrap()
}

/// MAX_POOL2D 3x3 stride 2 pad 1.
pub fn maxpool(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("maxpool");
    let x = b.input("x", DType::Int8, [1, 9, 10, 16]);
    let attrs = PoolAttrs {
        kernel: [3, 3],
        stride: [2, 2],
        pad: [1, 1, 1, 1],
    };
    let y = b.op("maxpool", Op::MaxPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

/// AVG_POOL2D 3x3 stride 1 pad 1 (TFLite rounding).
pub fn avgpool(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("avgpool");
    let x = b.input("x", DType::Int8, [1, 6, 7, 8]);
    let attrs = AvgPool2dAttrs {
        kernel: [3, 3],
        stride: [1, 1],
        pad: [1, 1, 1, 1],
        input_zp: 0,
        output_zp: 0,
        rounding: AvgPoolRounding::Tflite,
    };
    let y = b.op("avgpool", Op::AvgPool2d(attrs), &[x]);
    b.output(y);
    b.finish().unwrap()
}

fn in_rescale(m: i32, shift: i8, zp: i64) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![m],
        shift: vec![shift],
        scale32: true,
        rounding: RescaleRounding::DoubleRound,
        per_channel: false,
        input_zp: zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// ADD in the TFLite scheme: RESCALE each i8 input to i32, ADD, RESCALE to i8; the second
/// input broadcasts over height and width.
pub fn add(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("add");
    let x = b.input("x", DType::Int8, [1, 5, 6, 8]);
    let y = b.input("y", DType::Int8, [1, 1, 1, 8]);
    let xa = b.op(
        "rescale_x",
        Op::Rescale(in_rescale(1_500_000_000, 12, 3)),
        &[x],
    );
    let ya = b.op(
        "rescale_y",
        Op::Rescale(in_rescale(1_100_000_000, 11, -7)),
        &[y],
    );
    let s = b.op("add", Op::Add, &[xa, ya]);
    let mut r = in_rescale(1_300_000_000, 41, 0);
    r.output_dtype = DType::Int8;
    r.output_zp = -2;
    let o = b.op("rescale_out", Op::Rescale(r), &[s]);
    b.output(o);
    b.finish().unwrap()
}

/// SUB in the TFLite scheme followed by a clamp.
pub fn sub(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("sub");
    let x = b.input("x", DType::Int8, [1, 4, 4, 20]);
    let y = b.input("y", DType::Int8, [1, 4, 4, 20]);
    let xa = b.op("rescale_x", Op::Rescale(in_rescale(1 << 30, 10, 0)), &[x]);
    let ya = b.op(
        "rescale_y",
        Op::Rescale(in_rescale(2_000_000_000, 11, 1)),
        &[y],
    );
    let s = b.op("sub", Op::Sub, &[xa, ya]);
    let mut r = in_rescale(1_700_000_000, 40, 0);
    r.output_dtype = DType::Int8;
    r.output_zp = 4;
    let o = b.op("rescale_out", Op::Rescale(r), &[s]);
    let c = b.op("clamp", Op::Clamp(ClampAttrs { min: -50, max: 60 }), &[o]);
    b.output(c);
    b.finish().unwrap()
}

/// MUL: identity input rescales carrying the zero points, i32 MUL, RESCALE to i8.
pub fn mul(_rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("mul");
    let x = b.input("x", DType::Int8, [1, 3, 5, 16]);
    let y = b.input("y", DType::Int8, [1, 3, 5, 16]);
    let xa = b.op("rescale_x", Op::Rescale(in_rescale(1 << 30, 30, 5)), &[x]);
    let ya = b.op("rescale_y", Op::Rescale(in_rescale(1 << 30, 30, -9)), &[y]);
    let s = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[xa, ya]);
    let mut r = in_rescale(1_200_000_000, 38, 0);
    r.output_dtype = DType::Int8;
    r.output_zp = -4;
    let o = b.op("rescale_out", Op::Rescale(r), &[s]);
    b.output(o);
    b.finish().unwrap()
}

/// A small network: conv -> maxpool -> reshape -> fully connected, plus a depthwise branch
/// added back (exercises liveness, aliasing and KERNEL_WAIT placement).
pub fn network(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("network");
    let x = b.input("x", DType::Int8, [1, 8, 8, 4]);
    let wt = b.const_i8("w1", [8, 3, 3, 4], &rng.i8s(8 * 9 * 4));
    let bt = b.const_i32("b1", [8], &[100; 8]);
    let attrs = ConvAttrs {
        pad: [1, 1, 1, 1],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv1", Op::Conv2d(attrs.clone()), &[x, wt, bt]);
    let r = out_rescale(rng, 8, 37, RescaleRounding::DoubleRound, 0);
    let c1 = b.op("conv1_rescale", Op::Rescale(r), &[acc]);
    let c1 = b.op(
        "conv1_relu",
        Op::Clamp(ClampAttrs { min: 0, max: 127 }),
        &[c1],
    );
    let dw = b.const_i8("w2", [3, 3, 8, 1], &rng.i8s(9 * 8));
    let db = b.const_i32("b2", [8], &[-20; 8]);
    let acc2 = b.op("dw", Op::DepthwiseConv2d(attrs), &[c1, dw, db]);
    let r2 = out_rescale(rng, 8, 35, RescaleRounding::DoubleRound, 0);
    let d = b.op("dw_rescale", Op::Rescale(r2), &[acc2]);
    let a1 = b.op("add_rx", Op::Rescale(in_rescale(1 << 30, 10, 0)), &[c1]);
    let a2 = b.op("add_ry", Op::Rescale(in_rescale(1 << 30, 10, 0)), &[d]);
    let s = b.op("add", Op::Add, &[a1, a2]);
    let mut ro = in_rescale(1 << 30, 41, 0);
    ro.output_dtype = DType::Int8;
    let s = b.op("add_rescale", Op::Rescale(ro), &[s]);
    let p = b.op(
        "pool",
        Op::MaxPool2d(PoolAttrs {
            kernel: [2, 2],
            stride: [2, 2],
            pad: [0; 4],
        }),
        &[s],
    );
    let f = b.op(
        "flatten",
        Op::Reshape(ReshapeAttrs {
            shape: Shape::from([1, 128]),
        }),
        &[p],
    );
    let fw = b.const_i8("w3", [10, 128], &rng.i8s(10 * 128));
    let fb = b.const_i32("b3", [10], &[7; 10]);
    let acc3 = b.op(
        "fc",
        Op::FullyConnected(FullyConnectedAttrs::default()),
        &[f, fw, fb],
    );
    let r3 = out_rescale(rng, 10, 38, RescaleRounding::SingleRound, 0);
    let y = b.op("fc_rescale", Op::Rescale(r3), &[acc3]);
    b.output(y);
    b.finish().unwrap()
}

/// A test graph constructor.
pub type GraphFn = fn(&mut Rng) -> Graph;

/// All test graphs by name.
pub fn all_graphs() -> Vec<(&'static str, GraphFn)> {
    vec![
        ("conv3x3_relu", conv3x3_relu),
        ("conv_s2", conv_s2),
        ("conv_dilated", conv_dilated),
        ("depthwise", depthwise),
        ("fully_connected", fully_connected),
        ("maxpool", maxpool),
        ("avgpool", avgpool),
        ("add", add),
        ("sub", sub),
        ("mul", mul),
        ("network", network),
    ]
}

/// The options the sweeps compile with: each configuration in its own system configuration and
/// memory mode, so that every mode kind is exercised (region 2 fast memory, SRAM arena with
/// DRAM or flash constants, SRAM only):
///
/// | configuration | system config | memory mode |
/// |---|---|---|
/// | 128, 256 | DRAM_Mid | Dedicated_Sram_384KB (the default) |
/// | 512 | Flash_High | Sram_Only |
/// | 1024 | DRAM_Low | Shared_Sram |
/// | 2048 | Flash_Low | Shared_Sram |
pub fn options(accel: npuc_backend::arch::Accelerator) -> npuc::compile::Options {
    use npuc_backend::arch::Accelerator as A;
    let (sys, mode) = match accel {
        A::U85_128 | A::U85_256 => ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB"),
        A::U85_512 => ("Ethos_U85_SYS_Flash_High", "Sram_Only"),
        A::U85_1024 => ("Ethos_U85_SYS_DRAM_Low", "Shared_Sram"),
        A::U85_2048 => ("Ethos_U85_SYS_Flash_Low", "Shared_Sram"),
    };
    options_in(accel, sys, mode)
}

/// Options for a configuration in a named system configuration and memory mode.
pub fn options_in(
    accel: npuc_backend::arch::Accelerator,
    sys: &str,
    mode: &str,
) -> npuc::compile::Options {
    use npuc_backend::system::presets;
    npuc::compile::Options {
        accelerator: accel,
        system_config: presets::system_config(sys).unwrap(),
        memory_mode: presets::memory_mode(mode).unwrap(),
        ..npuc::compile::Options::default()
    }
}

/// Runs a compiled model on the simulator (region 0 read-only data, region 1 the arena
/// pre-filled with 0x5a, region 2 the fast memory pre-filled with 0xa5 when the model uses
/// one); returns the output bytes.
pub fn simulate(m: &CompiledModel, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut sim = Simulator::new(m.accelerator);
    let mut ro = m.read_only.clone();
    ro.resize(ro.len().max(16), 0);
    sim.memory_mut().add_region(0, ro);
    let mut mems = [
        vec![0x5au8; m.arena_size as usize],
        vec![0xa5u8; m.fast_size as usize],
    ];
    for (p, bytes) in m.inputs.iter().zip(inputs) {
        let o = p.offset as usize;
        mems[usize::from(p.region == 2)][o..o + bytes.len()].copy_from_slice(bytes);
    }
    let [arena, fast] = mems;
    let id = sim.memory_mut().add_region(1, arena);
    let fast_id = (m.fast_size > 0).then(|| sim.memory_mut().add_region(2, fast));
    sim.run(&m.payload.command_words().unwrap())
        .unwrap_or_else(|e| panic!("simulator: {e}"));
    m.outputs
        .iter()
        .map(|p| {
            let buf = if p.region == 2 { fast_id.unwrap() } else { id };
            sim.memory().buffer(buf)[p.offset as usize..(p.offset + p.size) as usize].to_vec()
        })
        .collect()
}

/// Random full-range inputs for a graph (i8 or i16 inputs; bool inputs 0 or 1).
pub fn random_inputs(g: &Graph, rng: &mut Rng) -> Vec<TensorValue> {
    g.inputs()
        .iter()
        .map(|&t| {
            let ty = &g.tensor(t).unwrap().ty;
            let n = ty.shape.num_elements().unwrap();
            let data = match ty.dtype {
                DType::Int16 => TensorData::I16(rng.i16s(n)),
                DType::Int32 => TensorData::I32((0..n).map(|_| rng.next() as i32).collect()),
                DType::UInt8 => TensorData::U8(rng.i8s(n).into_iter().map(|v| v as u8).collect()),
                DType::Bool => TensorData::Bool((0..n).map(|_| rng.next() & 1 == 1).collect()),
                _ => TensorData::I8(rng.i8s(n)),
            };
            TensorValue::new(ty.shape.clone(), data).unwrap()
        })
        .collect()
}

/// Compiles `g` for every configuration and checks that the stream ends in NPU_OP_STOP and
/// that the simulator reproduces the reference interpreter byte for byte on `samples` seeded
/// random full-range inputs (samples the reference leaves undefined are skipped).
pub fn check_sim(name: &str, g: &Graph, samples: usize) {
    check_sim_with(name, g, samples, random_inputs);
}

/// A tensor's bytes as the NPU holds them: an i48 tensor as 8-byte words (decision L33), the
/// IR's as 6 bytes.
pub fn npu_bytes(v: &TensorValue) -> Vec<u8> {
    match v.data() {
        TensorData::I48(w) => w.iter().flat_map(|x| x.to_le_bytes()).collect(),
        _ => v.to_le_bytes(),
    }
}

/// [`check_sim`] on the inputs `inputs` makes from a seeded generator.
pub fn check_sim_with(
    name: &str,
    g: &Graph,
    samples: usize,
    inputs: fn(&Graph, &mut Rng) -> Vec<TensorValue>,
) {
    use npuc::compile::compile;
    use npuc_backend::arch::Accelerator;
    use npuc_backend::isa::{decode_stream, Command};
    for accel in Accelerator::ALL {
        let m = compile(g, &options(accel)).unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
        let decoded = decode_stream(&m.payload.command_words().unwrap())
            .unwrap_or_else(|e| panic!("{name} on {accel}: decode: {e}"));
        assert!(
            matches!(decoded.last().map(|d| d.command), Some(Command::OpStop(_))),
            "{name} on {accel}: stream does not end in NPU_OP_STOP"
        );
        let mut rng = Rng(0xdead_beef ^ accel.macs_per_cc() as u64);
        let mut compared = 0;
        for sample in 0..samples * 4 {
            if compared == samples {
                break;
            }
            let inputs = inputs(g, &mut rng);
            let expected = match npuc_ir::run_outputs(g, inputs.clone()) {
                Ok(v) => v,
                Err(npuc_ir::InterpError::Undefined { .. }) => continue,
                Err(e) => panic!("{name}: reference: {e}"),
            };
            let bytes: Vec<Vec<u8>> = inputs.iter().map(npu_bytes).collect();
            let got = simulate(&m, &bytes);
            for (i, (e, o)) in expected.iter().zip(&got).enumerate() {
                let e = npu_bytes(e);
                assert_eq!(e.len(), o.len(), "{name} on {accel}: output {i} size");
                if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                    panic!(
                        "{name} on {accel}, sample {sample}, output {i}: first mismatch at byte {pos}: expected {:#04x} got {:#04x}",
                        e[pos], o[pos]
                    );
                }
            }
            compared += 1;
        }
        assert_eq!(
            compared, samples,
            "{name} on {accel}: too many undefined samples"
        );
    }
}

/// CONV2D 3x3 (pad 1) + RESCALE, then MAX_POOL2D 2x2: two NPU operations.
pub fn conv_then_pool() -> Graph {
    let (h, w, ic, oc) = (8, 8, 4, 8);
    let mut b = GraphBuilder::new("conv_then_pool");
    let x = b.input("x", DType::Int8, [1, h, w, ic]);
    let weights: Vec<i8> = (0..oc * 9 * ic).map(|i| ((i * 37) % 255) as i8).collect();
    let wt = b.const_i8("w", [oc, 3, 3, ic], &weights);
    let bt = b.const_i32("b", [oc], &vec![100; oc]);
    let conv = ConvAttrs {
        pad: [1, 1, 1, 1],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(conv), &[x, wt, bt]);
    let r = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 40, RescaleRounding::DoubleRound);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let pool = PoolAttrs {
        kernel: [2, 2],
        stride: [2, 2],
        pad: [0; 4],
    };
    let z = b.op("pool", Op::MaxPool2d(pool), &[y]);
    b.output(z);
    b.finish().unwrap()
}
