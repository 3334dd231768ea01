//! One validation of a command stream, used by `npuc compile` before it writes a stream, by
//! `npuc report` before it estimates one, and (being the simulator itself) by `npuc run`.
//!
//! The validator *is* the simulator (decision H3 in `docs/decisions.md`): the stream runs on
//! zero-filled memories of the sizes the artifact gives each region, under the work budget
//! ([`super::work`]). So every rule the simulator enforces, and only those, is what
//! validation checks, with no second copy of the rules: the stream decodes; every region it
//! uses is set and mapped; every access stays within the region's bytes; block sizes, strides,
//! kernel sizes, chaining and every other TRM `assert()` of the pseudocode hold; the weight and
//! scale streams decode; branches stay in the stream; and the run ends within its budgets. What
//! depends on the data (a branch on `result_flag`, LUT contents) is checked on the path zero
//! inputs take, and the asserts only data can violate (a division by zero) are not applied
//! ([`super::Memory::set_data_unknown`]).
//!
//! Computing every output on zero data costs what running the network costs, so a run is
//! check-only first: a CONV, DEPTHWISE, POOL, ELEMENTWISE or RESIZE whose output nothing but
//! its bytes depends on and whose element rules cannot depend on the values
//! ([`check_only_op`], [`check_only_output`]) runs the same code up to its first value (every
//! register assert, the weight and scale streams, the output stage's per-channel rules, the
//! input scales' rules once) and then checks the extents of its IFM reads and OFM writes
//! from the extremes of each tile ([`check_fm_extent`]) instead of element by element; a
//! chained output pushes as many values as a full run would, a chained input drains them.
//! The bytes (or FIFO values) it does not compute are tracked as stale, and so is whatever
//! is computed or copied from them; a weight or scale stream read from stale bytes, or any
//! failure, sends the stream to the full simulation, whose verdict and error are then the
//! answer.

use super::error::{check, Fault};
use super::fm::Fm;
use super::output::{Output, Rescale};
use super::state::State;
use super::{Memory, RunReport, SimError, Simulator, LUT_BYTES, NUM_REGIONS};
use crate::arch::Accelerator;
use crate::isa::{
    AccInput, AccOutput, ActivationClipRange, ActivationFormat, ActivationFunction,
    ActivationPrecision, ActivationReverse, ActivationStorage, ActivationTranspose, ActivationType,
    Command, ElementwiseMode, IfmUpscaleMode, RegisterFile,
};
use npuc_codecs::arith::sign_extend;

/// The most bytes one region may have, for validation and for `npuc run` (4 GiB; the
/// NPU's addresses have 40 bits, but no memory of an Ethos-U85 system comes near this).
pub const MAX_REGION_BYTES: u64 = 1 << 32;

/// Why a stream is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A region is larger than [`MAX_REGION_BYTES`].
    #[error("region {region} of {size} bytes is larger than the {MAX_REGION_BYTES} bytes a region may have")]
    RegionTooLarge {
        /// The region.
        region: usize,
        /// Its size.
        size: u64,
    },
    /// A check-only run read a weight or scale stream from bytes it did not compute (never
    /// returned by [`validate`], which then simulates in full).
    #[error("a check-only run read a weight or scale stream from bytes it did not compute")]
    Inexact,
    /// The simulator stopped.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// The sizes of the eight regions of an artifact (`None`: not mapped).
pub type RegionSizes = [Option<u64>; NUM_REGIONS];

/// A zero-filled buffer of `size` bytes for `region`, refused above [`MAX_REGION_BYTES`].
pub fn region_buffer(region: usize, size: u64) -> Result<Vec<u8>, ValidationError> {
    if size > MAX_REGION_BYTES {
        return Err(ValidationError::RegionTooLarge { region, size });
    }
    Ok(vec![0u8; size as usize])
}

/// Validates `words` for `accelerator` with `regions` mapped, zero-filled except region 0,
/// which starts with `constants` (the read-only data: weight and scale streams, tables).
/// Without `constants` (a raw stream carries none) weight and scale streams are only
/// bounds-checked, not decoded ([`super::Memory::set_constants_unknown`]).
///
/// The run is check-only first: kernel operations whose outputs no rule depends on
/// ([`check_only_op`]) check their asserts and the extents of every access without computing
/// a value. When that run fails, or reads a weight or scale stream from bytes it did not
/// compute ([`Memory::inexact`]), the stream is simulated in full ([`validate_full`]), so
/// every error is the one the full simulation states. Returns what the run did; in a
/// check-only run, the traffic of the operations not computed is not counted.
pub fn validate(
    accelerator: Accelerator,
    words: &[u32],
    regions: &RegionSizes,
    constants: Option<&[u8]>,
) -> Result<RunReport, ValidationError> {
    if let Ok(Ok(report)) = simulate(accelerator, words, regions, constants, true) {
        return Ok(report);
    }
    validate_full(accelerator, words, regions, constants)
}

/// [`validate`] by simulating every operation on the zero-filled memories.
pub fn validate_full(
    accelerator: Accelerator,
    words: &[u32],
    regions: &RegionSizes,
    constants: Option<&[u8]>,
) -> Result<RunReport, ValidationError> {
    simulate(accelerator, words, regions, constants, false)?
}

/// The check-only run of [`validate`] alone, without the full simulation it falls back to:
/// an error here may be one the full simulation would not raise ([`ValidationError::Inexact`],
/// or extremes not proved in range). For tests that pin the two runs to each other.
pub fn validate_check_only(
    accelerator: Accelerator,
    words: &[u32],
    regions: &RegionSizes,
    constants: Option<&[u8]>,
) -> Result<RunReport, ValidationError> {
    simulate(accelerator, words, regions, constants, true)?
}

/// One run; the outer error is a region refused, the inner one the run's (in a check-only
/// run, also a run that proved nothing).
fn simulate(
    accelerator: Accelerator,
    words: &[u32],
    regions: &RegionSizes,
    constants: Option<&[u8]>,
    check_only: bool,
) -> Result<Result<RunReport, ValidationError>, ValidationError> {
    let mut sim = Simulator::new(accelerator);
    for (r, size) in regions.iter().enumerate() {
        if let Some(size) = *size {
            let mut buffer = region_buffer(r, size)?;
            if let (0, Some(c)) = (r, constants) {
                if buffer.len() < c.len() {
                    buffer.resize(c.len(), 0);
                }
                buffer[..c.len()].copy_from_slice(c);
            }
            sim.memory_mut().add_region(r as u8, buffer);
        }
    }
    sim.memory_mut().set_constants_unknown(constants.is_none());
    sim.memory_mut().set_data_unknown(true);
    if check_only {
        sim.memory_mut().set_check_only();
    }
    let run = sim.run(words).map_err(ValidationError::from);
    if check_only && sim.memory().inexact() {
        return Ok(Err(ValidationError::Inexact));
    }
    Ok(run)
}

/// Whether the current CONV, DEPTHWISE or POOL may be checked without computing its output:
/// a check-only run, and an operation whose output no later rule depends on through anything
/// but the values it writes (which become stale: [`Memory::mark_stale`],
/// [`State::fifo_push_stale`]). Excluded, and so simulated in full: a chained input,
/// accumulators kept or read, and whatever [`check_only_output`] excludes.
pub(crate) fn check_only_op(regs: &RegisterFile, st: &State) -> bool {
    check_only_output(regs, st)
        && regs.ifm_precision.activation_storage != ActivationStorage::Chained
        && regs.acc_format.acc_input == AccInput::Reset
        && regs.acc_format.acc_output == AccOutput::Enable
}

/// [`check_only_op`] without the conditions on the IFM and the accumulators, for ELEMENTWISE
/// and RESIZE, whose results go to `write_ofm` without the accumulators (ACC_FORMAT's input
/// and output modes play no part in them) and whose chained inputs a check-only run drains
/// ([`check_plain_read`]): an OFM written to memory in plain HWC order without reverse, or to
/// a chaining FIFO, of more than one element (a 1x1x1 OFM sets COND_STATUS.result_flag,
/// which a branch may read), and an activation that cannot fail on any value
/// ([`activation_never_fails`]).
pub(crate) fn check_only_output(regs: &RegisterFile, st: &State) -> bool {
    let o = regs.ofm_precision;
    st.mem.check_only()
        && matches!(
            o.activation_storage,
            ActivationStorage::Tile2x2 | ActivationStorage::Tile3x1 | ActivationStorage::Chained
        )
        && o.activation_reverse == ActivationReverse::None
        && o.activation_transpose == ActivationTranspose::Hwc
        && activation_never_fails(regs)
        && (
            regs.ofm_height_m1.height_m1,
            regs.ofm_width_m1.width_m1,
            regs.ofm_depth_m1.depth_m1,
        ) != (0, 0, 0)
}

/// Whether `activation` (TRM 3.6.7) returns a value for every input: no table, a b64 OFM
/// (no activation), a table indexed by 8 bits of the value whose 256 entries lie in the
/// LUT RAM (table number and entry size; `check_table` is checked as always), tanh and
/// sigmoid (whose clamp keeps the index within 8..503), or a 16-bit table whose clip bounds
/// are 16-bit signed values (index 256 + (acc >> 7) within 0..511). A 16-bit table without
/// those bounds indexes by the value's high bits, which only the values keep in range: such
/// an operation is simulated in full.
fn activation_never_fails(regs: &RegisterFile) -> bool {
    if regs.ofm_precision.activation_precision == ActivationPrecision::B64 {
        return true;
    }
    let a = regs.activation;
    let size = match a.activation_function {
        ActivationFunction::LutNone
        | ActivationFunction::LutTanh
        | ActivationFunction::LutSigmoid => return true,
        ActivationFunction::LutU8U8 | ActivationFunction::LutS8S8 => 1,
        ActivationFunction::LutS8S16 => 2,
        ActivationFunction::LutS8S32 => 4,
        ActivationFunction::LutS16S16 | ActivationFunction::LutS16S32 => {
            // `Output::new`: the bounds are sign-extended for a signed OFM, taken as they
            // are for an unsigned one; the clamp keeps the value between them.
            let signed = regs.ofm_precision.activation_type == ActivationType::Signed;
            let bounds = [
                regs.activation_min.clip_boundary,
                regs.activation_max.clip_boundary,
            ];
            return a.activation_clip_range == ActivationClipRange::B16
                && (signed || bounds.iter().all(|&b| b <= i16::MAX as u16));
        }
    };
    ((u64::from(a.table) << 8) + 256) * size <= LUT_BYTES as u64
}

/// Whether an operation simulated in full in a check-only run has a rule its values decide:
/// a table that may index outside the LUT RAM ([`activation_never_fails`]), or an LRELU that
/// scales IFM values which may not fit 16 bits with an active IFM2 scale (`scale_b`'s
/// assert; every other input scale meets values that always fit, and a division's asserts
/// are off in validation). Having read stale values ([`Memory::op_read_stale`]), such an
/// operation proves nothing ([`Memory::set_inexact`]): the stream is simulated in full.
/// (COND_STATUS.result_flag made from stale values is [`State::result_flag_stale`].)
pub(crate) fn has_value_rules(regs: &RegisterFile, command: &Command) -> bool {
    let fits_16_bits = |(p, t): (ActivationPrecision, ActivationType)| {
        p == ActivationPrecision::B8
            || (p == ActivationPrecision::B16 && t == ActivationType::Signed)
    };
    let (i, i2) = (regs.ifm_precision, regs.ifm2_precision);
    let lrelu_scales_wide_values = matches!(
        command,
        Command::OpElementwise(e) if e.elementwise_mode == ElementwiseMode::Lrelu
    ) && fits_16_bits((i2.activation_precision, i2.activation_type))
        && !fits_16_bits((i.activation_precision, i.activation_type));
    lrelu_scales_wide_values || !activation_never_fails(regs)
}

/// The tiles (TRM 3.8) that the elements `[0, h) x [0, w)` of `fm` fall in, as (tile, first
/// y, first x, rows, columns), in the tile's own coordinates from 0.
fn tiles(fm: &Fm, h: u64, w: u64) -> Vec<(usize, u64, u64, u64, u64)> {
    let mut out = Vec::with_capacity(4);
    match fm.storage {
        ActivationStorage::Tile2x2 => {
            let cols = [
                (0, 0, w.min(fm.width0)),
                (1, fm.width0, w.saturating_sub(fm.width0)),
            ];
            for (t, x0, nx) in cols {
                let hgt = fm.height[t];
                for (dt, y0, ny) in [(0, 0, h.min(hgt)), (2, hgt, h.saturating_sub(hgt))] {
                    if nx > 0 && ny > 0 {
                        out.push((t + dt, y0, x0, ny, nx));
                    }
                }
            }
        }
        ActivationStorage::Tile3x1 => {
            let (h0, h1) = (fm.height[0], fm.height[1]);
            let rows = [
                (0, 0, h.min(h0).min(h1)),
                (1, h0, h.min(h1).saturating_sub(h0)),
                (2, h1, h.saturating_sub(h1)),
            ];
            for (t, y0, ny) in rows {
                if ny > 0 {
                    out.push((t, y0, 0, ny, w));
                }
            }
        }
        _ => {}
    }
    out
}

/// Checks that every element `[0, h) x [0, w) x [0, c)` of `fm` is addressable and lies in
/// its region: the rules `element_address_in_region` and every read or write of these
/// elements check (TRM 3.6.5), from the extremes of each tile instead of element by element.
/// Returns the byte range they span. An error means only that the extremes could not be
/// proved in range (the caller then simulates in full, which names the failing element).
pub(crate) fn check_fm_extent(
    fm: &Fm,
    mem: &Memory,
    (h, w, c): (u64, u64, u64),
) -> Result<(u64, u64), Fault> {
    let tiles = tiles(fm, h, w);
    if tiles.is_empty() {
        // Storage none or chained: `element_address_in_region` states the fault.
        fm.addr(0, 0, 0)?;
    }
    let es = u128::from(fm.esize());
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (tile, y0, x0, ny, nx) in tiles {
        // The alignment asserts (of base and strides) for this tile.
        fm.addr(y0, x0, 0)?;
        let (ymax, xmax, c) = (u128::from(ny - 1), u128::from(nx - 1), u128::from(c));
        let base = u128::from(fm.base[tile]);
        let row = ymax * u128::from(fm.stride_y);
        let end = match fm.format {
            ActivationFormat::Nhwc => base + row + xmax * u128::from(fm.stride_x) + c * es,
            ActivationFormat::Nhcwb16 => {
                // Bricks of 16 channels: the last one, or the full one before it.
                let last = (c - 1) >> 4;
                let sc = u128::from(fm.stride_c);
                let mut brick = last * sc + (c - 16 * last) * es;
                if last > 0 {
                    brick = brick.max((last - 1) * sc + 16 * es);
                }
                base + row + 16 * xmax * es + brick
            }
        };
        if end > 1 << 40 {
            return Err(Fault::assert(
                "3.6.5",
                "addresses within 40 bits",
                format!("{:?} tile {tile} ends at {end:#x}", fm.which),
            ));
        }
        let (start, end) = (fm.base[tile], end as u64);
        mem.check_access(fm.region, start, end - start)?;
        lo = lo.min(start);
        hi = hi.max(end);
    }
    Ok((lo, hi))
}

/// `read_ifm` of every element `[0, h) x [0, w) x [0, c)` an operation reads through
/// [`super::input::gather_ifm`] (with `upscale`), checked without reading: the zero point,
/// storage and address rules.
pub(crate) fn check_ifm_read(
    fm: &Fm,
    st: &State,
    upscale: IfmUpscaleMode,
    (h, w, c): (usize, usize, usize),
) -> Result<(), Fault> {
    fm.input_zero_point()?;
    check(
        !matches!(
            fm.storage,
            ActivationStorage::Chained | ActivationStorage::None
        ),
        "3.6.5",
        "IFM of this operation read from memory (storage tile2x2 or tile3x1)",
        || format!("{:?} storage {}", fm.which, fm.storage.name()),
    )?;
    let (h, w) = match upscale {
        IfmUpscaleMode::None => (h as u64, w as u64),
        _ => (((h as u64) + 1) >> 1, ((w as u64) + 1) >> 1),
    };
    check_fm_extent(fm, &st.mem, (h, w, c as u64)).map(|_| ())
}

/// `read_ifm2` (or `read_ifm`) of a `h x w x c` tensor through
/// [`super::input::gather_plain`], checked without reading: the zero point, storage and
/// address rules; a chained tensor's values are taken from its FIFO
/// ([`State::fifo_drain`]).
pub(crate) fn check_plain_read(
    fm: &Fm,
    st: &mut State,
    (h, w, c): (usize, usize, usize),
) -> Result<(), Fault> {
    fm.input_zero_point()?;
    if fm.storage == ActivationStorage::Chained {
        return st.fifo_drain(fm.region, h * w * c);
    }
    check(
        fm.storage != ActivationStorage::None,
        "3.6.5",
        "storage != none",
        || format!("{:?} has storage none but is read", fm.which),
    )?;
    check_fm_extent(fm, &st.mem, (h as u64, w as u64, c as u64)).map(|_| ())
}

/// `write_accumulator` of every OFM element, checked without computing: the rescale rules
/// of each channel in `mode` (an accumulator plus its bias always fits its format; the
/// rules of `rescale` other than that range depend on the channel's scale, not on the
/// value) and the OFM's address rules ([`check_ofm_writes`]).
pub(crate) fn check_accumulator_writes(
    out: &Output,
    st: &mut State,
    mode: Rescale,
) -> Result<(), Fault> {
    let (_, _, d) = out.dims;
    for oc in 0..d {
        let acc = sign_extend(out.bias(oc), out.acc_bits());
        out.rescale(acc, oc, mode)?;
    }
    check_ofm_writes(out, st)
}

/// `write_ofm` of every OFM element, checked without computing: the OFM's address rules.
/// The OFM bytes (or its chaining FIFO, [`State::fifo_push_stale`]) become stale and
/// COND_STATUS.result_flag UNPREDICTABLE, as a full run leaves it for an OFM of more than
/// one element.
pub(crate) fn check_ofm_writes(out: &Output, st: &mut State) -> Result<(), Fault> {
    st.result_flag = None;
    if out.ofm.storage == ActivationStorage::Chained {
        let (h, w, d) = out.dims;
        return st.fifo_push_stale(out.ofm.region, (h * w * d) as usize);
    }
    let (lo, hi) = check_fm_extent(&out.ofm, &st.mem, out.dims)?;
    st.mem.mark_stale(out.ofm.region, lo, hi);
    Ok(())
}
