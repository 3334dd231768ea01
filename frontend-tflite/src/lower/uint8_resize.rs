//! Bilinear RESIZE of uint8 tensors.
//!
//! TFLite's uint8 kernel is the float one (`reference_ops::ResizeBilinear<uint8_t>`): per
//! axis `input_y = (y + 0.5) * scale - 0.5` (or `y * scale`) in `f32`, `y0 = max(floor, 0)`,
//! `y1 = min(ceil, size - 1)`, `dy = input_y - y0`, and the output byte is
//! `(uint8)(x00 (1 - dy)(1 - dx) + x10 dy (1 - dx) + x01 (1 - dy) dx + x11 dy dx + 0.5)`,
//! every operation in `f32`. Where all those operations are exact the byte is
//! `floor(S / 2^20 + 1/2)` with `S` the sum in 1/1024 weight units: exactly what the int8
//! lowering computes on the int8 view (its integer weights are TFLite's int8 ones), except
//! that the exact half rounds up (`x >= 0`, and `S` moves by a multiple of `2^20` on the
//! view) where int8 rounds half away from zero. [`float_kernel_is_exact`] proves that
//! exactness for the given sizes, else the operator is refused (docs/decisions.md F6).

/// Number of fractional bits of `v` (`None` beyond `max`).
fn frac_bits(v: f32, max: u32) -> Option<u32> {
    (0..=max).find(|&k| {
        let s = v * (1u32 << k) as f32;
        s == s.trunc()
    })
}

/// TFLite's `f32` weights `(y0, y1, dy)` of output coordinate `o` on one axis.
fn float_sampling(o: usize, scale: f32, half: bool, in_size: usize) -> (i64, i64, f32) {
    let v = if half {
        (o as f32 + 0.5) * scale - 0.5
    } else {
        o as f32 * scale
    };
    let y0 = (v.floor() as i64).max(0);
    let y1 = (v.ceil() as i64).min(in_size as i64 - 1);
    (y0, y1, v - y0 as f32)
}

/// TFLite's int8 weights on one axis: `(y0, y1, dy in 1/1024 units)`.
fn integer_sampling(
    o: usize,
    in_size: usize,
    out: usize,
    align: bool,
    half: bool,
) -> (i64, i64, i64) {
    let (i, n, o) = (in_size as i64, out as i64, o as i64);
    let s = if align && n > 1 {
        (1024 * (i - 1) + (n - 1) / 2) / (n - 1)
    } else {
        (1024 * i + n / 2) / n
    };
    let v = if half { o * s + s / 2 - 512 } else { o * s };
    let lo = (v / 1024).max(0);
    let hi = ((v + 1023) / 1024).min(i - 1);
    (lo, hi, v - 1024 * lo)
}

/// The largest number of fractional bits among one axis' `f32` weights `dy` and `1 - dy`,
/// if every one is TFLite's int8 weight / 1024 (axes of one input row: any dyadic weights,
/// the row is copied whatever they are).
fn axis_bits(in_size: usize, out: usize, align: bool, half: bool) -> Option<u32> {
    let scale = if align && out > 1 {
        (in_size as f32 - 1.0) / (out as f32 - 1.0)
    } else {
        in_size as f32 / out as f32
    };
    let mut bits = 0;
    for o in 0..out {
        let (y0, y1, dy) = float_sampling(o, scale, half, in_size);
        if in_size > 1 {
            let (l, h, w) = integer_sampling(o, in_size, out, align, half);
            if (y0, y1) != (l, h) || dy * 1024.0 != w as f32 {
                return None;
            }
        }
        bits = bits.max(frac_bits(dy, 10)?).max(frac_bits(1.0 - dy, 10)?);
    }
    Some(bits)
}

/// True if TFLite's `f32` uint8 bilinear kernel computes `xs -> os` (NHWC) without a
/// rounding, with the int8 kernel's weights: the weights on each axis are its integer ones
/// / 1024 with `ky` and `kx` fractional bits, `ky + kx <= 12`, so every product (below
/// `255 * 2 * 2`) and partial sum (below 2048, plus 0.5) fits the 24-bit significand.
pub(crate) fn float_kernel_is_exact(xs: &[usize], os: &[usize], align: bool, half: bool) -> bool {
    match (
        axis_bits(xs[1], os[1], align, half),
        axis_bits(xs[2], os[2], align, half),
    ) {
        (Some(ky), Some(kx)) => ky + kx <= 12,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::float_kernel_is_exact;

    #[test]
    fn power_of_two_scales_are_exact_and_thirds_are_not() {
        // 2x upsampling, half-pixel centres: weights 1/4, 3/4 (and 5/4, -1/4 at the edges).
        assert!(float_kernel_is_exact(
            &[1, 4, 5, 3],
            &[1, 8, 10, 3],
            false,
            true
        ));
        // align_corners 3 -> 5: input positions 0, 0.5, 1, 1.5, 2.
        assert!(float_kernel_is_exact(
            &[1, 3, 3, 2],
            &[1, 5, 5, 2],
            true,
            false
        ));
        // 3x upsampling: weights of 1/3 are rounded in f32.
        assert!(!float_kernel_is_exact(
            &[1, 4, 4, 1],
            &[1, 12, 12, 1],
            false,
            true
        ));
        // 1 -> 3 rows copy the row whatever the (dyadic) weights.
        assert!(float_kernel_is_exact(
            &[1, 1, 4, 1],
            &[1, 2, 8, 1],
            false,
            true
        ));
    }
}
