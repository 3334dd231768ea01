//! NPU_OP_CONV (TRM 3.10.2) and NPU_OP_DEPTHWISE (TRM 3.10.3).

use super::error::{check, Fault};
use super::fm::Fm;
use super::geometry::Geometry;
use super::input::{gather_ifm, gather_plain, Dense};
use super::output::{Output, Rescale};
use super::state::State;
use super::weights::{read_scales, read_weights};
use super::{acc_init, chain_input, validate, OpCounts};
use crate::arch::ArchConfig;
use crate::isa::{
    AccInput, AccOutput, ActivationPrecision, ActivationStorage, ActivationType, OfmScaleMode,
    RegisterFile, WeightFormat, WeightOrder, WeightSparsity,
};
use npuc_codecs::ordering::WeightShape;

#[inline]
fn dot32(a: &[i32], b: &[i32]) -> i64 {
    let s = a
        .iter()
        .zip(b)
        .fold(0i32, |s, (&x, &y)| s.wrapping_add(x.wrapping_mul(y)));
    i64::from(s)
}

#[inline]
fn dot64(a: &[i32], b: &[i32]) -> i64 {
    a.iter().zip(b).fold(0i64, |s, (&x, &y)| {
        s.wrapping_add(i64::from(x) * i64::from(y))
    })
}

#[inline]
fn dot16_32(a: &[i16], b: &[i16]) -> i64 {
    let s = a.iter().zip(b).fold(0i32, |s, (&x, &y)| {
        s.wrapping_add(i32::from(x) * i32::from(y))
    });
    i64::from(s)
}

#[inline]
fn dot16_64(a: &[i16], b: &[i16]) -> i64 {
    a.iter().zip(b).fold(0i64, |s, (&x, &y)| {
        s.wrapping_add(i64::from(i32::from(x) * i32::from(y)))
    })
}

/// `values` as i16 if every one fits.
fn to_i16<T: Copy + TryInto<i16>>(values: &[T]) -> Option<Vec<i16>> {
    values.iter().map(|&v| v.try_into().ok()).collect()
}

/// Copies the `kh x kw x c` receptive field whose tap (ky, kx) starts at `tap(ky, kx)` in
/// `inp` into `patch`, in [ky][kx][c] order.
fn gather_patch<T: Copy>(
    patch: &mut [T],
    inp: &[T],
    kh: usize,
    kw: usize,
    c: usize,
    dx: usize,
    tap: impl Fn(usize, usize) -> usize,
) {
    for ky in 0..kh {
        if dx == 1 {
            let start = tap(ky, 0);
            patch[ky * kw * c..(ky + 1) * kw * c].copy_from_slice(&inp[start..start + kw * c]);
        } else {
            for kx in 0..kw {
                let start = tap(ky, kx);
                let at = (ky * kw + kx) * c;
                patch[at..at + c].copy_from_slice(&inp[start..start + c]);
            }
        }
    }
}

fn check_common(regs: &RegisterFile, g: &Geometry, section: &'static str) -> Result<(), Fault> {
    check(
        g.kh_dil * g.kw_dil <= 64 * 64,
        section,
        "dilated_height*dilated_width <= 64*64",
        || format!("kernel {}x{}", g.kh_dil, g.kw_dil),
    )?;
    check(
        g.kh_dil <= 64 || g.kw_dil <= 64,
        section,
        "dilated_height <= 64 || dilated_width <= 64",
        || format!("kernel {}x{}", g.kh_dil, g.kw_dil),
    )?;
    let p = regs.ifm_precision;
    check(
        p.activation_precision == ActivationPrecision::B8
            || (p.activation_precision == ActivationPrecision::B16
                && p.activation_type == ActivationType::Signed),
        section,
        "precision == b8 || (precision == b16 && activation_type == signed)",
        || {
            format!(
                "IFM {} {}",
                p.activation_precision.name(),
                p.activation_type.name()
            )
        },
    )
}

fn scales_if_needed(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
    ofm_d: usize,
) -> Result<Option<super::weights::Scales>, Fault> {
    if regs.ofm_precision.scale_mode == OfmScaleMode::PerChannel
        && regs.acc_format.acc_output == AccOutput::Enable
    {
        Ok(Some(read_scales(arch, regs, &mut st.mem, ofm_d)?))
    } else {
        Ok(None)
    }
}

/// Executes NPU_OP_CONV.
pub fn conv(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
    weights_ifm2: bool,
) -> Result<OpCounts, Fault> {
    let g = Geometry::new(regs, "3.10.2")?;
    let use_ifm2 = weights_ifm2 || regs.acc_format.acc_input == AccInput::Ifm2;
    st.add_operation_to_chain(
        Some(chain_input(&Fm::ifm(regs))),
        use_ifm2.then(|| chain_input(&Fm::ifm2(regs))),
        false,
        chained_ofm(regs),
    )?;
    check_common(regs, &g, "3.10.2")?;
    if weights_ifm2 {
        let ks = regs.kernel_stride;
        check(
            g.kh_dil == 1
                && g.kw_dil == 1
                && g.ofm_h == 1
                && g.pad_top == 0
                && g.pad_left == 0
                && g.dy == 1
                && g.dx == 1
                && g.sy == 1
                && g.sx == 1,
            "3.10.2",
            "weights_ifm2: 1x1 kernel, ofm_height == 1, no padding, dilation or stride",
            || format!("{g:?}"),
        )?;
        check(
            regs.ifm_precision.activation_precision == regs.ifm2_precision.activation_precision
                && regs.acc_format.acc_input != AccInput::Ifm2
                && regs.weight_format.weight_sparsity == WeightSparsity::None
                && ks.weight_order == WeightOrder::DepthFirst,
            "3.10.2",
            "weights_ifm2: IFM2 precision == IFM precision, acc_input != ifm2, no sparsity, depth_first",
            String::new,
        )?;
    }
    let ifm = Fm::ifm(regs);
    let (ph, pw) = g.padded();
    let check_only = !weights_ifm2 && validate::check_only_op(regs, st);
    let dense = if check_only {
        let dims = (g.ifm_h, g.ifm_w, g.ifm_d);
        validate::check_ifm_read(&ifm, st, regs.ifm_upscale.mode, dims)?;
        Dense::default()
    } else {
        gather_ifm(
            &ifm,
            st,
            regs.ifm_upscale.mode,
            (g.ifm_h, g.ifm_w, g.ifm_d),
            (ph, pw),
            (g.pad_top, g.pad_left),
            0,
        )?
    };
    check_upscale(regs, &g)?;
    let (c, kh, kw) = (g.ifm_d, g.kh, g.kw);
    let mut counts = OpCounts::default();
    let wv: Vec<i32> = if weights_ifm2 {
        // B is read at (0, x = oc, c = ic): A x B^T (docs/decisions.md, simulator #25).
        let b = gather_plain(&Fm::ifm2(regs), st, (1, g.ofm_d, c))?;
        let mut w = vec![0i32; g.ofm_d * c];
        for ic in 0..c {
            for oc in 0..g.ofm_d {
                w[oc * c + ic] = b.at(0, oc, ic) as i32;
            }
        }
        w
    } else {
        let shape = WeightShape {
            ofm_depth: g.ofm_d,
            kernel_height: kh,
            kernel_width: kw,
            ifm_depth: c,
        };
        let w = read_weights(arch, regs, &mut st.mem, shape, false, !check_only)?;
        counts.weight_bytes = w.bytes;
        w.values
    };
    let scales = scales_if_needed(arch, regs, st, g.ofm_d)?;
    counts.scale_bytes = scales.as_ref().map_or(0, |s| s.bytes);
    let out = Output::new(arch, regs, scales)?;
    out.check_permutation(true)?;
    counts.macs = (g.ofm_h * g.ofm_w * g.ofm_d * kh * kw * c) as u64;
    if check_only {
        validate::check_accumulator_writes(&out, st, Rescale::Normal)?;
        return Ok(counts);
    }
    let inp: Vec<i32> = dense.data.iter().map(|&v| v as i32).collect();
    let acc32 = out.acc_bits() == 32;
    let keep_init = regs.acc_format.acc_input != AccInput::Reset;
    let ifm2 = Fm::ifm2(regs);
    let ktaps = kh * kw * c;
    // Operands as i16 when they fit (always for the precisions CONV permits: b8 minus its
    // zero point, or signed b16 with zero point 0): products are then exact in i32.
    let narrow = (to_i16(&inp), to_i16(&wv));
    let mut patch16 = vec![0i16; ktaps];
    let mut patch32 = vec![0i32; ktaps];
    let mut acc = vec![0i64; g.ofm_d];
    let mut buf = Vec::new();
    for oy in 0..g.ofm_h {
        for ox in 0..g.ofm_w {
            // The receptive field of (oy, ox) in [ky][kx][c] order, as the weights are.
            let tap =
                |ky: usize, kx: usize| ((oy * g.sy + ky * g.dy) * pw + ox * g.sx + kx * g.dx) * c;
            match &narrow {
                (Some(i16s), Some(w16)) => {
                    gather_patch(&mut patch16, i16s, kh, kw, c, g.dx, tap);
                    for (a, wo) in acc.iter_mut().zip(w16.chunks_exact(ktaps)) {
                        *a = if acc32 {
                            dot16_32(&patch16, wo)
                        } else {
                            dot16_64(&patch16, wo)
                        };
                    }
                }
                _ => {
                    gather_patch(&mut patch32, &inp, kh, kw, c, g.dx, tap);
                    for (a, wo) in acc.iter_mut().zip(wv.chunks_exact(ktaps)) {
                        *a = if acc32 {
                            dot32(&patch32, wo)
                        } else {
                            dot64(&patch32, wo)
                        };
                    }
                }
            }
            if keep_init {
                for (oc, &s) in acc.iter().enumerate() {
                    let init = acc_init(regs, st, &ifm2, &out, oy, ox, oc, 0)?;
                    out.write_accumulator(
                        st,
                        oy as u64,
                        ox as u64,
                        oc as u64,
                        init.wrapping_add(s),
                        Rescale::Normal,
                    )?;
                }
            } else {
                out.write_accumulators(
                    st,
                    (oy as u64, ox as u64, 0),
                    &acc,
                    Rescale::Normal,
                    &mut buf,
                )?;
            }
        }
    }
    Ok(counts)
}

/// Executes NPU_OP_DEPTHWISE.
pub fn depthwise(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
) -> Result<OpCounts, Fault> {
    let g = Geometry::new(regs, "3.10.3")?;
    let use_ifm2 = regs.acc_format.acc_input == AccInput::Ifm2;
    st.add_operation_to_chain(
        Some(chain_input(&Fm::ifm(regs))),
        use_ifm2.then(|| chain_input(&Fm::ifm2(regs))),
        false,
        chained_ofm(regs),
    )?;
    check_common(regs, &g, "3.10.3")?;
    check(
        regs.weight_format.weight_format != WeightFormat::Fwd,
        "3.10.3",
        "weight_format != fwd",
        String::new,
    )?;
    check(
        regs.weight_format.weight_sparsity == WeightSparsity::None,
        "3.10.3",
        "weight_sparsity == none",
        String::new,
    )?;
    let ifm = Fm::ifm(regs);
    let (ph, pw) = g.padded();
    let c = g.ofm_d;
    let check_only = validate::check_only_op(regs, st);
    let dense = if check_only {
        validate::check_ifm_read(&ifm, st, regs.ifm_upscale.mode, (g.ifm_h, g.ifm_w, c))?;
        Dense::default()
    } else {
        gather_ifm(
            &ifm,
            st,
            regs.ifm_upscale.mode,
            (g.ifm_h, g.ifm_w, c),
            (ph, pw),
            (g.pad_top, g.pad_left),
            0,
        )?
    };
    check_upscale(regs, &g)?;
    let (kh, kw) = (g.kh, g.kw);
    let shape = WeightShape {
        ofm_depth: c,
        kernel_height: kh,
        kernel_width: kw,
        ifm_depth: 1,
    };
    let w = read_weights(arch, regs, &mut st.mem, shape, true, !check_only)?;
    let mut counts = OpCounts {
        weight_bytes: w.bytes,
        macs: (g.ofm_h * g.ofm_w * c * kh * kw) as u64,
        ..OpCounts::default()
    };
    let scales = scales_if_needed(arch, regs, st, c)?;
    counts.scale_bytes = scales.as_ref().map_or(0, |s| s.bytes);
    let out = Output::new(arch, regs, scales)?;
    out.check_permutation(true)?;
    if check_only {
        validate::check_accumulator_writes(&out, st, Rescale::Normal)?;
        return Ok(counts);
    }
    // [ky][kx][c] so that the inner loop runs over channels.
    let mut wt = vec![0i64; kh * kw * c];
    for oc in 0..c {
        for k in 0..kh * kw {
            wt[k * c + oc] = i64::from(w.values[oc * kh * kw + k]);
        }
    }
    let inp: Vec<i32> = dense.data.iter().map(|&v| v as i32).collect();
    let keep_init = regs.acc_format.acc_input != AccInput::Reset;
    let ifm2 = Fm::ifm2(regs);
    // With 32-bit accumulators that are rescaled (acc_output enable), the sum modulo 2^32
    // is all that matters (write_accumulator sign-extends it from bit 31): accumulate in i32.
    let wrap32 = out.acc_bits() == 32 && regs.acc_format.acc_output == AccOutput::Enable;
    let wt32: Vec<i32> = if wrap32 {
        wt.iter().map(|&v| v as i32).collect()
    } else {
        Vec::new()
    };
    let mut acc = vec![0i64; c];
    let mut acc32 = vec![0i32; c];
    let mut buf = Vec::new();
    for oy in 0..g.ofm_h {
        for ox in 0..g.ofm_w {
            let tap =
                |ky: usize, kx: usize| ((oy * g.sy + ky * g.dy) * pw + ox * g.sx + kx * g.dx) * c;
            if wrap32 {
                acc32.fill(0);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let start = tap(ky, kx);
                        let a = &inp[start..start + c];
                        let b = &wt32[(ky * kw + kx) * c..(ky * kw + kx + 1) * c];
                        for ((s, &x), &y) in acc32.iter_mut().zip(a).zip(b) {
                            *s = s.wrapping_add(x.wrapping_mul(y));
                        }
                    }
                }
                for (s, &v) in acc.iter_mut().zip(&acc32) {
                    *s = i64::from(v);
                }
            } else {
                acc.fill(0);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let start = tap(ky, kx);
                        let a = &inp[start..start + c];
                        let b = &wt[(ky * kw + kx) * c..(ky * kw + kx + 1) * c];
                        for ((s, &x), &y) in acc.iter_mut().zip(a).zip(b) {
                            *s = s.wrapping_add(i64::from(x) * y);
                        }
                    }
                }
            }
            if keep_init {
                for (oc, &s) in acc.iter().enumerate() {
                    let init = acc_init(regs, st, &ifm2, &out, oy, ox, oc, 0)?;
                    out.write_accumulator(
                        st,
                        oy as u64,
                        ox as u64,
                        oc as u64,
                        init.wrapping_add(s),
                        Rescale::Normal,
                    )?;
                }
            } else {
                out.write_accumulators(
                    st,
                    (oy as u64, ox as u64, 0),
                    &acc,
                    Rescale::Normal,
                    &mut buf,
                )?;
            }
        }
    }
    Ok(counts)
}

/// The OFM's chaining FIFO if its storage is chained.
pub fn chained_ofm(regs: &RegisterFile) -> Option<u8> {
    (regs.ofm_precision.activation_storage == ActivationStorage::Chained)
        .then_some(regs.ofm_region.region)
}

/// `read_ifm` upscale asserts (TRM 3.6.5): stride 1 and not chained.
pub fn check_upscale(regs: &RegisterFile, g: &Geometry) -> Result<(), Fault> {
    if regs.ifm_upscale.mode != crate::isa::IfmUpscaleMode::None {
        check(
            g.sx == 1 && g.sy == 1,
            "3.6.5",
            "read_kernel_x_stride()==1 && read_kernel_y_stride()==1 with upscale",
            || format!("stride {}x{}", g.sy, g.sx),
        )?;
    }
    Ok(())
}
