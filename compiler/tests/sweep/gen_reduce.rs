//! Reductions (MEAN, SUM, REDUCE_MAX/MIN/ANY/ALL, ARG_MAX), RESIZE_BILINEAR/NEAREST, SOFTMAX
//! and LOG_SOFTMAX.

use super::gen_ew::{dim, fmt, quant, quant_near, shape};
use super::tfl::{Tfl, Ty};
use super::{Case, Rng};
use npuc_frontend_tflite::schema::{
    ArgMaxOptionsT, BuiltinOperator as B, BuiltinOptionsT, ReducerOptionsT, ResizeBilinearOptionsT,
    ResizeNearestNeighborOptionsT, SoftmaxOptionsT,
};

/// MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL over any axis set.
pub fn reduce(rng: &mut Rng) -> Case {
    let op = rng.pick(&[
        B::MEAN,
        B::MEAN,
        B::SUM,
        B::REDUCE_MAX,
        B::REDUCE_MIN,
        B::REDUCE_ANY,
        B::REDUCE_ALL,
    ]);
    let ty = match op {
        B::REDUCE_ANY | B::REDUCE_ALL => Ty::Bool,
        _ if rng.chance(0.3) => Ty::I16,
        _ => Ty::I8,
    };
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let mut axes: Vec<usize> = (0..rank).filter(|_| rng.chance(0.45)).collect();
    if axes.is_empty() {
        axes.push(rng.usize(0, rank - 1));
    }
    let keep = rng.chance(0.5);
    let os: Vec<usize> = (0..rank)
        .filter_map(|k| {
            if axes.contains(&k) {
                keep.then_some(1)
            } else {
                Some(s[k])
            }
        })
        .collect();
    let mut written: Vec<i64> = axes
        .iter()
        .map(|&a| {
            if rng.chance(0.3) {
                a as i64 - rank as i64
            } else {
                a as i64
            }
        })
        .collect();
    if rng.chance(0.2) {
        written.reverse();
    }
    let qi = (ty != Ty::Bool).then(|| quant(rng, ty));
    let qo = match (op, qi) {
        (B::MEAN, Some(q)) if rng.chance(0.6) => Some(quant_near(rng, ty, f64::from(q.0), 3.0)),
        (B::SUM, Some(q)) => {
            let n: usize = axes.iter().map(|&a| s[a]).product();
            if ty == Ty::I16 || rng.chance(0.2) {
                Some(q)
            } else {
                Some(quant_near(rng, ty, f64::from(q.0) * (n as f64).sqrt(), 3.0))
            }
        }
        (_, q) => q,
    };
    let mut t = Tfl::new();
    let x = t.input(&s, ty, qi);
    let pa = if written.len() == 1 && rng.chance(0.3) {
        t.param(&[], &written)
    } else {
        t.param1(&written)
    };
    let o = t.act(&os, ty, qo);
    let mut opt = ReducerOptionsT::default();
    opt.keep_dims = keep;
    t.op(
        op,
        &[x, pa],
        &[o],
        BuiltinOptionsT::ReducerOptions(Box::new(opt)),
    );
    t.output(o);
    Case::new(
        format!(
            "{op:?} {ty:?} {} axes {written:?} keep {keep} q{qi:?} -> q{qo:?}",
            fmt(&s)
        ),
        t.finish(),
    )
}

/// ARG_MAX over any axis, int32 or int64 output.
pub fn arg_max(rng: &mut Rng) -> Case {
    // TFLite's ARG_MAX takes no int16 input.
    let ty = Ty::I8;
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let a = rng.usize(0, rank - 1);
    let q = quant(rng, ty);
    let oty = if rng.chance(0.3) { Ty::I64 } else { Ty::I32 };
    let mut os = s.clone();
    os.remove(a);
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let av = if rng.chance(0.3) {
        a as i64 - rank as i64
    } else {
        a as i64
    };
    let pa = t.param1(&[av]);
    let o = t.act(&os, oty, None);
    let mut opt = ArgMaxOptionsT::default();
    opt.output_type = match oty {
        Ty::I64 => npuc_frontend_tflite::schema::TensorType::INT64,
        _ => npuc_frontend_tflite::schema::TensorType::INT32,
    };
    t.op(
        B::ARG_MAX,
        &[x, pa],
        &[o],
        BuiltinOptionsT::ArgMaxOptions(Box::new(opt)),
    );
    t.output(o);
    let mut case = Case::new(
        format!("ARG_MAX {ty:?} {} axis {av} -> {oty:?}", fmt(&s)),
        t.finish(),
    );
    // Few distinct values, so that ties (first index wins) happen.
    if rng.chance(0.3) {
        case.value_range = Some((-2, 2));
    }
    case
}

/// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: up and down, integer and fractional factors,
/// align_corners, half_pixel_centers.
pub fn resize(rng: &mut Rng) -> Case {
    let op = rng.pick(&[B::RESIZE_BILINEAR, B::RESIZE_NEAREST_NEIGHBOR]);
    let ty = if rng.chance(0.3) { Ty::I16 } else { Ty::I8 };
    let n = if rng.chance(0.15) { 2 } else { 1 };
    let (h, w, c) = (rng.usize(1, 9), rng.usize(1, 9), dim(rng).min(33));
    let size = |rng: &mut Rng, d: usize| match rng.range(0, 5) {
        0 => d * 2,
        1 => d * 4,
        2 => d,
        3 => (d / 2).max(1),
        _ => rng.usize(1, 3 * d),
    };
    let (oh, ow) = (size(rng, h), size(rng, w));
    let (align, half) = match rng.range(0, 2) {
        0 => (true, false),
        1 => (false, true),
        _ => (false, false),
    };
    let q = quant(rng, ty);
    let s = vec![n, h, w, c];
    let os = vec![n, oh, ow, c];
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let ps = t.param1(&[oh as i64, ow as i64]);
    let o = t.act(&os, ty, Some(q));
    let opts = if op == B::RESIZE_BILINEAR {
        let mut x = ResizeBilinearOptionsT::default();
        x.align_corners = align;
        x.half_pixel_centers = half;
        BuiltinOptionsT::ResizeBilinearOptions(Box::new(x))
    } else {
        let mut x = ResizeNearestNeighborOptionsT::default();
        x.align_corners = align;
        x.half_pixel_centers = half;
        BuiltinOptionsT::ResizeNearestNeighborOptions(Box::new(x))
    };
    t.op(op, &[x, ps], &[o], opts);
    t.output(o);
    Case::new(
        format!(
            "{op:?} {ty:?} {} -> {oh}x{ow} align {align} half {half}",
            fmt(&s)
        ),
        t.finish(),
    )
}

/// SOFTMAX (beta, long rows, rank 1-4, int16) and LOG_SOFTMAX.
pub fn softmax(rng: &mut Rng) -> Case {
    let op = if rng.chance(0.25) {
        B::LOG_SOFTMAX
    } else {
        B::SOFTMAX
    };
    let ty = if op == B::SOFTMAX && rng.chance(0.35) {
        Ty::I16
    } else {
        Ty::I8
    };
    let rank = rng.usize(1, 4);
    let mut s = shape(rng, rank);
    if rng.chance(0.2) {
        s[rank - 1] = rng.pick(&[100, 256, 1000, 1001, 2048]);
        for d in s.iter_mut().take(rank - 1) {
            *d = (*d).min(2);
        }
    }
    let qi = match ty {
        Ty::I16 => (rng.log_uniform(1e-4, 1e-3) as f32, 0),
        _ => (rng.log_uniform(0.01, 0.15) as f32, rng.range(-128, 127)),
    };
    let qo = match (op, ty) {
        (B::LOG_SOFTMAX, _) => (16.0 / 256.0, 127),
        (_, Ty::I16) => (1.0 / 32768.0, 0),
        _ => (1.0 / 256.0, -128),
    };
    let beta = if rng.chance(0.6) {
        1.0
    } else {
        rng.log_uniform(0.1, 4.0) as f32
    };
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(qi));
    let o = t.act(&s, ty, Some(qo));
    let opts = if op == B::SOFTMAX {
        let mut x = SoftmaxOptionsT::default();
        x.beta = beta;
        BuiltinOptionsT::SoftmaxOptions(Box::new(x))
    } else {
        BuiltinOptionsT::LogSoftmaxOptions(Box::default())
    };
    t.op(op, &[x], &[o], opts);
    t.output(o);
    Case::new(
        format!("{op:?} {ty:?} {} q{qi:?} beta {beta}", fmt(&s)),
        t.finish(),
    )
}
