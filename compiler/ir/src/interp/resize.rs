//! RESIZE, integer form (TOSA §2.12.1).
//!
//! Output pixel `(oy, ox)` samples input position `y = oy * scale_y_d + offset_y` in units of
//! `1 / scale_y_n` (likewise `x`): integer part `iy = floor(y / scale_y_n)`, fraction
//! `dy = y - iy * scale_y_n`. NEAREST_NEIGHBOR picks `iy + 1` when `2 * dy >= scale_y_n`;
//! BILINEAR returns the unnormalised weighted sum (weights sum to `scale_y_n * scale_x_n`).
//! Neighbour indices are clamped to the image.

use super::array::{Arr, Undef};
use crate::ops::{Op, ResizeMode};
use crate::types::TensorType;

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

pub(crate) fn eval(op: &Op, ins: &[&Arr], out: &TensorType) -> Result<Vec<i64>, Undef> {
    let Op::Resize(a) = op else {
        return Err("internal: not RESIZE".into());
    };
    let input = ins[0];
    let (ih, iw, c) = (input.shape[1] as i64, input.shape[2] as i64, input.shape[3]);
    let os = &out.shape.0;
    let (n, oh, ow) = (os[0], os[1], os[2]);
    let [yn, yd, xn, xd] = a.scale;
    let [off_y, off_x] = a.offset;
    let at = |b: usize, y: i64, x: i64, ch: usize| {
        input.data[((b * ih as usize + y as usize) * iw as usize + x as usize) * c + ch]
    };
    let mut res = Vec::with_capacity(n * oh * ow * c);
    for b in 0..n {
        for oy in 0..oh as i64 {
            let y = oy * yd + off_y;
            let iy = floor_div(y, yn);
            let dy = y - iy * yn;
            let (iy0, iy1) = (iy.clamp(0, ih - 1), (iy + 1).clamp(0, ih - 1));
            for ox in 0..ow as i64 {
                let x = ox * xd + off_x;
                let ix = floor_div(x, xn);
                let dx = x - ix * xn;
                let (ix0, ix1) = (ix.clamp(0, iw - 1), (ix + 1).clamp(0, iw - 1));
                for ch in 0..c {
                    let v = match a.mode {
                        ResizeMode::NearestNeighbor => {
                            let sy = if 2 * dy >= yn { iy1 } else { iy0 };
                            let sx = if 2 * dx >= xn { ix1 } else { ix0 };
                            at(b, sy, sx, ch)
                        }
                        ResizeMode::Bilinear => {
                            at(b, iy0, ix0, ch) * (yn - dy) * (xn - dx)
                                + at(b, iy0, ix1, ch) * (yn - dy) * dx
                                + at(b, iy1, ix0, ch) * dy * (xn - dx)
                                + at(b, iy1, ix1, ch) * dy * dx
                        }
                    };
                    res.push(v);
                }
            }
        }
    }
    Ok(res)
}
