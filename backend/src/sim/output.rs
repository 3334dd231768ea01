//! The output stage of every kernel operation: `write_accumulator`, `rescale`, `activation`
//! and `write_ofm` (TRM 3.6.5-3.6.7), with the per-operation register reads done once.

use super::arith::Activation;
use super::error::{check, Fault};
use super::fm::Fm;
use super::state::State;
use super::weights::{microblock_depth, Scales};
use crate::arch::ArchConfig;
use crate::isa::{
    AccFormat, AccOutput, ActivationFormat, ActivationPrecision, ActivationReverse,
    ActivationStorage, ActivationTranspose, OfmScaleMode, RegisterFile, RoundModeOfm,
};
use npuc_codecs::arith::{
    avgpool_scale, rounded_shift_right, rounding_term_i64, sign_extend, truncate,
};

/// `rescale_mode_t` (TRM 3.6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rescale {
    /// `rescale_mode_none`.
    None,
    /// `rescale_mode_normal`.
    Normal,
    /// `rescale_mode_global`.
    Global,
    /// `rescale_mode_shift_only`.
    ShiftOnly,
    /// `rescale_mode_avpool + (count-1)`.
    AvPool(u32),
}

/// Output stage parameters of one operation.
#[derive(Debug, Clone)]
pub struct Output {
    /// OFM descriptor.
    pub ofm: Fm,
    /// OFM height, width, depth.
    pub dims: (u64, u64, u64),
    /// OFM block height, width, depth.
    pub blk: (u64, u64, u64),
    acc_output: bool,
    acc_bits: u32,
    scale_mode: OfmScaleMode,
    scales: Option<Scales>,
    global: (i64, u32),
    round: RoundModeOfm,
    dbl_rnd: u32,
    act: Activation,
    reverse: ActivationReverse,
    transpose: ActivationTranspose,
    mb_depth: u64,
    /// The OFM is written to memory in HWC order without reverse: a pixel's channels are
    /// contiguous (NHWC) or contiguous per 16-channel group (NHCWB16).
    plain_layout: bool,
}

impl Output {
    /// Reads the output registers. `scales` is the decoded scale/bias stream if the operation
    /// uses one (per-channel scale mode in `write_accumulator`).
    pub fn new(
        arch: &ArchConfig,
        regs: &RegisterFile,
        scales: Option<Scales>,
    ) -> Result<Output, Fault> {
        let ofm = Fm::ofm(regs);
        let p = regs.ofm_precision;
        let unsigned = !ofm.signed;
        let zp_raw = regs.ofm_zero_point.zero_point;
        let (zero_point, min, max) = if unsigned {
            (
                i64::from(zp_raw),
                i64::from(regs.activation_min.clip_boundary),
                i64::from(regs.activation_max.clip_boundary),
            )
        } else {
            (
                i64::from(zp_raw as i16),
                i64::from(regs.activation_min.clip_boundary as i16),
                i64::from(regs.activation_max.clip_boundary as i16),
            )
        };
        let b64 = p.activation_precision == ActivationPrecision::B64;
        if !b64 {
            if unsigned {
                check(
                    zero_point < 256 || zero_point == 32768,
                    "3.6.7",
                    "zero_point < 256 || zero_point == 32768",
                    || format!("unsigned OFM zero point {zero_point}"),
                )?;
            } else {
                check(
                    (-128..128).contains(&zero_point),
                    "3.6.7",
                    "-128 <= zero_point && zero_point < 128",
                    || format!("signed OFM zero point {zero_point}"),
                )?;
            }
        }
        let a = regs.activation;
        let act = Activation {
            b64,
            zero_point,
            min,
            max,
            function: a.activation_function,
            table: u32::from(a.table),
            clip: a.activation_clip_range,
        };
        act.check_table()?;
        let s = regs.ofm_scale;
        let needs_mb = p.activation_reverse == ActivationReverse::C;
        Ok(Output {
            ofm,
            dims: (
                u64::from(regs.ofm_height_m1.height_m1) + 1,
                u64::from(regs.ofm_width_m1.width_m1) + 1,
                u64::from(regs.ofm_depth_m1.depth_m1) + 1,
            ),
            blk: (
                u64::from(regs.ofm_blk_height_m1.height_m1) + 1,
                u64::from(regs.ofm_blk_width_m1.width_m1) + 1,
                u64::from(regs.ofm_blk_depth_m1.depth_m1) + 1,
            ),
            acc_output: regs.acc_format.acc_output == AccOutput::Enable,
            acc_bits: match regs.acc_format.acc_format {
                AccFormat::I32 => 32,
                AccFormat::I48 => 48,
            },
            scale_mode: p.scale_mode,
            scales,
            global: (i64::from(s.scale), u32::from(s.shift)),
            round: s.round_mode,
            dbl_rnd: u32::from(s.dbl_rnd),
            act,
            reverse: p.activation_reverse,
            transpose: p.activation_transpose,
            plain_layout: regs.acc_format.acc_output == AccOutput::Enable
                && matches!(
                    p.activation_storage,
                    ActivationStorage::Tile2x2 | ActivationStorage::Tile3x1
                )
                && p.activation_reverse == ActivationReverse::None
                && p.activation_transpose == ActivationTranspose::Hwc,
            mb_depth: if needs_mb {
                u64::from(microblock_depth(arch, regs)?)
            } else {
                16
            },
        })
    }

    /// Accumulator width in bits (32 or 48).
    pub fn acc_bits(&self) -> u32 {
        self.acc_bits
    }

    /// `rescale(acc, oc, mode)` of TRM 3.6.6.
    #[inline]
    pub fn rescale(&self, acc: i64, oc: u64, mode: Rescale) -> Result<i64, Fault> {
        self.rescale_checked(acc, oc, mode, true)
    }

    /// `rescale`; `acc_checks` applies the ACC_FORMAT range asserts (off for ELEMENTWISE, whose
    /// operand is its own result, not the accumulator: docs/decisions.md, simulator #9; and
    /// for RESIZE, whose operand is its int64 `acc << 16`: simulator #45).
    #[inline]
    pub fn rescale_checked(
        &self,
        acc: i64,
        oc: u64,
        mode: Rescale,
        acc_checks: bool,
    ) -> Result<i64, Fault> {
        let (scale, shift) = match mode {
            Rescale::None => return Ok(acc),
            Rescale::AvPool(d) => avgpool_scale(d),
            _ if self.scale_mode == OfmScaleMode::PerChannel => {
                check(
                    mode == Rescale::Normal,
                    "3.6.6",
                    "rescale_mode == rescale_mode_normal for per-channel scale",
                    || format!("{mode:?} with OFM_PRECISION.scale_mode == per_channel"),
                )?;
                let s = self.scales.as_ref().and_then(|s| s.scale.get(oc as usize));
                *s.ok_or_else(|| Fault::Scales(format!("no scale for channel {oc}")))?
            }
            _ => self.global,
        };
        if !acc_checks {
        } else if self.acc_bits == 32 {
            check(
                acc == sign_extend(acc, 32),
                "3.6.6",
                "acc == sign_extend(acc, 32)",
                || format!("accumulator {acc} does not fit the i32 format"),
            )?;
        } else {
            check(
                acc == sign_extend(acc, 48),
                "3.6.6",
                "acc == sign_extend(acc, 48)",
                || format!("accumulator {acc}"),
            )?;
            check(
                scale == sign_extend(scale, 16),
                "3.6.6",
                "scale == sign_extend(scale, 16) for i48",
                || format!("scale {scale}"),
            )?;
        }
        let result = if mode == Rescale::ShiftOnly {
            i128::from(acc)
        } else {
            match acc.checked_mul(scale) {
                Some(p) => i128::from(p),
                None => i128::from(acc) * i128::from(scale),
            }
        };
        Ok(rounded_shift_right(result, shift, self.round, self.dbl_rnd)? as i64)
    }

    /// `read_bias(oc)`: from the stream in per-channel mode, 0 in global mode (see
    /// docs/decisions.md, simulator, "bias in global scale mode").
    #[inline]
    pub fn bias(&self, oc: u64) -> i64 {
        match &self.scales {
            Some(s) if self.scale_mode == OfmScaleMode::PerChannel => {
                s.bias.get(oc as usize).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// `write_accumulator(oy, ox, oc, acc, mode)` of TRM 3.6.5.
    #[inline]
    pub fn write_accumulator(
        &self,
        st: &mut State,
        oy: u64,
        ox: u64,
        oc: u64,
        acc: i64,
        mode: Rescale,
    ) -> Result<(), Fault> {
        if self.acc_output {
            let acc = sign_extend(acc.wrapping_add(self.bias(oc)), self.acc_bits);
            let v = self.rescale(acc, oc, mode)?;
            let v = self.act.apply(v, st.mem.lut())?;
            self.write_ofm(st, oy, ox, oc, v, true)
        } else {
            let (bh, bw, bd) = self.blk;
            check(
                oy < bh && ox < bw && oc < bd,
                "3.6.5",
                "oy < ofm_block_height && ox < ofm_block_width && oc < ofm_block_depth",
                || format!("accumulator ({oy}, {ox}, {oc}) outside block {bh}x{bw}x{bd}"),
            )?;
            st.acc.write(self.blk, oy, ox, oc, acc);
            Ok(())
        }
    }

    /// `write_accumulator(oy, ox, oc0 + k, accs[k], mode)` for every `k`, in that order.
    ///
    /// When the OFM is written in plain HWC order, the values are computed first and each
    /// run of contiguous channels is written with one bounds check; the result, the traffic
    /// and COND_STATUS are those of the element-by-element writes. If anything would fail
    /// (an assert, an access outside the region), the pixel is redone element by element so
    /// that the partial writes and the diagnostic are exactly those of the TRM order.
    pub fn write_accumulators(
        &self,
        st: &mut State,
        (oy, ox, oc0): (u64, u64, u64),
        accs: &[i64],
        mode: Rescale,
        buf: &mut Vec<u8>,
    ) -> Result<(), Fault> {
        if !self.plain_layout
            || self.write_pixel_fast(st, (oy, ox, oc0), accs, mode, buf) != Some(())
        {
            for (k, &acc) in accs.iter().enumerate() {
                self.write_accumulator(st, oy, ox, oc0 + k as u64, acc, mode)?;
            }
        }
        Ok(())
    }

    /// The fast path of [`Output::write_accumulators`]; `None` when it cannot be taken (nothing
    /// has been written then).
    fn write_pixel_fast(
        &self,
        st: &mut State,
        (oy, ox, oc0): (u64, u64, u64),
        accs: &[i64],
        mode: Rescale,
        buf: &mut Vec<u8>,
    ) -> Option<()> {
        let (h, w, d) = self.dims;
        let n = accs.len() as u64;
        if accs.is_empty() || oy >= h || ox >= w || oc0 + n > d {
            return None;
        }
        let es = self.ofm.esize() as usize;
        let bits = 8 * es as u32;
        buf.clear();
        let mut last = 0;
        if self.dbl_rnd > 30 {
            return None;
        }
        let per_channel = self.scale_mode == OfmScaleMode::PerChannel;
        let (scales, biases): (&[(i64, u32)], &[i64]) = match &self.scales {
            Some(s) if per_channel => (&s.scale, &s.bias),
            _ => (&[], &[]),
        };
        if per_channel
            && mode != Rescale::Normal
            && !matches!(mode, Rescale::None | Rescale::AvPool(_))
        {
            return None;
        }
        let fixed = match mode {
            Rescale::AvPool(d) => Some(avgpool_scale(d)),
            _ if per_channel => None,
            _ => Some(self.global),
        };
        for (k, &acc) in accs.iter().enumerate() {
            let oc = oc0 + k as u64;
            // write_accumulator: bias, then the accumulator format (whose range assert in
            // rescale then holds by construction).
            let bias = if per_channel {
                biases.get(oc as usize).copied().unwrap_or(0)
            } else {
                0
            };
            let acc = sign_extend(acc.wrapping_add(bias), self.acc_bits);
            let v = if mode == Rescale::None {
                acc
            } else {
                let (scale, shift) = match fixed {
                    Some(s) => s,
                    None => *scales.get(oc as usize)?,
                };
                if shift > 63 || (self.acc_bits == 48 && scale != sign_extend(scale, 16)) {
                    return None;
                }
                let product = if mode == Rescale::ShiftOnly {
                    Some(acc)
                } else {
                    acc.checked_mul(scale)
                };
                let rounded = product.and_then(|p| {
                    if shift == 0 {
                        return Some(p);
                    }
                    let r = rounding_term_i64(p, shift, self.round, self.dbl_rnd)?;
                    Some(p.checked_add(r)? >> shift)
                });
                match rounded {
                    Some(v) => v,
                    None => self.rescale(acc, oc, mode).ok()?,
                }
            };
            let v = self.act.apply(v, st.mem.lut()).ok()?;
            last = truncate(v, bits, self.ofm.signed);
            buf.extend_from_slice(&last.to_le_bytes()[..es]);
        }
        // Runs of contiguous channels: the whole pixel (NHWC) or each 16-channel group
        // (NHCWB16). Every run is checked before any is written.
        let runs = || {
            let mut c = oc0;
            std::iter::from_fn(move || {
                (c < oc0 + n).then(|| {
                    let k = match self.ofm.format {
                        ActivationFormat::Nhwc => oc0 + n - c,
                        ActivationFormat::Nhcwb16 => (16 - (c & 15)).min(oc0 + n - c),
                    };
                    c += k;
                    (c - k, k)
                })
            })
        };
        for (c, k) in runs() {
            let a = self.ofm.addr(oy, ox, c).ok()?;
            st.mem
                .check_access(self.ofm.region, a, k * es as u64)
                .ok()?;
        }
        for (c, k) in runs() {
            let a = self.ofm.addr(oy, ox, c).ok()?;
            let from = (c - oc0) as usize * es;
            st.mem
                .write_bytes(Some(self.ofm.region), a, &buf[from..from + k as usize * es])
                .ok()?;
        }
        st.result_flag = (h == 1 && w == 1 && d == 1).then_some(last & 1 == 1);
        Some(())
    }

    /// Rescale, activation and write of an elementwise/resize result (no bias); `acc_checks`
    /// as for [`Output::rescale_checked`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        &self,
        st: &mut State,
        oy: u64,
        ox: u64,
        oc: u64,
        acc: i64,
        mode: Rescale,
        allowed_all: bool,
        acc_checks: bool,
    ) -> Result<(), Fault> {
        let v = self.rescale_checked(acc, oc, mode, acc_checks)?;
        let v = self.act.apply(v, st.mem.lut())?;
        self.write_ofm(st, oy, ox, oc, v, allowed_all)
    }

    /// Checks the transpose/reverse asserts of `write_ofm` once per operation.
    pub fn check_permutation(&self, allowed_all: bool) -> Result<(), Fault> {
        let (h, w, d) = self.blk;
        let (_, _, depth) = self.dims;
        let b64 = self.ofm.precision == ActivationPrecision::B64;
        let t = self.transpose;
        if self.ofm.storage == ActivationStorage::Chained {
            check(
                self.reverse == ActivationReverse::None,
                "3.6.5",
                "reverse == none for chained OFM",
                String::new,
            )?;
            check(
                t == ActivationTranspose::Hwc,
                "3.6.5",
                "transpose == HWC for chained OFM",
                String::new,
            )?;
            return Ok(());
        }
        if self.ofm.storage == ActivationStorage::None {
            return Ok(());
        }
        if self.reverse != ActivationReverse::None {
            check(
                t == ActivationTranspose::Hwc,
                "3.6.5",
                "transpose == HWC with reverse",
                String::new,
            )?;
            check(
                allowed_all,
                "3.6.5",
                "allowed_perms == allowed_perms_all with reverse",
                String::new,
            )?;
            check(!b64, "3.6.5", "precision != b64 with reverse", String::new)?;
            if self.reverse == ActivationReverse::C {
                let mb = self.mb_depth.max(16);
                if depth % mb != 0 {
                    check(self.ofm.format == ActivationFormat::Nhwc && d <= 16, "3.6.5", "format == nhwc && ofm_blk_depth <= 16 for C reverse of a depth not a multiple of max(16, microblock_depth())", || {
                        format!("depth {depth}, block depth {d}")
                    })?;
                }
            }
        }
        if self.ofm.format == ActivationFormat::Nhcwb16 {
            if matches!(t, ActivationTranspose::Hcw | ActivationTranspose::Chw) {
                check(w % 16 == 0, "3.6.5", "ofm_blk_width % 16 == 0", || {
                    format!("block width {w}")
                })?;
            }
            if matches!(t, ActivationTranspose::Cwh | ActivationTranspose::Wch) {
                check(h % 16 == 0, "3.6.5", "ofm_blk_height % 16 == 0", || {
                    format!("block height {h}")
                })?;
            }
        }
        check(
            matches!(
                t,
                ActivationTranspose::Hwc | ActivationTranspose::Hcw | ActivationTranspose::Chw
            ) || allowed_all,
            "3.6.5",
            "transpose == HWC || HCW || CHW || allowed_perms == allowed_perms_all",
            || t.name().to_string(),
        )?;
        check(
            t == ActivationTranspose::Hwc || !b64,
            "3.6.5",
            "transpose == HWC || precision != b64",
            String::new,
        )?;
        let lim = |ok: bool, rule: &'static str| {
            check(ok, "3.6.5", rule, || format!("block {h}x{w}x{d}"))
        };
        match t {
            ActivationTranspose::Hwc => {}
            ActivationTranspose::Whc => {
                lim(
                    w <= 128 && h <= 128,
                    "WHC: ofm_blk_width <= 128 && ofm_blk_height <= 128",
                )?;
            }
            ActivationTranspose::Hcw => lim(
                d <= 128 && w <= 1024,
                "HCW: ofm_blk_depth <= 128 && ofm_blk_width <= 1024",
            )?,
            ActivationTranspose::Cwh => lim(
                d <= 128 && h <= 1024,
                "CWH: ofm_blk_depth <= 128 && ofm_blk_height <= 1024",
            )?,
            ActivationTranspose::Chw => lim(d <= 128 && h <= 128 && w <= 1024, "CHW block limits")?,
            ActivationTranspose::Wch => lim(w <= 128 && d <= 128 && h <= 1024, "WCH block limits")?,
        }
        Ok(())
    }

    /// `write_ofm(y, x, c, value)` of TRM 3.6.5 (permutation asserts checked once per
    /// operation by [`Output::check_permutation`]).
    #[inline]
    pub fn write_ofm(
        &self,
        st: &mut State,
        y: u64,
        x: u64,
        c: u64,
        value: i64,
        _allowed_all: bool,
    ) -> Result<(), Fault> {
        let (h, w, d) = self.dims;
        check(
            y < h && x < w && c < d,
            "3.6.5",
            "0 <= y < ofm_height && 0 <= x < ofm_width && 0 <= c < ofm_depth",
            || format!("({y}, {x}, {c}) outside {h}x{w}x{d}"),
        )?;
        let bits = 8 * self.ofm.esize() as u32;
        let value = truncate(value, bits, self.ofm.signed);
        st.result_flag = (h == 1 && w == 1 && d == 1).then_some(value & 1 == 1);
        match self.ofm.storage {
            ActivationStorage::Chained => return st.fifo_push(self.ofm.region, value),
            ActivationStorage::None => return Ok(()),
            _ => {}
        }
        let (mut y, mut x, mut c) = (y, x, c);
        match self.reverse {
            ActivationReverse::None => {}
            ActivationReverse::H => y = h - 1 - y,
            ActivationReverse::W => x = w - 1 - x,
            ActivationReverse::C => c = d - 1 - c,
        }
        (y, x, c) = match self.transpose {
            ActivationTranspose::Hwc => (y, x, c),
            ActivationTranspose::Whc => (x, y, c),
            ActivationTranspose::Hcw => (y, c, x),
            ActivationTranspose::Cwh => (c, x, y),
            ActivationTranspose::Chw => (c, y, x),
            ActivationTranspose::Wch => (x, c, y),
        };
        let a = self.ofm.addr(y, x, c)?;
        st.mem
            .write_elem(self.ofm.region, a, self.ofm.esize(), value)
    }
}
