//! COP1 and COP2 payloads (layouts in shared/ethos-u85/oracles.md, bytes from Vela 5.2 fixtures).

use npuc_backend::arch::Accelerator;
use npuc_backend::cop::{parse_payload, write_cop1, CopError, CopFormat};

fn hex_words(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .flat_map(|w| {
            u32::from_str_radix(w, 16)
                .unwrap()
                .swap_bytes()
                .to_le_bytes()
        })
        .collect()
}

/// The first bytes of the COP2 payload of models/vela/u85_256_cop2/conv2d_3x3_relu_vela.tflite,
/// with the command stream cut to two commands and the lengths adjusted accordingly.
fn cop2_sample() -> Vec<u8> {
    let mut b = hex_words(
        "434f5032 01000000 3c000000 00000000 01000000 34000000 24000000 5645554d 01000000 14000000 \
         18010020 00700020 01000000 a0040000 00000000 ffffffff 30010000 30400000 00000000",
    );
    // 16 header + 8 entry header + 4 meta len + 36 meta + 12 stream bytes.
    assert_eq!(b.len(), 76);
    b.truncate(76);
    b
}

#[test]
fn cop1_written_by_npuc_reads_back() {
    let words = [0x0000_012f, 0x0001_010f, 0x0000_4000, 0x1000];
    let bytes = write_cop1(0x2000_0118, 0x2000_7000, &words).unwrap();
    // Same layout as Vela: magic, config action, three NOPs, stream action at byte 28.
    assert_eq!(&bytes[..4], b"COP1");
    assert_eq!(&bytes[4..8], &0x0010_0001u32.to_le_bytes());
    assert_eq!(&bytes[28..32], &0x0004_0002u32.to_le_bytes());
    let p = parse_payload(&bytes).unwrap();
    assert_eq!(p.format, CopFormat::Cop1);
    assert_eq!(
        (p.config_word, p.id_word, p.accelerator),
        (0x2000_0118, 0x2000_7000, Accelerator::U85_256)
    );
    assert_eq!(p.stream_offset, 32);
    assert_eq!(p.words, words);
}

#[test]
fn long_streams_use_the_high_length_byte() {
    let words = vec![0x0000_012f; 70_000];
    let bytes = write_cop1(0x2000_261b, 0, &words).unwrap();
    let p = parse_payload(&bytes).unwrap();
    assert_eq!(p.words.len(), 70_000);
    assert_eq!(p.accelerator, Accelerator::U85_2048);
}

#[test]
fn cop2_with_veum_metadata_reads() {
    let p = parse_payload(&cop2_sample()).unwrap();
    assert_eq!(p.format, CopFormat::Cop2);
    assert_eq!(p.config_word, 0x2000_0118);
    assert_eq!(p.features, Some(1));
    assert_eq!(p.staging_bytes, Some(0x4a0));
    assert_eq!(p.stream_offset, 64);
    assert_eq!(p.words, [0x0000_0130, 0x0000_4030, 0]);
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let cop1 = write_cop1(0x2000_0118, 0, &[0x12f, 0x0001_010f]).unwrap();
    for bytes in [cop1, cop2_sample()] {
        for n in 0..bytes.len() {
            assert!(
                parse_payload(&bytes[..n]).is_err(),
                "prefix of {n} bytes parsed"
            );
        }
    }
}

#[test]
fn bad_payloads_are_named() {
    assert!(matches!(
        parse_payload(b"COP3abcd"),
        Err(CopError::BadMagic { .. })
    ));
    let mut b = write_cop1(0x2000_0118, 0, &[0x12f]).unwrap();
    b[16] = 9; // first NOP becomes unknown action 9
    assert_eq!(
        parse_payload(&b),
        Err(CopError::UnknownAction {
            offset: 16,
            id: 9,
            word: 9
        })
    );
    let b = write_cop1(0x1000_0118, 0, &[0x12f]).unwrap();
    assert!(matches!(parse_payload(&b), Err(CopError::Config(_))));
    let mut b = cop2_sample();
    b[8] += 1; // announced length one byte too long
    assert!(matches!(
        parse_payload(&b),
        Err(CopError::Malformed { offset: 8, .. })
    ));
    let e = parse_payload(&cop2_sample()[..10]).unwrap_err();
    assert!(e.to_string().contains("truncated at byte 8"), "{e}");
}
