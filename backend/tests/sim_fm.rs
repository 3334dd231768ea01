//! Feature-map addressing (TRM 3.6.5 `element_address_in_region`, 3.8 tiling;
//! /work/shared/ethos-u85/semantics.md §4): NHWC vs NHCWB16 addresses, tile2x2 and tile3x1
//! tile selection, and the NHCWB16 base alignment assert (docs/decisions.md, simulator #2, #3).
#![allow(clippy::needless_range_loop)]
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::Fault;
use sim_common::*;

/// Layout overrides applied after `fm_cmds` (later register writes win).
struct Layout {
    format: ActivationFormat,
    storage: ActivationStorage,
    bases: [u32; 4],
    stride_x: u32,
    stride_y: u32,
    stride_c: u32,
    width0: u16,
    height0: u16,
    height1: u16,
}

fn t(signed: bool) -> ActivationType {
    if signed {
        ActivationType::Signed
    } else {
        ActivationType::Unsigned
    }
}

/// IFM (or IFM2 with `ifm2`) layout commands.
fn ifm_layout(ifm2: bool, prec: ActivationPrecision, l: &Layout) -> Vec<Command> {
    let b = |i: usize| (0u8, l.bases[i]);
    if ifm2 {
        vec![
            Command::SetIfm2Precision(SetIfm2Precision {
                activation_type: t(true),
                activation_precision: prec,
                activation_format: l.format,
                activation_storage: l.storage,
            }),
            Command::SetIfm2Base0(SetIfm2Base0 {
                addr_hi: b(0).0,
                addr_lo: b(0).1,
            }),
            Command::SetIfm2Base1(SetIfm2Base1 {
                addr_hi: 0,
                addr_lo: l.bases[1],
            }),
            Command::SetIfm2Base2(SetIfm2Base2 {
                addr_hi: 0,
                addr_lo: l.bases[2],
            }),
            Command::SetIfm2Base3(SetIfm2Base3 {
                addr_hi: 0,
                addr_lo: l.bases[3],
            }),
            Command::SetIfm2StrideX(SetIfm2StrideX {
                addr_hi: 0,
                addr_lo: l.stride_x,
            }),
            Command::SetIfm2StrideY(SetIfm2StrideY {
                addr_hi: 0,
                addr_lo: l.stride_y,
            }),
            Command::SetIfm2StrideC(SetIfm2StrideC {
                addr_hi: 0,
                addr_lo: l.stride_c,
            }),
            Command::SetIfm2Width0M1(SetIfm2Width0M1 {
                width_m1: l.width0 - 1,
            }),
            Command::SetIfm2Height0M1(SetIfm2Height0M1 {
                height_m1: l.height0 - 1,
            }),
            Command::SetIfm2Height1M1(SetIfm2Height1M1 {
                height_m1: l.height1 - 1,
            }),
        ]
    } else {
        vec![
            Command::SetIfmPrecision(SetIfmPrecision {
                activation_type: t(true),
                activation_precision: prec,
                activation_format: l.format,
                activation_storage: l.storage,
            }),
            Command::SetIfmBase0(SetIfmBase0 {
                addr_hi: b(0).0,
                addr_lo: b(0).1,
            }),
            Command::SetIfmBase1(SetIfmBase1 {
                addr_hi: 0,
                addr_lo: l.bases[1],
            }),
            Command::SetIfmBase2(SetIfmBase2 {
                addr_hi: 0,
                addr_lo: l.bases[2],
            }),
            Command::SetIfmBase3(SetIfmBase3 {
                addr_hi: 0,
                addr_lo: l.bases[3],
            }),
            Command::SetIfmStrideX(SetIfmStrideX {
                addr_hi: 0,
                addr_lo: l.stride_x,
            }),
            Command::SetIfmStrideY(SetIfmStrideY {
                addr_hi: 0,
                addr_lo: l.stride_y,
            }),
            Command::SetIfmStrideC(SetIfmStrideC {
                addr_hi: 0,
                addr_lo: l.stride_c,
            }),
            Command::SetIfmWidth0M1(SetIfmWidth0M1 {
                width_m1: l.width0 - 1,
            }),
            Command::SetIfmHeight0M1(SetIfmHeight0M1 {
                height_m1: l.height0 - 1,
            }),
            Command::SetIfmHeight1M1(SetIfmHeight1M1 {
                height_m1: l.height1 - 1,
            }),
        ]
    }
}

/// A copy: OFM = max(IFM, IFM2) with IFM2 described exactly like the IFM.
/// `ifm` is the IFM layout; the OFM is a plain NHWC h x w x c tensor at `ofm_base`
/// unless `ofm` overrides it.
fn copy(
    prec: ActivationPrecision,
    (h, w, c): (u16, u16, u16),
    ifm: &Layout,
    ofm_base: u32,
    ofm: Option<Vec<Command>>,
) -> Vec<Command> {
    let mut v = fm_cmds("ifm", 0, h, w, c, true, prec);
    v.extend(fm_cmds("ifm2", 0, h, w, c, true, prec));
    v.extend(ifm_layout(false, prec, ifm));
    v.extend(ifm_layout(true, prec, ifm));
    v.extend(fm_cmds("ofm", ofm_base, h, w, c, true, prec));
    if let Some(o) = ofm {
        v.extend(o);
    }
    v.extend(unity_in_scales());
    v.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Max,
    }));
    v
}

fn nhwc(base: u32, stride_x: u32, stride_y: u32, w: u16, h: u16) -> Layout {
    Layout {
        format: ActivationFormat::Nhwc,
        storage: ActivationStorage::Tile2x2,
        bases: [base, 0, 0, 0],
        stride_x,
        stride_y,
        stride_c: 0,
        width0: w,
        height0: h,
        height1: h,
    }
}

/// Memory whose byte at address `a` (< 128) is `a`: an int8 copy then writes, for each output
/// element, the IFM address it was read from.
fn address_memory() -> Vec<u8> {
    (0..256u32)
        .map(|a| if a < 128 { a as u8 } else { 0 })
        .collect()
}

/// NHWC (TRM 3.6.5, §2.1.1): addr = base + y*stride_y + x*stride_x + c*element_size.
/// NHCWB16: addr = base + y*stride_y + (c/16)*stride_c + (16*x + c%16)*element_size.
/// An NHWC 1x2x20 int8 IFM copied to an NHCWB16 OFM lands in two 16-channel bricks.
#[test]
fn nhwc_to_nhcwb16_addresses() {
    let mut mem = vec![0u8; 256];
    for x in 0..2 {
        for c in 0..20 {
            mem[x * 20 + c] = (x * 20 + c + 1) as u8;
        }
    }
    let (mut s, id) = sim_with(mem);
    // OFM NHCWB16 at 128: stride_c = one brick of 2 x 16 bytes, stride_y = 2 bricks.
    let ofm = vec![
        Command::SetOfmPrecision(SetOfmPrecision {
            activation_type: ActivationType::Signed,
            activation_precision: ActivationPrecision::B8,
            activation_format: ActivationFormat::Nhcwb16,
            scale_mode: OfmScaleMode::Global,
            activation_reverse: ActivationReverse::None,
            activation_transpose: ActivationTranspose::Hwc,
            activation_storage: ActivationStorage::Tile2x2,
        }),
        Command::SetOfmStrideC(SetOfmStrideC {
            addr_hi: 0,
            addr_lo: 32,
        }),
        Command::SetOfmStrideY(SetOfmStrideY {
            addr_hi: 0,
            addr_lo: 64,
        }),
    ];
    let c = copy(
        ActivationPrecision::B8,
        (1, 2, 20),
        &nhwc(0, 20, 40, 2, 1),
        128,
        Some(ofm),
    );
    run(&mut s, &c).unwrap();
    let m = s.memory().buffer(id);
    for x in 0..2 {
        for ch in 0..20 {
            let a = 128 + (ch >> 4) * 32 + 16 * x + (ch & 15);
            assert_eq!(m[a], (x * 20 + ch + 1) as u8, "x {x} c {ch} at {a}");
        }
    }
}

/// NHCWB16 with int16 (TRM 3.6.5): the brick offset is (16*x + c%16)*element_size, and the
/// base only needs 16-byte alignment, not 16*element_size (docs/decisions.md, simulator #2):
/// base 16 is accepted for int16.
#[test]
fn nhcwb16_int16_base_16_accepted() {
    let mut mem = vec![0u8; 256];
    // x = 0 at 16, x = 1 at 16 + 16*2 = 48 (c = 0).
    mem[16..18].copy_from_slice(&(-7i16).to_le_bytes());
    mem[48..50].copy_from_slice(&(99i16).to_le_bytes());
    let (mut s, id) = sim_with(mem);
    let ifm = Layout {
        format: ActivationFormat::Nhcwb16,
        storage: ActivationStorage::Tile2x2,
        bases: [16, 0, 0, 0],
        stride_x: 0,
        stride_y: 64,
        stride_c: 64,
        width0: 2,
        height0: 1,
        height1: 1,
    };
    let c = copy(ActivationPrecision::B16, (1, 2, 1), &ifm, 128, None);
    run(&mut s, &c).unwrap();
    let m = s.memory().buffer(id);
    let out: Vec<i16> = (0..2)
        .map(|i| i16::from_le_bytes([m[128 + 2 * i], m[129 + 2 * i]]))
        .collect();
    assert_eq!(out, vec![-7, 99]);
}

/// NHCWB16 base not a multiple of 16 (TRM 3.6.5 `assert((base[tile] % 16) == 0)`) is a failed
/// assert, even though 8 is a multiple of the int16 element size (decisions.md, simulator #2).
#[test]
fn nhcwb16_base_not_16_aligned_fails() {
    let (mut s, _) = sim_with(vec![0u8; 256]);
    let ifm = Layout {
        format: ActivationFormat::Nhcwb16,
        storage: ActivationStorage::Tile2x2,
        bases: [8, 0, 0, 0],
        stride_x: 0,
        stride_y: 64,
        stride_c: 64,
        width0: 2,
        height0: 1,
        height1: 1,
    };
    let c = copy(ActivationPrecision::B16, (1, 2, 1), &ifm, 128, None);
    let e = run(&mut s, &c).unwrap_err();
    match e.fault() {
        Some(Fault::Assert { section, rule, .. }) => {
            assert_eq!(*section, "3.6.5");
            assert!(rule.contains("base % 16"), "{e}");
        }
        _ => panic!("{e}"),
    }
    // The same base is fine for NHWC int16 (only element-size alignment, TRM 3.6.5).
    let c = copy(
        ActivationPrecision::B16,
        (1, 2, 1),
        &nhwc(8, 2, 4, 2, 1),
        128,
        None,
    );
    run(&mut s, &c).unwrap();
}

/// tile2x2 (TRM 3.6.5, 3.8): `if (x >= width0) tile += 1; if (y >= height[tile]) tile += 2`:
/// the left column splits at HEIGHT0, the right column at HEIGHT1.
#[test]
fn tile2x2_selects_tiles_by_width0_and_per_column_height() {
    let (mut s, id) = sim_with(address_memory());
    let ifm = Layout {
        format: ActivationFormat::Nhwc,
        storage: ActivationStorage::Tile2x2,
        bases: [0, 32, 64, 96],
        stride_x: 1,
        stride_y: 4,
        stride_c: 0,
        width0: 2,
        height0: 1,
        height1: 3,
    };
    let c = copy(ActivationPrecision::B8, (4, 4, 1), &ifm, 128, None);
    run(&mut s, &c).unwrap();
    let m = s.memory().buffer(id);
    #[rustfmt::skip]
    let expect: [u8; 16] = [
        0, 1, 32, 33,   // y 0: tile 0 | tile 1
        64, 65, 36, 37, // y 1: tile 2 (y-1 = 0) | tile 1
        68, 69, 40, 41, // y 2: tile 2 (y-1 = 1) | tile 1
        72, 73, 96, 97, // y 3: tile 2 (y-1 = 2) | tile 3 (y-3 = 0)
    ];
    assert_eq!(&m[128..144], &expect);
}

/// tile3x1 (TRM 3.6.5): `if (y >= height[1]) tile = 2 (y -= height[1]) else if (y >= height[0])
/// tile = 1 (y -= height[0])`. Followed literally (docs/decisions.md, simulator #3): HEIGHT1
/// is the absolute first row of tile 2, not the height of tile 1.
#[test]
fn tile3x1_follows_pseudocode_literally() {
    let ifm = Layout {
        format: ActivationFormat::Nhwc,
        storage: ActivationStorage::Tile3x1,
        bases: [0, 32, 64, 0],
        stride_x: 1,
        stride_y: 2,
        stride_c: 0,
        width0: 2,
        height0: 2,
        height1: 4,
    };
    let (mut s, id) = sim_with(address_memory());
    run(
        &mut s,
        &copy(ActivationPrecision::B8, (6, 2, 1), &ifm, 128, None),
    )
    .unwrap();
    // Rows 0-1 tile 0, rows 2-3 tile 1 (y-2), rows 4-5 tile 2 (y-4). Were HEIGHT1 the height of
    // tile 1, tile 1 would hold rows 2-5 and tile 2 none.
    #[rustfmt::skip]
    let expect: [u8; 12] = [0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67];
    assert_eq!(&s.memory().buffer(id)[128..140], &expect);

    // HEIGHT1 < HEIGHT0: `y >= height[1]` is tested first, so tile 1 is never used.
    let ifm = Layout {
        height0: 4,
        height1: 2,
        ..ifm
    };
    let (mut s, id) = sim_with(address_memory());
    run(
        &mut s,
        &copy(ActivationPrecision::B8, (6, 2, 1), &ifm, 128, None),
    )
    .unwrap();
    #[rustfmt::skip]
    let expect: [u8; 12] = [0, 1, 2, 3, 64, 65, 66, 67, 68, 69, 70, 71];
    assert_eq!(&s.memory().buffer(id)[128..140], &expect);
}
