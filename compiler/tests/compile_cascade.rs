//! Cascading (docs/decisions.md S8): where intermediate feature maps do not fit the fast
//! memory, runs of operations are computed band by band through ring buffers in region 2,
//! bit-exactly.

mod compile_common;

use compile_common::*;
use npuc::compile::alloc::CHAINED;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command as C};
use npuc_ir::*;

/// Dedicated_Sram with a fast memory of `capacity` bytes.
fn small_fast(accel: Accelerator, capacity: u64) -> Options {
    let mut mode = npuc_backend::system::presets::memory_mode("Dedicated_Sram").unwrap();
    mode.arena_cache_size = Some(capacity);
    Options {
        memory_mode: mode,
        ..Options::new(accel)
    }
}

/// CONV with per-channel RESCALE and a ReLU.
fn conv(
    b: &mut GraphBuilder,
    rng: &mut Rng,
    x: TensorId,
    name: &str,
    (k, ic, oc): (usize, usize, usize),
    attrs: ConvAttrs,
) -> TensorId {
    let wt = b.const_i8(
        &format!("{name}_w"),
        [oc, k, k, ic],
        &rng.i8s(oc * k * k * ic),
    );
    let bias: Vec<i32> = (0..oc).map(|_| rng.range(-2000, 2000) as i32).collect();
    let bt = b.const_i32(&format!("{name}_b"), [oc], &bias);
    let acc = b.op(name, Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, oc, 38, RescaleRounding::DoubleRound, -3);
    let y = b.op(&format!("{name}_rescale"), Op::Rescale(r), &[acc]);
    b.op(
        &format!("{name}_relu"),
        Op::Clamp(ClampAttrs { min: -3, max: 127 }),
        &[y],
    )
}

fn depthwise(
    b: &mut GraphBuilder,
    rng: &mut Rng,
    x: TensorId,
    name: &str,
    (k, c): (usize, usize),
    attrs: ConvAttrs,
) -> TensorId {
    let wt = b.const_i8(&format!("{name}_w"), [k, k, c, 1], &rng.i8s(k * k * c));
    let bias: Vec<i32> = (0..c).map(|_| rng.range(-2000, 2000) as i32).collect();
    let bt = b.const_i32(&format!("{name}_b"), [c], &bias);
    let acc = b.op(name, Op::DepthwiseConv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(rng, c, 36, RescaleRounding::DoubleRound, 5);
    b.op(&format!("{name}_rescale"), Op::Rescale(r), &[acc])
}

fn to_i32(zp: i64) -> RescaleAttrs {
    RescaleAttrs {
        output_dtype: DType::Int32,
        multiplier: vec![1 << 30],
        shift: vec![10],
        scale32: true,
        rounding: RescaleRounding::DoubleRound,
        per_channel: false,
        input_zp: zp,
        output_zp: 0,
        input_unsigned: false,
        output_unsigned: false,
    }
}

/// conv 3x3 (odd height) -> depthwise 3x3 stride 2 -> conv 1x1 -> average pool 3x3 pad 1 ->
/// max pool 2x2 stride 2.
fn strided_run(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("strided");
    let x = b.input("x", DType::Int8, [1, 97, 64, 8]);
    let same = ConvAttrs {
        pad: [1, 1, 1, 1],
        ..ConvAttrs::default()
    };
    let c1 = conv(&mut b, rng, x, "c1", (3, 8, 16), same.clone());
    let s2 = ConvAttrs {
        pad: [1, 1, 1, 1],
        stride: [2, 2],
        input_zp: -3,
        ..ConvAttrs::default()
    };
    let d = depthwise(&mut b, rng, c1, "dw", (3, 16), s2);
    let one = ConvAttrs {
        input_zp: 5,
        ..ConvAttrs::default()
    };
    let c2 = conv(&mut b, rng, d, "c2", (1, 16, 8), one);
    let avg = AvgPool2dAttrs {
        kernel: [3, 3],
        stride: [1, 1],
        pad: [1, 1, 1, 1],
        input_zp: -3,
        output_zp: -3,
        rounding: AvgPoolRounding::Tflite,
    };
    let a = b.op("avg", Op::AvgPool2d(avg), &[c2]);
    let max = PoolAttrs {
        kernel: [2, 2],
        stride: [2, 2],
        pad: [0; 4],
    };
    let y = b.op("max", Op::MaxPool2d(max), &[a]);
    b.output(y);
    b.finish().unwrap()
}

/// conv 3x3 dilation 2 -> ADD of the graph input (an operand outside the run) -> depthwise
/// 5x5 pad 2 -> conv 3x3 stride 2 without padding at the top.
fn residual_run(rng: &mut Rng) -> Graph {
    let mut b = GraphBuilder::new("residual");
    let x = b.input("x", DType::Int8, [1, 75, 48, 16]);
    let dil = ConvAttrs {
        pad: [2, 2, 2, 2],
        dilation: [2, 2],
        ..ConvAttrs::default()
    };
    let c1 = conv(&mut b, rng, x, "c1", (3, 16, 16), dil);
    let a1 = b.op("add_rx", Op::Rescale(to_i32(-3)), &[c1]);
    let a2 = b.op("add_ry", Op::Rescale(to_i32(0)), &[x]);
    let s = b.op("add", Op::Add, &[a1, a2]);
    let mut ro = to_i32(0);
    ro.output_dtype = DType::Int8;
    ro.shift = vec![41];
    let s = b.op("add_rescale", Op::Rescale(ro), &[s]);
    let five = ConvAttrs {
        pad: [2, 2, 2, 2],
        ..ConvAttrs::default()
    };
    let d = depthwise(&mut b, rng, s, "dw", (5, 16), five);
    let valid = ConvAttrs {
        pad: [0, 1, 0, 1],
        stride: [2, 2],
        input_zp: 5,
        ..ConvAttrs::default()
    };
    let y = conv(&mut b, rng, d, "c2", (3, 16, 8), valid);
    b.output(y);
    b.finish().unwrap()
}

#[test]
fn runs_that_do_not_fit_the_fast_memory_are_cascaded() {
    // A fast memory smaller than the first intermediate of each graph: the runs are
    // cascaded (more kernel commands than operations, intermediates in region 2 in rings
    // smaller than the whole feature map, some band wrapping around its ring through tile 2),
    // within the capacity, and every output byte equals the interpreter's.
    let mut wraps = 0;
    for (name, graph, capacity) in [
        ("strided", strided_run as GraphFn, 64 * 1024),
        ("residual", residual_run as GraphFn, 48 * 1024),
    ] {
        let g = graph(&mut Rng(17));
        for accel in Accelerator::ALL {
            let m = compile(&g, &small_fast(accel, capacity)).unwrap();
            let cmds: Vec<C> = decode_stream(&m.payload.command_words().unwrap())
                .unwrap()
                .into_iter()
                .map(|d| d.command)
                .collect();
            let kernels = cmds
                .iter()
                .filter(|c| {
                    matches!(
                        c,
                        C::OpConv(_) | C::OpDepthwise(_) | C::OpPool(_) | C::OpElementwise(_)
                    )
                })
                .count();
            assert!(
                kernels > m.operators.len(),
                "{name} on {accel}: {kernels} kernels for {} operations",
                m.operators.len()
            );
            assert!(m.fast_size <= capacity, "{name}: {}", m.fast_size);
            // Some band's OFM continues in tile 2 (tile 0 shorter than the band).
            let mut regs = npuc_backend::isa::RegisterFile::default();
            for c in &cmds {
                if !regs.apply(c) && regs.ofm_height0_m1.height_m1 < regs.ofm_height_m1.height_m1 {
                    wraps += 1;
                }
            }
            // Rings (never whole in memory) in region 2.
            let rings: Vec<_> = m.operators.iter().filter(|o| o.done_at.is_none()).collect();
            assert!(!rings.is_empty(), "{name}: no ring");
            assert!(rings.iter().all(|o| o.ofm.0 == 2 || o.ofm.0 == CHAINED));
            assert!(m.operators.last().unwrap().done_at.is_some());
            let mut rng = Rng(5 ^ u64::from(accel.macs_per_cc()));
            for _ in 0..2 {
                let inputs = random_inputs(&g, &mut rng);
                let want = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
                let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
                assert_eq!(
                    simulate(&m, &bytes)[0],
                    want[0].to_le_bytes(),
                    "{name} on {accel}"
                );
            }
        }
    }
    assert!(wraps > 0, "no band wraps around its ring");
}

#[test]
fn a_divergence_in_a_cascade_is_localised_at_its_last_operation() {
    // The strided run in 64 KiB of fast memory on ethos-u85-256 cascades its convolution and
    // depthwise convolution. Raising the activation minimum of the depthwise convolution's
    // first band to 0 (the convolution's bands clamp at -3, so every band sets it) makes the
    // output differ: the convolution's OFM lives in a ring and is never compared, the
    // depthwise convolution's OFM is compared after its last band and the divergence is
    // localised there.
    let g = strided_run(&mut Rng(17));
    let mut m = compile(&g, &small_fast(Accelerator::U85_256, 64 * 1024)).unwrap();
    let names: Vec<&str> = m.operators.iter().map(|o| o.name.as_str()).collect();
    let dw = names.iter().position(|&n| n.starts_with("dw")).unwrap();
    assert!(
        m.operators[dw - 1].done_at.is_none(),
        "the convolution is in a ring"
    );
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let first = decoded
        .iter()
        .position(|d| matches!(d.command, C::OpDepthwise(_)))
        .unwrap();
    let kernels = decoded[first..]
        .iter()
        .filter(|d| matches!(d.command, C::OpDepthwise(_)))
        .count();
    assert!(kernels > 1, "the depthwise convolution runs in bands");
    let at = decoded[..first]
        .iter()
        .rposition(|d| matches!(d.command, C::SetActivationMin(_)))
        .unwrap();
    let C::SetActivationMin(mut a) = decoded[at].command else {
        unreachable!()
    };
    assert_ne!(a.clip_boundary, 0);
    a.clip_boundary = 0;
    let word = npuc_backend::isa::encode_stream(&[C::SetActivationMin(a)]).unwrap();
    let mut words = m.payload.command_words().unwrap();
    words[decoded[at].offset / 4] = word[0];
    m.payload = npuc::payload::TargetPayload::u85_command_stream(&words);
    let r = npuc::verify::verify_graph(
        &g,
        &m,
        &npuc::verify::VerifyOptions {
            samples: 1,
            seed: 2,
        },
    )
    .unwrap();
    assert!(!r.is_bit_exact());
    let d = r.divergence.as_ref().expect("localised");
    assert_eq!(d.index, dw, "{}", r.describe());
}
