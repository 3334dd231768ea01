//! CONV3D as one batched CONV2D (a graph rewrite before lowering).
//!
//! TOSA §2.3.5: `acc[n, z, y, x, oc] = bias[oc] + Σ_{kz, ky, kx, ic} (in[n, z*sd + kz*dd - pf,
//! ...] - input_zp) * (w[oc, kz, ky, kx, ic] - weight_zp)`. The depth taps become input channels:
//! for every output depth `z`, the `KD` input depth slices `z*sd + kz*dd` (after padding the depth
//! axis with `input_zp`, which contributes 0 after the zero-point subtraction) are concatenated
//! along the channels, and the output depths become images of the batch:
//!
//! ```text
//! X'[n*OD + z, h, w, kz*IC + ic] = pad(in)[n, z*sd + kz*dd, h, w, ic]
//! W'[oc, ky, kx, kz*IC + ic]     = w[oc, kz, ky, kx, ic]
//! acc = RESHAPE(CONV2D(X', W', bias))   (pad/stride/dilation of the H and W axes)
//! ```
//!
//! The sums are the same terms in another order, so the accumulator is exact. A single
//! RESCALE consumer is moved before the RESHAPE, so it fuses into the CONV2D's output stage.

use super::{const_data, dims, graph_err};
use crate::LowerError;
use npuc_ir::{
    AxisAttrs, ConvAttrs, Graph, Op, OpId, PadAttrs, ReshapeAttrs, SliceAttrs, TensorData,
    TensorId, TransposeAttrs,
};

/// `g` with every CONV3D replaced, or `None` if it has none.
pub(crate) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let convs: Vec<OpId> = g
        .op_ids()
        .filter(|&o| matches!(g.op(o).map(|n| &n.op), Some(Op::Conv3d(_))))
        .collect();
    if convs.is_empty() {
        return Ok(None);
    }
    let mut g = g.clone();
    for o in convs {
        one(&mut g, o)?;
    }
    Ok(Some(g))
}

fn one(g: &mut Graph, o: OpId) -> Result<(), LowerError> {
    let node = g.op(o).ok_or_else(|| graph_err("CONV3D vanished"))?.clone();
    let Op::Conv3d(a) = &node.op else {
        return Err(graph_err("not a CONV3D"));
    };
    let name = node.name.clone();
    let (x, w, b) = (node.inputs()[0], node.inputs()[1], node.inputs()[2]);
    let acc = node.outputs()[0];
    let (is, ws, os) = (dims(g, x), dims(g, w), dims(g, acc));
    let (n, id, ih, iw, ic) = (is[0], is[1], is[2], is[3], is[4]);
    let (oc, kd, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let od = os[1];
    let w2 = weights_2d(g, &name, w, (oc, kd, kh, kw, ic))?;

    let add = |g: &mut Graph, suffix: &str, op: Op, ins: &[TensorId]| {
        g.add_op_inferred(format!("{name}/{suffix}"), op, ins)
            .map(|(_, t)| t)
            .map_err(graph_err)
    };
    // the depth axis padded with the input zero point
    let (pf, pb) = (a.pad[0], a.pad[1]);
    let xp = if pf + pb > 0 {
        let mut padding = vec![[0, 0]; 5];
        padding[1] = [pf, pb];
        let attrs = PadAttrs {
            padding,
            pad_const: a.input_zp,
        };
        add(g, "pad_depth", Op::Pad(attrs), &[x])?
    } else {
        x
    };
    let slice = |g: &mut Graph, start: usize, len: usize, tag: &str| {
        let attrs = SliceAttrs {
            start: vec![0, start, 0, 0, 0],
            size: vec![n, len, ih, iw, ic],
        };
        g.add_op_inferred(format!("{name}/{tag}"), Op::Slice(attrs), &[xp])
            .map(|(_, t)| t)
            .map_err(graph_err)
    };
    let concat = |g: &mut Graph, parts: Vec<TensorId>, axis: usize, tag: &str| {
        if parts.len() == 1 {
            return Ok(parts[0]);
        }
        g.add_op_inferred(
            format!("{name}/{tag}"),
            Op::Concat(AxisAttrs { axis }),
            &parts,
        )
        .map(|(_, t)| t)
        .map_err(graph_err)
    };
    let padded_depth = id + pf + pb;
    let mut taps = Vec::with_capacity(kd);
    for kz in 0..kd {
        let first = kz * a.dilation[0];
        let t = if a.stride[0] == 1 || od == 1 {
            if first == 0 && od == padded_depth {
                xp
            } else {
                slice(g, first, od, &format!("tap{kz}"))?
            }
        } else {
            let mut planes = Vec::with_capacity(od);
            for z in 0..od {
                planes.push(slice(
                    g,
                    z * a.stride[0] + first,
                    1,
                    &format!("tap{kz}_{z}"),
                )?);
            }
            concat(g, planes, 1, &format!("tap{kz}"))?
        };
        taps.push(t);
    }
    let stacked = concat(g, taps, 4, "taps")?;
    let images = ReshapeAttrs {
        shape: vec![n * od, ih, iw, kd * ic].into(),
    };
    let images = add(g, "images", Op::Reshape(images), &[stacked])?;
    let attrs = ConvAttrs {
        pad: [a.pad[2], a.pad[3], a.pad[4], a.pad[5]],
        stride: [a.stride[1], a.stride[2]],
        dilation: [a.dilation[1], a.dilation[2]],
        input_zp: a.input_zp,
        weight_zp: a.weight_zp,
    };
    let acc2 = add(g, "conv2d", Op::Conv2d(attrs), &[images, w2, b])?;

    // A sole RESCALE consumer moves before the RESHAPE back to NDHWC.
    let consumers = g.consumers(acc);
    let rescale = match consumers.as_slice() {
        [(r, 0)] if !g.outputs().contains(&acc) => match g.op(*r) {
            Some(rn) if matches!(rn.op, Op::Rescale(_)) => Some((*r, rn.clone())),
            _ => None,
        },
        _ => None,
    };
    g.remove_op(o).map_err(graph_err)?;
    let (src, dst) = match rescale {
        Some((r, rn)) => {
            g.remove_op(r).map_err(graph_err)?;
            let y2 = g
                .add_op_inferred(rn.name.clone(), rn.op.clone(), &[acc2])
                .map(|(_, t)| t)
                .map_err(graph_err)?;
            g.remove_tensor(acc).map_err(graph_err)?;
            (y2, rn.outputs()[0])
        }
        None => (acc2, acc),
    };
    let back = ReshapeAttrs {
        shape: dims(g, dst).into(),
    };
    g.add_op(format!("{name}/ndhwc"), Op::Reshape(back), &[src], &[dst])
        .map_err(graph_err)?;
    Ok(())
}

/// The CONV2D weights `W'[oc, ky, kx, kz*IC + ic] = w[oc, kz, ky, kx, ic]`: a constant for
/// constant weights, else computed from the runtime weights.
fn weights_2d(
    g: &mut Graph,
    name: &str,
    w: TensorId,
    (oc, kd, kh, kw, ic): (usize, usize, usize, usize, usize),
) -> Result<TensorId, LowerError> {
    let Some(wdata) = const_data(g, w).map(TensorData::to_i64_vec) else {
        // Runtime weights: the same order by a TRANSPOSE and a RESHAPE (then a CONV2D with
        // runtime weights, `conv_dynamic`).
        let perms = vec![0, 2, 3, 1, 4];
        let t = g
            .add_op_inferred(
                format!("{name}/weights_ohwdi"),
                Op::Transpose(TransposeAttrs { perms }),
                &[w],
            )
            .map(|(_, t)| t)
            .map_err(graph_err)?;
        let shape = ReshapeAttrs {
            shape: vec![oc, kh, kw, kd * ic].into(),
        };
        return g
            .add_op_inferred(format!("{name}/weights"), Op::Reshape(shape), &[t])
            .map(|(_, t)| t)
            .map_err(graph_err);
    };
    let wdt = g
        .tensor(w)
        .map(|t| t.ty.dtype)
        .ok_or_else(|| graph_err("weight"))?;

    // W'[oc, ky, kx, kz*IC + ic] = w[oc, kz, ky, kx, ic]
    let mut w2 = Vec::with_capacity(wdata.len());
    for o_ in 0..oc {
        for ky in 0..kh {
            for kx in 0..kw {
                for kz in 0..kd {
                    let base = (((o_ * kd + kz) * kh + ky) * kw + kx) * ic;
                    w2.extend_from_slice(&wdata[base..base + ic]);
                }
            }
        }
    }
    let w2 = TensorData::from_i64(wdt, &w2).map_err(graph_err)?;
    g.add_const(format!("{name}/weights"), [oc, kh, kw, kd * ic], w2)
        .map_err(graph_err)
}
