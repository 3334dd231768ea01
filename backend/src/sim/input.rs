//! Reading input feature maps into dense arrays once per operation (`read_ifm` /
//! `read_ifm2` of TRM 3.6.5 for every element an operation reads, each read once).

use super::error::{check, Fault};
use super::fm::Fm;
use super::state::State;
use crate::isa::{ActivationFormat, ActivationStorage, IfmUpscaleMode};

/// A dense `h x w x c` array of zero-point-subtracted values.
#[derive(Debug, Clone, Default)]
#[allow(dead_code)]
pub struct Dense {
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Channels.
    pub c: usize,
    /// Values, `(y*w + x)*c + ch`.
    pub data: Vec<i64>,
}

impl Dense {
    /// Value at (y, x, c).
    #[inline]
    pub fn at(&self, y: usize, x: usize, c: usize) -> i64 {
        self.data[(y * self.w + x) * self.c + c]
    }
}

/// Reads channels `0..n` of pixel (y, x) into `out` (raw values, no zero point).
fn read_pixel(fm: &Fm, st: &mut State, y: u64, x: u64, out: &mut [i64]) -> Result<(), Fault> {
    let es = fm.esize();
    let n = out.len() as u64;
    match fm.format {
        ActivationFormat::Nhwc => {
            let a = fm.addr(y, x, 0)?;
            let bytes = st.mem.read_bytes(fm.region, a, n * es)?;
            decode_elems(bytes, es, fm.signed, out);
        }
        ActivationFormat::Nhcwb16 => {
            let mut c = 0u64;
            while c < n {
                let k = (n - c).min(16);
                let a = fm.addr(y, x, c)?;
                let bytes = st.mem.read_bytes(fm.region, a, k * es)?;
                decode_elems(bytes, es, fm.signed, &mut out[c as usize..(c + k) as usize]);
                c += k;
            }
        }
    }
    Ok(())
}

#[inline]
fn decode_elems(bytes: &[u8], es: u64, signed: bool, out: &mut [i64]) {
    match (es, signed) {
        (1, true) => out
            .iter_mut()
            .zip(bytes)
            .for_each(|(o, &b)| *o = i64::from(b as i8)),
        (1, false) => out
            .iter_mut()
            .zip(bytes)
            .for_each(|(o, &b)| *o = i64::from(b)),
        _ => {
            for (o, ch) in out.iter_mut().zip(bytes.chunks_exact(es as usize)) {
                let mut raw = [0u8; 8];
                raw[..ch.len()].copy_from_slice(ch);
                let v = u64::from_le_bytes(raw);
                let bits = 8 * es as u32;
                *o = if bits == 64 {
                    v as i64
                } else if signed {
                    ((v << (64 - bits)) as i64) >> (64 - bits)
                } else {
                    v as i64
                };
            }
        }
    }
}

/// Reads the IFM region `[0,h) x [0,w) x [0,c)` through `read_ifm` (upscale, zero point),
/// placing (y, x) at (y + pad_top, x + pad_left) of an array of `ph x pw` filled with `fill`.
#[allow(clippy::too_many_arguments)]
pub fn gather_ifm(
    fm: &Fm,
    st: &mut State,
    upscale: IfmUpscaleMode,
    (h, w, c): (usize, usize, usize),
    (ph, pw): (usize, usize),
    (pad_top, pad_left): (usize, usize),
    fill: i64,
) -> Result<Dense, Fault> {
    let zp = fm.input_zero_point()?;
    check(
        !matches!(
            fm.storage,
            ActivationStorage::Chained | ActivationStorage::None
        ),
        "3.6.5",
        "IFM of this operation read from memory (storage tile2x2 or tile3x1)",
        || format!("{:?} storage {}", fm.which, fm.storage.name()),
    )?;
    let mut d = Dense {
        h: ph,
        w: pw,
        c,
        data: vec![fill; ph * pw * c],
    };
    let mut pix = vec![0i64; c];
    for y in 0..h {
        for x in 0..w {
            let off = ((y + pad_top) * pw + x + pad_left) * c;
            let dst = &mut d.data[off..off + c];
            let (sy, sx) = match upscale {
                IfmUpscaleMode::None => (y, x),
                IfmUpscaleMode::Zeros if (x & 1) == 1 || (y & 1) == 1 => {
                    dst.fill(0);
                    continue;
                }
                _ => (y >> 1, x >> 1),
            };
            read_pixel(fm, st, sy as u64, sx as u64, &mut pix)?;
            for (o, &v) in dst.iter_mut().zip(&pix) {
                *o = v - zp;
            }
        }
    }
    Ok(d)
}

/// Reads a `h x w x c` tensor in (y, x, c) order: from memory, or from its chaining FIFO
/// (`read_chaining_fifo`) when chained. Zero point subtracted.
pub fn gather_plain(
    fm: &Fm,
    st: &mut State,
    (h, w, c): (usize, usize, usize),
) -> Result<Dense, Fault> {
    let zp = fm.input_zero_point()?;
    let mut d = Dense {
        h,
        w,
        c,
        data: vec![0; h * w * c],
    };
    if fm.storage == ActivationStorage::Chained {
        for v in d.data.iter_mut() {
            *v = st.fifo_pop(fm.region)? - zp;
        }
        return Ok(d);
    }
    check(
        fm.storage != ActivationStorage::None,
        "3.6.5",
        "storage != none",
        || format!("{:?} has storage none but is read", fm.which),
    )?;
    let mut pix = vec![0i64; c];
    for y in 0..h {
        for x in 0..w {
            read_pixel(fm, st, y as u64, x as u64, &mut pix)?;
            let off = (y * w + x) * c;
            for (o, &v) in d.data[off..off + c].iter_mut().zip(&pix) {
                *o = v - zp;
            }
        }
    }
    Ok(d)
}
