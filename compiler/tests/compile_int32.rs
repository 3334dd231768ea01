//! i32 feature maps: elementwise operators, scalars, CLAMP, reductions, standalone RESCALEs
//! and the table GATHER (decisions L16-L20). Every graph runs on all five configurations and
//! the simulator must reproduce the reference interpreter byte for byte, on inputs that start
//! with the edge values of their range (INT32_MIN/MAX where the operator is defined there)
//! followed by seeded random values.

mod compile_common;

use compile_common::*;
use npuc::compile::lower::LowerError;
use npuc::compile::{compile, CompileError, Options};
use npuc_backend::arch::Accelerator;
use npuc_ir::*;

/// How the values of one graph input are drawn.
#[derive(Clone, Copy)]
enum Gen {
    /// i32 values in `lo..=hi`, the first ones `lo`, `hi`, `lo + 1`, `hi - 1`, 0, 1, -1
    /// (those inside the range).
    I32(i64, i64),
    /// Full-range i8.
    I8,
}

const FULL: Gen = Gen::I32(i32::MIN as i64, i32::MAX as i64);

/// `n` values; with `edges`, the range's edge values first.
fn values(g: Gen, n: usize, edges: bool, rng: &mut Rng) -> TensorData {
    match g {
        Gen::I8 => TensorData::I8(rng.i8s(n)),
        Gen::I32(lo, hi) => {
            let mut v: Vec<i32> = [lo, hi, lo + 1, hi - 1, 0, 1, -1]
                .into_iter()
                .filter(|e| edges && (lo..=hi).contains(e))
                .map(|e| e as i32)
                .collect();
            while v.len() < n {
                // Mostly full-range values, some small ones (where the carries are).
                let x = if rng.range(0, 3) == 0 {
                    rng.range(lo.max(-300), hi.min(300))
                } else {
                    rng.range(lo, hi)
                };
                v.push(x as i32);
            }
            v.truncate(n);
            TensorData::I32(v)
        }
    }
}

/// Compiles `g` on every configuration and compares simulator and interpreter on `samples`
/// inputs drawn by `gens` (one per graph input; undefined samples are skipped, at most 3 of
/// 4). Returns the number of NPU operations (u85-256).
fn check(name: &str, g: &Graph, gens: &[Gen]) -> usize {
    let mut ops = 0;
    for accel in Accelerator::ALL {
        let m =
            compile(g, &Options::new(accel)).unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
        if accel == Accelerator::U85_256 {
            ops = m.operators.len();
        }
        let mut rng = Rng(0x132 ^ u64::from(accel.macs_per_cc()));
        let mut compared = 0;
        for sample in 0..16 {
            if compared == 4 {
                break;
            }
            let inputs: Vec<TensorValue> = g
                .inputs()
                .iter()
                .zip(gens)
                .map(|(&t, &gen)| {
                    let ty = &g.tensor(t).unwrap().ty;
                    let n = ty.shape.num_elements().unwrap();
                    // The edge values lead in the first sample.
                    let d = values(gen, n, sample == 0, &mut rng);
                    TensorValue::new(ty.shape.clone(), d).unwrap()
                })
                .collect();
            let expected = match npuc_ir::run_outputs(g, inputs.clone()) {
                Ok(v) => v,
                Err(npuc_ir::InterpError::Undefined { .. }) => continue,
                Err(e) => panic!("{name}: reference: {e}"),
            };
            let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
            let got = simulate(&m, &bytes);
            for (i, (e, o)) in expected.iter().zip(&got).enumerate() {
                let e = e.to_le_bytes();
                if let Some(pos) = e.iter().zip(o).position(|(a, b)| a != b) {
                    panic!(
                        "{name} on {accel}, sample {sample}, output {i}: first mismatch at byte {pos}: expected {:#04x} got {:#04x}",
                        e[pos], o[pos]
                    );
                }
            }
            compared += 1;
        }
        assert!(compared >= 1, "{name} on {accel}: no defined sample");
    }
    ops
}

fn scalar(b: &mut GraphBuilder, name: &str, v: i32) -> TensorId {
    b.const_i32(name, [1, 1, 1, 1], &[v])
}

fn rescale(out: DType, m: i32, shift: i8, double: bool, input_zp: i64, output_zp: i64) -> Op {
    Op::Rescale(RescaleAttrs {
        input_zp,
        output_zp,
        ..RescaleAttrs::per_tensor(
            out,
            m,
            shift,
            if double {
                RescaleRounding::DoubleRound
            } else {
                RescaleRounding::SingleRound
            },
        )
    })
}

#[test]
fn add_sub_with_broadcast_and_scalars_on_either_side() {
    // (x + y_bcast) - c1, c2 - x (IFM scalar, beyond 16 bits), x + c3 (scalar on IFM2 after
    // the swap of a commutative operator).
    let mut b = GraphBuilder::new("add_sub");
    let x = b.input("x", DType::Int32, [1, 3, 5, 6]);
    let y = b.input("y", DType::Int32, [1, 3, 1, 6]);
    let s = b.op("add", Op::Add, &[x, y]);
    let c1 = scalar(&mut b, "c1", 70_000);
    let s = b.op("sub", Op::Sub, &[s, c1]);
    let c2 = scalar(&mut b, "c2", -(1 << 30));
    let r = b.op("rsub", Op::Sub, &[c2, x]);
    let c3 = scalar(&mut b, "c3", 12345);
    let a = b.op("cadd", Op::Add, &[c3, x]);
    b.output(s).output(r).output(a);
    let g = b.finish().unwrap();
    let half = Gen::I32(-(1 << 30), (1 << 30) - 1);
    assert_eq!(check("add_sub", &g, &[half, half]), 4);
}

#[test]
fn mul_with_tosa_shifts_0_1_and_31() {
    // Shift 0 keeps the low 32 bits of the product; shift 31 is the doubling high multiply
    // (INT32_MIN * INT32_MIN would overflow it, so y stops at MIN + 1); the second operand
    // broadcasts over width and depth; shift 1 on operands whose product fits 32 bits.
    let mut b = GraphBuilder::new("mul");
    let x = b.input("x", DType::Int32, [1, 4, 3, 5]);
    let y = b.input("y", DType::Int32, [1, 4, 1, 1]);
    for s in [0u8, 31] {
        let m = b.op(&format!("mul{s}"), Op::Mul(MulAttrs { shift: s }), &[x, y]);
        b.output(m);
    }
    let c = scalar(&mut b, "c", -1_010_580_540);
    let m = b.op("mul_scalar", Op::Mul(MulAttrs { shift: 31 }), &[c, x]);
    let v = b.input("v", DType::Int32, [1, 4, 3, 5]);
    let w = b.input("w", DType::Int32, [1, 1, 3, 1]);
    let m1 = b.op("mul1", Op::Mul(MulAttrs { shift: 1 }), &[v, w]);
    b.output(m).output(m1);
    let g = b.finish().unwrap();
    let y_gen = Gen::I32(i32::MIN as i64 + 1, i32::MAX as i64);
    let half = Gen::I32(-(1 << 15), 1 << 15);
    assert_eq!(check("mul", &g, &[FULL, y_gen, half, half]), 4);
}

#[test]
fn shifts_with_amounts_0_to_31() {
    let mut b = GraphBuilder::new("shifts");
    let x = b.input("x", DType::Int32, [1, 2, 4, 8]);
    let k = b.input("k", DType::Int32, [1, 2, 4, 8]);
    let ks = b.input("ks", DType::Int32, [1, 1, 1, 1]);
    for round in [true, false] {
        let attrs = ArithmeticRightShiftAttrs { round };
        let r = b.op(
            &format!("asr_{round}"),
            Op::ArithmeticRightShift(attrs),
            &[x, k],
        );
        b.output(r);
    }
    let l = b.op("shl", Op::LogicalLeftShift, &[x, k]);
    let lr = b.op("lshr", Op::LogicalRightShift, &[x, k]);
    // A tensor shift amount broadcast from one element, and a constant one.
    let bc = b.op(
        "asr_bcast",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[x, ks],
    );
    let c = scalar(&mut b, "c31", 31);
    let l31 = b.op("shl31", Op::LogicalLeftShift, &[x, c]);
    b.output(l).output(lr).output(bc).output(l31);
    let g = b.finish().unwrap();
    let amount = Gen::I32(0, 31);
    assert_eq!(check("shifts", &g, &[FULL, amount, amount]), 6);
}

#[test]
fn bitwise_clz_abs_max_min_and_division() {
    let mut b = GraphBuilder::new("bitwise");
    let x = b.input("x", DType::Int32, [1, 3, 3, 7]);
    let y = b.input("y", DType::Int32, [1, 3, 3, 7]);
    let m = scalar(&mut b, "m", i32::MIN);
    let ops = [
        ("and", Op::BitwiseAnd, vec![x, y]),
        ("or", Op::BitwiseOr, vec![x, y]),
        ("xor", Op::BitwiseXor, vec![x, m]),
        ("not", Op::BitwiseNot, vec![x]),
        ("clz", Op::Clz, vec![x]),
        ("abs", Op::Abs, vec![y]),
        ("max", Op::Maximum, vec![x, y]),
        ("min", Op::Minimum, vec![y, x]),
        ("div", Op::IntDiv, vec![x, y]),
    ];
    for (name, op, ins) in ops {
        let t = b.op(name, op, &ins);
        b.output(t);
    }
    let g = b.finish().unwrap();
    // y = INT32_MIN makes ABS undefined and y = 0 makes INTDIV undefined: y avoids both
    // (its edges are then MIN + 1 and MAX); x takes every value.
    let y_gen = Gen::I32(i32::MIN as i64 + 1, -1);
    assert_eq!(check("bitwise", &g, &[FULL, y_gen]), 9);
}

#[test]
fn clamp_of_i32_with_16_bit_and_wide_bounds() {
    let mut b = GraphBuilder::new("clamp");
    let x = b.input("x", DType::Int32, [1, 2, 3, 17]);
    let narrow = b.op(
        "narrow",
        Op::Clamp(ClampAttrs {
            min: -300,
            max: 32767,
        }),
        &[x],
    );
    let wide = b.op(
        "wide",
        Op::Clamp(ClampAttrs {
            min: -(1 << 29),
            max: (1 << 29) - 1,
        }),
        &[x],
    );
    let upper = b.op(
        "upper",
        Op::Clamp(ClampAttrs {
            min: i32::MIN as i64,
            max: 1 << 20,
        }),
        &[x],
    );
    b.output(narrow).output(wide).output(upper);
    let g = b.finish().unwrap();
    // One pool, MAX then MIN, MIN alone.
    assert_eq!(check("clamp", &g, &[FULL]), 4);
}

#[test]
fn clamp_after_an_i32_operation_fuses_when_its_bounds_fit_16_bits() {
    let mut b = GraphBuilder::new("clamp_fused");
    let x = b.input("x", DType::Int32, [1, 4, 4, 4]);
    let c = scalar(&mut b, "c", 3);
    let s = b.op(
        "shr",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[x, c],
    );
    let y = b.op(
        "clamp",
        Op::Clamp(ClampAttrs {
            min: -1000,
            max: 1000,
        }),
        &[s],
    );
    b.output(y);
    let g = b.finish().unwrap();
    assert_eq!(check("clamp_fused", &g, &[FULL]), 1);
}

#[test]
fn reductions_of_i32() {
    let mut b = GraphBuilder::new("reduce");
    let x = b.input("x", DType::Int32, [1, 3, 4, 10]);
    let s = b.op("sum_c", Op::ReduceSum(AxisAttrs { axis: 3 }), &[x]);
    let m = b.op("max_c", Op::ReduceMax(AxisAttrs { axis: 3 }), &[x]);
    let mw = b.op("max_w", Op::ReduceMax(AxisAttrs { axis: 2 }), &[x]);
    // A sum over an axis followed by one of extent 1.
    let y = b.input("y", DType::Int32, [2, 9, 1]);
    let sy = b.op("sum_mid", Op::ReduceSum(AxisAttrs { axis: 1 }), &[y]);
    b.output(s).output(m).output(mw).output(sy);
    let g = b.finish().unwrap();
    let small = Gen::I32(-(1 << 26), 1 << 26);
    assert_eq!(check("reduce", &g, &[small, small]), 4);
}

#[test]
fn standalone_rescales_from_and_to_i32() {
    let mut b = GraphBuilder::new("rescales");
    let x = b.input("x", DType::Int32, [1, 3, 3, 5]);
    // i32 -> i8, double rounding with a shift above 31 (MUL by a scalar, shift-only).
    let r1 = b.op(
        "to_i8",
        rescale(DType::Int8, 1_077_952_640, 50, true, 0, -128),
        &[x],
    );
    // i32 -> i16 and i32 -> i32, single rounding.
    let r2 = b.op(
        "to_i16",
        rescale(DType::Int16, 1_518_500_250, 40, false, 0, 0),
        &[x],
    );
    let r3 = b.op(
        "to_i32",
        rescale(DType::Int32, 1_900_000_000, 33, true, 0, 0),
        &[x],
    );
    // i8 -> i32 with a zero point and a non-trivial scale (1x1 POOL(SUM)).
    let z = b.input("z", DType::Int8, [1, 3, 3, 5]);
    let r4 = b.op(
        "from_i8",
        rescale(DType::Int32, 1_234_567_890, 20, true, -7, 0),
        &[z],
    );
    b.output(r1).output(r2).output(r3).output(r4);
    let g = b.finish().unwrap();
    assert_eq!(check("rescales", &g, &[FULL, Gen::I8]), 4);
}

#[test]
fn per_channel_rescale_of_i8_is_one_depthwise() {
    let mut b = GraphBuilder::new("per_channel");
    let x = b.input("x", DType::Int8, [1, 4, 5, 3]);
    let r = RescaleAttrs {
        multiplier: vec![1_131_345_349, 1_574_038_778, 1_901_598_648],
        shift: vec![34, 35, 31],
        per_channel: true,
        input_zp: -3,
        output_zp: 5,
        ..RescaleAttrs::per_tensor(DType::Int8, 1, 2, RescaleRounding::DoubleRound)
    };
    let y = b.op("rescale", Op::Rescale(r), &[x]);
    b.output(y);
    let g = b.finish().unwrap();
    assert_eq!(check("per_channel", &g, &[Gen::I8]), 1);
}

#[test]
fn only_an_identity_rescale_fuses_into_shift_and_b32_mul() {
    // SHR then an identity RESCALE to i8: one operation (zero point and saturation).
    // MUL of i32 then a real RESCALE: the multiply is shift-only, so the rescale is a second
    // operation. ADD of i32 then the same RESCALE: fused into OFM_SCALE.
    let mut b = GraphBuilder::new("fusions");
    let x = b.input("x", DType::Int32, [1, 2, 2, 9]);
    let c = scalar(&mut b, "c", 20);
    let s = b.op(
        "shr",
        Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true }),
        &[x, c],
    );
    let s8 = b.op(
        "s8",
        rescale(DType::Int8, 1 << 30, 30, false, 0, -128),
        &[s],
    );
    let y = b.input("y", DType::Int32, [1, 2, 2, 9]);
    let m = b.op("mul", Op::Mul(MulAttrs { shift: 0 }), &[y, y]);
    let m8 = b.op(
        "m8",
        rescale(DType::Int8, 1_408_929_170, 49, true, 0, -128),
        &[m],
    );
    let a = b.op("add", Op::Add, &[x, y]);
    let a8 = b.op(
        "a8",
        rescale(DType::Int8, 1_408_929_170, 45, true, 0, 7),
        &[a],
    );
    b.output(s8).output(m8).output(a8);
    let g = b.finish().unwrap();
    let small = Gen::I32(-(1 << 24), 1 << 24);
    assert_eq!(check("fusions", &g, &[FULL, small]), 4);
}

#[test]
fn a_folded_operand_next_to_an_i32_one_is_read_as_i32() {
    // ADD(RESCALE(i8), i32 tensor): IFM and IFM2 precisions must agree, so the i8 operand is
    // widened on its own first; ADD(RESCALE(i8), RESCALE(i8)) in TOSA's form (the left shift
    // in the first multiplier) folds both into the input scales.
    let mut b = GraphBuilder::new("mixed");
    let x = b.input("x", DType::Int8, [1, 3, 4, 6]);
    let y = b.input("y", DType::Int32, [1, 3, 4, 6]);
    let wx = b.op("wx", rescale(DType::Int32, 1 << 30, 12, true, -5, 0), &[x]);
    let s = b.op("add", Op::Add, &[wx, y]);
    let z = b.input("z", DType::Int8, [1, 3, 4, 6]);
    let wz = b.op("wz", rescale(DType::Int32, 1 << 30, 10, true, 3, 0), &[z]);
    let rz = b.op(
        "rz",
        rescale(DType::Int32, 2_082_333_275, 33, true, 0, 0),
        &[wz],
    );
    let wz2 = b.op(
        "wz2",
        rescale(DType::Int32, 1 << 30, 11, true, -32, 0),
        &[z],
    );
    let t = b.op("add2", Op::Add, &[rz, wz2]);
    b.output(s).output(t);
    let g = b.finish().unwrap();
    let half = Gen::I32(-(1 << 29), 1 << 29);
    assert_eq!(check("mixed", &g, &[Gen::I8, half, Gen::I8]), 3);
}

/// TFLite's SOFTMAX exp lookup: `table[x - max(x) + 255]` with the widenings and the
/// constant addition in between.
fn table_gather(table: &[i32], offset: i32) -> Graph {
    let mut b = GraphBuilder::new("table_gather");
    let x = b.input("x", DType::Int8, [1, 3, 20]);
    let mx = b.op("max", Op::ReduceMax(AxisAttrs { axis: 2 }), &[x]);
    let wx = b.op("wx", rescale(DType::Int32, 1 << 30, 30, false, 0, 0), &[x]);
    let wm = b.op("wm", rescale(DType::Int32, 1 << 30, 30, false, 0, 0), &[mx]);
    let d = b.op("diff", Op::Sub, &[wx, wm]);
    let c = scalar(&mut b, "c", offset);
    let c = b.op(
        "c_reshape",
        Op::Reshape(ReshapeAttrs {
            shape: Shape::from([1, 1, 1]),
        }),
        &[c],
    );
    let i = b.op("index", Op::Add, &[d, c]);
    let i = b.op(
        "flat",
        Op::Reshape(ReshapeAttrs {
            shape: Shape::from([1, 60]),
        }),
        &[i],
    );
    let t = b.const_i32("table", [1, 256, 1], table);
    let e = b.op("exp", Op::Gather, &[t, i]);
    b.output(e);
    b.finish().unwrap()
}

#[test]
fn a_table_gather_with_a_provable_index_is_a_lut_on_the_index_operation() {
    let mut rng = Rng(7);
    let table: Vec<i32> = (0..256).map(|_| rng.next() as i32).collect();
    // REDUCE_MAX, then SUB with the s8_s32 LUT: the ADD of 255 moves into the table.
    let g = table_gather(&table, 255);
    assert_eq!(check("table_gather", &g, &[Gen::I8]), 2);
    // Offset 254 could index -1: not provably in range.
    let e = compile(&table_gather(&table, 254), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, CompileError::Lower(LowerError::Unsupported { name, reason, .. })
            if name == "exp" && reason.contains("0..=255")),
        "{e}"
    );
}

#[test]
fn i32_operations_use_clip_range_none_and_op_scalar() {
    use npuc_backend::isa::{decode_stream, ActivationClipRange, BroadcastMode, Command};
    let mut b = GraphBuilder::new("regs");
    let x = b.input("x", DType::Int32, [1, 2, 2, 4]);
    let c = scalar(&mut b, "c", 1 << 30);
    let y = b.op("sub", Op::Sub, &[c, x]);
    b.output(y);
    let g = b.finish().unwrap();
    let m = compile(&g, &Options::default()).unwrap();
    let cmds: Vec<Command> = decode_stream(&m.payload.command_words().unwrap())
        .unwrap()
        .into_iter()
        .map(|d| d.command)
        .collect();
    assert!(cmds
        .iter()
        .any(|c| matches!(c, Command::SetOpScalar(s) if s.scalar == 1 << 30)));
    assert!(cmds.iter().any(
        |c| matches!(c, Command::SetIfmBroadcast(s) if s.broadcast_mode == BroadcastMode::Scalar)
    ));
    assert!(cmds.iter().any(|c| matches!(c, Command::SetActivation(a)
        if a.activation_clip_range == ActivationClipRange::None)));
}

#[test]
fn a_widening_read_by_data_movement_is_lowered_first() {
    // The i32 RESCALE waits for its readers; a GATHER with constant indices (data movement)
    // cannot fold it, so it runs first (POOL), then the copies.
    let mut b = GraphBuilder::new("widen_gather");
    let x = b.input("x", DType::Int8, [1, 6, 4]);
    let w = b.op(
        "widen",
        rescale(DType::Int32, 1 << 30, 28, false, 3, 0),
        &[x],
    );
    let i = b.const_i32("idx", [1, 3], &[5, 0, 2]);
    let g = b.op("gather", Op::Gather, &[w, i]);
    b.output(g);
    let g = b.finish().unwrap();
    assert!(check("widen_gather", &g, &[Gen::I8]) >= 2);
}

#[test]
fn a_fully_connected_layer_writes_an_i32_result() {
    // FULLY_CONNECTED, then a per-channel RESCALE to i32 (TFLite's LSTM gate projections),
    // then an i32 ADD: the convolution's OFM is b32 with clip range none.
    let mut rng = Rng(3);
    let mut b = GraphBuilder::new("fc_i32");
    let x = b.input("x", DType::Int8, [2, 12]);
    let w = b.const_i8("w", [8, 12], &rng.i8s(96));
    let bias: Vec<i32> = (0..8).map(|_| rng.range(-5000, 5000) as i32).collect();
    let bt = b.const_i32("b", [8], &bias);
    let attrs = FullyConnectedAttrs {
        input_zp: -1,
        weight_zp: 0,
    };
    let acc = b.op("fc", Op::FullyConnected(attrs), &[x, w, bt]);
    let r = RescaleAttrs {
        multiplier: (0..8).map(|i| 1_286_226_176 + i * 1000).collect(),
        shift: vec![33; 8],
        per_channel: true,
        ..RescaleAttrs::per_tensor(DType::Int32, 1, 2, RescaleRounding::DoubleRound)
    };
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    let z = b.input("z", DType::Int32, [2, 8]);
    let s = b.op("add", Op::Add, &[y, z]);
    b.output(s);
    let g = b.finish().unwrap();
    assert_eq!(
        check("fc_i32", &g, &[Gen::I8, Gen::I32(-(1 << 28), 1 << 28)]),
        2
    );
}
