//! The ISA table round-trips: every valid value of every field of every instruction decodes to
//! a typed command that encodes back to the same words (TRM 3.10, 3.11).

use npuc_backend::isa::{
    decode_stream, encode_stream, CmdKind, FieldKind, FieldSpec, Opcode, COMMANDS,
};

/// Values to try for a field: every value up to 16 bits wide, otherwise every single-bit
/// value, the extremes and a spread of others.
fn values(f: &FieldSpec) -> Vec<u64> {
    let max = f.value_mask();
    if let FieldKind::Enum(id) = f.kind {
        return id
            .spec()
            .values
            .iter()
            .map(|v| u64::from(v.value))
            .collect();
    }
    if f.width <= 16 {
        return (0..=max).collect();
    }
    let mut v: Vec<u64> = (0..f.width).map(|b| 1u64 << b).collect();
    v.extend([
        0,
        max,
        max - 1,
        max >> 1,
        0x1234_5678 & max,
        0xdead_beef & max,
    ]);
    v
}

fn words_of(spec_kind: CmdKind, raw: u64) -> Vec<u32> {
    match spec_kind {
        CmdKind::Cmd0 => vec![raw as u32],
        CmdKind::Cmd1 => vec![raw as u32, (raw >> 32) as u32],
    }
}

#[test]
fn every_value_of_every_field_round_trips() {
    let mut checked = 0usize;
    for spec in &COMMANDS {
        let header = u64::from(spec.header());
        for f in spec.fields {
            for v in values(f) {
                let raw = header | (v << f.lo);
                let words = words_of(spec.kind, raw);
                let decoded = decode_stream(&words)
                    .unwrap_or_else(|e| panic!("{}.{}={v}: {e}", spec.name, f.name));
                assert_eq!(decoded.len(), 1);
                assert_eq!(decoded[0].opcode(), spec.opcode);
                assert_eq!(decoded[0].raw, raw);
                assert_eq!(f.extract(decoded[0].raw), v);
                assert_eq!(
                    encode_stream(&[decoded[0].command]).unwrap(),
                    words,
                    "{}.{}={v}",
                    spec.name,
                    f.name
                );
                checked += 1;
            }
        }
        // All fields at their maximum valid value at once.
        let mut raw = header;
        for f in spec.fields {
            raw |= values(f).into_iter().max().unwrap_or(0) << f.lo;
        }
        let words = words_of(spec.kind, raw);
        let d = decode_stream(&words).unwrap();
        assert_eq!(
            encode_stream(&[d[0].command]).unwrap(),
            words,
            "{}",
            spec.name
        );
    }
    assert!(checked > 100_000, "only {checked} values checked");
}

#[test]
fn the_table_has_63_cmd0_and_48_cmd1_instructions() {
    assert_eq!(Opcode::ALL.len(), 111);
    let cmd1 = COMMANDS.iter().filter(|c| c.kind == CmdKind::Cmd1).count();
    assert_eq!((111 - cmd1, cmd1), (63, 48));
    for (i, op) in Opcode::ALL.iter().enumerate() {
        assert_eq!(op.spec().opcode, *op);
        assert_eq!(*op as usize, i);
        assert_eq!(Opcode::from_header(op.spec().header()), Some(*op));
    }
}

#[test]
fn known_encodings_from_the_trm() {
    use npuc_backend::isa::*;
    // NPU_SET_IFM_PRECISION 0x0105 with signed b8 nhwc tile2x2 (Vela listing: 0001 0105).
    let c = Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Tile2x2,
    });
    assert_eq!(encode_stream(&[c]).unwrap(), vec![0x0001_0105]);
    // NPU_SET_IFM_BASE0 addr 0x1000 (cmd1: 0000 4000, then 00001000).
    let c = Command::SetIfmBase0(SetIfmBase0 {
        addr_hi: 0,
        addr_lo: 0x1000,
    });
    assert_eq!(encode_stream(&[c]).unwrap(), vec![0x0000_4000, 0x0000_1000]);
    // NPU_SET_OFM_SCALE shift 40, scale 1136453180 (Vela listing: 43bce63c 0028 4024).
    let c = Command::SetOfmScale(SetOfmScale {
        shift: 40,
        dbl_rnd: 0,
        round_mode: RoundModeOfm::DoubleSymmetric,
        scale: 1_136_453_180,
    });
    assert_eq!(encode_stream(&[c]).unwrap(), vec![0x0028_4024, 0x43bc_e63c]);
    // NPU_OP_STOP mask 0xffff.
    assert_eq!(
        encode_stream(&[Command::OpStop(OpStop { mask: 0xffff })]).unwrap(),
        vec![0xffff_0000]
    );
}

#[test]
fn signed_fields_keep_their_sign() {
    use npuc_backend::isa::*;
    let c = Command::SetOpScalar(SetOpScalar { scalar: -5 });
    let w = encode_stream(&[c]).unwrap();
    assert_eq!(w, vec![0x0000_4027, 0xffff_fffb]);
    assert_eq!(decode_stream(&w).unwrap()[0].command, c);
    let c = Command::SetResizeXOffset(SetResizeXOffset {
        resize_x_offset: -2048,
    });
    let w = encode_stream(&[c]).unwrap();
    assert_eq!(decode_stream(&w).unwrap()[0].command, c);
}

#[test]
fn values_wider_than_their_field_are_refused() {
    use npuc_backend::isa::*;
    let e = encode_stream(&[Command::SetIfmPadTop(SetIfmPadTop { pad: 128 })]).unwrap_err();
    assert_eq!((e.index, e.source.field), (0, "pad"));
    let e = encode_stream(&[
        Command::SetIfmRegion(SetIfmRegion { region: 1 }),
        Command::SetResizeXOffset(SetResizeXOffset {
            resize_x_offset: 2048,
        }),
    ])
    .unwrap_err();
    assert_eq!((e.index, e.source.field), (1, "resize_x_offset"));
}

#[test]
fn the_register_file_keeps_the_last_value_of_each_set() {
    use npuc_backend::isa::*;
    let mut regs = RegisterFile::default();
    assert!(regs.apply(&Command::SetIfmRegion(SetIfmRegion { region: 3 })));
    assert!(regs.apply(&Command::SetIfmRegion(SetIfmRegion { region: 1 })));
    assert!(!regs.apply(&Command::OpConv(OpConv { weights_ifm2: 0 })));
    assert_eq!(regs.ifm_region.region, 1);
    assert_eq!(regs.ofm_region.region, 0);
}

#[test]
fn every_field_is_inside_its_command() {
    for spec in &COMMANDS {
        let bits = if spec.kind == CmdKind::Cmd1 { 64 } else { 32 };
        let mut seen = 0xffffu64;
        for f in spec.fields {
            assert!(
                u32::from(f.lo) + u32::from(f.width) <= bits,
                "{}.{}",
                spec.name,
                f.name
            );
            let m = f.value_mask() << f.lo;
            assert_eq!(seen & m, 0, "{}.{} overlaps", spec.name, f.name);
            seen |= m;
        }
        assert_eq!(seen & spec.reserved & !0x3c00, 0, "{}", spec.name);
        let all = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        assert_eq!(seen | spec.reserved, all, "{}: uncovered bits", spec.name);
    }
}
