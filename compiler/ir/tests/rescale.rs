//! RESCALE (TOSA §2.13.4, `apply_scale_32` / `apply_scale_16` in scale_helpers.tosac).
//!
//! `result = (value * multiplier + round) >> shift` (arithmetic shift = floor), with
//! `round = 2^(shift-1)` for SINGLE_ROUND, and for DOUBLE_ROUND additionally `+2^30` (value ≥ 0)
//! or `-2^30` (value < 0) when `shift > 31`. Then `+ output_zp` and saturate.

mod common;
use common::*;
use npuc_ir::*;

use RescaleRounding::{DoubleRound, SingleRound};

#[test]
fn multiplier_2_30_shift_30_is_identity() {
    // (v * 2^30 + 2^29) >> 30 = v + floor(1/2) = v
    let x = i8v(&[5], &[-128, -1, 0, 1, 127]);
    for r in [SingleRound, DoubleRound] {
        let y = eval_v(
            Op::Rescale(rescale(DType::Int8, 1 << 30, 30, r)),
            std::slice::from_ref(&x),
        );
        assert_eq!(y, vec![-128, -1, 0, 1, 127]);
    }
}

#[test]
fn single_round_ties_go_up() {
    // m = 2^30, shift 32: v / 4.  round = 2^31.
    //  2 (0.5)  -> (2^31 + 2^31) >> 32 = 1
    // -2 (-0.5) -> (-2^31 + 2^31) >> 32 = 0
    //  6 (1.5)  -> (6*2^30 + 2^31) >> 32 = 2
    // -6 (-1.5) -> (-6*2^30 + 2^31) >> 32 = -1
    // -1 (-0.25)-> (-2^30 + 2^31) >> 32 = 0
    let x = i32v(&[5], &[2, -2, 6, -6, -1]);
    let y = eval_v(
        Op::Rescale(rescale(DType::Int32, 1 << 30, 32, SingleRound)),
        &[x],
    );
    assert_eq!(y, vec![1, 0, 2, -1, 0]);
}

#[test]
fn double_round_ties_go_away_from_zero() {
    // Same as above with round = 2^31 + 2^30 (v >= 0) or 2^31 - 2^30 (v < 0):
    //  2 -> (2^31 + 2^31 + 2^30) >> 32 = 1
    // -2 -> (-2^31 + 2^31 - 2^30) >> 32 = floor(-1/4) = -1
    //  6 -> (6*2^30 + 3*2^30) >> 32 = floor(9/4) = 2
    // -6 -> (-6*2^30 + 2^30) >> 32 = floor(-5/4) = -2
    // -1 -> (-2^30 + 2^30) >> 32 = 0
    let x = i32v(&[5], &[2, -2, 6, -6, -1]);
    let y = eval_v(
        Op::Rescale(rescale(DType::Int32, 1 << 30, 32, DoubleRound)),
        &[x],
    );
    assert_eq!(y, vec![1, -1, 2, -2, 0]);
}

#[test]
fn double_round_rounds_twice() {
    // 3 * 0.5 / 4 = 0.375. Single: (3*2^30 + 2^32) >> 33 = floor(7/8) = 0.
    // Double: (3*2^30 + 2^32 + 2^30) >> 33 = 1 — gemmlowp first rounds 3 * 0.5 = 1.5 to 2
    // (SaturatingRoundingDoublingHighMul), then 2 / 4 = 0.5 away from zero to 1.
    // For -3: (-3*2^30 + 2^32 - 2^30) >> 33 = 0 — the first step rounds -1.5 up to -1
    // (its ties go towards +infinity), then -1 / 4 = -0.25 rounds to 0. Not symmetric.
    let x = i32v(&[2], &[3, -3]);
    let single = eval_v(
        Op::Rescale(rescale(DType::Int32, 1 << 30, 33, SingleRound)),
        std::slice::from_ref(&x),
    );
    let double = eval_v(
        Op::Rescale(rescale(DType::Int32, 1 << 30, 33, DoubleRound)),
        &[x],
    );
    assert_eq!(single, vec![0, 0]); // -3: (-3*2^30 + 2^32) >> 33 = floor(1/8) = 0
    assert_eq!(double, vec![1, 0]);
}

#[test]
fn double_round_only_changes_shifts_above_31() {
    // shift 31: double_round adds nothing (TOSA: `if (shift > 31 ...)`).
    // v / 2 with round 2^30: -1 -> 0, 1 -> 1, -3 -> -1, 3 -> 2.
    let x = i32v(&[4], &[-1, 1, -3, 3]);
    for r in [SingleRound, DoubleRound] {
        let y = eval_v(
            Op::Rescale(rescale(DType::Int32, 1 << 30, 31, r)),
            std::slice::from_ref(&x),
        );
        assert_eq!(y, vec![0, 1, -1, 2]);
    }
}

#[test]
fn saturates_to_output_type() {
    let x = i32v(&[4], &[1000, -1000, 127, -128]);
    let y = eval_v(
        Op::Rescale(rescale(DType::Int8, 1 << 30, 30, SingleRound)),
        std::slice::from_ref(&x),
    );
    assert_eq!(y, vec![127, -128, 127, -128]);
    let y = eval_v(
        Op::Rescale(rescale(DType::Int16, 1 << 30, 30, SingleRound)),
        &[x],
    );
    assert_eq!(y, vec![1000, -1000, 127, -128]);
}

#[test]
fn zero_points() {
    // value = in - input_zp; out = scaled + output_zp, then clip:
    // 10 - 5 - 3 = 2; -128 - 5 - 3 = -136 -> -128; 127 - 5 - 3 = 119
    let mut a = rescale(DType::Int8, 1 << 30, 30, SingleRound);
    a.input_zp = 5;
    a.output_zp = -3;
    let y = eval_v(Op::Rescale(a), &[i8v(&[3], &[10, -128, 127])]);
    assert_eq!(y, vec![2, -128, 119]);
}

#[test]
fn per_channel_uses_last_dimension() {
    // Channel 0: identity. Channel 1: m = 2^30, shift 31 -> v / 2 rounded half up.
    // [[4, 5], [-4, -5]] -> [[4, 3], [-4, -2]]   (2.5 -> 3, -2.5 -> -2)
    let a = RescaleAttrs {
        multiplier: vec![1 << 30, 1 << 30],
        shift: vec![30, 31],
        per_channel: true,
        ..rescale(DType::Int8, 0, 0, SingleRound)
    };
    let y = eval_v(Op::Rescale(a), &[i32v(&[2, 2], &[4, 5, -4, -5])]);
    assert_eq!(y, vec![4, 3, -4, -2]);
}

#[test]
fn unsigned_input_and_output() {
    // u8 200 with zp 128 -> 72 as i8.
    let mut a = rescale(DType::Int8, 1 << 30, 30, SingleRound);
    a.input_zp = 128;
    assert_eq!(
        eval_v(Op::Rescale(a.clone()), &[val(DType::UInt8, &[1], &[200])]),
        vec![72]
    );
    // The same bits in an i8 tensor with input_unsigned: -56 is 200 unsigned.
    a.input_unsigned = true;
    assert_eq!(eval_v(Op::Rescale(a), &[i8v(&[1], &[-56])]), vec![72]);

    // i8 -100 to u8 with zp 128 -> 28; -200 would be -72 -> saturates at 0; 127 -> 255.
    let mut b = rescale(DType::UInt8, 1 << 30, 30, SingleRound);
    b.output_zp = 128;
    let (dt, _, y) = eval(Op::Rescale(b.clone()), &[i8v(&[3], &[-100, -128, 127])]);
    assert_eq!(dt, DType::UInt8);
    assert_eq!(y, vec![28, 0, 255]);
    // Writing unsigned into an i8 tensor stores the bits: 255 reads back as -1.
    b.output_dtype = DType::Int8;
    b.output_unsigned = true;
    assert_eq!(
        eval_v(Op::Rescale(b), &[i8v(&[3], &[-100, -128, 127])]),
        vec![28, 0, -1]
    );
}

#[test]
fn uint16_zero_point_32768() {
    let mut a = rescale(DType::Int16, 1 << 30, 30, SingleRound);
    a.input_zp = 32768;
    let y = eval_v(
        Op::Rescale(a),
        &[val(DType::UInt16, &[3], &[32868, 0, 65535])],
    );
    assert_eq!(y, vec![100, -32768, 32767]);
}

#[test]
fn scale16_from_i48() {
    // apply_scale_16: m = 2^14, shift 15 -> v / 2, single round half up.
    // 3 -> (3*2^14 + 2^14) >> 15 = 2; -3 -> (-3*2^14 + 2^14) >> 15 = -1
    // 3*2^20 -> 3*2^19 = 1572864 (i32), and as i16 it saturates to 32767.
    let mut a = rescale(DType::Int32, 1 << 14, 15, SingleRound);
    a.scale32 = false;
    let x = i48v(&[3], &[3, -3, 3 << 20]);
    assert_eq!(eval_v(Op::Rescale(a.clone()), &[x]), vec![2, -1, 1_572_864]);
    a.output_dtype = DType::Int16;
    assert_eq!(
        eval_v(Op::Rescale(a), &[i48v(&[1], &[3 << 20])]),
        vec![32767]
    );
}

#[test]
fn value_outside_shift_window_is_undefined() {
    // apply_scale_32 REQUIREs -2^(shift-1) <= value < 2^(shift-1): 2^29 with shift 30 fails.
    let a = rescale(DType::Int32, 1 << 30, 30, SingleRound);
    let msg = undefined(Op::Rescale(a.clone()), &[i32v(&[2], &[0, 1 << 29])]);
    assert!(msg.contains("element 1"), "{msg}");
    // 2^29 - 1 is fine.
    assert_eq!(
        eval_v(Op::Rescale(a), &[i32v(&[1], &[(1 << 29) - 1])]),
        vec![(1 << 29) - 1]
    );
}

#[test]
fn scale16_result_overflow_is_undefined() {
    // apply_scale_16 REQUIREs the result to fit i32: 2^46 * 32767 >> 2 does not.
    let mut a = rescale(DType::Int32, 32767, 2, SingleRound);
    a.scale32 = false;
    undefined(Op::Rescale(a), &[i48v(&[1], &[1 << 46])]);
}

#[test]
fn invalid_attributes_are_rejected_by_validation() {
    let x = i32v(&[2], &[0, 0]);
    let bad = |a: RescaleAttrs| graph1(Op::Rescale(a), std::slice::from_ref(&x)).is_err();
    assert!(bad(rescale(DType::Int8, 1 << 30, 1, SingleRound))); // shift < 2
    assert!(bad(rescale(DType::Int8, 1 << 30, 63, SingleRound))); // shift > 62
    assert!(bad(rescale(DType::Int8, -1, 30, SingleRound))); // negative multiplier
    let mut a = rescale(DType::Int8, 1 << 14, 30, DoubleRound);
    a.scale32 = false;
    assert!(bad(a)); // double round needs scale32
    let mut a = rescale(DType::Int8, 1 << 30, 30, SingleRound);
    a.input_zp = 1;
    assert!(bad(a)); // i32 input must have zero point 0
    let mut a = rescale(DType::UInt8, 1 << 30, 30, SingleRound);
    a.per_channel = true;
    assert!(bad(a)); // one multiplier for two channels; also i32 -> u8 not allowed
}
