//! Elementwise families: binary arithmetic and comparisons with every broadcast pattern,
//! scalar and constant operands; unary LUT and activation operators; logical and SELECT.

use super::tfl::{Tfl, Ty, Q};
use super::{Case, Rng};
use npuc_frontend_tflite::schema::{
    ActivationFunctionType as Act, AddOptionsT, BuiltinOperator as B, BuiltinOptionsT, DivOptionsT,
    GeluOptionsT, LeakyReluOptionsT, MulOptionsT, SubOptionsT,
};

/// A dimension: mostly small and odd, sometimes 1, sometimes larger.
pub fn dim(rng: &mut Rng) -> usize {
    match rng.range(0, 9) {
        0 => 1,
        1 => rng.usize(17, 70),
        _ => rng.usize(2, 9),
    }
}

pub fn shape(rng: &mut Rng, rank: usize) -> Vec<usize> {
    (0..rank).map(|_| dim(rng)).collect()
}

/// Random per-tensor quantization of an activation of type `ty` (int16: zero point 0).
pub fn quant(rng: &mut Rng, ty: Ty) -> (f32, i64) {
    match ty {
        Ty::I16 => (rng.log_uniform(2e-5, 0.02) as f32, 0),
        _ => (rng.log_uniform(0.002, 0.3) as f32, rng.range(-128, 127)),
    }
}

/// Quantization near `scale` (times 1/spread .. spread).
pub fn quant_near(rng: &mut Rng, ty: Ty, scale: f64, spread: f64) -> (f32, i64) {
    let s = (scale * rng.log_uniform(1.0 / spread, spread)) as f32;
    match ty {
        Ty::I16 => (s, 0),
        _ => (s, rng.range(-128, 127)),
    }
}

fn act(rng: &mut Rng) -> Act {
    if rng.chance(0.6) {
        Act::NONE
    } else {
        rng.pick(&[Act::RELU, Act::RELU6, Act::RELU_N1_TO_1])
    }
}

/// Two operand shapes broadcasting to `out`: per axis both full or one of them 1; leading
/// 1s dropped at random; sometimes a scalar.
pub fn broadcast_pair(rng: &mut Rng, out: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut a = out.to_vec();
    let mut b = out.to_vec();
    for i in 0..out.len() {
        match rng.range(0, 4) {
            0 => a[i] = 1,
            1 => b[i] = 1,
            _ => {}
        }
    }
    let drop = |rng: &mut Rng, s: &mut Vec<usize>| {
        while !s.is_empty() && s[0] == 1 && rng.chance(0.5) {
            s.remove(0);
        }
    };
    if rng.chance(0.1) {
        a = out.to_vec();
        b = if rng.chance(0.5) { vec![] } else { vec![1] };
    } else if rng.chance(0.05) {
        a = vec![];
        b = out.to_vec();
    }
    drop(rng, &mut a);
    drop(rng, &mut b);
    (a, b)
}

fn name_shape(s: &[usize]) -> String {
    if s.is_empty() {
        return "scalar".into();
    }
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

pub fn fmt(s: &[usize]) -> String {
    name_shape(s)
}

/// An operand: a graph input or (with probability `p_const`) a constant.
fn operand(t: &mut Tfl, rng: &mut Rng, s: &[usize], ty: Ty, q: Q, p_const: f64) -> (i32, bool) {
    if rng.chance(p_const) {
        let n = s.iter().product();
        let v = rng.values(n, ty.min(), ty.max());
        (t.constant(s, ty, q, &v), true)
    } else {
        (t.input(s, ty, q), false)
    }
}

/// ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM and the six comparisons.
pub fn binary(rng: &mut Rng) -> Case {
    let op = rng.pick(&[
        B::ADD,
        B::SUB,
        B::MUL,
        B::ADD,
        B::MUL,
        B::MAXIMUM,
        B::MINIMUM,
        B::SQUARED_DIFFERENCE,
        B::DIV,
        B::GREATER,
        B::GREATER_EQUAL,
        B::LESS,
        B::LESS_EQUAL,
        B::EQUAL,
        B::NOT_EQUAL,
    ]);
    let ty = if op != B::DIV && rng.chance(0.35) {
        Ty::I16
    } else {
        Ty::I8
    };
    let rank = rng.usize(1, 5);
    let out = shape(rng, rank);
    let (sa, mut sb) = broadcast_pair(rng, &out);
    if sa.len().max(sb.len()) < rank {
        // TFLite infers the output rank from the operands.
        let mut full = vec![1; rank - sb.len()];
        full.extend_from_slice(&sb);
        sb = full;
    }
    let (qa, qb) = (quant(rng, ty), quant(rng, ty));
    let wide = rng.chance(0.15);
    let big = f64::from(qa.0.max(qb.0));
    let qo = match op {
        B::MAXIMUM | B::MINIMUM => {
            let q = qa;
            let mut t = Tfl::new();
            let (a, ca) = operand(&mut t, rng, &sa, ty, Some(q), 0.1);
            let (b, cb) = operand(&mut t, rng, &sb, ty, Some(q), if ca { 0.0 } else { 0.3 });
            let o = t.act(&out, ty, Some(q));
            t.op(op, &[a, b], &[o], BuiltinOptionsT::NONE);
            t.output(o);
            let name = format!(
                "{op:?} {ty:?} {}{} {}{} -> {}",
                fmt(&sa),
                if ca { "(const)" } else { "" },
                fmt(&sb),
                if cb { "(const)" } else { "" },
                fmt(&out)
            );
            return Case::new(name, t.finish());
        }
        _ if wide => quant(rng, ty),
        B::ADD | B::SUB => quant_near(rng, ty, big, 4.0),
        B::MUL => {
            let range = if ty == Ty::I16 { 32768.0 } else { 128.0 };
            quant_near(rng, ty, f64::from(qa.0) * f64::from(qb.0) * range, 4.0)
        }
        B::SQUARED_DIFFERENCE => quant_near(rng, ty, big * big * 128.0, 8.0),
        B::DIV => quant_near(rng, ty, f64::from(qa.0) / f64::from(qb.0), 8.0),
        _ => (0.0, 0),
    };
    let compare = matches!(
        op,
        B::GREATER | B::GREATER_EQUAL | B::LESS | B::LESS_EQUAL | B::EQUAL | B::NOT_EQUAL
    );
    let mut t = Tfl::new();
    let (a, ca) = operand(&mut t, rng, &sa, ty, Some(qa), 0.1);
    let (b, cb) = operand(&mut t, rng, &sb, ty, Some(qb), if ca { 0.0 } else { 0.3 });
    let o = if compare {
        t.act(&out, Ty::Bool, None)
    } else {
        t.act(&out, ty, Some(qo))
    };
    let a_ = act(rng);
    let opts = match op {
        B::ADD => {
            let mut x = AddOptionsT::default();
            x.fused_activation_function = a_;
            x.pot_scale_int16 = rng.chance(0.2);
            BuiltinOptionsT::AddOptions(Box::new(x))
        }
        B::SUB => {
            let mut x = SubOptionsT::default();
            x.fused_activation_function = a_;
            x.pot_scale_int16 = rng.chance(0.2);
            BuiltinOptionsT::SubOptions(Box::new(x))
        }
        B::MUL => {
            let mut x = MulOptionsT::default();
            x.fused_activation_function = a_;
            BuiltinOptionsT::MulOptions(Box::new(x))
        }
        B::DIV => {
            let mut x = DivOptionsT::default();
            x.fused_activation_function = a_;
            BuiltinOptionsT::DivOptions(Box::new(x))
        }
        _ => BuiltinOptionsT::NONE,
    };
    let act_name = match &opts {
        BuiltinOptionsT::NONE => String::new(),
        _ => format!(" {a_:?}"),
    };
    t.op(op, &[a, b], &[o], opts);
    t.output(o);
    let name = format!(
        "{op:?} {ty:?} {}{} q{:?} {}{} q{:?} -> {} q{:?}{act_name}",
        fmt(&sa),
        if ca { "(const)" } else { "" },
        qa,
        fmt(&sb),
        if cb { "(const)" } else { "" },
        qb,
        fmt(&out),
        qo
    );
    let mut case = Case::new(name, t.finish());
    if op == B::DIV && !cb {
        // TFLite's int8 DIV refuses a raw 0 divisor: inputs avoid raw values near zero.
        case.value_range = Some((1, 127));
    }
    case
}

/// LUT operators, activations and requantization, int8 and int16.
pub fn unary(rng: &mut Rng) -> Case {
    let op = rng.pick(&[
        B::LOGISTIC,
        B::TANH,
        B::HARD_SWISH,
        B::GELU,
        B::EXP,
        B::LOG,
        B::RSQRT,
        B::ELU,
        B::LEAKY_RELU,
        B::PRELU,
        B::ABS,
        B::NEG,
        B::QUANTIZE,
        B::RELU,
        B::RELU6,
        B::RELU_N1_TO_1,
        B::RELU_0_TO_1,
    ]);
    let ty = if rng.chance(0.35) { Ty::I16 } else { Ty::I8 };
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let qi = quant(rng, ty);
    let oty = if op == B::QUANTIZE {
        rng.pick(&[Ty::I8, Ty::I16])
    } else {
        ty
    };
    let qo = match (op, oty) {
        (B::LOGISTIC, Ty::I8) => (1.0 / 256.0, -128),
        (B::TANH, Ty::I8) => (1.0 / 128.0, 0),
        (B::LOGISTIC | B::TANH, _) => (1.0 / 32768.0, 0),
        (B::ABS | B::NEG | B::LEAKY_RELU | B::PRELU | B::ELU, _) if rng.chance(0.3) => qi,
        (B::RELU | B::RELU6 | B::RELU_N1_TO_1 | B::RELU_0_TO_1, _) if rng.chance(0.3) => qi,
        _ if rng.chance(0.5) => quant_near(rng, oty, f64::from(qi.0), 4.0),
        _ => quant(rng, oty),
    };
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(qi));
    let o = t.act(&s, oty, Some(qo));
    let mut extra = String::new();
    match op {
        B::LEAKY_RELU => {
            let mut x_ = LeakyReluOptionsT::default();
            x_.alpha = if rng.chance(0.8) {
                rng.log_uniform(0.01, 0.5) as f32
            } else {
                rng.log_uniform(0.5, 3.0) as f32
            };
            extra = format!(" alpha {}", x_.alpha);
            t.op(
                op,
                &[x],
                &[o],
                BuiltinOptionsT::LeakyReluOptions(Box::new(x_)),
            );
        }
        B::GELU => {
            let mut x_ = GeluOptionsT::default();
            x_.approximate = rng.chance(0.5);
            extra = format!(" approximate {}", x_.approximate);
            t.op(op, &[x], &[o], BuiltinOptionsT::GeluOptions(Box::new(x_)));
        }
        B::PRELU => {
            // alpha broadcasts against the input: the trailing axes, some of them 1.
            let k = rng.usize(1, rank);
            let mut as_: Vec<usize> = s[rank - k..].to_vec();
            for d in as_.iter_mut() {
                if rng.chance(0.3) {
                    *d = 1;
                }
            }
            let qa = quant(rng, ty);
            let n = as_.iter().product();
            let v = rng.values(n, ty.min(), ty.max());
            let al = if rng.chance(0.8) {
                t.constant(&as_, ty, Some(qa), &v)
            } else {
                t.input(&as_, ty, Some(qa))
            };
            extra = format!(" alpha {} q{qa:?}", fmt(&as_));
            t.op(op, &[x, al], &[o], BuiltinOptionsT::NONE);
        }
        _ => t.op(op, &[x], &[o], BuiltinOptionsT::NONE),
    }
    t.output(o);
    let name = format!(
        "{op:?} {ty:?}->{oty:?} {} q{qi:?} -> q{qo:?}{extra}",
        fmt(&s)
    );
    let mut case = Case::new(name, t.finish());
    if op == B::RSQRT && qi.1 < ty.max() {
        // TFLite refuses RSQRT of values <= 0.
        case.value_range = Some((qi.1 + 1, ty.max()));
    }
    case
}

/// LOGICAL_AND/OR/NOT, SELECT and SELECT_V2 (with a comparison making the condition).
pub fn logical(rng: &mut Rng) -> Case {
    let op = rng.pick(&[
        B::LOGICAL_AND,
        B::LOGICAL_OR,
        B::LOGICAL_NOT,
        B::SELECT,
        B::SELECT_V2,
        B::SELECT_V2,
    ]);
    let rank = rng.usize(1, 5);
    let out = shape(rng, rank);
    let mut t = Tfl::new();
    let name = match op {
        B::LOGICAL_NOT => {
            let x = t.input(&out, Ty::Bool, None);
            let o = t.act(&out, Ty::Bool, None);
            t.op(op, &[x], &[o], BuiltinOptionsT::NONE);
            t.output(o);
            format!("{op:?} {}", fmt(&out))
        }
        B::LOGICAL_AND | B::LOGICAL_OR => {
            let (sa, sb) = broadcast_pair(rng, &out);
            let x = t.input(&sa, Ty::Bool, None);
            let y = t.input(&sb, Ty::Bool, None);
            let o = t.act(&out, Ty::Bool, None);
            t.op(op, &[x, y], &[o], BuiltinOptionsT::NONE);
            t.output(o);
            format!("{op:?} {} {} -> {}", fmt(&sa), fmt(&sb), fmt(&out))
        }
        _ => {
            let ty = if rng.chance(0.35) { Ty::I16 } else { Ty::I8 };
            let q = quant(rng, ty);
            let (sx, sy, sc) = if op == B::SELECT {
                // SELECT: x and y of the output's shape; the condition of that shape too, or
                // rank 1 over the first axis.
                let c = if rng.chance(0.3) {
                    vec![out[0]]
                } else {
                    out.clone()
                };
                (out.clone(), out.clone(), c)
            } else {
                let (a, b) = broadcast_pair(rng, &out);
                let (c, _) = broadcast_pair(rng, &out);
                (a, b, c)
            };
            // The condition is a comparison of an input with a constant (as TF makes it),
            // or a bool graph input.
            let c = if rng.chance(0.5) {
                let qc = quant(rng, ty);
                let ci = t.input(&sc, ty, Some(qc));
                let k = t.constant(&[], ty, Some(qc), &[rng.range(ty.min() / 2, ty.max() / 2)]);
                let c = t.act(&sc, Ty::Bool, None);
                t.op(B::GREATER, &[ci, k], &[c], BuiltinOptionsT::NONE);
                c
            } else {
                t.input(&sc, Ty::Bool, None)
            };
            let (x, cx) = operand(&mut t, rng, &sx, ty, Some(q), 0.2);
            let (y, cy) = operand(&mut t, rng, &sy, ty, Some(q), if cx { 0.0 } else { 0.2 });
            let o = t.act(&out, ty, Some(q));
            t.op(op, &[c, x, y], &[o], BuiltinOptionsT::NONE);
            t.output(o);
            format!(
                "{op:?} {ty:?} cond {} x {}{} y {}{} -> {}",
                fmt(&sc),
                fmt(&sx),
                if cx { "(const)" } else { "" },
                fmt(&sy),
                if cy { "(const)" } else { "" },
                fmt(&out)
            )
        }
    };
    Case::new(name, t.finish())
}
