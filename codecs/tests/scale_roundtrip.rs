//! Scale and bias stream (TRM §3.7) and quantized multiplier rule:
//! edge cases and property tests.

use npuc_codecs::scale::{
    decode_scale_stream, encode_scale_stream, AccFormat, ChannelScale, QuantizedScale, ScaleError,
    ScaleStreamParams, RECORD_BYTES,
};
use proptest::prelude::*;

fn q(scale: u32, shift: u8) -> QuantizedScale {
    QuantizedScale { scale, shift }
}

const I32: AccFormat = AccFormat::I32;
const I48: AccFormat = AccFormat::I48;

#[test]
fn scale_one_is_half_times_two() {
    // frexp(1.0) = (0.5, 1): scale = 2^30, shift = 30 (i32); 2^14, 14 (i48).
    assert_eq!(QuantizedScale::from_real(1.0, I32), Ok(q(1 << 30, 30)));
    assert_eq!(QuantizedScale::from_real(1.0, I48), Ok(q(1 << 14, 14)));
}

#[test]
fn zero_scale_gives_zero_multiplier() {
    assert_eq!(QuantizedScale::from_real(0.0, I32), Ok(q(0, 31)));
    assert_eq!(QuantizedScale::from_real(0.0, I48), Ok(q(0, 15)));
}

#[test]
fn mantissa_rounding_up_to_two_pow_p_is_renormalised() {
    // m = 1 - 2^-33: m * 2^31 = 2^31 - 1/4 rounds to 2^31.
    let x = 1.0 - 2f64.powi(-33);
    assert_eq!(QuantizedScale::from_real(x, I32), Ok(q(1 << 30, 30)));
    // m = 1 - 2^-17: m * 2^15 rounds to 2^15.
    let x = 1.0 - 2f64.powi(-17);
    assert_eq!(QuantizedScale::from_real(x, I48), Ok(q(1 << 14, 14)));
}

#[test]
fn rounding_is_half_away_from_zero() {
    // m * 2^31 = 2^30 + 0.5 exactly -> 2^30 + 1 (std::round), not banker's 2^30.
    let x = (2f64.powi(30) + 0.5) / 2f64.powi(31);
    assert_eq!(QuantizedScale::from_real(x, I32), Ok(q((1 << 30) + 1, 31)));
    let x = (2f64.powi(14) + 0.5) / 2f64.powi(15);
    assert_eq!(QuantizedScale::from_real(x, I48), Ok(q((1 << 14) + 1, 15)));
}

#[test]
fn tiny_scales_flush_to_zero_like_tflite() {
    // e = -31 is the smallest exponent kept: shift 62.
    assert_eq!(
        QuantizedScale::from_real(2f64.powi(-32), I32),
        Ok(q(1 << 30, 62))
    );
    assert_eq!(
        QuantizedScale::from_real(2f64.powi(-32), I48),
        Ok(q(1 << 14, 46))
    );
    // Below that TFLite's QuantizeMultiplier uses a zero multiplier.
    assert_eq!(QuantizedScale::from_real(2f64.powi(-33), I32), Ok(q(0, 31)));
    assert_eq!(QuantizedScale::from_real(1e-30, I48), Ok(q(0, 15)));
    assert_eq!(
        QuantizedScale::from_real(f64::MIN_POSITIVE / 4.0, I32),
        Ok(q(0, 31))
    );
}

#[test]
fn huge_scales_that_need_a_negative_shift_are_errors() {
    assert_eq!(
        QuantizedScale::from_real(2f64.powi(31) - 1.0, I32),
        Ok(q((1 << 31) - 1, 0))
    );
    assert!(matches!(
        QuantizedScale::from_real(2f64.powi(31), I32),
        Err(ScaleError::ScaleTooLarge { .. })
    ));
    assert!(matches!(
        QuantizedScale::from_real(40000.0, I48),
        Err(ScaleError::ScaleTooLarge { .. })
    ));
}

#[test]
fn invalid_real_scales_are_errors() {
    for x in [f64::NAN, f64::INFINITY, -1.0, -1e-9] {
        assert!(matches!(
            QuantizedScale::from_real(x, I32),
            Err(ScaleError::InvalidRealScale(_))
        ));
    }
}

#[test]
fn integer_multipliers_fold_only_when_exact() {
    // Shift above 63: drop trailing zero bits of the multiplier.
    assert_eq!(
        QuantizedScale::from_multiplier(1 << 30, 70, I32),
        Ok(q(1 << 23, 63))
    );
    assert!(matches!(
        QuantizedScale::from_multiplier(3, 70, I32),
        Err(ScaleError::NotRepresentable { .. })
    ));
    // A 31-bit multiplier for the 15-bit scale of a 48-bit accumulator.
    assert_eq!(
        QuantizedScale::from_multiplier(1 << 30, 40, I48),
        Ok(q(1 << 14, 24))
    );
    assert_eq!(
        QuantizedScale::from_multiplier(0x5555 << 16, 40, I48),
        Ok(q(0x5555, 24))
    );
    assert!(QuantizedScale::from_multiplier((1 << 30) | 1, 40, I48).is_err());
    // Negative shift: multiply up while it fits.
    assert_eq!(QuantizedScale::from_multiplier(5, -3, I32), Ok(q(40, 0)));
    assert!(QuantizedScale::from_multiplier(1 << 30, -1, I32).is_err());
    assert!(QuantizedScale::from_multiplier(-1, 3, I32).is_err());
    assert_eq!(QuantizedScale::from_multiplier(0, 99, I32), Ok(q(0, 63)));
}

#[test]
fn record_layout_for_32_bit_accumulators() {
    let p = ScaleStreamParams {
        acc: I32,
        microblock_depth: 16,
        reverse_c: false,
    };
    let rec = ChannelScale {
        bias: -2,
        scale: 0x7FFF_FFFF,
        shift: 63,
    };
    let s = encode_scale_stream(&[rec], &p).unwrap();
    assert_eq!(s.len(), 16 * RECORD_BYTES);
    // bias 32 | scale 31 | reserved 1 | shift 6 | reserved 10
    assert_eq!(
        &s[..10],
        &[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x3F, 0x00]
    );
    assert!(s[10..].iter().all(|&b| b == 0));
}

#[test]
fn record_layout_for_48_bit_accumulators() {
    let p = ScaleStreamParams {
        acc: I48,
        microblock_depth: 8,
        reverse_c: false,
    };
    let rec = ChannelScale {
        bias: -(1 << 47),
        scale: 0x7FFF,
        shift: 1,
    };
    let s = encode_scale_stream(&[rec], &p).unwrap();
    // bias 48 | scale 15 | reserved 1 | shift 6 | reserved 10
    assert_eq!(&s[..10], &[0, 0, 0, 0, 0, 0x80, 0xFF, 0x7F, 0x01, 0x00]);
}

#[test]
fn channel_reverse_reverses_set_order_not_channel_order() {
    let p = ScaleStreamParams {
        acc: I32,
        microblock_depth: 16,
        reverse_c: true,
    };
    let recs: Vec<ChannelScale> = (0..32)
        .map(|i| ChannelScale {
            bias: i,
            scale: 1,
            shift: 1,
        })
        .collect();
    let s = encode_scale_stream(&recs, &p).unwrap();
    let bias_at = |k: usize| i32::from_le_bytes(s[k * 10..k * 10 + 4].try_into().unwrap());
    assert_eq!(
        (0..32).map(bias_at).collect::<Vec<_>>(),
        (16..32).chain(0..16).collect::<Vec<_>>()
    );
    assert_eq!(decode_scale_stream(&s, 32, &p).unwrap(), recs);
}

#[test]
fn channel_reverse_requires_full_sets_above_16_channels() {
    let p = ScaleStreamParams {
        acc: I32,
        microblock_depth: 32,
        reverse_c: true,
    };
    let recs = vec![ChannelScale::default(); 40];
    assert_eq!(
        encode_scale_stream(&recs, &p),
        Err(ScaleError::ReverseNotPermitted {
            ofm_depth: 40,
            channels_in_set: 32
        })
    );
    // <= 16 channels is always allowed: one set, padded.
    let s = encode_scale_stream(&recs[..12], &p).unwrap();
    assert_eq!(s.len(), 32 * RECORD_BYTES);
}

#[test]
fn out_of_range_fields_are_errors() {
    let p = ScaleStreamParams {
        acc: I32,
        microblock_depth: 8,
        reverse_c: false,
    };
    let bad_bias = ChannelScale {
        bias: 1 << 31,
        scale: 0,
        shift: 0,
    };
    assert!(matches!(
        encode_scale_stream(&[bad_bias], &p),
        Err(ScaleError::BiasOutOfRange { channel: 0, .. })
    ));
    let bad_scale = ChannelScale {
        bias: 0,
        scale: 1 << 31,
        shift: 0,
    };
    assert!(matches!(
        encode_scale_stream(&[bad_scale], &p),
        Err(ScaleError::ScaleOutOfRange { .. })
    ));
    let bad_shift = ChannelScale {
        bias: 0,
        scale: 0,
        shift: 64,
    };
    assert!(matches!(
        encode_scale_stream(&[bad_shift], &p),
        Err(ScaleError::ShiftOutOfRange { .. })
    ));
    let p48 = ScaleStreamParams { acc: I48, ..p };
    let wide = ChannelScale {
        bias: 1 << 40,
        scale: 1 << 15,
        shift: 0,
    };
    assert!(matches!(
        encode_scale_stream(&[wide], &p48),
        Err(ScaleError::ScaleOutOfRange { .. })
    ));
    let p_bad = ScaleStreamParams {
        microblock_depth: 24,
        ..p
    };
    assert_eq!(
        encode_scale_stream(&[], &p_bad),
        Err(ScaleError::UnsupportedMicroblockDepth(24))
    );
}

#[test]
fn decoder_rejects_reserved_bits_padding_and_wrong_lengths() {
    let p = ScaleStreamParams {
        acc: I32,
        microblock_depth: 8,
        reverse_c: false,
    };
    let good = encode_scale_stream(&[ChannelScale::default(); 3], &p).unwrap();
    assert_eq!(
        decode_scale_stream(&good[..150], 3, &p),
        Err(ScaleError::WrongLength {
            expected: 160,
            actual: 150
        })
    );
    let mut reserved = good.clone();
    reserved[10 + 7] |= 0x80; // reserved bit after the scale of channel 1
    assert_eq!(
        decode_scale_stream(&reserved, 3, &p),
        Err(ScaleError::ReservedBitSet { offset: 10 })
    );
    let mut reserved_tail = good.clone();
    reserved_tail[20 + 9] = 1;
    assert_eq!(
        decode_scale_stream(&reserved_tail, 3, &p),
        Err(ScaleError::ReservedBitSet { offset: 20 })
    );
    // Every one of the ten reserved bits after the shift (bits 70..79 of a record); bit 70
    // went unchecked until the fuzz campaign of issue 16 (fuzz/seeds/scale_decode).
    for bit in 70..80 {
        let mut after_shift = good.clone();
        after_shift[10 + bit / 8] |= 1 << (bit % 8);
        assert_eq!(
            decode_scale_stream(&after_shift, 3, &p),
            Err(ScaleError::ReservedBitSet { offset: 10 }),
            "bit {bit}"
        );
    }
    let mut padding = good;
    padding[50] = 1;
    assert_eq!(
        decode_scale_stream(&padding, 3, &p),
        Err(ScaleError::PaddingNotZero { offset: 50 })
    );
}

fn params_strategy() -> impl Strategy<Value = ScaleStreamParams> {
    (
        prop_oneof![Just(I32), Just(I48)],
        prop_oneof![Just(8u32), Just(16), Just(32), Just(64), Just(128)],
        any::<bool>(),
    )
        .prop_map(|(acc, microblock_depth, reverse_c)| ScaleStreamParams {
            acc,
            microblock_depth,
            reverse_c,
        })
}

fn record_strategy(acc: AccFormat) -> impl Strategy<Value = ChannelScale> {
    let bb = acc.bias_bits() - 1;
    let sb = acc.scale_bits();
    (-(1i64 << bb)..(1i64 << bb), 0u32..(1u32 << sb), 0u8..64)
        .prop_map(|(bias, scale, shift)| ChannelScale { bias, scale, shift })
}

proptest! {
    #[test]
    fn scale_streams_round_trip(
        (params, recs) in params_strategy().prop_flat_map(|p| {
            (Just(p), prop::collection::vec(record_strategy(p.acc), 0..300))
        })
    ) {
        let cis = params.channels_in_set().unwrap();
        let n = recs.len();
        let encoded = encode_scale_stream(&recs, &params);
        if params.reverse_c && !(n <= 16 || n % cis == 0) {
            let is_reverse_error = matches!(encoded, Err(ScaleError::ReverseNotPermitted { .. }));
            prop_assert!(is_reverse_error);
        } else {
            let bytes = encoded.unwrap();
            prop_assert_eq!(bytes.len(), n.div_ceil(cis) * cis * RECORD_BYTES);
            prop_assert_eq!(decode_scale_stream(&bytes, n, &params).unwrap(), recs);
        }
    }

    #[test]
    fn quantized_scales_are_normalised_and_accurate(
        mantissa in 0.5f64..1.0,
        exp in -31i32..31,
        acc in prop_oneof![Just(I32), Just(I48)],
    ) {
        let x = mantissa * 2f64.powi(exp);
        let p = acc.scale_bits();
        match QuantizedScale::from_real(x, acc) {
            Ok(qs) => {
                prop_assert!(qs.scale >= 1 << (p - 1) && qs.scale < 1 << p);
                prop_assert!(qs.shift <= 63);
                let rel = (qs.to_real() - x).abs() / x;
                prop_assert!(rel <= 2f64.powi(-(p as i32)), "rel error {}", rel);
            }
            Err(ScaleError::ScaleTooLarge { .. }) => prop_assert!(exp > p as i32 - 1),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
        }
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        depth in 0usize..40,
        params in params_strategy(),
    ) {
        let _ = decode_scale_stream(&bytes, depth, &params);
    }
}
