//! Decoding is total: malformed streams give typed errors naming the byte offset (TRM 3.5.3).

use npuc_backend::isa::{decode_stream, words_from_bytes, DecodeError};
use proptest::prelude::*;

const IFM_REGION_1: u32 = 0x0001_010f;

#[test]
fn reserved_control_bits_are_an_error_at_their_offset() {
    let e = decode_stream(&[IFM_REGION_1, 0x0000_8105]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::ReservedControl {
            offset: 4,
            word: 0x8105,
            control: 0b10
        }
    );
    let e = decode_stream(&[0x0000_c000]).unwrap_err();
    assert!(matches!(
        e,
        DecodeError::ReservedControl {
            offset: 0,
            control: 0b11,
            ..
        }
    ));
}

#[test]
fn header_bits_13_to_10_must_be_zero() {
    let e = decode_stream(&[IFM_REGION_1 | 1 << 10]).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::ReservedBits {
                offset: 0,
                name: "NPU_SET_IFM_REGION",
                bits: 0x400
            }
        ),
        "{e}"
    );
}

#[test]
fn unknown_opcodes_are_an_error() {
    // cmd0 0x004 and cmd1 0x007 are unassigned.
    let e = decode_stream(&[IFM_REGION_1, IFM_REGION_1, 0x0000_0004]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::UnknownOpcode {
            offset: 8,
            word: 4,
            kind: "cmd0",
            opcode: 4
        }
    );
    let e = decode_stream(&[0x0000_4007, 0]).unwrap_err();
    assert!(matches!(
        e,
        DecodeError::UnknownOpcode {
            kind: "cmd1",
            opcode: 7,
            ..
        }
    ));
}

#[test]
fn a_cmd1_header_needs_its_payload_word() {
    let e = decode_stream(&[IFM_REGION_1, 0x0000_4000]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::MissingPayload {
            offset: 4,
            name: "NPU_SET_IFM_BASE0"
        }
    );
}

#[test]
fn reserved_payload_bits_are_an_error() {
    // NPU_SET_IFM_REGION: region is [18:16], bit 19 reserved.
    let e = decode_stream(&[0x0008_010f]).unwrap_err();
    assert!(
        matches!(e, DecodeError::ReservedBits { bits: 0x8_0000, .. }),
        "{e}"
    );
    // NPU_SET_IFM_BASE0: bits [31:24] of the header word are reserved.
    let e = decode_stream(&[0x0100_4000, 0]).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::ReservedBits {
                bits: 0x100_0000,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn reserved_enum_values_are_an_error() {
    // NPU_SET_IFM_PRECISION activation_format [23:22] = 2 is reserved.
    let e = decode_stream(&[0x0080_0105]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::ReservedEnumValue {
            offset: 0,
            name: "NPU_SET_IFM_PRECISION",
            field: "activation_format",
            enum_type: "activation_format_t",
            value: 2
        }
    );
    // NPU_OP_ELEMENTWISE mode 12 is reserved.
    let e = decode_stream(&[0x000c_0006]).unwrap_err();
    assert!(matches!(
        e,
        DecodeError::ReservedEnumValue {
            field: "elementwise_mode",
            value: 12,
            ..
        }
    ));
}

#[test]
fn byte_streams_must_be_whole_words() {
    assert_eq!(
        words_from_bytes(&[1, 2, 3]).unwrap_err(),
        DecodeError::NotWordAligned { len: 3 }
    );
    assert_eq!(
        words_from_bytes(&[0x0f, 0x01, 0x01, 0x00]).unwrap(),
        vec![IFM_REGION_1]
    );
}

#[test]
fn errors_read_well() {
    let e = decode_stream(&[IFM_REGION_1, 0x0000_4000]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "offset 0x4: NPU_SET_IFM_BASE0 is a two-word command but the stream ends after its header"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn decoding_random_words_never_panics_and_what_decodes_re_encodes(words in proptest::collection::vec(any::<u32>(), 0..64)) {
        if let Ok(cmds) = decode_stream(&words) {
            let typed: Vec<_> = cmds.iter().map(|d| d.command).collect();
            prop_assert_eq!(npuc_backend::isa::encode_stream(&typed).unwrap(), words);
        }
    }

    #[test]
    fn random_commands_with_valid_headers_decode_or_fail_cleanly(
        op in 0usize..111, payload0 in any::<u16>(), payload1 in any::<u32>()
    ) {
        let spec = &npuc_backend::isa::COMMANDS[op];
        let w0 = u32::from(spec.header()) | u32::from(payload0) << 16;
        let words = if spec.kind == npuc_backend::isa::CmdKind::Cmd1 { vec![w0, payload1] } else { vec![w0] };
        match decode_stream(&words) {
            Ok(d) => prop_assert_eq!(d[0].opcode(), spec.opcode),
            Err(e) => {
                let clean = matches!(e, DecodeError::ReservedBits { .. } | DecodeError::ReservedEnumValue { .. });
                prop_assert!(clean, "unexpected error {}", e);
            }
        }
    }
}
