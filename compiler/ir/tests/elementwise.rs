//! Elementwise operators: TOSA §2.4.1 CLAMP, §2.5 binary, §2.5.17 TABLE, §2.6 unary,
//! §2.7.1 SELECT, §2.8 comparisons, §2.13.1 CAST. Broadcasting per §1.11.3.

mod common;
use common::*;
use npuc_ir::*;

#[test]
fn add_broadcasts_size_one_dimensions() {
    // [[10],[20]] + [[1,2,3]] = [[11,12,13],[21,22,23]]
    let (_, shape, v) = eval(
        Op::Add,
        &[i32v(&[2, 1], &[10, 20]), i32v(&[1, 3], &[1, 2, 3])],
    );
    assert_eq!(shape, vec![2, 3]);
    assert_eq!(v, vec![11, 12, 13, 21, 22, 23]);
}

#[test]
fn add_sub_overflow_is_undefined() {
    undefined(Op::Add, &[i32v(&[1], &[i32::MAX.into()]), i32v(&[1], &[1])]);
    undefined(Op::Sub, &[i32v(&[1], &[i32::MIN.into()]), i32v(&[1], &[1])]);
    undefined(Op::Add, &[i8v(&[1], &[100]), i8v(&[1], &[100])]);
    assert_eq!(
        eval_v(Op::Sub, &[i8v(&[1], &[-100]), i8v(&[1], &[28])]),
        vec![-128]
    );
}

#[test]
fn mul_widens_and_shifts() {
    // i8 * i8 -> i32
    let (dt, _, v) = eval(
        Op::Mul(MulAttrs::default()),
        &[i8v(&[1], &[-128]), i8v(&[1], &[-128])],
    );
    assert_eq!((dt, v), (DType::Int32, vec![16384]));
    // i32 with shift 1: (15 + 1) >> 1 = 8 (7.5 -> 8); (-15 + 1) >> 1 = -7 (-7.5 -> -7)
    let op = Op::Mul(MulAttrs { shift: 1 });
    assert_eq!(
        eval_v(op.clone(), &[i32v(&[2], &[3, -3]), i32v(&[1], &[5])]),
        vec![8, -7]
    );
    // shift 0 keeps the low 32 bits: 65536 * 65536 = 2^32 -> 0
    let v = eval_v(
        Op::Mul(MulAttrs::default()),
        &[i32v(&[1], &[65536]), i32v(&[1], &[65536])],
    );
    assert_eq!(v, vec![0]);
    // with a shift the result must fit i32: (2^31 - 1)^2 >> 1 does not
    undefined(
        op,
        &[
            i32v(&[1], &[i32::MAX.into()]),
            i32v(&[1], &[i32::MAX.into()]),
        ],
    );
    // shift is only allowed for i32
    assert!(graph1(
        Op::Mul(MulAttrs { shift: 1 }),
        &[i8v(&[1], &[1]), i8v(&[1], &[1])]
    )
    .is_err());
}

#[test]
fn min_max() {
    let a = i32v(&[3], &[-5, 0, 7]);
    let b = i32v(&[3], &[-6, 1, 7]);
    assert_eq!(eval_v(Op::Maximum, &[a.clone(), b.clone()]), vec![-5, 1, 7]);
    assert_eq!(eval_v(Op::Minimum, &[a, b]), vec![-6, 0, 7]);
}

#[test]
fn intdiv_truncates_towards_zero() {
    let v = eval_v(
        Op::IntDiv,
        &[i32v(&[3], &[7, -7, 7]), i32v(&[3], &[2, 2, -2])],
    );
    assert_eq!(v, vec![3, -3, -3]);
    undefined(Op::IntDiv, &[i32v(&[1], &[1]), i32v(&[1], &[0])]);
    undefined(
        Op::IntDiv,
        &[i32v(&[1], &[i32::MIN.into()]), i32v(&[1], &[-1])],
    );
}

#[test]
fn arithmetic_right_shift_floor_and_round() {
    // -7 >> 1 = -4 (floor); rounded adds the last bit shifted out ((-7 >> 0) & 1 = 1): -3.
    // 7 >> 1 = 3, rounded 4; 6 >> 2 = 1, rounded: (6 >> 1) & 1 = 1 -> 2.
    let x = i8v(&[3], &[-7, 7, 6]);
    let s = i8v(&[3], &[1, 1, 2]);
    let plain = Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: false });
    let round = Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: true });
    assert_eq!(
        eval_v(plain.clone(), &[x.clone(), s.clone()]),
        vec![-4, 3, 1]
    );
    assert_eq!(eval_v(round, &[x, s]), vec![-3, 4, 2]);
    // shift must be in 0..=7 for i8
    undefined(plain.clone(), &[i8v(&[1], &[1]), i8v(&[1], &[8])]);
    undefined(plain, &[i8v(&[1], &[1]), i8v(&[1], &[-1])]);
}

#[test]
fn logical_shifts_work_on_the_type_width() {
    // i8: 1 << 7 = 0x80 = -128; 3 << 7 = 0x180 -> low byte 0x80 = -128
    let v = eval_v(Op::LogicalLeftShift, &[i8v(&[2], &[1, 3]), i8v(&[1], &[7])]);
    assert_eq!(v, vec![-128, -128]);
    // i8: 0x80 >> 1 = 0x40 = 64; 0xFF >> 4 = 15
    let v = eval_v(
        Op::LogicalRightShift,
        &[i8v(&[2], &[-128, -1]), i8v(&[2], &[1, 4])],
    );
    assert_eq!(v, vec![64, 15]);
    // i32: 0xFFFFFFFF >> 28 = 15
    let v = eval_v(
        Op::LogicalRightShift,
        &[i32v(&[1], &[-1]), i32v(&[1], &[28])],
    );
    assert_eq!(v, vec![15]);
    undefined(Op::LogicalLeftShift, &[i16v(&[1], &[1]), i16v(&[1], &[16])]);
}

#[test]
fn bitwise_and_logical() {
    let a = i8v(&[2], &[0b0101, -1]);
    let b = i8v(&[2], &[0b0011, 0x0f]);
    assert_eq!(
        eval_v(Op::BitwiseAnd, &[a.clone(), b.clone()]),
        vec![0b0001, 0x0f]
    );
    assert_eq!(
        eval_v(Op::BitwiseOr, &[a.clone(), b.clone()]),
        vec![0b0111, -1]
    );
    assert_eq!(eval_v(Op::BitwiseXor, &[a.clone(), b]), vec![0b0110, -16]);
    assert_eq!(eval_v(Op::BitwiseNot, &[a]), vec![-6, 0]);
    let p = boolv(&[4], &[0, 0, 1, 1]);
    let q = boolv(&[4], &[0, 1, 0, 1]);
    assert_eq!(
        eval_v(Op::LogicalAnd, &[p.clone(), q.clone()]),
        vec![0, 0, 0, 1]
    );
    assert_eq!(
        eval_v(Op::LogicalOr, &[p.clone(), q.clone()]),
        vec![0, 1, 1, 1]
    );
    assert_eq!(eval_v(Op::LogicalXor, &[p.clone(), q]), vec![0, 1, 1, 0]);
    assert_eq!(eval_v(Op::LogicalNot, &[p]), vec![1, 1, 0, 0]);
}

#[test]
fn comparisons_produce_bool() {
    let a = i32v(&[3], &[1, 2, 3]);
    let b = i32v(&[1], &[2]);
    let (dt, _, v) = eval(Op::Equal, &[a.clone(), b.clone()]);
    assert_eq!((dt, v), (DType::Bool, vec![0, 1, 0]));
    assert_eq!(eval_v(Op::Greater, &[a.clone(), b.clone()]), vec![0, 0, 1]);
    assert_eq!(eval_v(Op::GreaterEqual, &[a, b]), vec![0, 1, 1]);
}

#[test]
fn abs_clz_negate() {
    assert_eq!(eval_v(Op::Abs, &[i32v(&[3], &[-5, 0, 5])]), vec![5, 0, 5]);
    undefined(Op::Abs, &[i32v(&[1], &[i32::MIN.into()])]);
    // CLZ of 0 is 32; 1 -> 31; -1 -> 0; 0x10000 -> 15
    let v = eval_v(Op::Clz, &[i32v(&[4], &[0, 1, -1, 0x10000])]);
    assert_eq!(v, vec![32, 31, 0, 15]);
    // NEGATE: -(in - in_zp) + out_zp, clipped: -(5 - 1) + (-1) = -5; -(-128) = 128 -> 127
    let n = |input_zp, output_zp| {
        Op::Negate(NegateAttrs {
            input_zp,
            output_zp,
        })
    };
    assert_eq!(eval_v(n(1, -1), &[i8v(&[1], &[5])]), vec![-5]);
    assert_eq!(eval_v(n(0, 0), &[i8v(&[1], &[-128])]), vec![127]);
    undefined(n(0, 0), &[i32v(&[1], &[i32::MIN.into()])]);
}

#[test]
fn select_broadcasts_three_ways() {
    let c = boolv(&[2, 1], &[1, 0]);
    let a = i8v(&[1, 2], &[1, 2]);
    let b = i8v(&[1, 1], &[-9]);
    let (_, shape, v) = eval(Op::Select, &[c, a, b]);
    assert_eq!((shape, v), (vec![2, 2], vec![1, 2, -9, -9]));
}

#[test]
fn clamp() {
    let op = Op::Clamp(ClampAttrs { min: 0, max: 6 });
    assert_eq!(
        eval_v(op, &[i8v(&[4], &[-128, 0, 5, 127])]),
        vec![0, 0, 5, 6]
    );
    assert!(graph1(Op::Clamp(ClampAttrs { min: 1, max: 0 }), &[i8v(&[1], &[0])]).is_err());
    assert!(graph1(
        Op::Clamp(ClampAttrs { min: 0, max: 300 }),
        &[i8v(&[1], &[0])]
    )
    .is_err());
}

#[test]
fn table_int8_indexes_by_value_plus_128() {
    // table[i] = 127 - i, so out = 127 - (v + 128) = -1 - v
    let table: Vec<i8> = (0..256).map(|i| (127 - i) as i8).collect();
    let op = Op::Table(TableAttrs {
        table: TableData::I8(table),
    });
    let (dt, _, v) = eval(op, &[i8v(&[3], &[-128, 0, 127])]);
    assert_eq!((dt, v), (DType::Int8, vec![127, -1, -128]));
}

#[test]
fn table_int16_interpolates() {
    // apply_lookup_s (§1.12.5): index = (v + 32768) >> 7, fraction = v & 0x7f,
    // out = (table[index] << 7) + (table[index + 1] - table[index]) * fraction.
    // A linear table t[i] = 2i - 512 gives out = 2v exactly:
    //   v = -1: index 255, fraction 127: (-2 << 7) + 2 * 127 = -2
    let lin: Vec<i16> = (0..513).map(|i| (2 * i - 512) as i16).collect();
    let op = Op::Table(TableAttrs {
        table: TableData::I16(lin),
    });
    let (dt, _, v) = eval(op, &[i16v(&[5], &[0, 1, -1, -32768, 32767])]);
    assert_eq!((dt, v), (DType::Int32, vec![0, 2, -2, -65536, 65534]));
    // A bump at entry 256 (value 0): v = 0 -> 100 << 7 = 12800; v = 64 -> 12800 - 100 * 64 = 6400;
    // v = -64: index 255, fraction 64 -> 0 + 100 * 64 = 6400.
    let mut bump = vec![0i16; 513];
    bump[256] = 100;
    let op = Op::Table(TableAttrs {
        table: TableData::I16(bump),
    });
    assert_eq!(
        eval_v(op, &[i16v(&[3], &[0, 64, -64])]),
        vec![12800, 6400, 6400]
    );
}

#[test]
fn table_slope_overflow_is_undefined() {
    let mut t = vec![0i16; 513];
    t[0] = -32768;
    t[1] = 32767;
    let op = Op::Table(TableAttrs {
        table: TableData::I16(t),
    });
    undefined(op.clone(), &[i16v(&[1], &[-32768])]);
    // Entries not used by the data do not matter.
    assert_eq!(eval_v(op, &[i16v(&[1], &[0])]), vec![0]);
}

#[test]
fn table_size_must_match_input_type() {
    let op = Op::Table(TableAttrs {
        table: TableData::I8(vec![0; 255]),
    });
    assert!(graph1(op, &[i8v(&[1], &[0])]).is_err());
    let op = Op::Table(TableAttrs {
        table: TableData::I8(vec![0; 256]),
    });
    assert!(graph1(op, &[i16v(&[1], &[0])]).is_err());
}

#[test]
fn cast_extends_truncates_and_tests_for_zero() {
    let cast = |to| Op::Cast(CastAttrs { to });
    // i32 -> i8 keeps the low byte: 300 = 0x12C -> 0x2C = 44; -129 -> 127
    assert_eq!(
        eval_v(cast(DType::Int8), &[i32v(&[2], &[300, -129])]),
        vec![44, 127]
    );
    // i8 -> i32 sign-extends
    assert_eq!(eval_v(cast(DType::Int32), &[i8v(&[1], &[-1])]), vec![-1]);
    // to bool: != 0; from bool: 0/1
    assert_eq!(
        eval_v(cast(DType::Bool), &[i8v(&[2], &[0, -3])]),
        vec![0, 1]
    );
    assert_eq!(eval_v(cast(DType::Int16), &[boolv(&[1], &[1])]), vec![1]);
    // unsigned types: u8 255 -> i8 -1 (same bits); i8 -1 -> u16 0xFFFF (sign-extend)
    assert_eq!(
        eval_v(cast(DType::Int8), &[val(DType::UInt8, &[1], &[255])]),
        vec![-1]
    );
    assert_eq!(
        eval_v(cast(DType::UInt16), &[i8v(&[1], &[-1])]),
        vec![65535]
    );
}
