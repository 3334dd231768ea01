//! RESIZE (bilinear and nearest neighbour) as one NPU_OP_RESIZE (one per image when the
//! batch is above 1, on windows of the input and output buffers).
//!
//! The IR's integer RESIZE (TOSA §2.12.1) samples `y = oy * d + offset` in units of `1 / n`;
//! the NPU walks the same positions from RESIZE_*_OFFSET in steps of `d / n` (integer part
//! and remainder), so `n`, `d` and `offset` carry over, after dividing out a common power of
//! two (which keeps the accumulator small). The bilinear sum (weights summing to `ny * nx`)
//! is shifted left by 16 and rescaled shift-only.
//!
//! * Bilinear, as the TFLite frontend lowers it: RESIZE (i32) -> `acc + (acc >> 31)` ->
//!   RESCALE by `2^a >> s` with single rounding: `acc / 2^(s-a)` rounded half away from zero,
//!   which is OFM_SCALE shift `16 + s - a` (less the divided-out powers) in round mode
//!   symmetric.
//! * Bilinear in the TOSA form: RESIZE (i32) -> RESCALE by `2^a >> s` with single rounding
//!   (half up): the same shift in round mode natural.
//! * Bilinear i8 -> i32 read by no power-of-two-division RESCALE alone (TOSA's sums as a
//!   result, or rescaled by any other multiplier: align_corners, fractional half-pixel
//!   scales): the axes kept unreduced and OFM_SCALE shift 16 (the least the TRM allows), so
//!   the i32 OFM is the exact sum, no clamp (decision L32); a RESCALE reading it runs on its own.
//! * Bilinear i16 -> i48 read by anything but one power-of-two-division RESCALE: the same
//!   exact sums, written as 8-byte words for the readers' RESCALEs (decision L33).
//! * Nearest neighbour (i8 -> i8, i16 -> i16): the picked value, OFM_SCALE shift 16.
//!
//! 16-bit inputs sum in i48 (TFLite's int16 form narrows the sum to i32 with an identity
//! RESCALE before the same tail; it is fused) and run with ACC_FORMAT i48.

use crate::elementwise::arith::NO_CLIP;
use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, Requant};
use npuc_backend::isa::{AccFormat, RoundModeOfm};
use npuc_ir::{DType, Op, OpId, RescaleAttrs, RescaleRounding, ResizeMode, TensorId};

/// One axis of a resize: position `i * d + offset` in units of `1 / n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResizeAxis {
    pub n: u32,
    pub d: u32,
    pub offset: i32,
}

/// NPU_OP_RESIZE parameters (y, x).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResizeParams {
    pub mode: npuc_backend::isa::ResizeMode,
    pub y: ResizeAxis,
    pub x: ResizeAxis,
}

/// Whether RESCALE `r` is a per-tensor division by a power of two with single rounding (double
/// rounding applies only above shift 31): the form the resize's OFM_SCALE shift takes. A sum
/// read by any other RESCALE is written exact, and the RESCALE runs on its own.
fn is_division(r: &RescaleAttrs) -> bool {
    r.multiplier.len() == 1
        && r.multiplier[0] > 0
        && r.multiplier[0].count_ones() == 1
        && (r.rounding == RescaleRounding::SingleRound || r.shift[0] <= 31)
}

/// Divides the largest common power of two out of `n`, `d` and `offset`; returns the axis and
/// the log2 of the divisor.
fn reduce_axis(n: i64, d: i64, offset: i64) -> (ResizeAxis, u32) {
    let mut k = 0;
    while k < 11 && (n >> k) % 2 == 0 && (d >> k) % 2 == 0 && (offset >> k) % 2 == 0 {
        k += 1;
    }
    let axis = ResizeAxis {
        n: (n >> k) as u32,
        d: (d >> k) as u32,
        offset: (offset >> k) as i32,
    };
    (axis, k)
}

impl<'g> Ctx<'g> {
    /// The bilinear tail `acc + (acc >> 31)` -> RESCALE; returns (ARS, ADD, RESCALE) ops.
    fn bilinear_tail(&self, acc: TensorId) -> Option<(OpId, OpId, OpId)> {
        if self.g.outputs().contains(&acc) {
            return None;
        }
        let consumers = self.g.consumers(acc);
        if consumers.len() != 2 {
            return None;
        }
        let ids: Vec<OpId> = consumers.iter().map(|c| c.0).collect();
        let ars = *ids.iter().find(|&&c| {
            let n = self.node(c);
            matches!(n.op, Op::ArithmeticRightShift(_))
                && n.inputs()[0] == acc
                && self
                    .const_data(n.inputs()[1])
                    .is_some_and(|d| d.to_i64_vec().iter().all(|&v| v == 31))
        })?;
        let add = *ids.iter().find(|&&c| c != ars)?;
        let sign = self.node(ars).outputs()[0];
        let an = self.node(add);
        let ins = an.inputs();
        let pair_ok = (ins[0] == acc && ins[1] == sign) || (ins[0] == sign && ins[1] == acc);
        if !matches!(an.op, Op::Add) || !pair_ok || self.sole_consumer(sign) != Some(add) {
            return None;
        }
        let r = self.sole_consumer(an.outputs()[0])?;
        matches!(self.node(r).op, Op::Rescale(_)).then_some((ars, add, r))
    }

    /// The sole consumer of `acc` if it is a RESCALE to i32 that keeps every value (a power
    /// of two multiplier and the same shift, zero points 0) and `|acc| <= bound < 2^31`.
    fn exact_narrowing(&self, acc: TensorId, bound: u64) -> Option<OpId> {
        let c = self.sole_consumer(acc)?;
        let Op::Rescale(r) = &self.node(c).op else {
            return None;
        };
        let identity = r.multiplier.len() == 1
            && r.shift[0] < 31
            && i64::from(r.multiplier[0]) == 1i64 << r.shift[0];
        (identity
            && r.output_dtype == DType::Int32
            && r.input_zp == 0
            && r.output_zp == 0
            && !r.input_unsigned
            && bound < 1 << 31)
            .then_some(c)
    }

    /// Whether bilinear RESIZE `o` writes its sums themselves: i8 data whose i32 sums no
    /// RESCALE reads alone (decision L32), or i16 data whose i48 sums are read by anything
    /// but one power-of-two-division RESCALE (kept in memory as 8-byte words, decision L33).
    /// The NPU's `acc << 16` with OFM shift 16 (the least it takes) is the exact sum, written
    /// without a clamp.
    fn raw_bilinear_sum(&self, o: OpId) -> bool {
        let node = self.node(o);
        let Op::Resize(a) = &node.op else {
            return false;
        };
        let out = node.outputs()[0];
        let divides = |r: Option<OpId>| {
            r.is_some_and(|c| matches!(&self.node(c).op, Op::Rescale(r) if is_division(r)))
        };
        let division = divides(self.sole_consumer(out));
        let tail = self.bilinear_tail(out);
        let (din, dout) = (self.dtype(node.inputs()[0]), self.dtype(out));
        a.mode == ResizeMode::Bilinear
            && match (din, dout) {
                (DType::Int8, DType::Int32) => !division && !divides(tail.map(|t| t.2)),
                (DType::Int16, DType::Int48) => !division && tail.is_none(),
                _ => false,
            }
    }

    pub(super) fn lower_resize(&mut self, o: OpId) -> Result<(), LowerError> {
        let node = self.node(o);
        let Op::Resize(a) = &node.op else {
            unreachable!("lower_resize on another op")
        };
        let x = node.inputs()[0];
        if !matches!(self.dtype(x), DType::Int8 | DType::Int16) {
            return Err(unsupported(node, "RESIZE of i8 or i16 feature maps only"));
        }
        // The largest |IFM value|: the bilinear sum is at most that times ny * nx.
        let vmax = -self.dtype(x).min_value() as u64;
        let [yn, yd, xn, xd] = a.scale;
        let raw = self.raw_bilinear_sum(o);
        let (mut y, ky) = reduce_axis(yn, yd, a.offset[0]);
        let (mut xa, kx) = reduce_axis(xn, xd, a.offset[1]);
        if raw {
            // The sum itself is the result: weights summing to `ny * nx` unreduced.
            (y, xa) = (
                ResizeAxis {
                    n: yn as u32,
                    d: yd as u32,
                    offset: a.offset[0] as i32,
                },
                ResizeAxis {
                    n: xn as u32,
                    d: xd as u32,
                    offset: a.offset[1] as i32,
                },
            );
        }
        let mut names = vec![node.name.clone()];
        let (out_t, act, ozp, shift, round, mode) = match a.mode {
            ResizeMode::NearestNeighbor => {
                let (t, act) = self.fuse_clamp(node.outputs()[0], &mut names);
                let m = npuc_backend::isa::ResizeMode::Nearest;
                (t, act, 0, 16u32, RoundModeOfm::Natural, m)
            }
            ResizeMode::Bilinear if raw => {
                let m = npuc_backend::isa::ResizeMode::Bilinear;
                (node.outputs()[0], NO_CLIP, 0, 16, RoundModeOfm::Natural, m)
            }
            ResizeMode::Bilinear => {
                // A 16-bit resize sums in i48; TFLite's int16 form narrows it to i32 first
                // (an exact identity RESCALE, fused: the NPU keeps the sum in the accumulator).
                let mut acc_t = node.outputs()[0];
                let mut narrow = vec![];
                if let Some(c) = self.exact_narrowing(acc_t, vmax * (yn * xn) as u64) {
                    narrow.push(c);
                    acc_t = self.node(c).outputs()[0];
                }
                // TFLite: acc + (acc >> 31) -> RESCALE (half away from zero); TOSA: RESCALE
                // directly (single rounding: half up).
                let (extra, rop, round) = match self.bilinear_tail(acc_t) {
                    Some((ars, add, r)) => (vec![ars, add], r, RoundModeOfm::Symmetric),
                    None => {
                        let r = self
                            .sole_consumer(acc_t)
                            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
                            .ok_or_else(|| {
                                unsupported(
                                    node,
                                    "bilinear RESIZE must feed a RESCALE (optionally after acc + (acc >> 31))",
                                )
                            })?;
                        (vec![], r, RoundModeOfm::Natural)
                    }
                };
                let rnode = self.node(rop);
                let Op::Rescale(r) = &rnode.op else {
                    unreachable!()
                };
                self.check_rescale_out(rnode, r)?;
                let m = r.multiplier[0];
                let s = i64::from(r.shift[0]);
                if !is_division(r) {
                    return Err(unsupported(
                        rnode,
                        "bilinear RESIZE rescale must be a power-of-two division",
                    ));
                }
                // `acc + (acc >> 31)` then a division by 2^0 keeps the -1 of negative sums:
                // only a real division rounds half away from zero.
                if round == RoundModeOfm::Symmetric && s <= i64::from(m.trailing_zeros()) {
                    return Err(unsupported(
                        rnode,
                        "bilinear RESIZE sign adjustment without a division",
                    ));
                }
                let k = s - i64::from(m.trailing_zeros()) - i64::from(ky + kx);
                if !(0..=47).contains(&k) {
                    return Err(unsupported(rnode, "bilinear RESIZE rescale shift"));
                }
                for f in narrow.into_iter().chain(extra).chain([rop]) {
                    self.fused.insert(f);
                    names.push(self.node(f).name.clone());
                }
                let (t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);
                let m = npuc_backend::isa::ResizeMode::Bilinear;
                (t, act, r.output_zp, 16 + k as u32, round, m)
            }
        };
        // A batch above 1: one operation per image, on windows of the buffers.
        let batch = match self.dims(x) {
            [n, h, w, c] if *n > 1 => Some((*n, (*h, *w, *c))),
            _ => None,
        };
        let wide = raw && self.dtype(out_t) == DType::Int48;
        let (ifm, ofm) = match batch {
            None if wide => {
                let ifm = self.fm(node, x, true, 0)?;
                let shape = self.hwc(node, out_t, true)?;
                (ifm, self.i48_ofm(out_t, shape))
            }
            None => {
                let ifm = self.fm(node, x, true, 0)?;
                (ifm, self.ofm(node, out_t, true, ozp)?)
            }
            Some((_, (h, w, c))) => {
                let od = self.dims(out_t);
                let big = |v: usize| v > 65536;
                if [h, w, c, od[1], od[2]].into_iter().any(big) {
                    return Err(unsupported(node, "a dimension above 65536"));
                }
                let ifm = self.fm_shaped(node, x, (h as u32, w as u32, c as u32), 0)?;
                let oshape = (od[1] as u32, od[2] as u32, c as u32);
                if wide {
                    (ifm, self.i48_ofm(out_t, oshape))
                } else {
                    (ifm, self.ofm_shaped(node, out_t, oshape, ozp)?)
                }
            }
        };
        // An offset of `q` whole input rows or columns or more (TOSA allows up to 16 n, the
        // NPU less than n) samples nothing before them: the IFM starts `q` rows or columns
        // later and the offset keeps its remainder (decision L48).
        let mut ifm = ifm;
        let image =
            u64::from(ifm.shape.0 * ifm.shape.1 * ifm.shape.2) * u64::from(ifm.elem_bytes());
        let (sy, sx) = ifm.strides();
        for (axis, stride, along_y) in [(&mut y, sy, true), (&mut xa, sx, false)] {
            let n = i64::from(axis.n);
            let q = i64::from(axis.offset).div_euclid(n);
            let side = if along_y { ifm.shape.0 } else { ifm.shape.1 };
            if q > 0 && q < i64::from(side) {
                axis.offset -= (q * n) as i32;
                ifm.view.offset += q as u64 * stride;
                ifm.view.strides = Some((sy, sx));
                match along_y {
                    true => ifm.shape.0 -= q as u32,
                    false => ifm.shape.1 -= q as u32,
                }
            }
        }
        let (ih, iw, _) = ifm.shape;
        let (oh, ow, _) = ofm.shape;
        // IFM rows/columns read: up to the last output's sample position + 1 (KERNEL_*_M1).
        let read = |ax: &ResizeAxis, o: u32, i: u32| -> Option<u32> {
            let n = i64::from(ax.n);
            let last = (i64::from(o) - 1) * i64::from(ax.d) + i64::from(ax.offset);
            let int = last.div_euclid(n);
            let ok = ax.n <= 2048
                && (-n..n).contains(&i64::from(ax.offset))
                && i64::from(ax.d) / n < 16
                && int < i64::from(i);
            ok.then(|| (int + 1).clamp(0, i64::from(i) - 1) as u32 + 1)
        };
        let (Some(kh), Some(kw)) = (read(&y, oh, ih), read(&xa, ow, iw)) else {
            return Err(unsupported(
                node,
                "RESIZE scale/offset outside the NPU's ranges",
            ));
        };
        // The accumulator (|v| <= vmax times ny * nx) shifted left by 16 must fit the format.
        let bound = (vmax * u64::from(y.n) * u64::from(xa.n)) << 16;
        let acc = if bound < 1 << 31 {
            AccFormat::I32
        } else {
            AccFormat::I48
        };
        if wide && bound >= 1 << 47 {
            return Err(unsupported(
                node,
                "bilinear RESIZE sums beyond the 48-bit accumulator",
            ));
        }
        let op = NpuOp::resize(
            ResizeParams { mode, y, x: xa },
            self.node(o).name.clone(),
            names,
            ifm,
            ofm,
            act,
        )
        .with_kernel_size((kh, kw))
        .with_requant(Requant::Global {
            scale: 1,
            shift: shift as u8,
        })
        .with_round(round)
        .with_acc(acc);
        let (n, (istep, ostep)) = match batch {
            None => (1, (0, 0)),
            Some((n, _)) => {
                let bytes = |f: &Fm| {
                    u64::from(f.shape.0 * f.shape.1 * f.shape.2) * u64::from(f.elem_bytes())
                };
                (n, (image, bytes(&op.ofm)))
            }
        };
        for b in 0..n as u64 {
            let mut op = op.clone();
            op.ifm.view.offset += b * istep;
            op.ofm.view.offset += b * ostep;
            self.push(op);
        }
        Ok(())
    }
}
