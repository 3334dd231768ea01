//! A CONV2D whose weights are not a constant, brought to the form `conv_dynamic` takes
//! (batch 1, no padding) by a graph rewrite before lowering (decision L38):
//!
//! * padding: `PAD(x, [[0, 0], [top, bottom], [left, right], [0, 0]], input_zp)` and the
//!   convolution without padding. TOSA pads the input with zeros after the zero-point
//!   subtraction, i.e. with `input_zp` before it: the same taps, each padded one adding 0.
//! * a batch above 1: one convolution per image (`SLICE` of image `n`), the accumulators
//!   joined by a `CONCAT` along the batch axis into the original accumulator tensor. A RESCALE
//!   that read the accumulator reads the CONCAT (each per-image accumulator is raw, L36).
//!
//! * a DEPTHWISE_CONV2D `[KH, KW, C, M]` becomes a CONV2D whose weights `[C*M, KH, KW, C]`
//!   hold the depthwise weights at input channel `c` of output channel `c*M + m` and the
//!   weight zero point elsewhere (adding 0 after its subtraction), built from the runtime
//!   weights by data movement: the weights as `[J, C, 1]` (`J = M*KH*KW`) padded with the
//!   weight zero point to `[J, C, C + 1]`; its first `J*C*C` elements read as `[J, C, C]`
//!   put element `(j, c)` at `(j, c, c)` (row `c` starts `c` places later); transposed to
//!   `[C, J, C]` and reshaped, the CONV2D weights.
//!
//! Convolutions with i8 or i16 inputs and i8 weights only (the others stay refused by
//! `conv_dynamic`),
//! batches of at most [`MAX_IMAGES`], depthwise convolutions of at most [`MAX_DW_CHANNELS`]
//! channels.

use super::builder::{transpose_conv, Builder};
use super::{dims, dtype, graph_err, is_constant};
use crate::data_movement::copy::MAX_PAD_ELEMENTS;
use crate::LowerError;
use npuc_ir::{AxisAttrs, DType, Graph, Op, OpId, SliceAttrs, TensorId};

/// The largest batch split into per-image convolutions.
pub(super) const MAX_IMAGES: usize = 64;

/// The most channels of a depthwise convolution made a CONV2D (its weights grow by `C`).
pub(super) const MAX_DW_CHANNELS: usize = 64;

/// `g` with every such DEPTHWISE_CONV2D and CONV2D rewritten, or `None` if it has none.
pub(super) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let transposed = runtime_weights(g, |op| matches!(op, Op::TransposeConv2d(_)));
    let depthwise = depthwise_candidates(g);
    if transposed.is_empty() && depthwise.is_empty() && conv_candidates(g).is_empty() {
        return Ok(None);
    }
    let mut g = g.clone();
    for o in transposed {
        match super::tconv_rows::applies(&g, o) {
            true => super::tconv_rows::rewrite(&mut g, o)?,
            false => transpose_conv_as_conv(&mut g, o)?,
        }
    }
    for o in depthwise {
        depthwise_as_conv(&mut g, o)?;
    }
    for o in conv_candidates(&g) {
        one(&mut g, o)?;
    }
    Ok(Some(g))
}

/// DEPTHWISE_CONV2Ds of i8 or i16 with runtime weights on at most [`MAX_DW_CHANNELS`] channels.
fn depthwise_candidates(g: &Graph) -> Vec<OpId> {
    g.op_ids()
        .filter(|&o| {
            let Some(n) = g.op(o) else { return false };
            let Op::DepthwiseConv2d(_) = &n.op else {
                return false;
            };
            let (x, w) = (n.inputs()[0], n.inputs()[1]);
            let wd = dims(g, w);
            !is_constant(g, w)
                && runtime_types(g, x, w, n.outputs()[0])
                && wd.len() == 4
                && wd[2] <= MAX_DW_CHANNELS
        })
        .collect()
}

/// The data, weight and accumulator types the matrix-product lowering takes: i8 x i8 into
/// i32, and i16 x i8 into i48 (its weights widened to i16 first, decision L51).
fn runtime_types(g: &Graph, x: TensorId, w: TensorId, acc: TensorId) -> bool {
    matches!(
        (dtype(g, x), dtype(g, w), dtype(g, acc)),
        (Some(DType::Int8), Some(DType::Int8), Some(DType::Int32))
            | (Some(DType::Int16), Some(DType::Int8), Some(DType::Int48))
    )
}

/// The operators `is_kind` picks with runtime i8 weights (types: [`runtime_types`]).
fn runtime_weights(g: &Graph, is_kind: impl Fn(&Op) -> bool) -> Vec<OpId> {
    g.op_ids()
        .filter(|&o| {
            let Some(n) = g.op(o) else { return false };
            let (x, w) = (
                n.inputs()[0],
                n.inputs().get(1).copied().unwrap_or(n.inputs()[0]),
            );
            is_kind(&n.op)
                && n.inputs().len() >= 3
                && !is_constant(g, w)
                && runtime_types(g, x, w, n.outputs()[0])
                && dims(g, x).len() == 4
        })
        .collect()
}

/// TRANSPOSE_CONV2D `o` with runtime weights as a CONV2D (decision L38): the input with
/// `stride - 1` rows (columns) of `input_zp` inserted after each row (column), built by PADs
/// of reshaped views (`[N, H, 1, W*C]` padded to `[N, H, sy, W*C]` is `[N, H*sy, W, C]`),
/// the trailing inserted rows (columns) cut where the output ends before them; the weights
/// reversed along KH and KW; padding `K - 1 + out_pad` before and `K + out_pad_after - s`
/// after. `out[o] = sum x[i] w[k]` over `o = i*s + pad_before + k` is then the stride-1
/// correlation of the inserted input with the reversed kernel.
fn transpose_conv_as_conv(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let (node, a) = transpose_conv(g, o)?;
    let name = node.name.clone();
    let (x, w, b) = (node.inputs()[0], node.inputs()[1], node.inputs()[2]);
    let acc = node.outputs()[0];
    let (xd, wd) = (dims(g, x), dims(g, w));
    let (n, h, wi, c) = (xd[0], xd[1], xd[2], xd[3]);
    let (kh, kw) = (wd[1] as i64, wd[2] as i64);
    let [sy, sx] = a.stride;
    let build = Builder::new(&name);
    let mut u = x;
    if sy > 1 {
        let shape = vec![n, h * sy, wi, c];
        u = build.insert_after(g, "rows", u, [n, h, wi * c], sy, a.input_zp, shape)?;
    }
    if sx > 1 {
        let shape = vec![n, h * sy, wi * sx, c];
        let view = [n * h * sy, wi, c];
        u = build.insert_after(g, "columns", u, view, sx, a.input_zp, shape)?;
    }
    let [pt, pb, pl, pr] = a.out_pad;
    let before = [kh - 1 + pt, kw - 1 + pl];
    let after = [kh + pb - sy as i64, kw + pr - sx as i64];
    if before.iter().any(|&p| p < 0) || after[0] < -(sy as i64 - 1) || after[1] < -(sx as i64 - 1) {
        return Err(crate::unsupported(
            &node,
            "an output padding below -kernel + 1",
        ));
    }
    if after.iter().any(|&p| p < 0) {
        let attrs = SliceAttrs {
            start: vec![0, 0, 0, 0],
            size: vec![
                n,
                (h * sy) - (-after[0].min(0)) as usize,
                (wi * sx) - (-after[1].min(0)) as usize,
                c,
            ],
        };
        u = build.add(g, "cut", Op::Slice(attrs), &[u])?;
    }
    let t = build.add(
        g,
        "weights_flip_y",
        Op::Reverse(AxisAttrs { axis: 1 }),
        &[w],
    )?;
    let w2 = build.add(
        g,
        "weights_flip_x",
        Op::Reverse(AxisAttrs { axis: 2 }),
        &[t],
    )?;
    let attrs = npuc_ir::ConvAttrs {
        pad: [
            before[0] as usize,
            after[0].max(0) as usize,
            before[1] as usize,
            after[1].max(0) as usize,
        ],
        stride: [1, 1],
        dilation: [1, 1],
        input_zp: a.input_zp,
        weight_zp: a.weight_zp,
    };
    g.remove_op(o).map_err(graph_err)?;
    g.add_op(name.clone(), Op::Conv2d(attrs), &[u, w2, b], &[acc])
        .map_err(graph_err)?;
    Ok(())
}

/// CONV2Ds of i8 or i16 with runtime weights that are padded or batched.
fn conv_candidates(g: &Graph) -> Vec<OpId> {
    g.op_ids()
        .filter(|&o| {
            let Some(n) = g.op(o) else { return false };
            let Op::Conv2d(a) = &n.op else { return false };
            let (x, w) = (n.inputs()[0], n.inputs()[1]);
            let d = dims(g, x);
            let batched = d.len() == 4 && (2..=MAX_IMAGES).contains(&d[0]);
            // A padded input too large to materialise: one image keeps its padding, which
            // the im2col copy applies (decision L45).
            // (In u128: a hostile padding or dilation must not overflow the product.)
            let wide = |v: usize, p0: usize, p1: usize| v as u128 + p0 as u128 + p1 as u128;
            let padded = d.len() == 4
                && wide(d[1], a.pad[0], a.pad[1]) * wide(d[2], a.pad[2], a.pad[3]) * d[3] as u128
                    > u128::from(MAX_PAD_ELEMENTS);
            if padded && !batched {
                return false;
            }
            !is_constant(g, w)
                && runtime_types(g, x, w, n.outputs()[0])
                && d.len() == 4
                && (a.pad.iter().any(|&p| p != 0) || batched)
        })
        .collect()
}

fn one(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let node = g.op(o).ok_or_else(|| graph_err("CONV2D vanished"))?.clone();
    let Op::Conv2d(a) = &node.op else {
        return Err(graph_err("not a CONV2D"));
    };
    let name = node.name.clone();
    let (x, w, b) = (node.inputs()[0], node.inputs()[1], node.inputs()[2]);
    let acc = node.outputs()[0];
    let build = Builder::new(&name);
    g.remove_op(o).map_err(graph_err)?;
    let xp = if a.pad.iter().any(|&p| p != 0) {
        let padding = vec![[0, 0], [a.pad[0], a.pad[1]], [a.pad[2], a.pad[3]], [0, 0]];
        build.pad(g, "pad", x, padding, a.input_zp)?
    } else {
        x
    };
    let attrs = npuc_ir::ConvAttrs { pad: [0; 4], ..*a };
    let d = dims(g, xp);
    let images = d[0];
    if images == 1 {
        g.add_op(name.clone(), Op::Conv2d(attrs), &[xp, w, b], &[acc])
            .map_err(graph_err)?;
        return Ok(());
    }
    let mut parts = Vec::with_capacity(images);
    for n in 0..images {
        let slice = SliceAttrs {
            start: vec![n, 0, 0, 0],
            size: vec![1, d[1], d[2], d[3]],
        };
        let xn = build.add(g, &format!("image{n}"), Op::Slice(slice), &[xp])?;
        let (_, yn) = g
            .add_op_inferred(
                format!("{name}#{n}"),
                Op::Conv2d(attrs.clone()),
                &[xn, w, b],
            )
            .map_err(graph_err)?;
        parts.push(yn);
    }
    g.add_op(
        format!("{name}/images"),
        Op::Concat(AxisAttrs { axis: 0 }),
        &parts,
        &[acc],
    )
    .map_err(graph_err)?;
    Ok(())
}

/// DEPTHWISE_CONV2D `o` as a CONV2D with runtime weights (see the module documentation).
fn depthwise_as_conv(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let node = g
        .op(o)
        .ok_or_else(|| graph_err("DEPTHWISE_CONV2D vanished"))?
        .clone();
    let Op::DepthwiseConv2d(a) = &node.op else {
        return Err(graph_err("not a DEPTHWISE_CONV2D"));
    };
    let name = node.name.clone();
    let (x, w, b) = (node.inputs()[0], node.inputs()[1], node.inputs()[2]);
    let acc = node.outputs()[0];
    let wd = dims(g, w);
    let (kh, kw, c, m) = (wd[0], wd[1], wd[2], wd[3]);
    let j = m * kh * kw;
    let build = Builder::new(&name);
    // [KH, KW, C, M] -> [M, KH, KW, C] -> [J, C, 1] -> [J, C, C + 1] (weight zero point)
    let t = build.transpose(g, "weights_mhwc", w, vec![3, 0, 1, 2])?;
    let t = build.reshape(g, "weights_jc", t, vec![j, c, 1])?;
    let padding = vec![[0, 0], [0, 0], [0, c]];
    let t = build.pad(g, "weights_pad", t, padding, a.weight_zp)?;
    // The first C*C of every row of C*(C+1): element (j, c) lands at (j, c, c).
    let t = build.reshape(g, "weights_rows", t, vec![j, c * (c + 1)])?;
    let diag = SliceAttrs {
        start: vec![0, 0],
        size: vec![j, c * c],
    };
    let t = build.add(g, "weights_diag", Op::Slice(diag), &[t])?;
    let t = build.reshape(g, "weights_jcc", t, vec![j, c, c])?;
    // [J, C, C] -> [C, J, C] = [C*M, KH, KW, C]
    let t = build.transpose(g, "weights_cjc", t, vec![1, 0, 2])?;
    let w2 = build.reshape(g, "weights_ohwi", t, vec![c * m, kh, kw, c])?;
    g.remove_op(o).map_err(graph_err)?;
    g.add_op(name.clone(), Op::Conv2d(a.clone()), &[x, w2, b], &[acc])
        .map_err(graph_err)?;
    Ok(())
}
