//! How the rows of an operation's OFM depend on the rows of its IFM: the geometry cascading
//! (decision S8) and splitting (`split`) compute bands with.

use crate::{Kernel, NpuOp};

/// How the rows of an operation's OFM depend on the rows of its IFM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowMap {
    /// OFM height.
    pub ho: u32,
    stride: u32,
    /// Dilated kernel height.
    kh: u32,
    pad_top: u32,
    /// The IFM extent the hardware derives for the whole operation (TRM 3.10.2).
    hi: u32,
}

impl RowMap {
    /// The row map of `op` (an ELEMENTWISE maps rows one to one).
    pub fn of(op: &NpuOp) -> RowMap {
        let ho = op.ofm.shape.0;
        if matches!(op.kernel, Kernel::Elementwise(_)) {
            return RowMap {
                ho,
                stride: 1,
                kh: 1,
                pad_top: 0,
                hi: ho,
            };
        }
        let kh = (op.kernel_size.0 - 1) * op.dilation.0 + 1;
        RowMap {
            ho,
            stride: op.stride.0,
            kh,
            pad_top: op.pad[0],
            hi: ((ho - 1) * op.stride.0 + kh).saturating_sub(op.pad[0] + op.pad[1]),
        }
    }

    /// The IFM rows `lo..hi` that OFM rows `r0..r1` (`r1 > r0`) read.
    pub fn window(&self, r0: u32, r1: u32) -> (u32, u32) {
        let lo = (r0 * self.stride).saturating_sub(self.pad_top);
        let hi = ((r1 - 1) * self.stride + self.kh)
            .saturating_sub(self.pad_top)
            .min(self.hi);
        (lo, hi.max(lo))
    }

    /// Top and bottom padding of the band `r0..r1` reading IFM rows `lo..hi`: the derived
    /// extent `(r1 - r0 - 1) * stride + kh - top - bottom` is `hi - lo`.
    pub fn pads(&self, r0: u32, r1: u32, (lo, hi): (u32, u32)) -> (u32, u32) {
        let top = self.pad_top.saturating_sub(r0 * self.stride);
        let bottom = ((r1 - r0 - 1) * self.stride + self.kh).saturating_sub(top + (hi - lo));
        (top, bottom)
    }
}
