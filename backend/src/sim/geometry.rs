//! Kernel geometry shared by CONV, DEPTHWISE and POOL (TRM 3.10.2, 3.10.3, 3.10.10): strides,
//! dilation, padding and the derived IFM extent.

use super::error::{check, Fault};
use crate::isa::{KernelDilation, RegisterFile};

/// Geometry of a kernel operation; all values are plain counts.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    /// OFM height.
    pub ofm_h: usize,
    /// OFM width.
    pub ofm_w: usize,
    /// OFM depth.
    pub ofm_d: usize,
    /// IFM depth (`NPU_SET_IFM_DEPTH_M1 + 1`).
    pub ifm_d: usize,
    /// Strides.
    pub sy: usize,
    /// See `sy`.
    pub sx: usize,
    /// Dilations (1 or 2).
    pub dy: usize,
    /// See `dy`.
    pub dx: usize,
    /// `KERNEL_*_M1 + 1`: dilated kernel size (undilated for POOL).
    pub kh_dil: usize,
    /// See `kh_dil`.
    pub kw_dil: usize,
    /// Number of taps per dimension (`ky*dilation_y < dilated_height`).
    pub kh: usize,
    /// See `kh`.
    pub kw: usize,
    /// Padding.
    pub pad_top: usize,
    /// See `pad_top`.
    pub pad_left: usize,
    /// `pad_top + pad_bottom`.
    pub pad_h: usize,
    /// `pad_left + pad_right`.
    pub pad_w: usize,
    /// Derived IFM extent.
    pub ifm_h: usize,
    /// See `ifm_h`.
    pub ifm_w: usize,
}

/// `2*msb + lsb + 1`, asserted to be 1..3 (TRM 3.10.44: "strides are in the range 1 to 3").
pub fn stride(lsb: u8, msb: u8) -> Result<usize, Fault> {
    let s = 2 * usize::from(msb) + usize::from(lsb) + 1;
    check(s <= 3, "3.10.44", "strides are in the range 1 to 3", || {
        format!("stride {s}")
    })?;
    Ok(s)
}

impl Geometry {
    /// Reads the geometry; `dilated` is false for POOL (which asserts no dilation).
    pub fn new(r: &RegisterFile, section: &'static str) -> Result<Geometry, Fault> {
        let ks = r.kernel_stride;
        let sy = stride(ks.stride_y_lsb, ks.stride_y_msb)?;
        let sx = stride(ks.stride_x_lsb, ks.stride_x_msb)?;
        let dy = if ks.dilation_y == KernelDilation::X2 {
            2
        } else {
            1
        };
        let dx = if ks.dilation_x == KernelDilation::X2 {
            2
        } else {
            1
        };
        let kh_dil = usize::from(r.kernel_height_m1.height_m1) + 1;
        let kw_dil = usize::from(r.kernel_width_m1.width_m1) + 1;
        let ofm_h = usize::from(r.ofm_height_m1.height_m1) + 1;
        let ofm_w = usize::from(r.ofm_width_m1.width_m1) + 1;
        let pad_top = usize::from(r.ifm_pad_top.pad);
        let pad_left = usize::from(r.ifm_pad_left.pad);
        let pad_h = pad_top + usize::from(r.ifm_pad_bottom.pad);
        let pad_w = pad_left + usize::from(r.ifm_pad_right.pad);
        let full_h = (ofm_h - 1) * sy + kh_dil;
        let full_w = (ofm_w - 1) * sx + kw_dil;
        check(
            full_h > pad_h && full_w > pad_w,
            section,
            "ifm_height >= 1 && ifm_width >= 1",
            || format!("padding {pad_h}x{pad_w} leaves no IFM of {full_h}x{full_w}"),
        )?;
        Ok(Geometry {
            ofm_h,
            ofm_w,
            ofm_d: usize::from(r.ofm_depth_m1.depth_m1) + 1,
            ifm_d: usize::from(r.ifm_depth_m1.depth_m1) + 1,
            sy,
            sx,
            dy,
            dx,
            kh_dil,
            kw_dil,
            kh: kh_dil.div_ceil(dy),
            kw: kw_dil.div_ceil(dx),
            pad_top,
            pad_left,
            pad_h,
            pad_w,
            ifm_h: full_h - pad_h,
            ifm_w: full_w - pad_w,
        })
    }

    /// Height of the IFM with padding on both sides (`ifm_h + pad_h`).
    pub fn padded(&self) -> (usize, usize) {
        (self.ifm_h + self.pad_h, self.ifm_w + self.pad_w)
    }
}
