//! A DEPTHWISE_CONV2D with a depth multiplier `M > 1` on many channels: output channel
//! `c * M + m` reads input channel `c`, so with the input's channels repeated
//! (`x'[..., c * M + m] = x[..., c]`) it is an ordinary DEPTHWISE of `C * M` channels whose
//! weights are TFLite's `[KH, KW, C * M]` as they are (decision L28). The repetition is `M`
//! 1x1 copies (max pooling, zero points 0, no clamp inside the type), copy `m` writing every
//! `M`-th element of the new buffer from element `m`. (A CONV with zero weights outside each
//! channel's own input would do `C` times the multiply-accumulates and hold `C` times the
//! weights: a `229 x 4` multiplier with a 10x8 kernel dilated 4x3 took gigabytes to compile.)

use crate::LowerError;
use crate::{Ctx, Fm, NpuOp, View};
use npuc_ir::OpNode;

/// From this many input channels on, a depth multiplier repeats the input's channels
/// (below, the CONV with zero weights is cheaper than the copies).
pub(crate) const REPEAT_FROM_CHANNELS: usize = 8;

impl<'g> Ctx<'g> {
    /// The feature map `src` (`images` images of `src.shape`, dense from its view's offset)
    /// with every channel repeated `m` times, in a new buffer written by copies pushed now.
    pub(crate) fn repeat_channels(
        &mut self,
        node: &OpNode,
        src: Fm,
        images: usize,
        m: usize,
    ) -> Result<Fm, LowerError> {
        let (h, w, c) = src.shape;
        let e = u64::from(src.elem_bytes());
        let pixels = images as u64 * u64::from(h) * u64::from(w);
        let (c64, m64) = (u64::from(c), m as u64);
        let buffer = self.scratch(pixels * c64 * m64 * e);
        let range = (src.dtype.min_value(), src.dtype.max_value());
        let mut row0 = 0u64;
        while row0 < pixels {
            let rows = (pixels - row0).min(65536);
            for k in 0..m64 {
                let from = Fm {
                    shape: (rows as u32, c, 1),
                    zero_point: 0,
                    broadcast: (false, false, false),
                    view: View {
                        offset: src.view.offset + row0 * c64 * e,
                        strides: Some((c64 * e, e)),
                        ..View::default()
                    },
                    ..src
                };
                let to = Fm {
                    buffer,
                    view: View {
                        offset: (row0 * c64 * m64 + k) * e,
                        strides: Some((c64 * m64 * e, m64 * e)),
                        ..View::default()
                    },
                    ..from
                };
                self.push(NpuOp::copy(
                    format!("{} (channels repeated, {} of {m})", node.name, k + 1),
                    Vec::new(),
                    from,
                    to,
                    range,
                ));
            }
            row0 += rows;
        }
        Ok(Fm {
            buffer,
            shape: (h, w, c * m as u32),
            broadcast: (false, false, false),
            view: View::default(),
            ..src
        })
    }
}
