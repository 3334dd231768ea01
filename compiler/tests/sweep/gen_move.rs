//! Data-movement families: CONCATENATION, SPLIT/SPLIT_V, SLICE, STRIDED_SLICE, PAD/PADV2/
//! MIRROR_PAD, TRANSPOSE, RESHAPE/SQUEEZE/EXPAND_DIMS, PACK/UNPACK, GATHER, TILE, REVERSE_V2,
//! SPACE_TO_DEPTH/DEPTH_TO_SPACE, SPACE_TO_BATCH_ND.

use super::gen_ew::{fmt, quant, shape};
use super::tfl::{Tfl, Ty};
use super::{Case, Rng};
use npuc_frontend_tflite::schema::{
    BuiltinOperator as B, BuiltinOptionsT, ConcatenationOptionsT, DepthToSpaceOptionsT,
    GatherOptionsT, MirrorPadMode, MirrorPadOptionsT, PackOptionsT, ReshapeOptionsT,
    SpaceToDepthOptionsT, SplitOptionsT, SplitVOptionsT, SqueezeOptionsT, StridedSliceOptionsT,
    UnpackOptionsT,
};

fn act_ty(rng: &mut Rng) -> Ty {
    if rng.chance(0.3) {
        Ty::I16
    } else {
        Ty::I8
    }
}

/// An axis as TFLite may write it: sometimes negative.
fn axis_value(rng: &mut Rng, a: usize, rank: usize) -> i64 {
    if rng.chance(0.3) {
        a as i64 - rank as i64
    } else {
        a as i64
    }
}

/// An int32 parameter tensor (TFLite's kernels read most parameters as int32 only).
fn param(t: &mut Tfl, _rng: &mut Rng, shape: &[usize], v: &[i64]) -> i32 {
    t.param(shape, v)
}

/// CONCATENATION of 2-6 operands along any axis; some operands are constants, some come
/// through a QUANTIZE from a differently quantized input (how converters concatenate mixed
/// quantization), some appear twice.
pub fn concat(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let base = shape(rng, rank);
    let ax = rng.usize(0, rank - 1);
    let n = rng.usize(2, 6);
    let q = quant(rng, ty);
    let mut t = Tfl::new();
    let mut ins = vec![];
    let mut desc = vec![];
    let mut total = 0;
    for k in 0..n {
        if k > 0 && rng.chance(0.15) {
            let j = rng.usize(0, ins.len() - 1);
            let (x, d): (i32, usize) = ins[j];
            ins.push((x, d));
            total += d;
            desc.push(format!("dup{j}"));
            continue;
        }
        let mut s = base.clone();
        s[ax] = if rng.chance(0.2) { 1 } else { rng.usize(1, 9) };
        let e: usize = s.iter().product();
        let x = match rng.range(0, 5) {
            0 => {
                desc.push(format!("{}c", s[ax]));
                t.constant(&s, ty, Some(q), &rng.values(e, ty.min(), ty.max()))
            }
            1 => {
                let qi = quant(rng, ty);
                let xi = t.input(&s, ty, Some(qi));
                let x = t.act(&s, ty, Some(q));
                t.op(B::QUANTIZE, &[xi], &[x], BuiltinOptionsT::NONE);
                desc.push(format!("{}q", s[ax]));
                x
            }
            _ => {
                desc.push(format!("{}", s[ax]));
                t.input(&s, ty, Some(q))
            }
        };
        total += s[ax];
        ins.push((x, s[ax]));
    }
    let mut os = base.clone();
    os[ax] = total;
    let o = t.act(&os, ty, Some(q));
    let mut opt = ConcatenationOptionsT::default();
    opt.axis = axis_value(rng, ax, rank) as i32;
    let ids: Vec<i32> = ins.iter().map(|x| x.0).collect();
    t.op(
        B::CONCATENATION,
        &ids,
        &[o],
        BuiltinOptionsT::ConcatenationOptions(Box::new(opt)),
    );
    t.output(o);
    let name = format!(
        "CONCATENATION {ty:?} {} axis {ax} [{}]",
        fmt(&base),
        desc.join(",")
    );
    Case::new(name, t.finish())
}

/// SPLIT, SPLIT_V (one size may be -1) and UNPACK; the outputs are graph outputs, some feed
/// a following ADD of two pieces.
pub fn split(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let mut s = shape(rng, rank);
    let ax = rng.usize(0, rank - 1);
    let q = quant(rng, ty);
    let mut t = Tfl::new();
    let kind = rng.pick(&[B::SPLIT, B::SPLIT_V, B::UNPACK]);
    let name;
    match kind {
        B::SPLIT => {
            let n = rng.usize(1, 4);
            s[ax] = n * rng.usize(1, 5);
            let x = t.input(&s, ty, Some(q));
            let av = axis_value(rng, ax, rank);
            let a = param(&mut t, rng, &[], &[av]);
            let mut os = s.clone();
            os[ax] /= n;
            let outs: Vec<i32> = (0..n).map(|_| t.act(&os, ty, Some(q))).collect();
            let mut opt = SplitOptionsT::default();
            opt.num_splits = n as i32;
            t.op(
                B::SPLIT,
                &[a, x],
                &outs,
                BuiltinOptionsT::SplitOptions(Box::new(opt)),
            );
            for &o in &outs {
                t.output(o);
            }
            name = format!("SPLIT {ty:?} {} axis {ax} into {n}", fmt(&s));
        }
        B::SPLIT_V => {
            let n = rng.usize(1, 5);
            let sizes: Vec<i64> = (0..n).map(|_| rng.range(1, 6)).collect();
            s[ax] = sizes.iter().sum::<i64>() as usize;
            let mut written = sizes.clone();
            if rng.chance(0.4) {
                let k = rng.usize(0, n - 1);
                written[k] = -1;
            }
            let x = t.input(&s, ty, Some(q));
            let sz = param(&mut t, rng, &[n], &written);
            let av = axis_value(rng, ax, rank);
            let a = param(&mut t, rng, &[], &[av]);
            let outs: Vec<i32> = sizes
                .iter()
                .map(|&d| {
                    let mut os = s.clone();
                    os[ax] = d as usize;
                    t.act(&os, ty, Some(q))
                })
                .collect();
            let mut opt = SplitVOptionsT::default();
            opt.num_splits = n as i32;
            t.op(
                B::SPLIT_V,
                &[x, sz, a],
                &outs,
                BuiltinOptionsT::SplitVOptions(Box::new(opt)),
            );
            for &o in &outs {
                t.output(o);
            }
            name = format!("SPLIT_V {ty:?} {} axis {ax} sizes {written:?}", fmt(&s));
        }
        _ => {
            let x = t.input(&s, ty, Some(q));
            let mut os = s.clone();
            os.remove(ax);
            let outs: Vec<i32> = (0..s[ax]).map(|_| t.act(&os, ty, Some(q))).collect();
            let mut opt = UnpackOptionsT::default();
            opt.num = s[ax] as i32;
            opt.axis = axis_value(rng, ax, rank) as i32;
            t.op(
                B::UNPACK,
                &[x],
                &outs,
                BuiltinOptionsT::UnpackOptions(Box::new(opt)),
            );
            for &o in &outs {
                t.output(o);
            }
            name = format!("UNPACK {ty:?} {} axis {ax}", fmt(&s));
        }
    }
    Case::new(name, t.finish())
}

/// SLICE with constant begin/size (size -1 sometimes).
pub fn slice(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let mut begin = vec![];
    let mut size = vec![];
    let mut os = vec![];
    for &d in &s {
        let b = rng.usize(0, d - 1);
        let n = rng.usize(1, d - b);
        begin.push(b as i64);
        size.push(if n == d - b && rng.chance(0.3) {
            -1
        } else {
            n as i64
        });
        os.push(n);
    }
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let pb = param(&mut t, rng, &[rank], &begin);
    let ps = param(&mut t, rng, &[rank], &size);
    let o = t.act(&os, ty, Some(q));
    t.op(B::SLICE, &[x, pb, ps], &[o], BuiltinOptionsT::NONE);
    t.output(o);
    Case::new(
        format!("SLICE {ty:?} {} begin {begin:?} size {size:?}", fmt(&s)),
        t.finish(),
    )
}

/// TFLite's strided-slice start for one axis (strided_slice_logic.h).
fn start_for_axis(begin: i64, stride: i64, masked: bool, dim: i64) -> i64 {
    let mut start = begin;
    if masked {
        start = if stride > 0 {
            i32::MIN as i64
        } else {
            i32::MAX as i64
        };
    }
    if start < 0 {
        start += dim;
    }
    if stride > 0 {
        start.clamp(0, dim)
    } else {
        start.clamp(-1, dim - 1)
    }
}

fn stop_for_axis(end: i64, stride: i64, masked: bool, shrink: bool, dim: i64, start: i64) -> i64 {
    if shrink {
        return start + 1;
    }
    let mut stop = end;
    if masked {
        stop = if stride > 0 {
            i32::MAX as i64
        } else {
            i32::MIN as i64
        };
    }
    if stop < 0 {
        stop += dim;
    }
    if stride > 0 {
        stop.clamp(0, dim)
    } else {
        stop.clamp(-1, dim - 1)
    }
}

/// One entry of a numpy-style index: how the sweep describes a strided slice before
/// encoding it as TFLite's masks.
#[derive(Debug, Clone, Copy)]
enum Spec {
    Ellipsis,
    NewAxis,
    /// An index (shrinks the axis).
    Index(i64),
    /// begin (None: masked), end (None: masked), stride.
    Range(Option<i64>, Option<i64>, i64),
}

/// The first index and the end of `b:e:s` over an axis of `dim` (Python's slice semantics).
fn slice_bounds(b: Option<i64>, e: Option<i64>, s: i64, dim: i64) -> (i64, i64) {
    let norm = |v: i64| if v < 0 { v + dim } else { v };
    let (lo, hi) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
    let b = b.map_or(if s > 0 { 0 } else { dim - 1 }, |v| norm(v).clamp(lo, hi));
    let e = e.map_or(if s > 0 { dim } else { -1 }, |v| norm(v).clamp(lo, hi));
    (b, e)
}

/// The number of elements of `b:e:s` over an axis of `dim` (Python's slice semantics).
fn slice_len(b: Option<i64>, e: Option<i64>, s: i64, dim: i64) -> i64 {
    let (b, e) = slice_bounds(b, e, s, dim);
    if s > 0 {
        ((e - b).max(0) + s - 1) / s
    } else {
        ((b - e).max(0) - s - 1) / -s
    }
}

/// STRIDED_SLICE: positive and negative strides, negative and out-of-range bounds, begin /
/// end / shrink masks, an ellipsis, new axes, fewer parameters than axes, `offset`.
pub fn strided_slice(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    // Input axes named explicitly; with an ellipsis the rest are its.
    // TFLite's ellipsis always stands for at least one axis (unlike numpy's).
    let ellipsis = rng.chance(0.25);
    let named = if ellipsis {
        rng.usize(0, rank - 1)
    } else if rng.chance(0.2) {
        rng.usize(1, rank)
    } else {
        rank
    };
    let ell_at = rng.usize(0, named);
    let mut specs = vec![];
    let mut axis = 0;
    for k in 0..named {
        if ellipsis && k == ell_at {
            specs.push(Spec::Ellipsis);
            axis += rank - named;
        }
        let d = s[axis] as i64;
        axis += 1;
        if rng.chance(0.15) {
            specs.push(Spec::Index(rng.range(-d, d - 1)));
            continue;
        }
        let stride = match rng.range(0, 5) {
            0 => -rng.range(1, 3),
            1 | 2 => rng.range(2, 3),
            _ => 1,
        };
        let bound = |rng: &mut Rng| {
            if rng.chance(0.2) {
                None
            } else if rng.chance(0.1) {
                Some(rng.range(-2 * d - 3, 2 * d + 3))
            } else {
                Some(rng.range(-d, d))
            }
        };
        let (b, e) = (bound(rng), bound(rng));
        if slice_len(b, e, stride, d) == 0 {
            specs.push(Spec::Range(None, None, 1));
        } else {
            specs.push(Spec::Range(b, e, stride));
        }
    }
    if ellipsis && ell_at == named {
        specs.push(Spec::Ellipsis);
    }
    for _ in 0..2 {
        // TFLite runs at most five effective axes: rarely more.
        let added = specs.iter().filter(|p| matches!(p, Spec::NewAxis)).count();
        if rng.chance(if rank + added < 5 { 0.2 } else { 0.03 }) {
            let at = rng.usize(0, specs.len());
            specs.insert(at, Spec::NewAxis);
        }
    }
    // `offset`: `end` counts from the (clamped) first index, and TFLite sizes the output as
    // `ceil(end / stride)` from the raw parameter at the effective axis: only one parameter
    // per input axis, no masks, and ends that stay inside the axis.
    let mut dims = s.iter();
    let offset = specs.len() == rank
        && rng.chance(0.15)
        && specs.iter().all(|p| {
            let d = *dims.next().unwrap() as i64;
            match *p {
                Spec::Index(_) => true,
                Spec::Range(Some(b), Some(e), st) => slice_bounds(Some(b), Some(e), st, d).1 >= 0,
                _ => false,
            }
        });
    // The output shape by numpy's rules, and TFLite's encoding.
    let mut os = vec![];
    let (mut begin, mut end, mut strides) = (vec![], vec![], vec![]);
    let (mut bm, mut em, mut sm, mut elm, mut nm) = (0i32, 0i32, 0i32, 0i32, 0i32);
    let mut axis = 0;
    for (k, p) in specs.iter().enumerate() {
        match *p {
            Spec::Ellipsis => {
                for _ in 0..rank - named {
                    os.push(s[axis]);
                    axis += 1;
                }
                elm |= 1 << k;
                begin.push(0);
                end.push(0);
                strides.push(1);
            }
            Spec::NewAxis => {
                os.push(1);
                nm |= 1 << k;
                begin.push(0);
                end.push(0);
                strides.push(1);
            }
            Spec::Index(i) => {
                sm |= 1 << k;
                begin.push(i);
                end.push(if offset { 1 } else { i + 1 });
                strides.push(1);
                axis += 1;
            }
            Spec::Range(b, e, st) => {
                os.push(slice_len(b, e, st, s[axis] as i64) as usize);
                if b.is_none() {
                    bm |= 1 << k;
                }
                if e.is_none() {
                    em |= 1 << k;
                }
                let bv = b.unwrap_or(0);
                begin.push(bv);
                let (bc, ec) = slice_bounds(b, e, st, s[axis] as i64);
                end.push(match e {
                    Some(_) if offset => ec - bc,
                    Some(v) => v,
                    None => 0,
                });
                strides.push(st);
                axis += 1;
            }
        }
    }
    os.extend_from_slice(&s[axis..]);
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let n = specs.len();
    let pb = param(&mut t, rng, &[n], &begin);
    let pe = param(&mut t, rng, &[n], &end);
    let ps = param(&mut t, rng, &[n], &strides);
    let o = t.act(&os, ty, Some(q));
    let mut opt = StridedSliceOptionsT::default();
    opt.begin_mask = bm;
    opt.end_mask = em;
    opt.shrink_axis_mask = sm;
    opt.ellipsis_mask = elm;
    opt.new_axis_mask = nm;
    opt.offset = offset;
    t.op(
        B::STRIDED_SLICE,
        &[x, pb, pe, ps],
        &[o],
        BuiltinOptionsT::StridedSliceOptions(Box::new(opt)),
    );
    t.output(o);
    Case::new(
        format!(
            "STRIDED_SLICE {ty:?} {} {specs:?} offset {offset} -> {}",
            fmt(&s),
            fmt(&os)
        ),
        t.finish(),
    )
}

/// PAD, PADV2 (any constant) and MIRROR_PAD (REFLECT, SYMMETRIC).
pub fn pad(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let kind = rng.pick(&[B::PAD, B::PADV2, B::MIRROR_PAD]);
    let mode = if rng.chance(0.5) {
        MirrorPadMode::REFLECT
    } else {
        MirrorPadMode::SYMMETRIC
    };
    let mut p = vec![];
    let mut os = vec![];
    for &d in &s {
        let lim = if kind == B::MIRROR_PAD {
            if mode == MirrorPadMode::REFLECT {
                d - 1
            } else {
                d
            }
        } else {
            4
        };
        let (a, b) = if rng.chance(0.4) {
            (0, 0)
        } else {
            (rng.usize(0, lim), rng.usize(0, lim))
        };
        p.push(a as i64);
        p.push(b as i64);
        os.push(d + a + b);
    }
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let pp = param(&mut t, rng, &[rank, 2], &p);
    let o = t.act(&os, ty, Some(q));
    let name;
    match kind {
        B::PADV2 => {
            let v = rng.range(ty.min(), ty.max());
            let c = t.constant(&[], ty, Some(q), &[v]);
            t.op(B::PADV2, &[x, pp, c], &[o], BuiltinOptionsT::NONE);
            name = format!("PADV2 {ty:?} {} pads {p:?} value {v}", fmt(&s));
        }
        B::MIRROR_PAD => {
            let mut opt = MirrorPadOptionsT::default();
            opt.mode = mode;
            t.op(
                B::MIRROR_PAD,
                &[x, pp],
                &[o],
                BuiltinOptionsT::MirrorPadOptions(Box::new(opt)),
            );
            name = format!("MIRROR_PAD {ty:?} {mode:?} {} pads {p:?}", fmt(&s));
        }
        _ => {
            t.op(B::PAD, &[x, pp], &[o], BuiltinOptionsT::NONE);
            name = format!("PAD {ty:?} {} pads {p:?} zp {}", fmt(&s), q.1);
        }
    }
    t.output(o);
    Case::new(name, t.finish())
}

/// TRANSPOSE: any permutation of rank 2-6 (ranks up to 5 mostly).
pub fn transpose(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = if rng.chance(0.1) { 6 } else { rng.usize(2, 5) };
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let perm = rng.perm(rank);
    let os: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let pv: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
    let pp = param(&mut t, rng, &[rank], &pv);
    let o = t.act(&os, ty, Some(q));
    t.op(B::TRANSPOSE, &[x, pp], &[o], BuiltinOptionsT::NONE);
    t.output(o);
    Case::new(
        format!("TRANSPOSE {ty:?} {} perm {perm:?}", fmt(&s)),
        t.finish(),
    )
}

/// RESHAPE (shape as a tensor, in the options, or -1), SQUEEZE, EXPAND_DIMS, each between two
/// ADDs so that the reshaped tensor is also an intermediate.
pub fn reshape(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let mut s = shape(rng, rank);
    let q = quant(rng, ty);
    let kind = rng.pick(&[B::RESHAPE, B::SQUEEZE, B::EXPAND_DIMS]);
    let mut t = Tfl::new();
    let name;
    let (x, o, os);
    match kind {
        B::SQUEEZE => {
            for d in s.iter_mut() {
                if rng.chance(0.4) {
                    *d = 1;
                }
            }
            let ones: Vec<usize> = (0..rank).filter(|&k| s[k] == 1).collect();
            let dims: Vec<usize> = if rng.chance(0.3) {
                vec![]
            } else {
                ones.iter().copied().filter(|_| rng.chance(0.6)).collect()
            };
            let squeezed: Vec<usize> = if dims.is_empty() { ones } else { dims.clone() };
            os = (0..rank)
                .filter(|k| !squeezed.contains(k))
                .map(|k| s[k])
                .collect::<Vec<_>>();
            x = t.input(&s, ty, Some(q));
            o = t.act(&os, ty, Some(q));
            let mut opt = SqueezeOptionsT::default();
            opt.squeeze_dims = Some(
                dims.iter()
                    .map(|&d| axis_value(rng, d, rank) as i32)
                    .collect(),
            );
            t.op(
                B::SQUEEZE,
                &[x],
                &[o],
                BuiltinOptionsT::SqueezeOptions(Box::new(opt)),
            );
            name = format!("SQUEEZE {ty:?} {} dims {dims:?}", fmt(&s));
        }
        B::EXPAND_DIMS => {
            let a = rng.usize(0, rank);
            let mut v = s.clone();
            v.insert(a, 1);
            os = v;
            x = t.input(&s, ty, Some(q));
            let av = if rng.chance(0.3) {
                a as i64 - rank as i64 - 1
            } else {
                a as i64
            };
            let pa = param(&mut t, rng, &[], &[av]);
            o = t.act(&os, ty, Some(q));
            t.op(B::EXPAND_DIMS, &[x, pa], &[o], BuiltinOptionsT::NONE);
            name = format!("EXPAND_DIMS {ty:?} {} axis {av}", fmt(&s));
        }
        _ => {
            // A random factorisation of the element count into 1-5 dimensions.
            let n: usize = s.iter().product();
            let mut f = vec![];
            let mut m = n;
            let r2 = rng.usize(1, 5);
            for _ in 1..r2 {
                let divs: Vec<usize> = (1..=m).filter(|d| m % d == 0).collect();
                let d = rng.pick(&divs);
                f.push(d);
                m /= d;
            }
            f.push(m);
            os = f;
            x = t.input(&s, ty, Some(q));
            let mut written: Vec<i64> = os.iter().map(|&d| d as i64).collect();
            if rng.chance(0.3) {
                let k = rng.usize(0, written.len() - 1);
                written[k] = -1;
            }
            o = t.act(&os, ty, Some(q));
            if rng.chance(0.5) {
                let ps = param(&mut t, rng, &[written.len()], &written);
                t.op(B::RESHAPE, &[x, ps], &[o], BuiltinOptionsT::NONE);
            } else {
                let mut opt = ReshapeOptionsT::default();
                opt.new_shape = Some(written.iter().map(|&d| d as i32).collect());
                t.op(
                    B::RESHAPE,
                    &[x],
                    &[o],
                    BuiltinOptionsT::ReshapeOptions(Box::new(opt)),
                );
            }
            name = format!("RESHAPE {ty:?} {} -> {written:?}", fmt(&s));
        }
    }
    // An elementwise consumer: MAXIMUM with a constant of the output's quantization.
    let k = t.constant(&[], ty, Some(q), &[rng.range(ty.min(), 0)]);
    let o2 = t.act(&os, ty, Some(q));
    t.op(B::MAXIMUM, &[o, k], &[o2], BuiltinOptionsT::NONE);
    t.output(o2);
    let _ = x;
    Case::new(name, t.finish())
}

/// PACK of 1-5 tensors along any axis.
pub fn pack(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 4);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let n = rng.usize(1, 5);
    let a = rng.usize(0, rank);
    let mut t = Tfl::new();
    let ins: Vec<i32> = (0..n)
        .map(|_| {
            if rng.chance(0.2) {
                let e = s.iter().product();
                let v = rng.values(e, ty.min(), ty.max());
                t.constant(&s, ty, Some(q), &v)
            } else {
                t.input(&s, ty, Some(q))
            }
        })
        .collect();
    let mut os = s.clone();
    os.insert(a, n);
    let o = t.act(&os, ty, Some(q));
    let mut opt = PackOptionsT::default();
    opt.values_count = n as i32;
    opt.axis = if rng.chance(0.3) {
        a as i32 - rank as i32 - 1
    } else {
        a as i32
    };
    t.op(
        B::PACK,
        &ins,
        &[o],
        BuiltinOptionsT::PackOptions(Box::new(opt)),
    );
    t.output(o);
    Case::new(
        format!("PACK {ty:?} {n} x {} axis {a}", fmt(&s)),
        t.finish(),
    )
}

/// GATHER with constant indices (any axis, batch_dims, repeated and negative-free indices)
/// or with indices as a graph input (axis == batch_dims, as Vela supports, or beyond).
pub fn gather(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 4);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let dynamic = rng.chance(0.35);
    let bd = if rank > 1 && rng.chance(0.3) {
        rng.usize(1, rank - 1)
    } else {
        0
    };
    let a = if dynamic && rng.chance(0.5) {
        bd
    } else {
        rng.usize(bd, rank - 1)
    };
    let mut is: Vec<usize> = s[..bd].to_vec();
    let extra = rng.usize(if bd == 0 { 1 } else { 0 }, 2);
    for _ in 0..extra {
        is.push(rng.usize(1, 6));
    }
    let ni: usize = is.iter().product();
    let mut os: Vec<usize> = s[..a].to_vec();
    os.extend_from_slice(&is[bd..]);
    os.extend_from_slice(&s[a + 1..]);
    let ity = if rng.chance(0.2) { Ty::I64 } else { Ty::I32 };
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let idx = if dynamic {
        t.input(&is, ity, None)
    } else {
        let v = rng.values(ni, 0, s[a] as i64 - 1);
        t.constant(&is, ity, None, &v)
    };
    let o = t.act(&os, ty, Some(q));
    let mut opt = GatherOptionsT::default();
    opt.axis = axis_value(rng, a, rank) as i32;
    opt.batch_dims = bd as i32;
    t.op(
        B::GATHER,
        &[x, idx],
        &[o],
        BuiltinOptionsT::GatherOptions(Box::new(opt)),
    );
    t.output(o);
    let mut case = Case::new(
        format!(
            "GATHER {ty:?} {} axis {a} batch_dims {bd} indices {}{} {ity:?}",
            fmt(&s),
            fmt(&is),
            if dynamic { "(input)" } else { "" }
        ),
        t.finish(),
    );
    case.index_range = (0, s[a] as i64 - 1);
    case
}

/// TILE with any multiples.
pub fn tile(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let m: Vec<i64> = (0..rank)
        .map(|_| if rng.chance(0.5) { 1 } else { rng.range(2, 4) })
        .collect();
    let os: Vec<usize> = s.iter().zip(&m).map(|(&d, &k)| d * k as usize).collect();
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let pm = param(&mut t, rng, &[rank], &m);
    let o = t.act(&os, ty, Some(q));
    t.op(B::TILE, &[x, pm], &[o], BuiltinOptionsT::NONE);
    t.output(o);
    Case::new(
        format!("TILE {ty:?} {} multiples {m:?}", fmt(&s)),
        t.finish(),
    )
}

/// REVERSE_V2 over one or more axes.
pub fn reverse(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let rank = rng.usize(1, 5);
    let s = shape(rng, rank);
    let q = quant(rng, ty);
    let mut axes: Vec<i64> = vec![];
    for a in 0..rank {
        if rng.chance(0.4) {
            axes.push(axis_value(rng, a, rank));
        }
    }
    if axes.is_empty() {
        axes.push(rng.usize(0, rank - 1) as i64);
    }
    let mut t = Tfl::new();
    let x = t.input(&s, ty, Some(q));
    let pa = param(&mut t, rng, &[axes.len()], &axes);
    let o = t.act(&s, ty, Some(q));
    t.op(B::REVERSE_V2, &[x, pa], &[o], BuiltinOptionsT::NONE);
    t.output(o);
    Case::new(
        format!("REVERSE_V2 {ty:?} {} axes {axes:?}", fmt(&s)),
        t.finish(),
    )
}

/// SPACE_TO_DEPTH, DEPTH_TO_SPACE and SPACE_TO_BATCH_ND.
pub fn space_depth(rng: &mut Rng) -> Case {
    let ty = act_ty(rng);
    let q = quant(rng, ty);
    let kind = rng.pick(&[B::SPACE_TO_DEPTH, B::DEPTH_TO_SPACE, B::SPACE_TO_BATCH_ND]);
    let b = rng.usize(2, 3);
    let n = if rng.chance(0.2) { 2 } else { 1 };
    let mut t = Tfl::new();
    let (s, os, name);
    match kind {
        B::SPACE_TO_DEPTH => {
            let (h, w, c) = (b * rng.usize(1, 4), b * rng.usize(1, 4), rng.usize(1, 7));
            s = vec![n, h, w, c];
            os = vec![n, h / b, w / b, c * b * b];
            let x = t.input(&s, ty, Some(q));
            let o = t.act(&os, ty, Some(q));
            let mut opt = SpaceToDepthOptionsT::default();
            opt.block_size = b as i32;
            t.op(
                kind,
                &[x],
                &[o],
                BuiltinOptionsT::SpaceToDepthOptions(Box::new(opt)),
            );
            t.output(o);
            name = format!("SPACE_TO_DEPTH {ty:?} {} block {b}", fmt(&s));
        }
        B::DEPTH_TO_SPACE => {
            let (h, w, c) = (rng.usize(1, 5), rng.usize(1, 5), rng.usize(1, 5));
            s = vec![n, h, w, c * b * b];
            os = vec![n, h * b, w * b, c];
            let x = t.input(&s, ty, Some(q));
            let o = t.act(&os, ty, Some(q));
            let mut opt = DepthToSpaceOptionsT::default();
            opt.block_size = b as i32;
            t.op(
                kind,
                &[x],
                &[o],
                BuiltinOptionsT::DepthToSpaceOptions(Box::new(opt)),
            );
            t.output(o);
            name = format!("DEPTH_TO_SPACE {ty:?} {} block {b}", fmt(&s));
        }
        _ => {
            let (bh, bw) = (rng.usize(1, 3), rng.usize(1, 3));
            let (h, w, c) = (rng.usize(1, 7), rng.usize(1, 7), rng.usize(1, 5));
            let ph = (bh - h % bh) % bh;
            let pw = (bw - w % bw) % bw;
            let (pt, pl) = (rng.usize(0, ph), rng.usize(0, pw));
            let extra_h = if rng.chance(0.3) { bh } else { 0 };
            let pads = [pt, ph - pt + extra_h, pl, pw - pl];
            s = vec![n, h, w, c];
            os = vec![
                n * bh * bw,
                (h + pads[0] + pads[1]) / bh,
                (w + pads[2] + pads[3]) / bw,
                c,
            ];
            let x = t.input(&s, ty, Some(q));
            let pb = t.param1(&[bh as i64, bw as i64]);
            let pv: Vec<i64> = pads.iter().map(|&p| p as i64).collect();
            let pp = t.param(&[2, 2], &pv);
            let o = t.act(&os, ty, Some(q));
            t.op(kind, &[x, pb, pp], &[o], BuiltinOptionsT::NONE);
            t.output(o);
            name = format!(
                "SPACE_TO_BATCH_ND {ty:?} {} block {bh}x{bw} pads {pads:?}",
                fmt(&s)
            );
        }
    }
    let _ = os;
    Case::new(name, t.finish())
}
