//! NPU_OP_POOL (TRM 3.10.10).

use super::conv::{chained_ofm, check_upscale};
use super::error::{check, Fault};
use super::fm::Fm;
use super::geometry::Geometry;
use super::input::gather_ifm;
use super::output::{Output, Rescale};
use super::state::State;
use super::weights::read_scales;
use super::{acc_init, chain_input, validate, OpCounts};
use crate::arch::ArchConfig;
use crate::isa::{
    AccFormat, AccInput, AccOutput, ActivationPrecision, ActivationStorage, ActivationType,
    IfmUpscaleMode, KernelDecomposition, KernelDilation, OfmScaleMode, PoolingMode, RegisterFile,
    WeightOrder,
};

const S: &str = "3.10.10";

fn check_mode(regs: &RegisterFile, g: &Geometry, mode: PoolingMode) -> Result<(), Fault> {
    let (kh, kw) = (g.kh_dil, g.kw_dil);
    let up = regs.ifm_upscale.mode;
    let ks = regs.kernel_stride;
    let p = regs.ifm_precision.activation_precision;
    let d8 = ks.decomposition == KernelDecomposition::D8x8;
    let s1 = g.sx == 1 && g.sy == 1;
    let detail = || {
        format!(
            "kernel {kh}x{kw}, stride {}x{}, ofm {}x{}, upscale {}, IFM {}",
            g.sy,
            g.sx,
            g.ofm_h,
            g.ofm_w,
            up.name(),
            p.name()
        )
    };
    let (ok, rule) = match mode {
        PoolingMode::Max | PoolingMode::Min => (
            kh * kw <= 65536 && (kh <= 256 || kw <= 256) && up != IfmUpscaleMode::Zeros,
            "max/min: kernel_height*kernel_width <= 65536, one dimension <= 256, upscale != zeros",
        ),
        PoolingMode::Average => (
            kh <= 8
                && kw <= 8
                && usize::from(regs.ifm_pad_top.pad.max(regs.ifm_pad_bottom.pad)) < kh
                && usize::from(regs.ifm_pad_left.pad.max(regs.ifm_pad_right.pad)) < kw
                && d8
                && p != ActivationPrecision::B32,
            "average: kernel <= 8x8, each pad < kernel dimension, d8x8, IFM not b32",
        ),
        PoolingMode::ReduceSum => (
            kh == 1
                && kw == 1
                && s1
                && up == IfmUpscaleMode::None
                && ks.weight_order == WeightOrder::DepthFirst
                && regs.ifm_zero_point.zero_point == 0,
            "reduce_sum: 1x1 kernel, stride 1, no upscale, depth_first, IFM zero point 0",
        ),
        PoolingMode::Sum => (p != ActivationPrecision::B32, "sum: IFM not b32"),
        PoolingMode::ArgmaxX => (
            p != ActivationPrecision::B32
                && d8
                && kh == 1
                && s1
                && g.ofm_w == 1
                && up == IfmUpscaleMode::None,
            "argmax_x: IFM not b32, d8x8, kernel_height == 1, stride 1, ofm_width == 1, no upscale",
        ),
        PoolingMode::ArgmaxY => (
            p != ActivationPrecision::B32
                && d8
                && kw == 1
                && s1
                && g.ofm_h == 1
                && up == IfmUpscaleMode::None,
            "argmax_y: IFM not b32, d8x8, kernel_width == 1, stride 1, ofm_height == 1, no upscale",
        ),
        PoolingMode::None => (true, ""),
    };
    check(ok, S, rule, detail)
}

/// Executes NPU_OP_POOL.
pub fn pool(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
    mode: PoolingMode,
) -> Result<OpCounts, Fault> {
    let g = Geometry::new(regs, S)?;
    let ks = regs.kernel_stride;
    check(
        ks.dilation_x == KernelDilation::None && ks.dilation_y == KernelDilation::None,
        S,
        "dilation_x + 1 == 1 && dilation_y + 1 == 1",
        String::new,
    )?;
    let use_ifm = mode != PoolingMode::None;
    let use_ifm2 = regs.acc_format.acc_input == AccInput::Ifm2;
    st.add_operation_to_chain(
        use_ifm.then(|| chain_input(&Fm::ifm(regs))),
        use_ifm2.then(|| chain_input(&Fm::ifm2(regs))),
        false,
        chained_ofm(regs),
    )?;
    if mode == PoolingMode::None {
        check(
            regs.ofm_precision.activation_storage != ActivationStorage::Chained,
            S,
            "activation_storage != chained for pooling mode none",
            String::new,
        )?;
    }
    let ip = regs.ifm_precision;
    check(
        ip.activation_precision == ActivationPrecision::B8
            || (matches!(
                ip.activation_precision,
                ActivationPrecision::B16 | ActivationPrecision::B32
            ) && ip.activation_type == ActivationType::Signed),
        S,
        "precision == b8 || (precision == b16|b32 && activation_type == signed)",
        || {
            format!(
                "IFM {} {}",
                ip.activation_precision.name(),
                ip.activation_type.name()
            )
        },
    )?;
    check_mode(regs, &g, mode)?;
    // decisions.md simulator #39: the PC asks for i32 here, but argmax also runs with i48
    // (Vela 5.2's int64 ARG_MAX: i48 accumulator, b64 OFM); `v + 65536 * k` needs 33 bits
    // for kernels wider than 32767 anyway.
    let argmax = matches!(mode, PoolingMode::ArgmaxX | PoolingMode::ArgmaxY);
    check(
        matches!(
            mode,
            PoolingMode::Sum | PoolingMode::ReduceSum | PoolingMode::None
        ) || regs.acc_format.acc_format == AccFormat::I32
            || (argmax && regs.acc_format.acc_format == AccFormat::I48),
        S,
        "acc_format == i32 except for sum, reduce_sum and none (argmax: i32 or i48)",
        || {
            format!(
                "{} with acc_format {:?}",
                mode.name(),
                regs.acc_format.acc_format.name()
            )
        },
    )?;
    let mut counts = OpCounts::default();
    let scales = if regs.ofm_precision.scale_mode == OfmScaleMode::PerChannel
        && regs.acc_format.acc_output == AccOutput::Enable
    {
        let s = read_scales(arch, regs, &mut st.mem, g.ofm_d)?;
        counts.scale_bytes = s.bytes;
        Some(s)
    } else {
        None
    };
    let out = Output::new(arch, regs, scales)?;
    out.check_permutation(true)?;
    let ifm = Fm::ifm(regs);
    let ifm2 = Fm::ifm2(regs);
    let keep_init = regs.acc_format.acc_input != AccInput::Reset;
    // Check-only (validation): with the accumulators reset, every element's rules are its
    // channel's rescale rules (`write_accumulator`) and the addresses; an average's rescale
    // depends on its tap count only through the shift `avgpool_scale` makes (30 to 36, always
    // within the assert), so any count stands for all.
    let check_only = validate::check_only_op(regs, st);
    let rescale_rules = if mode == PoolingMode::Average {
        Rescale::AvPool(1)
    } else {
        Rescale::Normal
    };
    if mode == PoolingMode::ReduceSum {
        check(g.ofm_d == 1, S, "ofm_depth == 1 for reduce_sum", || {
            format!("ofm depth {}", g.ofm_d)
        })?;
        if check_only {
            let dims = (g.ofm_h, g.ofm_w, g.ifm_d);
            validate::check_ifm_read(&ifm, st, IfmUpscaleMode::None, dims)?;
            validate::check_accumulator_writes(&out, st, Rescale::Normal)?;
            return Ok(counts);
        }
        // read_ifm(oy, ox, c): the IFM is addressed at the OFM position (1x1, stride 1).
        let dense = gather_ifm(
            &ifm,
            st,
            IfmUpscaleMode::None,
            (g.ofm_h, g.ofm_w, g.ifm_d),
            (g.ofm_h, g.ofm_w),
            (0, 0),
            0,
        )?;
        for oy in 0..g.ofm_h {
            for ox in 0..g.ofm_w {
                let mut acc = if keep_init {
                    acc_init(regs, st, &ifm2, &out, oy, ox, 0, 0)?
                } else {
                    0
                };
                for c in 0..g.ifm_d {
                    acc = acc.wrapping_add(dense.at(oy, ox, c));
                }
                out.write_accumulator(st, oy as u64, ox as u64, 0, acc, Rescale::Normal)?;
            }
        }
        return Ok(counts);
    }
    let c = g.ofm_d;
    if check_only {
        if use_ifm {
            check_upscale(regs, &g)?;
            let dims = (g.ifm_h, g.ifm_w, c);
            validate::check_ifm_read(&ifm, st, regs.ifm_upscale.mode, dims)?;
        }
        validate::check_accumulator_writes(&out, st, rescale_rules)?;
        return Ok(counts);
    }
    let dense = if use_ifm {
        check_upscale(regs, &g)?;
        Some(gather_ifm(
            &ifm,
            st,
            regs.ifm_upscale.mode,
            (g.ifm_h, g.ifm_w, c),
            (g.ifm_h, g.ifm_w),
            (0, 0),
            0,
        )?)
    } else {
        None
    };
    let identity: i64 = match mode {
        PoolingMode::Max | PoolingMode::ArgmaxX | PoolingMode::ArgmaxY => -(1i64 << 31),
        PoolingMode::Min => (1i64 << 31) - 1,
        _ => 0,
    };
    let bits = out.acc_bits();
    let mut acc = vec![0i64; c];
    let mut buf = Vec::new();
    for oy in 0..g.ofm_h {
        // Valid (non-padding) taps; padding taps read the identity, which changes nothing
        // (max/min/argmax never prefer it, sum/average add 0).
        let y0 = (oy * g.sy) as isize - g.pad_top as isize;
        let ky_lo = (-y0).max(0) as usize;
        let ky_hi = ((g.ifm_h as isize - y0).min(g.kh as isize)).max(0) as usize;
        for ox in 0..g.ofm_w {
            let x0 = (ox * g.sx) as isize - g.pad_left as isize;
            let kx_lo = (-x0).max(0) as usize;
            let kx_hi = ((g.ifm_w as isize - x0).min(g.kw as isize)).max(0) as usize;
            for (ch, a) in acc.iter_mut().enumerate() {
                *a = if keep_init {
                    acc_init(regs, st, &ifm2, &out, oy, ox, ch, identity)?
                } else {
                    identity
                };
            }
            let count = (ky_hi.saturating_sub(ky_lo) * kx_hi.saturating_sub(kx_lo)) as u32;
            if let Some(d) = &dense {
                for ky in ky_lo..ky_hi {
                    let iy = (y0 + ky as isize) as usize;
                    for kx in kx_lo..kx_hi {
                        let ix = (x0 + kx as isize) as usize;
                        let px = &d.data[(iy * d.w + ix) * c..(iy * d.w + ix + 1) * c];
                        match mode {
                            PoolingMode::Max => {
                                acc.iter_mut().zip(px).for_each(|(a, &v)| *a = (*a).max(v))
                            }
                            PoolingMode::Min => {
                                acc.iter_mut().zip(px).for_each(|(a, &v)| *a = (*a).min(v))
                            }
                            PoolingMode::Average | PoolingMode::Sum => {
                                acc.iter_mut().zip(px).for_each(|(a, &v)| {
                                    *a = npuc_codecs::arith::sign_extend(a.wrapping_add(v), bits)
                                })
                            }
                            PoolingMode::ArgmaxX | PoolingMode::ArgmaxY => {
                                let k = if mode == PoolingMode::ArgmaxX { kx } else { ky } as i64;
                                for (a, &v) in acc.iter_mut().zip(px) {
                                    if v > npuc_codecs::arith::sign_extend(*a, 16) {
                                        *a = v + 65536 * k;
                                    }
                                }
                            }
                            PoolingMode::None | PoolingMode::ReduceSum => {}
                        }
                    }
                }
            }
            let rescale = if mode == PoolingMode::Average {
                Rescale::AvPool(count)
            } else {
                Rescale::Normal
            };
            out.write_accumulators(st, (oy as u64, ox as u64, 0), &acc, rescale, &mut buf)?;
        }
    }
    Ok(counts)
}
