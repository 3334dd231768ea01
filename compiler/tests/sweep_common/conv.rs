//! Random single-operator models of the convolution family: CONV_2D, DEPTHWISE_CONV_2D,
//! FULLY_CONNECTED, TRANSPOSE_CONV, MAX_POOL_2D, AVERAGE_POOL_2D and BATCH_MATMUL, int8 and
//! 16x8, per-tensor and per-channel, every fused activation, SAME/VALID, strides, dilations,
//! batches; each with whether Vela 5.2 accepts it on the U85 (models/SUPPORTED_OPS_vela_5.2.md).

use super::tflite::{Builder, Quant};
use super::{Model, Rng};
use npuc_frontend_tflite::schema::{
    ActivationFunctionType as Act, BatchMatMulOptionsT, BuiltinOperator as B, BuiltinOptionsT,
    Conv2DOptionsT, DepthwiseConv2DOptionsT, FullyConnectedOptionsT, Padding, Pool2DOptionsT,
    TensorType, TransposeConvOptionsT,
};

/// The operator family of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Conv,
    Depthwise,
    FullyConnected,
    TransposeConv,
    MaxPool,
    AvgPool,
    BatchMatMul,
    /// Two window operators in a row.
    Pair,
}

pub const FAMILIES: [Family; 8] = [
    Family::Conv,
    Family::Depthwise,
    Family::FullyConnected,
    Family::TransposeConv,
    Family::MaxPool,
    Family::AvgPool,
    Family::BatchMatMul,
    Family::Pair,
];

/// How large the shapes get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Tiny shapes (the default test run).
    Small,
    /// Larger shapes, large channel counts, kernels and strides beyond the hardware's.
    Large,
}

/// Sizes of one dimension: mostly small, sometimes large.
fn dim(rng: &mut Rng, size: Size, small: usize, large: usize) -> usize {
    match size {
        Size::Small => rng.usize(1, small),
        Size::Large if rng.pct(25) => rng.usize(small, large),
        Size::Large => rng.usize(1, small),
    }
}

const ACTS: [Act; 4] = [Act::NONE, Act::RELU, Act::RELU6, Act::RELU_N1_TO_1];

/// Quantized activation type: int8 or int16 (16x8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ty {
    i16: bool,
}

impl Ty {
    fn tensor_type(self) -> TensorType {
        if self.i16 {
            TensorType::INT16
        } else {
            TensorType::INT8
        }
    }
    /// A random activation quantization (zero point 0 for int16).
    fn quant(self, rng: &mut Rng) -> Quant {
        if self.i16 {
            Quant::per_tensor(rng.log2(-14.0, -9.0) as f32, 0)
        } else {
            Quant::per_tensor(rng.log2(-9.0, -3.0) as f32, rng.range(-128, 127))
        }
    }
    /// The typical magnitude of a raw value.
    fn spread(self) -> f64 {
        if self.i16 {
            19000.0
        } else {
            74.0
        }
    }
}

/// Random int8 weights: uniform full range, small, or sparse.
fn weights(rng: &mut Rng, n: usize) -> Vec<i8> {
    let amp = rng.pick(&[127i64, 127, 40, 5]);
    let zeros = rng.pick(&[0u64, 0, 0, 50, 90]);
    (0..n)
        .map(|_| {
            if rng.pct(zeros) {
                0
            } else {
                rng.range(-amp, amp) as i8
            }
        })
        .collect()
}

/// Weight scales: one per output channel, or one; sometimes spread over many octaves (per-
/// channel shifts far apart), sometimes tiny or near 1.
fn weight_scales(rng: &mut Rng, per_channel: bool, oc: usize) -> Vec<f32> {
    let n = if per_channel { oc } else { 1 };
    let (lo, hi) = match rng.range(0, 9) {
        0 => (-22.0, -1.0),
        1 => (-20.0, -16.0),
        2 => (-2.0, 0.0),
        _ => (-9.0, -5.0),
    };
    (0..n).map(|_| rng.log2(lo, hi) as f32).collect()
}

/// Sometimes (large sweeps) an extreme shape: `Some(true)` a large feature map, `Some(false)`
/// many channels.
fn shape_extreme(rng: &mut Rng, size: Size) -> Option<bool> {
    match size {
        Size::Large if rng.pct(6) => Some(rng.pct(50)),
        _ => None,
    }
}

/// An output scale giving outputs of a useful spread for `k` accumulated products (sometimes
/// saturating, sometimes nearly constant).
fn out_scale(rng: &mut Rng, ty: Ty, s_in: f32, s_w: f32, w_amp: f64, k: usize) -> f32 {
    let acc = ty.spread() * w_amp * (k as f64).sqrt();
    let target = if ty.i16 { 9000.0 } else { 40.0 };
    // Mostly a useful spread; sometimes an effective scale far off (outputs saturating or
    // all near the zero point; multipliers with shifts far from the usual).
    let off = if rng.pct(12) {
        rng.log2(-16.0, 8.0)
    } else {
        rng.log2(-2.5, 2.5)
    };
    let eff = target / acc.max(1.0) * off;
    (f64::from(s_in) * f64::from(s_w) / eff) as f32
}

fn w_amp(w: &[i8]) -> f64 {
    let n = w.len().max(1) as f64;
    (w.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / n)
        .sqrt()
        .max(1.0)
}

/// A bias: int32 (int8) or int64 (16x8), or absent (`-1`).
fn bias(b: &mut Builder, rng: &mut Rng, ty: Ty, n: usize, k: usize, present: bool) -> i32 {
    if !present {
        return -1;
    }
    let amp = (ty.spread() * 60.0 * (k as f64).sqrt()) as i64;
    let v: Vec<i64> = (0..n).map(|_| rng.range(-amp, amp)).collect();
    if ty.i16 {
        b.const_i64("bias", &[n], &v)
    } else {
        let v: Vec<i32> = v.iter().map(|&x| x as i32).collect();
        b.const_i32("bias", &[n], &v)
    }
}

/// TFLite's output size and whether the window fits (VALID).
fn out_size(same: bool, input: usize, k: usize, s: usize, d: usize) -> Option<usize> {
    let eff = (k - 1) * d + 1;
    if same {
        Some(input.div_ceil(s))
    } else if input >= eff {
        Some((input - eff) / s + 1)
    } else {
        None
    }
}

/// Vela's weight-sum limit per output channel (8-bit: 127 * 65536; 16-bit: larger).
fn weight_sum_ok(ty: Ty, w: &[i8], oc_major: bool, oc: usize) -> Result<(), String> {
    let limit: i64 = if ty.i16 { 2_130_706_432 } else { 8_323_072 };
    let per = w.len() / oc.max(1);
    for c in 0..oc {
        let s: i64 = if oc_major {
            w[c * per..(c + 1) * per]
                .iter()
                .map(|&v| i64::from(v).abs())
                .sum()
        } else {
            w.iter()
                .skip(c)
                .step_by(oc)
                .map(|&v| i64::from(v).abs())
                .sum()
        };
        if s > limit {
            return Err(format!("weight sum {s} of channel {c} above {limit}"));
        }
    }
    Ok(())
}

fn padding(same: bool) -> Padding {
    if same {
        Padding::SAME
    } else {
        Padding::VALID
    }
}

/// Window parameters: kernel, stride, dilation per axis.
fn kernel(rng: &mut Rng, size: Size) -> usize {
    match size {
        Size::Small if rng.pct(85) => rng.usize(1, 5),
        Size::Small => rng.usize(6, 9),
        Size::Large => match rng.range(0, 9) {
            0..=5 => rng.usize(1, 5),
            6 | 7 => rng.usize(6, 11),
            8 => rng.usize(12, 33),
            _ => rng.usize(34, 80),
        },
    }
}

fn stride(rng: &mut Rng, size: Size) -> usize {
    match size {
        Size::Small if rng.pct(75) => rng.usize(1, 3),
        Size::Small => rng.usize(4, 5),
        Size::Large if rng.pct(65) => rng.usize(1, 3),
        Size::Large => rng.usize(4, 9),
    }
}

fn dilation(rng: &mut Rng) -> usize {
    if rng.pct(80) {
        1
    } else {
        rng.usize(2, 4)
    }
}

/// One random model of `family`.
pub fn model(family: Family, rng: &mut Rng, size: Size) -> Model {
    match family {
        Family::Conv | Family::Depthwise => conv(rng, size, family == Family::Depthwise),
        Family::FullyConnected => fully_connected(rng, size),
        Family::TransposeConv => transpose_conv(rng, size),
        Family::MaxPool | Family::AvgPool => pool(rng, size, family == Family::MaxPool),
        Family::BatchMatMul => batch_matmul(rng, size),
        Family::Pair => pair(rng, size),
    }
}

/// An activation tensor of a model under construction.
#[derive(Debug, Clone)]
pub struct Fmap {
    pub id: i32,
    pub shape: Vec<usize>,
    pub q: Quant,
}

/// One operator added to a model: its output, its parameters, whether Vela takes it.
struct Added {
    out: Fmap,
    desc: String,
    vela: Result<(), String>,
}

impl Added {
    fn model(self, mut b: Builder) -> Model {
        b.output(self.out.id);
        Model {
            desc: self.desc,
            bytes: b.finish(),
            vela: self.vela,
        }
    }
}

/// A new graph input of type `ty` and `shape`.
fn input(b: &mut Builder, rng: &mut Rng, ty: Ty, shape: Vec<usize>) -> Fmap {
    let q = ty.quant(rng);
    let id = b.input("x", &shape, ty.tensor_type(), q.clone());
    Fmap { id, shape, q }
}

fn conv(rng: &mut Rng, size: Size, depthwise: bool) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let mut b = Builder::new();
    conv_op(&mut b, rng, size, ty, None, depthwise).model(b)
}

/// A CONV_2D or DEPTHWISE_CONV_2D reading `x` (a new input when `None`).
fn conv_op(
    b: &mut Builder,
    rng: &mut Rng,
    size: Size,
    ty: Ty,
    x: Option<&Fmap>,
    depthwise: bool,
) -> Added {
    let (kh, kw) = (kernel(rng, size), kernel(rng, size));
    let (sh, sw) = (stride(rng, size), stride(rng, size));
    let (dh, dw) = (dilation(rng), dilation(rng));
    let mut same = rng.pct(50);
    let (n, h, w, cin) = match x {
        Some(x) => (x.shape[0], x.shape[1], x.shape[2], x.shape[3]),
        None => {
            let n = if rng.pct(85) { 1 } else { rng.usize(2, 3) };
            let h = dim(rng, size, 12, 70).max(if same { 1 } else { (kh - 1) * dh + 1 });
            let w = dim(rng, size, 12, 70).max(if same { 1 } else { (kw - 1) * dw + 1 });
            let h = h + if same { 0 } else { rng.usize(0, 3) };
            let w = w + if same { 0 } else { rng.usize(0, 3) };
            match shape_extreme(rng, size) {
                // A large feature map (tiling) with few channels and a small kernel (the
                // simulator's time).
                Some(true) if kh * kw <= 25 => (
                    1,
                    h.max(rng.usize(96, 160)),
                    w.max(rng.usize(96, 160)),
                    rng.usize(1, 8),
                ),
                // Many channels on a small map (and a small kernel: the compile time).
                Some(false) if kh * kw <= 25 => (1, h.min(6), w.min(6), rng.usize(1000, 2000)),
                _ => (n, h, w, dim(rng, size, 12, 300)),
            }
        }
    };
    if out_size(same, h, kh, sh, dh).is_none() || out_size(same, w, kw, sw, dw).is_none() {
        same = true;
    }
    let mult = if !depthwise || rng.pct(70) {
        1
    } else {
        rng.usize(2, 4)
    };
    let cout = if depthwise {
        cin * mult
    } else if size == Size::Large && h * w <= 36 && kh * kw <= 25 && rng.pct(10) {
        rng.usize(1000, 2000)
    } else if h * w > 9000 {
        rng.usize(1, 16)
    } else {
        dim(rng, size, 12, 300)
    };
    let oh = out_size(same, h, kh, sh, dh).unwrap();
    let ow = out_size(same, w, kw, sw, dw).unwrap();
    let per_channel = rng.pct(70);
    let act = rng.pick(&ACTS);
    let has_bias = rng.pct(85);
    let desc = format!(
        "{} {}: n{n} {h}x{w}x{cin} -> {oh}x{ow}x{cout} k{kh}x{kw} s{sh}x{sw} d{dh}x{dw} {} {act:?} per_channel={per_channel} bias={has_bias} mult={mult}",
        if depthwise { "DEPTHWISE_CONV_2D" } else { "CONV_2D" },
        if ty.i16 { "16x8" } else { "int8" },
        if same { "SAME" } else { "VALID" },
    );
    let x = match x {
        Some(x) => x.clone(),
        None => input(b, rng, ty, vec![n, h, w, cin]),
    };
    let k = kh * kw * if depthwise { 1 } else { cin };
    let wv = weights(rng, kh * kw * cin * if depthwise { mult } else { cout });
    let ws = weight_scales(rng, per_channel, cout);
    let mean_ws = ws.iter().map(|&s| f64::from(s)).sum::<f64>() / ws.len() as f64;
    let so = out_scale(rng, ty, x.q.scale[0], mean_ws as f32, w_amp(&wv), k);
    let qo = if ty.i16 {
        Quant::per_tensor(so, 0)
    } else {
        Quant::per_tensor(so, rng.range(-128, 127))
    };
    let (wshape, qdim) = if depthwise {
        (vec![1, kh, kw, cout], 3)
    } else {
        (vec![cout, kh, kw, cin], 0)
    };
    let wt = b.const_i8("w", &wshape, &wv, Quant::per_axis(ws, qdim));
    let bt = bias(b, rng, ty, cout, k, has_bias);
    let oshape = vec![n, oh, ow, cout];
    let y = b.activation("y", &oshape, ty.tensor_type(), qo.clone());
    if depthwise {
        let mut o = DepthwiseConv2DOptionsT::default();
        o.padding = padding(same);
        o.stride_h = sh as i32;
        o.stride_w = sw as i32;
        o.dilation_h_factor = dh as i32;
        o.dilation_w_factor = dw as i32;
        o.depth_multiplier = mult as i32;
        o.fused_activation_function = act;
        b.op(
            B::DEPTHWISE_CONV_2D,
            BuiltinOptionsT::DepthwiseConv2DOptions(Box::new(o)),
            &[x.id, wt, bt],
            &[y],
        );
    } else {
        let mut o = Conv2DOptionsT::default();
        o.padding = padding(same);
        o.stride_h = sh as i32;
        o.stride_w = sw as i32;
        o.dilation_h_factor = dh as i32;
        o.dilation_w_factor = dw as i32;
        o.fused_activation_function = act;
        b.op(
            B::CONV_2D,
            BuiltinOptionsT::Conv2DOptions(Box::new(o)),
            &[x.id, wt, bt],
            &[y],
        );
    }
    Added {
        out: Fmap {
            id: y,
            shape: oshape,
            q: qo,
        },
        desc,
        vela: weight_sum_ok(ty, &wv, !depthwise, cout),
    }
}

fn fully_connected(rng: &mut Rng, size: Size) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let cin = dim(rng, size, 40, 2100);
    let cout = dim(rng, size, 40, 1200);
    let keep = rng.pct(50);
    // The input: [N, Cin], [B, T, Cin] or [1, H, W, C] flattened.
    let (xshape, oshape) = match rng.range(0, 3) {
        0 => {
            let n = rng.usize(1, 4);
            (vec![n, cin], vec![n, cout])
        }
        1 => {
            let (bt, t) = (rng.usize(1, 3), rng.usize(1, 5));
            let o = if keep {
                vec![bt, t, cout]
            } else {
                vec![bt * t, cout]
            };
            (vec![bt, t, cin], o)
        }
        2 => (vec![1, cin], vec![1, cout]),
        _ => {
            // 4-D input flattened to Cin = H*W*C.
            let (h, w) = (rng.usize(1, 3), rng.usize(1, 3));
            let c = cin.div_ceil(h * w);
            (vec![1, h, w, c], vec![1, cout])
        }
    };
    let cin = xshape[xshape.len() - 1]
        * if xshape.len() == 4 {
            xshape[1] * xshape[2]
        } else {
            1
        };
    let keep = keep && xshape.len() == 3;
    let per_channel = rng.pct(50);
    let act = rng.pick(&ACTS);
    let has_bias = rng.pct(75);
    let desc = format!(
        "FULLY_CONNECTED {}: {xshape:?} x [{cout}, {cin}] -> {oshape:?} keep_num_dims={keep} {act:?} per_channel={per_channel} bias={has_bias}",
        if ty.i16 { "16x8" } else { "int8" },
    );
    let mut b = Builder::new();
    let qx = ty.quant(rng);
    let x = b.input("x", &xshape, ty.tensor_type(), qx.clone());
    let wv = weights(rng, cout * cin);
    let ws = weight_scales(rng, per_channel, cout);
    let mean_ws = ws.iter().map(|&s| f64::from(s)).sum::<f64>() / ws.len() as f64;
    let so = out_scale(rng, ty, qx.scale[0], mean_ws as f32, w_amp(&wv), cin);
    let qo = if ty.i16 {
        Quant::per_tensor(so, 0)
    } else {
        Quant::per_tensor(so, rng.range(-128, 127))
    };
    let wt = b.const_i8("w", &[cout, cin], &wv, Quant::per_axis(ws, 0));
    let bt = bias(&mut b, rng, ty, cout, cin, has_bias);
    let y = b.activation("y", &oshape, ty.tensor_type(), qo);
    let mut o = FullyConnectedOptionsT::default();
    o.fused_activation_function = act;
    o.keep_num_dims = keep;
    b.op(
        B::FULLY_CONNECTED,
        BuiltinOptionsT::FullyConnectedOptions(Box::new(o)),
        &[x, wt, bt],
        &[y],
    );
    b.output(y);
    let vela = weight_sum_ok(ty, &wv, true, cout);
    Model {
        desc,
        bytes: b.finish(),
        vela,
    }
}

fn transpose_conv(rng: &mut Rng, size: Size) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let mut b = Builder::new();
    tconv_op(&mut b, rng, size, ty, None).model(b)
}

/// A TRANSPOSE_CONV reading `x` (a new input when `None`).
fn tconv_op(b: &mut Builder, rng: &mut Rng, size: Size, ty: Ty, x: Option<&Fmap>) -> Added {
    let (kh, kw) = match size {
        Size::Small => (rng.usize(1, 5), rng.usize(1, 5)),
        Size::Large => (rng.usize(1, 9), rng.usize(1, 9)),
    };
    let (sh, sw) = (rng.usize(1, 4), rng.usize(1, 4));
    let (sh, sw) = if rng.pct(50) { (sh, sh) } else { (sh, sw) };
    let same = rng.pct(50);
    let (n, h, w, cin) = match x {
        Some(x) => (x.shape[0], x.shape[1], x.shape[2], x.shape[3]),
        None => (
            1,
            dim(rng, size, 8, 40),
            dim(rng, size, 8, 40),
            dim(rng, size, 10, 200),
        ),
    };
    let cout = dim(rng, size, 10, 200);
    // Vela's shape constraint: SAME: OFM = IFM * stride; VALID: OFM = IFM * stride + kernel -
    // stride (TFLite's VALID size).
    let (oh, ow) = if same {
        (h * sh, w * sw)
    } else {
        ((h - 1) * sh + kh, (w - 1) * sw + kw)
    };
    // Sometimes any other output size TFLite takes (the same conv output size: SAME
    // `ceil(out / s) == in`, VALID `(out - k) / s + 1 == in`), which Vela refuses.
    let vela_shape = (oh, ow);
    let odd = rng.pct(30);
    let (oh, ow) = if odd {
        (oh + 1 - rng.usize(1, sh), ow + 1 - rng.usize(1, sw))
    } else {
        (oh, ow)
    };
    let (oh, ow) = if odd && !same {
        (oh + sh - 1, ow + sw - 1)
    } else {
        (oh, ow)
    };
    let per_channel = rng.pct(60);
    let act = rng.pick(&ACTS);
    let has_bias = rng.pct(70);
    let desc = format!(
        "TRANSPOSE_CONV {}: n{n} {h}x{w}x{cin} -> {oh}x{ow}x{cout} k{kh}x{kw} s{sh}x{sw} {} {act:?} per_channel={per_channel} bias={has_bias}",
        if ty.i16 { "16x8" } else { "int8" },
        if same { "SAME" } else { "VALID" },
    );
    let shape_t = b.const_i32(
        "output_shape",
        &[4],
        &[n as i32, oh as i32, ow as i32, cout as i32],
    );
    let x = match x {
        Some(x) => x.clone(),
        None => input(b, rng, ty, vec![n, h, w, cin]),
    };
    let wv = weights(rng, cout * kh * kw * cin);
    let ws = weight_scales(rng, per_channel, cout);
    let mean_ws = ws.iter().map(|&s| f64::from(s)).sum::<f64>() / ws.len() as f64;
    // Each output sums about kh*kw*cin / (sh*sw) products.
    let k = (kh * kw * cin).div_ceil(sh * sw);
    let so = out_scale(rng, ty, x.q.scale[0], mean_ws as f32, w_amp(&wv), k);
    let qo = if ty.i16 {
        Quant::per_tensor(so, 0)
    } else {
        Quant::per_tensor(so, rng.range(-128, 127))
    };
    let wt = b.const_i8("w", &[cout, kh, kw, cin], &wv, Quant::per_axis(ws, 0));
    let bt = bias(b, rng, ty, cout, k, has_bias);
    let oshape = vec![n, oh, ow, cout];
    let y = b.activation("y", &oshape, ty.tensor_type(), qo.clone());
    let mut o = TransposeConvOptionsT::default();
    o.padding = padding(same);
    o.stride_h = sh as i32;
    o.stride_w = sw as i32;
    o.fused_activation_function = act;
    let inputs: Vec<i32> = if bt >= 0 {
        vec![shape_t, wt, x.id, bt]
    } else {
        vec![shape_t, wt, x.id]
    };
    b.op(
        B::TRANSPOSE_CONV,
        BuiltinOptionsT::TransposeConvOptions(Box::new(o)),
        &inputs,
        &[y],
    );
    Added {
        out: Fmap {
            id: y,
            shape: oshape,
            q: qo,
        },
        desc,
        vela: if (oh, ow) == vela_shape {
            weight_sum_ok(ty, &wv, true, cout)
        } else {
            Err("output shape other than Vela's".into())
        },
    }
}

fn pool(rng: &mut Rng, size: Size, max: bool) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let mut b = Builder::new();
    pool_op(&mut b, rng, size, ty, None, max).model(b)
}

/// A MAX_POOL_2D or AVERAGE_POOL_2D reading `x` (a new input when `None`).
fn pool_op(
    b: &mut Builder,
    rng: &mut Rng,
    size: Size,
    ty: Ty,
    x: Option<&Fmap>,
    max: bool,
) -> Added {
    let global = rng.pct(15);
    let mut same = !global && rng.pct(50);
    let (mut kh, mut kw) = (kernel(rng, size), kernel(rng, size));
    let (sh, sw) = (stride(rng, size), stride(rng, size));
    let (n, h, w, c) = match x {
        Some(x) => (x.shape[0], x.shape[1], x.shape[2], x.shape[3]),
        None => {
            let n = if rng.pct(85) { 1 } else { rng.usize(2, 3) };
            let h = dim(rng, size, 12, 90);
            let w = dim(rng, size, 12, 90);
            let (h, w) = if global || same {
                (h, w)
            } else {
                (h.max(kh) + rng.usize(0, 3), w.max(kw) + rng.usize(0, 3))
            };
            (n, h, w, dim(rng, size, 12, 300))
        }
    };
    if global {
        (kh, kw) = (h, w);
    }
    if !same && (h < kh || w < kw) {
        same = true;
    }
    let oh = out_size(same, h, kh, sh, 1).unwrap();
    let ow = out_size(same, w, kw, sw, 1).unwrap();
    let act = rng.pick(&ACTS);
    let desc = format!(
        "{} {}: n{n} {h}x{w}x{c} -> {oh}x{ow} k{kh}x{kw} s{sh}x{sw} {} {act:?}",
        if max {
            "MAX_POOL_2D"
        } else {
            "AVERAGE_POOL_2D"
        },
        if ty.i16 { "16x8" } else { "int8" },
        if same { "SAME" } else { "VALID" },
    );
    let x = match x {
        Some(x) => x.clone(),
        None => input(b, rng, ty, vec![n, h, w, c]),
    };
    let oshape = vec![n, oh, ow, c];
    let y = b.activation("y", &oshape, ty.tensor_type(), x.q.clone());
    let mut o = Pool2DOptionsT::default();
    o.padding = padding(same);
    o.stride_h = sh as i32;
    o.stride_w = sw as i32;
    o.filter_height = kh as i32;
    o.filter_width = kw as i32;
    o.fused_activation_function = act;
    b.op(
        if max {
            B::MAX_POOL_2D
        } else {
            B::AVERAGE_POOL_2D
        },
        BuiltinOptionsT::Pool2DOptions(Box::new(o)),
        &[x.id],
        &[y],
    );
    let vela = if max || !same {
        if kh * kw > 65536 || kh > 256 {
            Err("kernel product above 65536 or height above 256".into())
        } else {
            Ok(())
        }
    } else if kh > 8 || kw > 8 {
        Err("SAME average pool kernel above 8".into())
    } else {
        Ok(())
    };
    Added {
        out: Fmap {
            id: y,
            shape: oshape,
            q: x.q,
        },
        desc,
        vela,
    }
}

/// Two window operators in a row (the second reads the first's output): the decompositions'
/// scratch buffers, chaining and placement next to each other.
fn pair(rng: &mut Rng, size: Size) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let mut b = Builder::new();
    let add = |b: &mut Builder, rng: &mut Rng, x: Option<&Fmap>| match rng.range(0, 4) {
        0 => conv_op(b, rng, size, ty, x, false),
        1 => conv_op(b, rng, size, ty, x, true),
        2 => tconv_op(b, rng, size, ty, x),
        3 => pool_op(b, rng, size, ty, x, true),
        _ => pool_op(b, rng, size, ty, x, false),
    };
    let first = add(&mut b, rng, None);
    let second = add(&mut b, rng, Some(&first.out));
    Added {
        out: second.out,
        desc: format!("{} => {}", first.desc, second.desc),
        vela: first.vela.and(second.vela),
    }
    .model(b)
}

fn batch_matmul(rng: &mut Rng, size: Size) -> Model {
    let ty = Ty { i16: rng.pct(25) };
    let rank = rng.usize(2, 4);
    let m = dim(rng, size, 12, 200);
    let k = dim(rng, size, 12, 300);
    let nn = dim(rng, size, 12, 200);
    let (adj_x, adj_y) = (rng.pct(40), rng.pct(40));
    let const_b = rng.pct(30);
    // Batch dimensions, each broadcast on one side or the other sometimes.
    let mut ba = Vec::new();
    let mut bb = Vec::new();
    for _ in 0..rank - 2 {
        let d = rng.usize(1, 3);
        match rng.range(0, 4) {
            0 => {
                ba.push(1);
                bb.push(d);
            }
            1 => {
                ba.push(d);
                bb.push(1);
            }
            _ => {
                ba.push(d);
                bb.push(d);
            }
        }
    }
    let bo: Vec<usize> = ba.iter().zip(&bb).map(|(&a, &b)| a.max(b)).collect();
    let mut ashape = ba.clone();
    ashape.extend(if adj_x { [k, m] } else { [m, k] });
    let mut bshape = bb.clone();
    bshape.extend(if adj_y { [nn, k] } else { [k, nn] });
    let mut oshape = bo.clone();
    oshape.extend([m, nn]);
    let desc = format!(
        "BATCH_MATMUL {}: {ashape:?} x {bshape:?} -> {oshape:?} adj_x={adj_x} adj_y={adj_y} const_b={const_b}",
        if ty.i16 { "16x8" } else { "int8" },
    );
    let mut b = Builder::new();
    let qa = ty.quant(rng);
    let qb = ty.quant(rng);
    let a = b.input("a", &ashape, ty.tensor_type(), qa.clone());
    let nb: usize = bshape.iter().product();
    let bt = if const_b {
        if ty.i16 {
            let v: Vec<i16> = (0..nb).map(|_| rng.range(-32768, 32767) as i16).collect();
            b.const_i16("b", &bshape, &v, qb.clone())
        } else {
            let v: Vec<i8> = (0..nb).map(|_| rng.range(-128, 127) as i8).collect();
            b.const_i8("b", &bshape, &v, qb.clone())
        }
    } else {
        b.input("b", &bshape, ty.tensor_type(), qb.clone())
    };
    let so = out_scale(rng, ty, qa.scale[0], qb.scale[0], ty.spread(), k);
    let qo = if ty.i16 {
        Quant::per_tensor(so, 0)
    } else {
        Quant::per_tensor(so, rng.range(-128, 127))
    };
    let y = b.activation("y", &oshape, ty.tensor_type(), qo);
    let mut o = BatchMatMulOptionsT::default();
    o.adj_x = adj_x;
    o.adj_y = adj_y;
    b.op(
        B::BATCH_MATMUL,
        BuiltinOptionsT::BatchMatMulOptions(Box::new(o)),
        &[a, bt],
        &[y],
    );
    b.output(y);
    Model {
        desc,
        bytes: b.finish(),
        vela: Ok(()),
    }
}
