//! The im2col copy of a padded CONV2D with runtime weights (decision L45), for paddings whose
//! padded input would be too large to materialise (L43): the matrix `[OH * OW, KH * KW * IC]`
//! is first filled with the input zero point (a padding tap adds 0 after its subtraction, as
//! TOSA pads), then every tap inside the input is copied. Along one axis, output `o` reads
//! input `o * s - p + k * d`, inside the input for a contiguous range of taps `k`; the outputs
//! fall into runs with the same range, and each pair of a row run and a column run is one box
//! copy (outputs x taps x channels).

use crate::data_movement::copy::CopyAxis;
use crate::Ctx;
use crate::LowerError;
use npuc_ir::OpNode;

/// One axis of a convolution.
pub(crate) struct ConvAxis {
    pub input: usize,
    pub output: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub pad: usize,
}

/// The outputs of an axis grouped into runs reading the same range of taps inside the input,
/// as (first output, outputs, first tap, taps); runs reading no tap are left out.
pub(crate) fn tap_runs(a: &ConvAxis) -> Vec<(usize, usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
    let (s, d, p) = (a.stride as i64, a.dilation as i64, a.pad as i64);
    for o in 0..a.output {
        let base = o as i64 * s - p;
        // Taps k with 0 <= base + k * d < input.
        let lo = if base >= 0 { 0 } else { (-base + d - 1) / d };
        let hi = (a.input as i64 - 1 - base)
            .div_euclid(d)
            .min(a.kernel as i64 - 1);
        let range = if hi >= lo {
            (lo as usize, (hi - lo + 1) as usize)
        } else {
            (0, 0)
        };
        match runs.last_mut() {
            Some(r) if (r.2, r.3) == range && r.0 + r.1 == o => r.1 += 1,
            _ => runs.push((o, 1, range.0, range.1)),
        }
    }
    runs.retain(|r| r.3 > 0);
    runs
}

impl<'g> Ctx<'g> {
    /// Writes the im2col matrix of a padded convolution of the dense i8 input `x` (`iw * ic`
    /// bytes a row) into `col` (`rows * k` bytes, `k = kh * kw * ic`).
    pub(crate) fn padded_im2col(
        &mut self,
        node: &OpNode,
        x: usize,
        col: usize,
        (ys, xs): (ConvAxis, ConvAxis),
        ic: usize,
        zp: i64,
    ) -> Result<(), LowerError> {
        let k = ys.kernel * xs.kernel * ic;
        let rows = ys.output * xs.output;
        let total = rows * k;
        // The fill: a read-only row of up to 256 zero-point bytes, read again and again.
        let row = (1..=256usize.min(total))
            .rev()
            .find(|r| total % r == 0)
            .unwrap_or(1);
        let fill = self.anonymous_constant(vec![zp as i8 as u8; row]);
        let axes = [
            CopyAxis {
                n: total / row,
                src: 0,
                dst: row as i64,
            },
            CopyAxis {
                n: row,
                src: 1,
                dst: 1,
            },
        ];
        self.strided_copy(node, (fill, 0), (col, 0), &axes)?;
        let in_row = (xs.input * ic) as i64;
        for &(oy, ny, ky, nky) in &tap_runs(&ys) {
            for &(ox, nx, kx, nkx) in &tap_runs(&xs) {
                let y = (oy * ys.stride + ky * ys.dilation) as i64 - ys.pad as i64;
                let xx = (ox * xs.stride + kx * xs.dilation) as i64 - xs.pad as i64;
                let src = y * in_row + xx * ic as i64;
                let dst = ((oy * xs.output + ox) * k + (ky * xs.kernel + kx) * ic) as i64;
                let axes = [
                    CopyAxis {
                        n: ny,
                        src: ys.stride as i64 * in_row,
                        dst: (xs.output * k) as i64,
                    },
                    CopyAxis {
                        n: nx,
                        src: (xs.stride * ic) as i64,
                        dst: k as i64,
                    },
                    CopyAxis {
                        n: nky,
                        src: ys.dilation as i64 * in_row,
                        dst: (xs.kernel * ic) as i64,
                    },
                    CopyAxis {
                        n: nkx,
                        src: (xs.dilation * ic) as i64,
                        dst: ic as i64,
                    },
                    CopyAxis {
                        n: ic,
                        src: 1,
                        dst: 1,
                    },
                ];
                self.strided_copy(node, (x, src), (col, dst), &axes)?;
            }
        }
        Ok(())
    }
}
