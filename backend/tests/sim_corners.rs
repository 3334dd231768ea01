//! Corners of the output and accumulator stages that Vela 5.2's streams do not exercise, each
//! checked against the TRM pseudocode rule it cites: OFM reverse and transpose (`write_ofm`,
//! TRM 3.6.5), accumulator keep and accumulator input from IFM2 (`read_accumulator` /
//! `write_accumulator`, TRM 3.6.5), argmax pooling (NPU_OP_POOL, TRM 3.10.10) and 48-bit
//! accumulators (`accumulate`, `rescale`, TRM 3.6.5-3.6.6).
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::Fault;
use sim_common::*;

const IFM: u32 = 0;
const IFM2: u32 = 64;
const OFM: u32 = 128;

fn pool(mode: PoolingMode) -> Command {
    Command::OpPool(OpPool { pooling_mode: mode })
}

fn acc_format(acc_format: AccFormat, acc_input: AccInput, acc_output: AccOutput) -> Command {
    Command::SetAccFormat(SetAccFormat {
        acc_format,
        acc_input,
        acc_output,
        microblock: Microblock::U2x2,
    })
}

fn ofm_precision(
    prec: ActivationPrecision,
    reverse: ActivationReverse,
    transpose: ActivationTranspose,
) -> Command {
    Command::SetOfmPrecision(SetOfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: prec,
        activation_format: ActivationFormat::Nhwc,
        scale_mode: OfmScaleMode::Global,
        activation_reverse: reverse,
        activation_transpose: transpose,
        activation_storage: ActivationStorage::Tile2x2,
    })
}

fn ofm_strides(x: u32, y: u32) -> Vec<Command> {
    vec![
        Command::SetOfmStrideX(SetOfmStrideX {
            addr_hi: 0,
            addr_lo: x,
        }),
        Command::SetOfmStrideY(SetOfmStrideY {
            addr_hi: 0,
            addr_lo: y,
        }),
    ]
}

/// An h x w x c int8 IFM with element (y, x, c) = 10*y + 3*x + c + 1 at IFM, the OFM of
/// the same shape at OFM, a 1x1 max pool (an identity copy) with the given OFM precision
/// register; returns the region-1 bytes after the run (or the error).
fn copy_through_write_ofm(
    (h, w, c): (u16, u16, u16),
    reverse: ActivationReverse,
    transpose: ActivationTranspose,
    strides: (u32, u32),
) -> Result<Vec<u8>, npuc_backend::sim::SimError> {
    let mut bytes = vec![0u8; 256];
    for y in 0..h as usize {
        for x in 0..w as usize {
            for ch in 0..c as usize {
                bytes[IFM as usize + (y * w as usize + x) * c as usize + ch] =
                    (10 * y + 3 * x + ch + 1) as u8;
            }
        }
    }
    let (mut s, id) = sim_with(bytes);
    let mut cmds = fm_cmds("ifm", IFM, h, w, c, true, ActivationPrecision::B8);
    cmds.extend(fm_cmds("ofm", OFM, h, w, c, true, ActivationPrecision::B8));
    cmds.push(ofm_precision(ActivationPrecision::B8, reverse, transpose));
    cmds.extend(ofm_strides(strides.0, strides.1));
    // One tile large enough for any permutation (tiles are chosen on the permuted address).
    cmds.push(Command::SetOfmWidth0M1(SetOfmWidth0M1 { width_m1: 15 }));
    cmds.push(Command::SetOfmHeight0M1(SetOfmHeight0M1 { height_m1: 15 }));
    cmds.push(Command::SetOfmHeight1M1(SetOfmHeight1M1 { height_m1: 15 }));
    // u2x2 is a microblock the 256-MAC configuration permits (reverse C needs its depth).
    cmds.push(acc_format(
        AccFormat::I32,
        AccInput::Reset,
        AccOutput::Enable,
    ));
    cmds.push(pool(PoolingMode::Max));
    run(&mut s, &cmds)?;
    Ok(s.memory().buffer(id)[OFM as usize..].to_vec())
}

fn ifm_value(y: usize, x: usize, c: usize) -> u8 {
    (10 * y + 3 * x + c + 1) as u8
}

/// TRM 3.6.5 write_ofm: `if (reverse == W) x = ofm_width-1-x;` (then the HWC address).
#[test]
fn reverse_w_mirrors_columns() {
    let out = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::W,
        ActivationTranspose::Hwc,
        (2, 6),
    )
    .unwrap();
    for y in 0..2 {
        for x in 0..3 {
            for c in 0..2 {
                assert_eq!(
                    out[y * 6 + x * 2 + c],
                    ifm_value(y, 2 - x, c),
                    "({y},{x},{c})"
                );
            }
        }
    }
}

/// TRM 3.6.5 write_ofm: `if (reverse == H) y = ofm_height-1-y;`.
#[test]
fn reverse_h_mirrors_rows() {
    let out = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::H,
        ActivationTranspose::Hwc,
        (2, 6),
    )
    .unwrap();
    for y in 0..2 {
        for x in 0..3 {
            for c in 0..2 {
                assert_eq!(
                    out[y * 6 + x * 2 + c],
                    ifm_value(1 - y, x, c),
                    "({y},{x},{c})"
                );
            }
        }
    }
}

/// TRM 3.6.5 write_ofm: `if (reverse == C) c = ofm_depth-1-c;` (depth 2 is not a multiple of
/// 16, which the PC allows for NHWC with ofm_blk_depth <= 16).
#[test]
fn reverse_c_mirrors_channels() {
    let out = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::C,
        ActivationTranspose::Hwc,
        (2, 6),
    )
    .unwrap();
    for y in 0..2 {
        for x in 0..3 {
            for c in 0..2 {
                assert_eq!(
                    out[y * 6 + x * 2 + c],
                    ifm_value(y, x, 1 - c),
                    "({y},{x},{c})"
                );
            }
        }
    }
}

/// TRM 3.6.5 write_ofm: transpose WHC writes element (y, x, c) at `address(x, y, c)`: the OFM
/// strides describe the stored 3x2x2 tensor (stride_x 2, stride_y 4).
#[test]
fn transpose_whc_swaps_height_and_width() {
    let out = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::None,
        ActivationTranspose::Whc,
        (2, 4),
    )
    .unwrap();
    for y in 0..2 {
        for x in 0..3 {
            for c in 0..2 {
                assert_eq!(out[x * 4 + y * 2 + c], ifm_value(y, x, c), "({y},{x},{c})");
            }
        }
    }
}

/// TRM 3.6.5 write_ofm: transpose HCW writes (y, x, c) at `address(y, c, x)`: stored H x C x W
/// (stride_x = W bytes, stride_y = C*W bytes).
#[test]
fn transpose_hcw_moves_channels_before_width() {
    let out = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::None,
        ActivationTranspose::Hcw,
        (3, 6),
    )
    .unwrap();
    for y in 0..2 {
        for x in 0..3 {
            for c in 0..2 {
                assert_eq!(out[y * 6 + c * 3 + x], ifm_value(y, x, c), "({y},{x},{c})");
            }
        }
    }
}

/// TRM 3.6.5 write_ofm: `assert(transpose == HWC)` when reverse is used.
#[test]
fn reverse_with_transpose_is_a_failed_assert() {
    let e = copy_through_write_ofm(
        (2, 3, 2),
        ActivationReverse::W,
        ActivationTranspose::Whc,
        (2, 4),
    )
    .unwrap_err();
    assert!(
        matches!(e.fault(), Some(Fault::Assert { section: "3.6.5", rule, .. }) if rule.contains("reverse")),
        "{e}"
    );
}

/// Sets up a 1x1 sum pool of an h x w x c IFM (int8 at IFM) into an OFM at OFM.
fn sum_setup(h: u16, w: u16, c: u16, ofm: ActivationPrecision) -> Vec<Command> {
    let mut cmds = fm_cmds("ifm", IFM, h, w, c, true, ActivationPrecision::B8);
    cmds.extend(fm_cmds("ofm", OFM, h, w, c, true, ofm));
    cmds
}

/// TRM 3.6.5: with `acc_output == disable` write_accumulator keeps the accumulator (nothing is
/// written to the OFM); the next operation with `acc_input == keep` starts from it
/// (read_accumulator), so two sum pools add their IFMs.
#[test]
fn accumulator_keep_adds_two_operations() {
    let mut bytes = vec![0u8; 256];
    bytes[..4].copy_from_slice(&[1, 2, 3, 250]); // 250 = -6
    bytes[IFM2 as usize..IFM2 as usize + 4].copy_from_slice(&[10, 20, 30, 40]);
    bytes[OFM as usize..OFM as usize + 4].copy_from_slice(&[0x55; 4]);
    let (mut s, id) = sim_with(bytes);
    let mut cmds = sum_setup(1, 2, 2, ActivationPrecision::B8);
    cmds.push(acc_format(
        AccFormat::I32,
        AccInput::Reset,
        AccOutput::Disable,
    ));
    cmds.push(pool(PoolingMode::Sum));
    cmds.push(Command::SetIfmBase0(SetIfmBase0 {
        addr_hi: 0,
        addr_lo: IFM2,
    }));
    cmds.push(acc_format(
        AccFormat::I32,
        AccInput::Keep,
        AccOutput::Enable,
    ));
    cmds.push(pool(PoolingMode::Sum));
    let r = run(&mut s, &cmds).unwrap();
    assert_eq!(r.ops.len(), 2);
    let out = &s.memory().buffer(id)[OFM as usize..OFM as usize + 4];
    assert_eq!(out, [11, 22, 33, 34]);
}

/// TRM 3.6.5 read_accumulator: `acc_input == ifm2` restores the accumulator from IFM2, which
/// must be signed b32 for i32 accumulators; the sum pool then adds the IFM.
#[test]
fn accumulator_from_ifm2_is_the_starting_value() {
    let mut bytes = vec![0u8; 256];
    bytes[..2].copy_from_slice(&[5, 251]); // 5, -5
    for (k, v) in [1000i32, -1100].iter().enumerate() {
        let at = IFM2 as usize + 4 * k;
        bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    let (mut s, id) = sim_with(bytes);
    let mut cmds = sum_setup(1, 1, 2, ActivationPrecision::B16);
    cmds.extend(fm_cmds(
        "ifm2",
        IFM2,
        1,
        1,
        2,
        true,
        ActivationPrecision::B32,
    ));
    cmds.push(Command::SetActivationMin(SetActivationMin {
        clip_boundary: i16::MIN as u16,
    }));
    cmds.push(Command::SetActivationMax(SetActivationMax {
        clip_boundary: i16::MAX as u16,
    }));
    cmds.push(acc_format(
        AccFormat::I32,
        AccInput::Ifm2,
        AccOutput::Enable,
    ));
    cmds.push(pool(PoolingMode::Sum));
    run(&mut s, &cmds).unwrap();
    let out = &s.memory().buffer(id)[OFM as usize..OFM as usize + 4];
    let v: Vec<i16> = out
        .chunks(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(v, [1005, -1105]);
}

/// TRM 3.6.5 read_ifm2 as accumulator: an IFM2 that is not signed b32 (i32 accumulators) is a
/// failed assert.
#[test]
fn accumulator_from_int8_ifm2_is_a_failed_assert() {
    let (mut s, _) = sim_with(vec![0u8; 256]);
    let mut cmds = sum_setup(1, 1, 2, ActivationPrecision::B8);
    cmds.extend(fm_cmds(
        "ifm2",
        IFM2,
        1,
        1,
        2,
        true,
        ActivationPrecision::B8,
    ));
    cmds.push(acc_format(
        AccFormat::I32,
        AccInput::Ifm2,
        AccOutput::Enable,
    ));
    cmds.push(pool(PoolingMode::Sum));
    let e = run(&mut s, &cmds).unwrap_err();
    assert!(
        matches!(e.fault(), Some(Fault::Assert { section: "3.6.5", rule, .. }) if rule.contains("IFM2 signed b32")),
        "{e}"
    );
}

/// An argmax_x pool of a 1 x 5 x 1 row into one int32 element with unity scale.
fn argmax_x(row: [i8; 5]) -> i32 {
    let mut bytes = vec![0u8; 256];
    for (k, &v) in row.iter().enumerate() {
        bytes[k] = v as u8;
    }
    let (mut s, id) = sim_with(bytes);
    let mut cmds = fm_cmds("ifm", IFM, 1, 5, 1, true, ActivationPrecision::B8);
    cmds.extend(fm_cmds("ofm", OFM, 1, 1, 1, true, ActivationPrecision::B32));
    cmds.push(Command::SetActivation(SetActivation {
        activation_function: ActivationFunction::LutNone,
        table: 0,
        activation_clip_range: ActivationClipRange::None,
    }));
    cmds.push(Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 4 }));
    cmds.push(pool(PoolingMode::ArgmaxX));
    run(&mut s, &cmds).unwrap();
    let b = &s.memory().buffer(id)[OFM as usize..OFM as usize + 4];
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// TRM 3.10.10 argmax_x: `if (v > sign_extend(acc, 16)) acc = v + 65536*kx;` — the result
/// holds the maximum in its low 16 bits and its x index above; the first of equal maxima wins.
#[test]
fn argmax_x_returns_value_and_first_index_of_the_maximum() {
    assert_eq!(argmax_x([3, 9, 2, 9, -4]), 9 + 65536);
    assert_eq!(argmax_x([1, 2, 3, 4, 5]), 5 + 4 * 65536);
}

/// TRM 3.10.10 argmax: the identity -(1<<31) has low half 0, so the first comparison is
/// `v > 0` and an all-negative row leaves the identity (docs/decisions.md, simulator #6).
#[test]
fn argmax_x_of_negative_values_keeps_the_identity() {
    assert_eq!(argmax_x([-3, -9, -2, -1, -4]), i32::MIN);
}

/// A 1x1 sum pool with i48 accumulators from an IFM2 holding i48 values in b64 elements,
/// written to a b64 OFM (no activation, TRM 3.6.7) with unity scale.
fn sum48(ifm: [i8; 2], ifm2: [i64; 2]) -> Vec<i64> {
    let mut bytes = vec![0u8; 256];
    bytes[0] = ifm[0] as u8;
    bytes[1] = ifm[1] as u8;
    for (k, v) in ifm2.iter().enumerate() {
        let at = IFM2 as usize + 8 * k;
        bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    let (mut s, id) = sim_with(bytes);
    let mut cmds = sum_setup(1, 1, 2, ActivationPrecision::B64);
    cmds.extend(fm_cmds(
        "ifm2",
        IFM2,
        1,
        1,
        2,
        true,
        ActivationPrecision::B64,
    ));
    cmds.push(acc_format(
        AccFormat::I48,
        AccInput::Ifm2,
        AccOutput::Enable,
    ));
    cmds.push(pool(PoolingMode::Sum));
    run(&mut s, &cmds).unwrap();
    s.memory().buffer(id)[OFM as usize..OFM as usize + 16]
        .chunks(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// TRM 3.6.5/3.6.6 with acc_format i48: accumulators hold 48 bits (beyond i32) and a b64 OFM
/// receives them unchanged.
#[test]
fn i48_accumulators_hold_more_than_32_bits() {
    assert_eq!(
        sum48([7, -3], [(1 << 40) + 5, -(1 << 45)]),
        [(1 << 40) + 12, -(1 << 45) - 3]
    );
}

/// TRM 3.6.5 `accumulate`: the sum wraps at 48 bits (sign_extend(acc + v, 48)).
#[test]
fn i48_accumulation_wraps_at_48_bits() {
    assert_eq!(
        sum48([1, -1], [(1 << 47) - 1, -(1 << 47)]),
        [-(1 << 47), (1 << 47) - 1]
    );
}
