//! Feature-map addressing (TRM 3.6.5 `element_address_in_region`, 3.8 tiling) and the
//! zero-point rules of `read_ifm` / `read_ifm2` / `activation`.

use super::error::{check, Fault};
use super::memory::Memory;
use crate::isa::{
    ActivationFormat, ActivationPrecision, ActivationStorage, ActivationType, RegisterFile,
};

/// A 40-bit address/offset from its `addr_hi`/`addr_lo` fields.
#[inline]
pub fn addr40(hi: u8, lo: u32) -> u64 {
    (u64::from(hi) << 32) | u64::from(lo)
}

/// A signed 40-bit stride from its `addr_hi`/`addr_lo` fields.
#[inline]
pub fn saddr40(hi: i8, lo: u32) -> i64 {
    (i64::from(hi) << 32) | i64::from(lo)
}

/// Bytes per element of a precision.
pub fn esize(p: ActivationPrecision) -> u64 {
    match p {
        ActivationPrecision::B8 => 1,
        ActivationPrecision::B16 => 2,
        ActivationPrecision::B32 => 4,
        ActivationPrecision::B64 => 8,
    }
}

/// Which tensor a descriptor belongs to (for diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// IFM.
    Ifm,
    /// IFM2.
    Ifm2,
    /// OFM.
    Ofm,
}

/// One tensor's addressing registers, values (not `_m1`).
#[derive(Debug, Clone, Copy)]
pub struct Fm {
    /// Which tensor.
    pub which: Which,
    /// `*_REGION.region`.
    pub region: u8,
    /// Tile bases.
    pub base: [u64; 4],
    /// Strides in bytes.
    pub stride_x: u64,
    /// See `stride_x`.
    pub stride_y: u64,
    /// See `stride_x`.
    pub stride_c: u64,
    /// Width of tiles 0 and 2.
    pub width0: u64,
    /// Heights of tiles 0 and 1.
    pub height: [u64; 2],
    /// Storage mode.
    pub storage: ActivationStorage,
    /// Precision.
    pub precision: ActivationPrecision,
    /// Signedness.
    pub signed: bool,
    /// NHWC or NHCWB16.
    pub format: ActivationFormat,
    /// Raw zero point register.
    pub zero_point_raw: u16,
}

impl Fm {
    /// The IFM descriptor.
    pub fn ifm(r: &RegisterFile) -> Fm {
        let p = r.ifm_precision;
        Fm {
            which: Which::Ifm,
            region: r.ifm_region.region,
            base: [
                addr40(r.ifm_base0.addr_hi, r.ifm_base0.addr_lo),
                addr40(r.ifm_base1.addr_hi, r.ifm_base1.addr_lo),
                addr40(r.ifm_base2.addr_hi, r.ifm_base2.addr_lo),
                addr40(r.ifm_base3.addr_hi, r.ifm_base3.addr_lo),
            ],
            stride_x: addr40(r.ifm_stride_x.addr_hi, r.ifm_stride_x.addr_lo),
            stride_y: addr40(r.ifm_stride_y.addr_hi, r.ifm_stride_y.addr_lo),
            stride_c: addr40(r.ifm_stride_c.addr_hi, r.ifm_stride_c.addr_lo),
            width0: u64::from(r.ifm_width0_m1.width_m1) + 1,
            height: [
                u64::from(r.ifm_height0_m1.height_m1) + 1,
                u64::from(r.ifm_height1_m1.height_m1) + 1,
            ],
            storage: p.activation_storage,
            precision: p.activation_precision,
            signed: p.activation_type == ActivationType::Signed,
            format: p.activation_format,
            zero_point_raw: r.ifm_zero_point.zero_point,
        }
    }

    /// The IFM2 descriptor.
    pub fn ifm2(r: &RegisterFile) -> Fm {
        let p = r.ifm2_precision;
        Fm {
            which: Which::Ifm2,
            region: r.ifm2_region.region,
            base: [
                addr40(r.ifm2_base0.addr_hi, r.ifm2_base0.addr_lo),
                addr40(r.ifm2_base1.addr_hi, r.ifm2_base1.addr_lo),
                addr40(r.ifm2_base2.addr_hi, r.ifm2_base2.addr_lo),
                addr40(r.ifm2_base3.addr_hi, r.ifm2_base3.addr_lo),
            ],
            stride_x: addr40(r.ifm2_stride_x.addr_hi, r.ifm2_stride_x.addr_lo),
            stride_y: addr40(r.ifm2_stride_y.addr_hi, r.ifm2_stride_y.addr_lo),
            stride_c: addr40(r.ifm2_stride_c.addr_hi, r.ifm2_stride_c.addr_lo),
            width0: u64::from(r.ifm2_width0_m1.width_m1) + 1,
            height: [
                u64::from(r.ifm2_height0_m1.height_m1) + 1,
                u64::from(r.ifm2_height1_m1.height_m1) + 1,
            ],
            storage: p.activation_storage,
            precision: p.activation_precision,
            signed: p.activation_type == ActivationType::Signed,
            format: p.activation_format,
            zero_point_raw: r.ifm2_zero_point.zero_point,
        }
    }

    /// The OFM descriptor.
    pub fn ofm(r: &RegisterFile) -> Fm {
        let p = r.ofm_precision;
        Fm {
            which: Which::Ofm,
            region: r.ofm_region.region,
            base: [
                addr40(r.ofm_base0.addr_hi, r.ofm_base0.addr_lo),
                addr40(r.ofm_base1.addr_hi, r.ofm_base1.addr_lo),
                addr40(r.ofm_base2.addr_hi, r.ofm_base2.addr_lo),
                addr40(r.ofm_base3.addr_hi, r.ofm_base3.addr_lo),
            ],
            stride_x: addr40(r.ofm_stride_x.addr_hi, r.ofm_stride_x.addr_lo),
            stride_y: addr40(r.ofm_stride_y.addr_hi, r.ofm_stride_y.addr_lo),
            stride_c: addr40(r.ofm_stride_c.addr_hi, r.ofm_stride_c.addr_lo),
            width0: u64::from(r.ofm_width0_m1.width_m1) + 1,
            height: [
                u64::from(r.ofm_height0_m1.height_m1) + 1,
                u64::from(r.ofm_height1_m1.height_m1) + 1,
            ],
            storage: p.activation_storage,
            precision: p.activation_precision,
            signed: p.activation_type == ActivationType::Signed,
            format: p.activation_format,
            zero_point_raw: r.ofm_zero_point.zero_point,
        }
    }

    /// Element size in bytes.
    #[inline]
    pub fn esize(&self) -> u64 {
        esize(self.precision)
    }

    /// The zero point subtracted by `read_ifm`/`read_ifm2` (TRM 3.6.5), with its asserts.
    pub fn input_zero_point(&self) -> Result<i64, Fault> {
        let p = self.precision;
        if !self.signed {
            let zp = i64::from(self.zero_point_raw);
            check(
                (p == ActivationPrecision::B8 && zp < 256)
                    || (p == ActivationPrecision::B16 && zp == 32768)
                    || zp == 0,
                "3.6.5",
                "(precision == b8 && zero_point < 256) || (precision == b16 && zero_point == 32768) || zero_point == 0",
                || format!("{:?} unsigned {p:?} zero point {zp}", self.which),
            )?;
            Ok(zp)
        } else {
            let zp = i64::from(self.zero_point_raw as i16);
            check(
                (p == ActivationPrecision::B8 && (-128..128).contains(&zp)) || zp == 0,
                "3.6.5",
                "(precision == b8 && -128 <= zero_point && zero_point < 128) || zero_point == 0",
                || format!("{:?} signed {p:?} zero point {zp}", self.which),
            )?;
            Ok(zp)
        }
    }

    /// `element_address_in_region` (TRM 3.6.5) with its alignment asserts.
    #[inline]
    pub fn addr(&self, y: u64, x: u64, c: u64) -> Result<u64, Fault> {
        let (mut y, mut x) = (y, x);
        let mut tile = 0usize;
        match self.storage {
            ActivationStorage::Tile2x2 => {
                if x >= self.width0 {
                    x -= self.width0;
                    tile += 1;
                }
                if y >= self.height[tile] {
                    y -= self.height[tile];
                    tile += 2;
                }
            }
            ActivationStorage::Tile3x1 => {
                if y >= self.height[1] {
                    y -= self.height[1];
                    tile = 2;
                } else if y >= self.height[0] {
                    y -= self.height[0];
                    tile = 1;
                }
            }
            _ => {
                return Err(Fault::assert(
                    "3.6.5",
                    "storage != none",
                    format!("{:?} storage {:?} has no address", self.which, self.storage),
                ))
            }
        }
        let es = self.esize();
        let base = self.base[tile];
        let off = match self.format {
            ActivationFormat::Nhwc => {
                if base % es != 0 || self.stride_x % es != 0 || self.stride_y % es != 0 {
                    return Err(self.align_fault(
                        "NHWC base/stride_x/stride_y multiple of element size",
                        tile,
                    ));
                }
                x.wrapping_mul(self.stride_x)
                    .wrapping_add(c.wrapping_mul(es))
            }
            ActivationFormat::Nhcwb16 => {
                if base % 16 != 0
                    || self.stride_c % (16 * es) != 0
                    || self.stride_y % (16 * es) != 0
                {
                    return Err(self.align_fault(
                        "NHCWB16 base % 16 == 0, stride_c and stride_y multiples of 16*element size",
                        tile,
                    ));
                }
                (c >> 4)
                    .wrapping_mul(self.stride_c)
                    .wrapping_add((16 * x + (c & 15)).wrapping_mul(es))
            }
        };
        Ok(base
            .wrapping_add(y.wrapping_mul(self.stride_y))
            .wrapping_add(off)
            & ((1u64 << 40) - 1))
    }

    fn align_fault(&self, rule: &'static str, tile: usize) -> Fault {
        Fault::assert(
            "3.6.5",
            rule,
            format!(
                "{:?} tile {tile} base {:#x}, strides x {:#x} y {:#x} c {:#x}, element {} bytes",
                self.which,
                self.base[tile],
                self.stride_x,
                self.stride_y,
                self.stride_c,
                self.esize()
            ),
        )
    }

    /// Reads the raw element at (y, x, c) (no zero point).
    #[inline]
    pub fn read(&self, mem: &mut Memory, y: u64, x: u64, c: u64) -> Result<i64, Fault> {
        let a = self.addr(y, x, c)?;
        mem.read_elem(self.region, a, self.esize(), self.signed)
    }
}
