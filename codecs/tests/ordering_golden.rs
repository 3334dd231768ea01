//! Golden test of the weight ordering (TRM §3.9.2) on all 16 Vela cases of
//! `models/fixtures/weights-u85-256`: SWD streams are decoded with the SWD
//! decoder, FWD streams with a minimal reader local to this test (TRM
//! §3.9.11, cross-checked against `npuc_codecs::fwd::decode_fwd`), and the result must equal `weights.npy` put in stream order.
//! Un-ordering the decoded stream must give back `weights.npy` exactly.

mod common;

use npuc_codecs::bitreader::BitReader;
use npuc_codecs::fwd::decode_fwd;
use npuc_codecs::ordering::WeightOrdering;
use npuc_codecs::swd::decode::decode;

/// Reads `count` weights of an FWD stream (TRM §3.9.11): a 256-bit header
/// (raw_mode, small_lut, 102 reserved bits, zero_point, 16 sign+magnitude LUT
/// entries) then 256-bit words of 8-bit raw values or 4-/2-bit LUT indices.
fn read_fwd(bytes: &[u8], count: usize) -> Vec<i16> {
    let mut r = BitReader::new(bytes);
    let raw_mode = r.read_bit().unwrap();
    let small_lut = r.read_bit().unwrap();
    for _ in 0..102 / 6 {
        assert_eq!(r.read(6).unwrap(), 0, "reserved header bits");
    }
    let zero_point = r.read_signed(8).unwrap() as i16;
    let lut: Vec<i16> = (0..16)
        .map(|_| {
            let sign = r.read_bit().unwrap();
            let abs = r.read(8).unwrap() as i16;
            if sign {
                -abs
            } else {
                abs
            }
        })
        .collect();
    assert_eq!(r.bit_offset(), 256);
    let bits = match (raw_mode, small_lut) {
        (true, _) => 8,
        (false, false) => 4,
        (false, true) => 2,
    };
    let out: Vec<i16> = (0..count)
        .map(|_| {
            if raw_mode {
                r.read_signed(8).unwrap() as i16 - zero_point
            } else {
                lut[r.read(bits).unwrap() as usize]
            }
        })
        .collect();
    assert!(
        r.remaining_bits() < 256,
        "FWD stream has whole unused words"
    );
    out
}

#[test]
fn ordering_matches_every_vela_stream() {
    let cases = common::golden_cases();
    assert_eq!(cases.len(), 16);
    for case in &cases {
        let ordering = WeightOrdering::new(&case.params, case.weights.shape())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let decoded: Vec<Vec<i16>> = match case.format.as_str() {
            "SWD" => case
                .streams
                .iter()
                .enumerate()
                .map(|(k, s)| decode(s, ordering.stream_len(k)).unwrap())
                .collect(),
            "FWD" => {
                assert_eq!(case.streams.len(), 1, "{}: FWD has one stream", case.name);
                let n = ordering.stream_len(0) * ordering.num_streams();
                let merged = read_fwd(&case.streams[0], n);
                // The crate's FWD decoder agrees with this test's reader.
                assert_eq!(
                    decode_fwd(&case.streams[0], n).unwrap(),
                    merged,
                    "{}",
                    case.name
                );
                ordering.split_fwd(&merged)
            }
            other => panic!("{}: format {other}", case.name),
        };
        let expected = ordering.order(&case.weights).unwrap();
        assert_eq!(decoded, expected, "{}: stream order", case.name);
        let back = ordering
            .unorder(&decoded)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(back, case.weights, "{}: unorder", case.name);
    }
}

/// Stream lengths (weights plus padding) implied by the ordering, pinned per
/// case; the SWD cases are also pinned by the decoder's output length.
#[test]
fn stream_lengths() {
    let lens: Vec<(String, usize)> = common::golden_cases()
        .iter()
        .map(|c| {
            let o = WeightOrdering::new(&c.params, c.weights.shape()).unwrap();
            (c.name.clone(), o.stream_len(0))
        })
        .collect();
    let get = |n: &str| lens.iter().find(|(m, _)| m == n).unwrap().1;
    // 1x1 conv, 32 in, 64 out, part-kernel first (wblk_k = 5): 64 * 32 * 5.
    assert_eq!(get("conv1x1_c32_o64"), 64 * 32 * 5);
    // Depthwise 3x3, 32 channels, u1x2 (wblk_o 16), 8-bit: wblk_k 10, dw_pad_k 0.
    assert_eq!(get("dw3x3_c32"), 32 * 10);
    // Same with 16-bit IFM on U85-256: dw16_pad_k = 2 extra positions.
    assert_eq!(get("dw3x3_c32_a16"), 32 * (10 + 2));
    // Fully connected, depth first: 48 * 64, no padding.
    assert_eq!(get("fc_64_to_48"), 48 * 64);
}
