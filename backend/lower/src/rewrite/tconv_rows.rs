//! A TRANSPOSE_CONV2D with runtime weights whose row stride is at least its kernel height
//! (`sy >= KH`, `sy > 1`): no two kernel rows of different input rows reach the same output
//! row, so the zero-inserted input of L38 (`sy - 1` rows of zeros after each row, `H * sy`
//! rows, then an im2col over `KH` rows) is not needed (decision L49). TOSA's
//! `oy = iy * sy + out_pad_top + ky` makes every output row one `(iy, ky)` pair or none:
//!
//! 1. the kernel rows become output channels: the weights `[OC, KH, KW, IC]` read as
//!    `[OC * KH, 1, KW, IC]` (the same bytes), reversed along KW; a CONV2D with them over the
//!    input (columns zero-inserted for `sx > 1` and padded as L38 does along x), zero bias,
//!    gives `R[n, iy, ox, o * KH + ky]`, the raw accumulator of every `(iy, ky)` row;
//! 2. `R` as `[N, H, OW, OC, KH]` transposed to `[N, H, KH, OW, OC]`, padded with zeros to
//!    `sy` rows per input row and read as `[N, H * sy, OW, OC]`: row `iy * sy + ky`;
//! 3. shifted by `out_pad_top` rows (a PAD of zero rows before, or a SLICE) and cut or padded
//!    to `OH` rows: the output rows no `(iy, ky)` reaches are 0;
//! 4. the bias added (`ADD` with the bias as `[1, 1, 1, BC]`), into the accumulator tensor.
//!
//! Every step is data movement or L34's CONV2D; the conformance suite's `transpose_conv2d_8192x2`
//! (kernel 8192 x 2, stride 8192 x 1) needed 1.6 G elements of zero-inserted input before.

use super::builder::{transpose_conv, Builder};
use super::{dims, dtype, graph_err};
use crate::LowerError;
use npuc_ir::{AxisAttrs, DType, Graph, Op, OpId, SliceAttrs, TensorData};

/// Whether TRANSPOSE_CONV2D `o` (runtime weights, as `runtime_weights` picked it) takes this
/// form: a row stride above 1 and at least the kernel height, at most 65536 output channels
/// `OC * KH`, and an i32 accumulator (8-bit data: a 16x8 one keeps L38's form, whose i48 bias
/// stays in the scale/bias stream instead of a constant i48 ADD).
pub(super) fn applies(g: &Graph, o: OpId) -> bool {
    let Some(node) = g.op(o) else { return false };
    let Op::TransposeConv2d(a) = &node.op else {
        return false;
    };
    let wd = dims(g, node.inputs()[1]);
    let [oc, kh, _, _] = wd[..] else {
        return false;
    };
    a.stride[0] > 1
        && a.stride[0] >= kh
        && oc * kh <= 65536
        && dtype(g, node.outputs()[0]) == Some(DType::Int32)
}

/// Rewrites TRANSPOSE_CONV2D `o` (see the module documentation).
pub(super) fn rewrite(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let (node, a) = transpose_conv(g, o)?;
    let name = node.name.clone();
    let (x, w, b) = (node.inputs()[0], node.inputs()[1], node.inputs()[2]);
    let acc = node.outputs()[0];
    let (xd, wd, od) = (dims(g, x), dims(g, w), dims(g, acc));
    let (n, h, wi, c) = (xd[0], xd[1], xd[2], xd[3]);
    let (oc, kh, kw) = (wd[0], wd[1], wd[2] as i64);
    let (oh, ow) = (od[1], od[2]);
    let [sy, sx] = a.stride;
    let [pt, _, pl, pr] = a.out_pad;
    let build = Builder::new(&name);
    // Along x as L38: columns of `input_zp` inserted, padding `KW - 1 + pl` before and
    // `KW + pr - sx` after (a negative one cuts inserted columns).
    let (before, after) = (kw - 1 + pl, kw + pr - sx as i64);
    if before < 0 || after < -(sx as i64 - 1) {
        return Err(crate::unsupported(
            &node,
            "an output padding below -kernel + 1",
        ));
    }
    let mut u = x;
    if sx > 1 {
        let shape = vec![n, h, wi * sx, c];
        u = build.insert_after(g, "columns", u, [n * h, wi, c], sx, a.input_zp, shape)?;
        if after < 0 {
            let attrs = SliceAttrs {
                start: vec![0, 0, 0, 0],
                size: vec![n, h, wi * sx - (-after) as usize, c],
            };
            u = build.add(g, "cut", Op::Slice(attrs), &[u])?;
        }
    }
    // 1. The kernel rows as output channels, reversed along KW.
    let w1 = build.reshape(g, "weights_rows", w, vec![oc * kh, 1, wd[2], wd[3]])?;
    let w2 = build.add(
        g,
        "weights_flip_x",
        Op::Reverse(AxisAttrs { axis: 2 }),
        &[w1],
    )?;
    // The zero bias of the accumulator type: i32, or i48 for 16-bit data (L50/L51).
    let bias_dtype = dtype(g, b).ok_or_else(|| graph_err("bias"))?;
    let zeros = TensorData::from_i64(bias_dtype, &vec![0; oc * kh]).map_err(graph_err)?;
    let zero = g
        .add_const(format!("{name}/zero_bias"), vec![oc * kh], zeros)
        .map_err(graph_err)?;
    let attrs = npuc_ir::ConvAttrs {
        pad: [0, 0, before as usize, after.max(0) as usize],
        stride: [1, 1],
        dilation: [1, 1],
        input_zp: a.input_zp,
        weight_zp: a.weight_zp,
    };
    g.remove_op(o).map_err(graph_err)?;
    let (_, r) = g
        .add_op_inferred(name.clone(), Op::Conv2d(attrs), &[u, w2, zero])
        .map_err(graph_err)?;
    // 2. Row `iy * sy + ky`.
    let t = build.reshape(g, "rows_split", r, vec![n, h, ow, oc, kh])?;
    let perms = vec![0, 1, 4, 2, 3];
    let mut t = build.transpose(g, "rows_first", t, perms)?;
    if sy > kh {
        let padding = vec![[0, 0], [0, 0], [0, sy - kh], [0, 0], [0, 0]];
        t = build.pad(g, "rows_spaced", t, padding, 0)?;
    }
    let mut t = build.reshape(g, "rows_stacked", t, vec![n, h * sy, ow, oc])?;
    // 3. Output row `oy` is stacked row `oy - pt`.
    let rows = (h * sy) as i64;
    let (front, back) = (pt.max(0), (oh as i64 - (rows + pt)).max(0));
    if front > 0 || back > 0 {
        let padding = vec![[0, 0], [front as usize, back as usize], [0, 0], [0, 0]];
        t = build.pad(g, "rows_placed", t, padding, 0)?;
    }
    let start = (-pt).max(0) as usize;
    if start > 0 || (rows + front + back) as usize - start != oh {
        let attrs = SliceAttrs {
            start: vec![0, start, 0, 0],
            size: vec![n, oh, ow, oc],
        };
        t = build.add(g, "rows_cut", Op::Slice(attrs), &[t])?;
    }
    // 4. The bias.
    let bc: usize = dims(g, b).iter().product();
    let bias = build.reshape(g, "bias_shape", b, vec![1, 1, 1, bc])?;
    g.add_op(format!("{name}/bias"), Op::Add, &[t, bias], &[acc])
        .map_err(graph_err)?;
    Ok(())
}
