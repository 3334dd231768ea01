//! NPU_OP_ELEMENTWISE (TRM 3.10.6).

use super::conv::chained_ofm;
use super::error::{check, Fault};
use super::fm::Fm;
use super::input::{gather_plain, Dense};
use super::output::{Output, Rescale};
use super::state::State;
use super::{chain_input, validate, OpCounts};
use crate::arch::ArchConfig;
use crate::isa::{
    ActivationPrecision, ActivationReverse, ActivationStorage, ActivationTranspose, ActivationType,
    BroadcastMode, ElementwiseMode, IfmUpscaleMode, RegisterFile, RoundModeOfm, SetIfmScale,
};
use npuc_codecs::arith::{clz32, ifm_round_mode, rounded_shift_right, sign_extend};

/// Whether a tensor's values, less its zero point, always fit 16 bits (the assert of
/// `scale_a` / `scale_b`): b8 (zero point within -128..256) or signed b16 (zero point 0, which
/// `read_ifm` asserts, [`Fm::input_zero_point`]).
fn fits_16_bits(fm: &Fm) -> bool {
    fm.precision == ActivationPrecision::B8
        || (fm.precision == ActivationPrecision::B16 && fm.signed)
}

const S: &str = "3.10.6";

/// One operand: a scalar, or a tensor read with broadcast.
enum Operand {
    Scalar(i64),
    Tensor {
        d: Dense,
        bh: bool,
        bw: bool,
        bc: bool,
    },
}

impl Operand {
    #[inline]
    fn at(&self, y: usize, x: usize, c: usize) -> i64 {
        match self {
            Operand::Scalar(v) => *v,
            Operand::Tensor { d, bh, bw, bc } => d.at(
                if *bh { 0 } else { y },
                if *bw { 0 } else { x },
                if *bc { 0 } else { c },
            ),
        }
    }
}

impl Operand {
    /// The scalar's value, `None` for a tensor.
    fn scalar(&self) -> Option<i64> {
        match self {
            Operand::Scalar(v) => Some(*v),
            Operand::Tensor { .. } => None,
        }
    }
}

fn bits(m: BroadcastMode) -> (bool, bool, bool) {
    let r = m.raw();
    (r & 1 != 0, r & 2 != 0, r & 4 != 0)
}

/// One operand, read (or, `check_only`, its reads checked: [`validate::check_plain_read`];
/// a tensor is then returned with no values).
fn operand(
    fm: &Fm,
    mode: BroadcastMode,
    scalar: i32,
    st: &mut State,
    dims: (usize, usize, usize),
    check_only: bool,
) -> Result<Operand, Fault> {
    if mode == BroadcastMode::Scalar {
        check(
            fm.storage == ActivationStorage::None,
            S,
            "activation_storage == none for a scalar operand",
            || format!("{:?} storage {}", fm.which, fm.storage.name()),
        )?;
        // The scalar has the operand's zero point subtracted like a tensor element (Vela 5.2
        // programs the raw quantized constant; docs/decisions.md, simulator #11).
        let zp = fm.input_zero_point()?;
        return Ok(Operand::Scalar(i64::from(scalar) - zp));
    }
    if mode != BroadcastMode::None {
        check(
            fm.storage != ActivationStorage::Chained,
            "3.6.4",
            "broadcast_mode == none for a chained input (check_broadcast_permitted)",
            || format!("{:?} broadcast {}", fm.which, mode.name()),
        )?;
    }
    let (bh, bw, bc) = bits(mode);
    let (h, w, c) = dims;
    let read = (
        if bh { 1 } else { h },
        if bw { 1 } else { w },
        if bc { 1 } else { c },
    );
    let d = if check_only {
        validate::check_plain_read(fm, st, read)?;
        Dense::default()
    } else {
        gather_plain(fm, st, read)?
    };
    Ok(Operand::Tensor { d, bh, bw, bc })
}

/// The divisor of an integer division: the operand as i32.
#[inline]
fn y_of(v: i64) -> i32 {
    v as i32
}

/// `scale_a` / `scale_b` (TRM 3.6.6) with one tensor's precision and scale register.
#[derive(Clone, Copy)]
struct InScale {
    active: bool,
    scale: i128,
    shift: u32,
    dbl_rnd: u32,
    round: RoundModeOfm,
}

impl InScale {
    fn new(fm: &Fm, s: SetIfmScale) -> InScale {
        InScale {
            active: fm.precision == ActivationPrecision::B8
                || (fm.precision == ActivationPrecision::B16 && fm.signed),
            scale: i128::from(s.scale),
            shift: u32::from(s.shift),
            dbl_rnd: u32::from(s.dbl_rnd),
            round: ifm_round_mode(s.round_mode),
        }
    }

    #[inline]
    fn apply(&self, a: i64) -> Result<i64, Fault> {
        if !self.active {
            return Ok(a);
        }
        check(
            a == sign_extend(a, 16),
            "3.6.6",
            "a == sign_extend(a, 16) in scale_a/scale_b",
            || format!("input {a} does not fit 16 bits"),
        )?;
        Ok(rounded_shift_right(
            i128::from(a) * self.scale,
            self.shift,
            self.round,
            self.dbl_rnd,
        )? as i64)
    }
}

/// Executes NPU_OP_ELEMENTWISE.
pub fn elementwise(
    arch: &ArchConfig,
    regs: &RegisterFile,
    st: &mut State,
    mode: ElementwiseMode,
) -> Result<OpCounts, Fault> {
    use ElementwiseMode as M;
    let dims = (
        usize::from(regs.ofm_height_m1.height_m1) + 1,
        usize::from(regs.ofm_width_m1.width_m1) + 1,
        usize::from(regs.ofm_depth_m1.depth_m1) + 1,
    );
    let ip = regs.ifm_precision;
    let unary = matches!(mode, M::Lrelu | M::Abs | M::Clz | M::Not);
    check(
        unary || ip.activation_precision == regs.ifm2_precision.activation_precision,
        S,
        "IFM precision == IFM2 precision",
        || {
            format!(
                "IFM {} IFM2 {}",
                ip.activation_precision.name(),
                regs.ifm2_precision.activation_precision.name()
            )
        },
    )?;
    let b_scalar = regs.ifm2_broadcast.broadcast_mode == BroadcastMode::Scalar;
    let use_ifm2 = !(unary || b_scalar);
    let ifm = Fm::ifm(regs);
    let ifm2 = Fm::ifm2(regs);
    // A scalar IFM reads no tensor: like a scalar IFM2 (`use_ifm2`), it does not count
    // towards g_num_ifm (docs/decisions.md, simulator #24).
    let a_scalar = regs.ifm_broadcast.broadcast_mode == BroadcastMode::Scalar;
    st.add_operation_to_chain(
        (!a_scalar).then(|| chain_input(&ifm)),
        use_ifm2.then(|| chain_input(&ifm2)),
        true,
        chained_ofm(regs),
    )?;
    let p = ip.activation_precision;
    let signed = ip.activation_type == ActivationType::Signed;
    check(
        p == ActivationPrecision::B8
            || p == ActivationPrecision::B16
            || (p == ActivationPrecision::B32 && signed),
        S,
        "precision == b8 || precision == b16 || (precision == b32 && signed)",
        || format!("IFM {} {}", p.name(), ip.activation_type.name()),
    )?;
    let op = regs.ofm_precision;
    check(
        op.activation_reverse == ActivationReverse::None,
        S,
        "activation_reverse == none",
        String::new,
    )?;
    check(
        matches!(
            op.activation_transpose,
            ActivationTranspose::Hwc | ActivationTranspose::Hcw | ActivationTranspose::Chw
        ),
        S,
        "activation_transpose == HWC || HCW || CHW",
        || op.activation_transpose.name().to_string(),
    )?;
    check(
        regs.ifm_upscale.mode == IfmUpscaleMode::None,
        S,
        "IFM_UPSCALE.mode == none",
        String::new,
    )?;
    let a_mode = regs.ifm_broadcast.broadcast_mode;
    if !unary && b_scalar {
        check(
            a_mode != BroadcastMode::Scalar,
            S,
            "IFM_BROADCAST != scalar when IFM2_BROADCAST == scalar",
            String::new,
        )?;
    }
    let scalar = regs.op_scalar.scalar;
    // Check-only (validation): nothing but addresses can fail element by element
    // (`check_only_arithmetic`); a division's asserts are on the data, which validation
    // does not apply (`Memory::set_data_unknown`).
    let check_only =
        validate::check_only_output(regs, st) && (mode != M::Div || st.mem.data_unknown());
    let a = operand(&ifm, a_mode, scalar, st, dims, check_only)?;
    let b = if unary {
        Operand::Scalar(0)
    } else {
        operand(
            &ifm2,
            regs.ifm2_broadcast.broadcast_mode,
            scalar,
            st,
            dims,
            check_only,
        )?
    };
    let sa = InScale::new(&ifm, regs.ifm_scale);
    let s2 = regs.ifm2_scale;
    let sb = InScale::new(
        &ifm2,
        SetIfmScale {
            shift: s2.shift,
            dbl_rnd: s2.dbl_rnd,
            round_mode: s2.round_mode,
            scale: s2.scale,
        },
    );
    let out = Output::new(arch, regs, None)?;
    out.check_permutation(false)?;
    let ofm_scale = regs.ofm_scale;
    if mode == M::Mul {
        check(
            p == ActivationPrecision::B8
                || signed
                || (regs.ifm_zero_point.zero_point == 32768
                    && regs.ifm2_zero_point.zero_point == 32768),
            S,
            "uint16 multiply: both zero points 32768",
            String::new,
        )?;
    }
    if mode == M::Div {
        check(
            regs.ifm_scale.scale == 1
                && regs.ifm_scale.shift == 0
                && regs.ifm_zero_point.zero_point == 0
                && s2.scale == 1
                && s2.shift == 0
                && regs.ifm2_zero_point.zero_point == 0
                && ofm_scale.scale == 1
                && ofm_scale.shift == 0
                && regs.ofm_zero_point.zero_point == 0,
            S,
            "div: IFM/IFM2/OFM scale 1, shift 0, zero points 0",
            String::new,
        )?;
    }
    let rescale = match mode {
        M::Mul if !matches!(p, ActivationPrecision::B8 | ActivationPrecision::B16) => {
            Rescale::ShiftOnly
        }
        M::Shr | M::Shl | M::Lshr => Rescale::None,
        _ => Rescale::Global,
    };
    let out_round = ofm_scale.round_mode;
    let out_dbl = u32::from(ofm_scale.dbl_rnd);
    if check_only {
        let scales = [(&sa, &a, &ifm), (&sb, &b, &ifm2)];
        check_only_arithmetic(mode, scales, &out, rescale, (out_round, out_dbl))?;
        validate::check_ofm_writes(&out, st)?;
        return Ok(OpCounts::default());
    }
    let (h, w, d) = dims;
    let data_known = !st.mem.data_unknown();
    for oy in 0..h {
        for ox in 0..w {
            for oc in 0..d {
                let av = a.at(oy, ox, oc);
                let bv = b.at(oy, ox, oc);
                let acc: i64 = match mode {
                    M::Mul => av.wrapping_mul(bv),
                    M::Add => sa.apply(av)?.wrapping_add(sb.apply(bv)?),
                    M::Sub => sa.apply(av)?.wrapping_sub(sb.apply(bv)?),
                    M::Min => sa.apply(av)?.min(sb.apply(bv)?),
                    M::Max => sa.apply(av)?.max(sb.apply(bv)?),
                    M::Lrelu => {
                        if av >= 0 {
                            sa.apply(av)?
                        } else {
                            sb.apply(av)?
                        }
                    }
                    M::Abs => sa.apply(av)?.wrapping_abs(),
                    M::Clz => i64::from(clz32(sa.apply(av)? as u32)),
                    M::Shr => {
                        let sh = (sb.apply(bv)? & 31) as u32;
                        rounded_shift_right(
                            i128::from(sa.apply(av)? as i32),
                            sh,
                            out_round,
                            out_dbl,
                        )? as i64
                    }
                    M::Shl => {
                        i64::from((sa.apply(av)? as i32).wrapping_shl((sb.apply(bv)? & 31) as u32))
                    }
                    M::Lshr => {
                        let mut x = sa.apply(av)?;
                        x &= match p {
                            ActivationPrecision::B8 => 0xff,
                            ActivationPrecision::B16 => 0xffff,
                            _ => -1,
                        };
                        i64::from((x as u32) >> ((sb.apply(bv)? & 31) as u32))
                    }
                    M::Div if !data_known && (y_of(bv) == 0 || y_of(bv) == -1) => 0,
                    M::Div => {
                        let (x, y) = (av as i32, bv as i32);
                        check(y != 0, S, "b != 0", || {
                            format!("division of {x} by 0 at ({oy}, {ox}, {oc})")
                        })?;
                        check(
                            !(y == -1 && x == i32::MIN),
                            S,
                            "!(b == -1 && a == -0x80000000)",
                            String::new,
                        )?;
                        i64::from(x / y)
                    }
                    M::CmpEq => -i64::from(sa.apply(av)? == sb.apply(bv)?),
                    M::CmpNe => -i64::from(sa.apply(av)? != sb.apply(bv)?),
                    M::CmpGe => -i64::from(sa.apply(av)? >= sb.apply(bv)?),
                    M::CmpGt => -i64::from(sa.apply(av)? > sb.apply(bv)?),
                    M::Not => !sa.apply(av)?,
                    M::And => sa.apply(av)? & sb.apply(bv)?,
                    M::Or => sa.apply(av)? | sb.apply(bv)?,
                    M::Xor => sa.apply(av)? ^ sb.apply(bv)?,
                    M::AndNot => sa.apply(av)? & !sb.apply(bv)?,
                };
                // The exact result (a 32x32-bit product keeps 64 bits for the shift-only
                // rescale Vela relies on): docs/decisions.md, simulator #9.
                out.finish(
                    st, oy as u64, ox as u64, oc as u64, acc, rescale, false, false,
                )?;
            }
        }
    }
    Ok(OpCounts::default())
}

/// The rules the element loop of [`elementwise`] applies, checked once for every element:
/// the input scales' parameters (`scale_a`, `scale_b`: shift and double rounding) and their
/// 16-bit operand assert, the shift of SHR, and the OFM's `rescale` (per-channel mode,
/// shift, double rounding). None depends on a tensor's values: a tensor whose values could
/// fail the 16-bit assert is not scaled ([`InScale::active`] only for b8 and signed b16,
/// [`fits_16_bits`]; LRELU scales the IFM's values with the IFM2's scale too), and a
/// scalar's one value is checked here. May refuse what the element loop would not (a
/// scale LRELU applies only to negative values), never the reverse: a refusal sends the
/// stream to the full simulation.
fn check_only_arithmetic(
    mode: ElementwiseMode,
    [(sa, a, ifm), (sb, b, ifm2)]: [(&InScale, &Operand, &Fm); 2],
    out: &Output,
    rescale: Rescale,
    (out_round, out_dbl): (RoundModeOfm, u32),
) -> Result<(), Fault> {
    use ElementwiseMode as M;
    let check_scale = |s: &InScale, operand: &Operand, fm: &Fm| -> Result<(), Fault> {
        if !s.active {
            return Ok(());
        }
        match operand.scalar() {
            Some(v) => s.apply(v).map(|_| ()),
            None => {
                check(
                    fits_16_bits(fm),
                    S,
                    "check-only: a scaled tensor of b8 or signed b16",
                    || format!("{:?} {}", fm.which, fm.precision.name()),
                )?;
                s.apply(0).map(|_| ())
            }
        }
    };
    match mode {
        M::Mul | M::Div => {}
        M::Lrelu => {
            check_scale(sa, a, ifm)?;
            check_scale(sb, a, ifm)?;
        }
        M::Abs | M::Clz | M::Not => check_scale(sa, a, ifm)?,
        _ => {
            check_scale(sa, a, ifm)?;
            check_scale(sb, b, ifm2)?;
        }
    }
    if mode == M::Shr {
        rounded_shift_right(0, 0, out_round, out_dbl)?;
    }
    out.rescale_checked(0, 0, rescale, false).map(|_| ())
}
