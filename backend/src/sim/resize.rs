//! NPU_OP_RESIZE (TRM 3.10.11).

use super::error::{check, Fault};
use super::fm::Fm;
use super::input::{gather_plain, Dense};
use super::output::{Output, Rescale};
use super::state::State;
use super::{validate, OpCounts};
use crate::arch::ArchConfig;
use crate::isa::{
    ActivationPrecision, ActivationStorage, ActivationTranspose, ActivationType, IfmUpscaleMode,
    RegisterFile, ResizeMode,
};

const S: &str = "3.10.11";

/// Executes NPU_OP_RESIZE.
pub fn resize(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
    mode: ResizeMode,
) -> Result<OpCounts, Fault> {
    let ofm_h = i64::from(regs.ofm_height_m1.height_m1) + 1;
    let ofm_w = i64::from(regs.ofm_width_m1.width_m1) + 1;
    let ofm_d = usize::from(regs.ofm_depth_m1.depth_m1) + 1;
    let ifm_h_m1 = i64::from(regs.kernel_height_m1.height_m1);
    let ifm_w_m1 = i64::from(regs.kernel_width_m1.width_m1);
    let ny = i64::from(regs.resize_y_scale_n_m1.resize_y_scale_n_m1) + 1;
    let nx = i64::from(regs.resize_x_scale_n_m1.resize_x_scale_n_m1) + 1;
    let y_off = i64::from(regs.resize_y_offset.resize_y_offset);
    let x_off = i64::from(regs.resize_x_offset.resize_x_offset);
    let ys = regs.resize_y_step;
    let xs = regs.resize_x_step;
    let (step_y_mod, step_y_int) = (i64::from(ys.one_step_mod), i64::from(ys.one_step_int));
    let (step_x_mod, step_x_int) = (i64::from(xs.one_step_mod), i64::from(xs.one_step_int));
    check(
        -ny <= y_off && y_off < ny,
        S,
        "-scale_y_n <= y_off && y_off < scale_y_n",
        || format!("y_off {y_off}, n {ny}"),
    )?;
    check(
        -nx <= x_off && x_off < nx,
        S,
        "-scale_x_n <= x_off && x_off < scale_x_n",
        || format!("x_off {x_off}, n {nx}"),
    )?;
    check(
        step_y_mod < ny && step_x_mod < nx,
        S,
        "step_y_mod < scale_y_n && step_x_mod < scale_x_n",
        || format!("steps {step_y_mod}/{ny}, {step_x_mod}/{nx}"),
    )?;
    check(st.chain_length == 0, S, "g_chain_length == 0", String::new)?;
    let op = regs.ofm_precision;
    check(
        op.activation_storage != ActivationStorage::Chained,
        S,
        "OFM activation_storage != chained",
        String::new,
    )?;
    check(
        op.activation_transpose == ActivationTranspose::Hwc,
        S,
        "activation_transpose == HWC",
        String::new,
    )?;
    check(
        regs.ifm_upscale.mode == IfmUpscaleMode::None,
        S,
        "IFM_UPSCALE.mode == none",
        String::new,
    )?;
    check(
        regs.ifm_zero_point.zero_point == 0 && regs.ifm2_zero_point.zero_point == 0,
        S,
        "IFM and IFM2 zero points == 0",
        String::new,
    )?;
    let ip = regs.ifm_precision;
    let acc_bits = if ip.activation_precision == ActivationPrecision::B8 {
        31
    } else {
        check(
            ip.activation_precision == ActivationPrecision::B16
                && ip.activation_type == ActivationType::Signed,
            S,
            "IFM precision b8, or b16 signed",
            || {
                format!(
                    "IFM {} {}",
                    ip.activation_precision.name(),
                    ip.activation_type.name()
                )
            },
        )?;
        39
    };
    check(
        regs.ofm_scale.shift >= 16,
        S,
        "NPU_SET_OFM_SCALE.shift >= 16",
        || format!("shift {}", regs.ofm_scale.shift),
    )?;
    let ifm = Fm::ifm(regs);
    let read = ((ifm_h_m1 + 1) as usize, (ifm_w_m1 + 1) as usize, ofm_d);
    // Check-only (validation): the positions' rules below are checked as always, the values
    // not computed; `finish`'s rules (rescale's scale mode, shift and double rounding; no
    // table) are the same for every element, so one stands for all.
    let check_only = validate::check_only_output(regs, st);
    let d = if check_only {
        validate::check_plain_read(&ifm, st, read)?;
        Dense::default()
    } else {
        gather_plain(&ifm, st, read)?
    };
    let out = Output::new(arch, regs, None)?;
    out.check_permutation(false)?;
    if check_only {
        out.rescale_checked(0, 0, Rescale::ShiftOnly, false)?;
    }
    let channels = if check_only { 0 } else { ofm_d };
    let mut y_int = if y_off < 0 { -1 } else { 0 };
    let mut y_mod = if y_off < 0 { y_off + ny } else { y_off };
    for oy in 0..ofm_h {
        let iy0 = y_int.max(0);
        let iy1 = (y_int + 1).min(ifm_h_m1);
        check(iy0 <= ifm_h_m1, S, "iy0 <= ifm_height_m1", || {
            format!("oy {oy}: iy0 {iy0}")
        })?;
        let mut x_int = if x_off < 0 { -1 } else { 0 };
        let mut x_mod = if x_off < 0 { x_off + nx } else { x_off };
        for ox in 0..ofm_w {
            let ix0 = x_int.max(0);
            let ix1 = (x_int + 1).min(ifm_w_m1);
            check(ix0 <= ifm_w_m1, S, "ix0 <= ifm_width_m1", || {
                format!("ox {ox}: ix0 {ix0}")
            })?;
            check(
                ox < ofm_w - 1 || ix1 == ifm_w_m1,
                S,
                "ox < ofm_width_m1 || ix1 == ifm_width_m1",
                || format!("last column reads ix1 {ix1}, IFM width-1 {ifm_w_m1}"),
            )?;
            let (iy0, iy1, ix0, ix1) = (
                iy0 as usize,
                iy1.max(0) as usize,
                ix0 as usize,
                ix1.max(0) as usize,
            );
            for oc in 0..channels {
                let v0 = d.at(iy0, ix0, oc);
                let acc = match mode {
                    ResizeMode::Bilinear => {
                        let (v1, v2, v3) =
                            (d.at(iy0, ix1, oc), d.at(iy1, ix0, oc), d.at(iy1, ix1, oc));
                        (ny - y_mod) * ((nx - x_mod) * v0 + x_mod * v1)
                            + y_mod * ((nx - x_mod) * v2 + x_mod * v3)
                    }
                    ResizeMode::Nearest => {
                        let ix = if 2 * x_mod < nx { ix0 } else { ix1 };
                        let iy = if 2 * y_mod < ny { iy0 } else { iy1 };
                        d.at(iy, ix, oc)
                    }
                    ResizeMode::Replicate => v0,
                };
                let acc = npuc_codecs::arith::sign_extend(acc, acc_bits);
                // `acc2 = (int64_t)acc << 16` goes to rescale without its ACC_FORMAT range
                // asserts: an int39 acc (int16 IFM) shifted by 16 holds up to 55 bits, which
                // the 48-bit assert would refuse for any |acc| >= 2^31 (docs/decisions.md,
                // simulator #45).
                out.finish(
                    st,
                    oy as u64,
                    ox as u64,
                    oc as u64,
                    acc << 16,
                    Rescale::ShiftOnly,
                    false,
                    false,
                )?;
            }
            x_mod += step_x_mod;
            x_int += step_x_int;
            if x_mod >= nx {
                x_mod -= nx;
                x_int += 1;
            }
        }
        y_mod += step_y_mod;
        y_int += step_y_int;
        if y_mod >= ny {
            y_mod -= ny;
            y_int += 1;
        }
    }
    if check_only {
        validate::check_ofm_writes(&out, st)?;
    }
    Ok(OpCounts::default())
}
