//! The SWD decoder on hand-made streams, one rule of TRM §3.9.3–§3.9.10 per
//! test, including the coding modes Vela's golden streams never use
//! (Golomb-Rice indices, `wtrunc`, palettes, non-alternating mode) and every
//! error the decoder reports.

mod common;

use common::bits::Bits;
use common::swd_ref::{write_stream, RefSlice};
use npuc_codecs::swd::decode::{decode, decode_traced, DecodeError};
use npuc_codecs::swd::{value_to_sign_magnitude, Palette, WeightIndexMode, ZeroRunMode};

const NO_ZRUNS: ZeroRunMode = ZeroRunMode::NoZeroRuns;

fn alt(zdiv: u8) -> ZeroRunMode {
    ZeroRunMode::Alternating { zdiv }
}

fn gr(wdiv: u8) -> WeightIndexMode {
    WeightIndexMode::GolombRice { wdiv }
}

/// Direct-mode index of `v` with `dirofs` 0: its sign-magnitude code.
fn direct(v: i16) -> u16 {
    value_to_sign_magnitude(v).unwrap()
}

#[test]
fn bit_order_matches_trm_3_9_3_example() {
    let mut b = Bits::default();
    b.put(0x12, 5).put(0xB, 4).put(0x55, 7);
    assert_eq!(b.bytes, vec![0x72, 0xAB]);
}

/// A fully hand-assembled slice: zdiv 6, three weights 1, -1, 3 in direct mode
/// (indices 2, 3, 6), wdiv 1. Quotients 1, 1, 3 are the unary symbols
/// c = 1, 1, (2, 1): wunary0 = 0b1111, wunary1 = 0b0100 (one bit per set
/// wunary0 bit), then the 1-bit remainders 0, 1, 0 in the following chunk.
#[test]
fn golomb_rice_chunk_layout() {
    let mut b = Bits::default();
    b.put(6, 3) // zdiv: no zero runs
        .put(2, 15) // slicelen_m1
        .put(1, 3) // wdiv
        .put(0, 1) // wtrunc
        .put(1, 1) // newpal
        .put(0, 5) // dirofs
        .put(0, 5) // palsize: direct mode
        .put(6, 3) // palbits: palette_bits 8
        .put(0b1111, 12) // wunary0
        .put(0b0100, 4) // wunary1
        .put(0, 1)
        .put(1, 1)
        .put(0, 1) // wremain of the previous chunk's indices
        .end_of_stream();
    let d = decode_traced(&b.bytes, 3).unwrap();
    assert_eq!(d.weights, vec![1, -1, 3]);
    assert_eq!(d.slices.len(), 1);
    assert_eq!(d.slices[0].chunks, 1);
    assert_eq!(d.end_of_stream_bit, 3 + 15 + 3 + 2 + 13 + 12 + 4 + 3);
    assert_eq!(d.end_bit, 128);
}

/// TRM §3.9.9 example: three alternating slices, `newpal` on slices 1 and 3.
/// Only newpal slices code the leading zero run, so slice 3 has 6 zero runs
/// for its 5 weights (the TRM's listing shows 5; the rule `n_zruns =
/// slice_length + newpal` wins).
#[test]
fn alternating_mode_trm_example() {
    let expected: Vec<i16> = vec![0, 5, 6, 0, 0, 0, 7, 0, 8, 9, 10, 0, 11, 12, 13, 14, 15];
    let idx = |v: &[i16]| v.iter().map(|&v| direct(v)).collect::<Vec<_>>();
    let pal = Some(Palette::direct(0, 8));
    let slices = [
        RefSlice {
            zero_run_mode: alt(1),
            weight_index_mode: gr(2),
            wtrunc: false,
            new_palette: pal.clone(),
            indices: idx(&[5, 6]),
            zruns: vec![1, 0, 3],
        },
        RefSlice {
            zero_run_mode: alt(0),
            weight_index_mode: gr(3),
            wtrunc: false,
            new_palette: None,
            indices: idx(&[7, 8, 9, 10]),
            zruns: vec![1, 0, 0, 1],
        },
        RefSlice {
            zero_run_mode: alt(3),
            weight_index_mode: WeightIndexMode::Uncompressed,
            wtrunc: false,
            new_palette: pal,
            indices: idx(&[11, 12, 13, 14, 15]),
            zruns: vec![0; 6],
        },
    ];
    let d = decode_traced(&write_stream(&slices), expected.len()).unwrap();
    assert_eq!(d.weights, expected);
    let counts: Vec<usize> = d.slices.iter().map(|s| s.weight_count).collect();
    assert_eq!(counts, vec![6, 6, 5]);
    assert_eq!(d.slices[1].header.new_palette, None);
}

/// §3.9.6: indices below palette_size read the palette (sign-magnitude
/// entries), others map to `index - palette_size + dirofs`.
#[test]
fn palette_and_direct_indices() {
    // Entries: +7, -7, +100, -1.
    let entries = vec![14, 15, 200, 3];
    let palette = Palette {
        dirofs: 4,
        palette_bits: 8,
        entries,
    };
    // Indices 0..=3 hit the palette; 4 -> code 4 (+2), 5 -> code 5 (-2), 10 -> code 10 (+5).
    let slices = [RefSlice {
        zero_run_mode: NO_ZRUNS,
        weight_index_mode: gr(0),
        wtrunc: false,
        new_palette: Some(palette),
        indices: vec![0, 1, 2, 3, 4, 5, 10],
        zruns: vec![],
    }];
    assert_eq!(
        decode(&write_stream(&slices), 7).unwrap(),
        vec![7, -7, 100, -1, 2, -2, 5]
    );
}

/// §3.9.8: uncompressed indices take ceil(log2(palette_size)) bits with a
/// palette (3 bits for 5 entries), 12 per chunk when that is at most 5 bits.
#[test]
fn uncompressed_with_palette() {
    let palette = Palette {
        dirofs: 0,
        palette_bits: 4,
        entries: vec![2, 3, 4, 5, 6],
    };
    assert_eq!(palette.uncompressed_bits(), 3);
    let indices: Vec<u16> = (0..30).map(|i| i % 8).collect();
    let expected: Vec<i16> = indices
        .iter()
        .map(|&i| palette.index_to_value(i).unwrap())
        .collect();
    let slices = [RefSlice {
        zero_run_mode: NO_ZRUNS,
        weight_index_mode: WeightIndexMode::Uncompressed,
        wtrunc: false,
        new_palette: Some(palette),
        indices,
        zruns: vec![],
    }];
    let d = decode_traced(&write_stream(&slices), 30).unwrap();
    assert_eq!(d.weights, expected);
    assert_eq!(d.slices[0].chunks, 3, "12 + 12 + 6 indices");
}

/// §3.9.7: with wtrunc the unary code of q <= 2 is 0 / 10 / 11, one symbol per index.
#[test]
fn truncated_unary() {
    let values: Vec<i16> = vec![1, -3, 5, 0, 2, -1, 4, 3, -2, 1, 5, -5, 0, 1];
    let slices = [RefSlice {
        zero_run_mode: NO_ZRUNS,
        weight_index_mode: gr(2),
        wtrunc: true,
        new_palette: Some(Palette::direct(0, 5)),
        indices: values.iter().map(|&v| direct(v)).collect(),
        zruns: vec![],
    }];
    let d = decode_traced(&write_stream(&slices), values.len()).unwrap();
    assert_eq!(d.weights, values);
    assert_eq!(d.slices[0].chunks, 2, "12 + 2 indices, one slot each");
}

/// An all-zero newpal slice may code its single weight index as zero (§3.9.9).
#[test]
fn all_zero_newpal_slice() {
    let slices = [RefSlice {
        zero_run_mode: alt(2),
        weight_index_mode: gr(0),
        wtrunc: false,
        new_palette: Some(Palette::direct(0, 8)),
        indices: vec![0],
        zruns: vec![5, 10],
    }];
    assert_eq!(decode(&write_stream(&slices), 16).unwrap(), vec![0; 16]);
}

fn simple_slice() -> RefSlice {
    RefSlice {
        zero_run_mode: NO_ZRUNS,
        weight_index_mode: gr(1),
        wtrunc: false,
        new_palette: Some(Palette::direct(0, 8)),
        indices: vec![2, 3, 6],
        zruns: vec![],
    }
}

#[test]
fn reserved_zdiv_is_rejected() {
    for zdiv in [4, 5] {
        let mut b = Bits::default();
        b.put(zdiv, 3).end_of_stream();
        assert_eq!(
            decode(&b.bytes, 100),
            Err(DecodeError::ReservedZdiv {
                bit_offset: 0,
                zdiv: zdiv as u8
            })
        );
    }
}

#[test]
fn reserved_wdiv_is_rejected() {
    let mut b = Bits::default();
    b.put(6, 3).put(0, 15).put(6, 3).put(0, 2).end_of_stream();
    assert_eq!(
        decode(&b.bytes, 100),
        Err(DecodeError::ReservedWdiv {
            bit_offset: 18,
            wdiv: 6
        })
    );
}

#[test]
fn first_slice_needs_newpal() {
    let mut b = Bits::default();
    b.put(6, 3)
        .put(0, 15)
        .put(0, 3)
        .put(0, 1)
        .put(0, 1)
        .end_of_stream();
    assert_eq!(
        decode(&b.bytes, 100),
        Err(DecodeError::FirstSliceWithoutNewpal { bit_offset: 22 })
    );
}

#[test]
fn mode_switch_needs_newpal() {
    let mut second = simple_slice();
    second.new_palette = None;
    second.zero_run_mode = alt(0);
    second.indices = vec![2];
    second.zruns = vec![0];
    let bytes = write_stream(&[simple_slice(), second]);
    let first_len = decode_traced(&write_stream(&[simple_slice()]), 10)
        .unwrap()
        .slices[0]
        .bit_len();
    assert_eq!(
        decode(&bytes, 100),
        Err(DecodeError::ModeSwitchWithoutNewpal {
            bit_offset: first_len + 22
        })
    );
}

#[test]
fn truncated_stream_reports_the_offset() {
    let bytes = write_stream(&[simple_slice()]);
    match decode(&bytes[..4], 100) {
        Err(DecodeError::UnexpectedEnd(e)) => {
            assert_eq!(e.end_bit, 32);
            assert!(e.bit_offset + u64::from(e.wanted) > 32);
        }
        other => panic!("{other:?}"),
    }
    // No end-of-stream marker at all.
    assert!(matches!(decode(&[], 1), Err(DecodeError::UnexpectedEnd(_))));
}

#[test]
fn padding_must_be_ones() {
    let mut bytes = write_stream(&[simple_slice()]);
    let last = bytes.len() - 1;
    bytes[last] &= 0x7F; // the stream's final padding bit
    assert_eq!(
        decode(&bytes, 100),
        Err(DecodeError::PaddingNotOnes { bit_offset: 127 })
    );
}

#[test]
fn zero_weight_index_in_alternating_mode_is_rejected() {
    let slices = [RefSlice {
        zero_run_mode: alt(0),
        weight_index_mode: gr(0),
        wtrunc: false,
        new_palette: Some(Palette::direct(0, 8)),
        indices: vec![2, 0],
        zruns: vec![0, 0, 0],
    }];
    assert!(matches!(
        decode(&write_stream(&slices), 100),
        Err(DecodeError::ZeroWeightInAlternatingMode { position: 1, .. })
    ));
}

#[test]
fn quotient_above_31_is_rejected() {
    // wdiv 0, one index: wunary0 all ones with wunary1 all ones = 12 symbols c = 2.
    let mut b = Bits::default();
    b.put(6, 3).put(0, 15).put(0, 3).put(0, 1).put(1, 1);
    b.put(0, 13); // direct palette
    b.put(0xFFF, 12).put(0xFFF, 12); // wq = 24
    b.put(0xFFF, 12).put(0xFFF, 12); // wq would pass 31
    b.end_of_stream();
    assert_eq!(
        decode(&b.bytes, 100),
        Err(DecodeError::QuotientTooLarge {
            bit_offset: 36 + 24,
            wq: 32
        })
    );
}

#[test]
fn index_above_511_is_rejected() {
    let mut s = simple_slice();
    s.weight_index_mode = gr(5);
    s.indices = vec![16 << 5]; // wq 16, wr 0: index 512
    assert!(matches!(
        decode(&write_stream(&[s]), 100),
        Err(DecodeError::WeightIndexTooLarge { index: 512, .. })
    ));
}

#[test]
fn value_above_255_is_rejected() {
    let mut s = simple_slice();
    s.new_palette = Some(Palette::direct(31, 8));
    s.weight_index_mode = gr(5);
    s.indices = vec![500]; // code 531: magnitude 265
    assert!(matches!(
        decode(&write_stream(&[s]), 100),
        Err(DecodeError::WeightValueOutOfRange {
            index: 500,
            code: 531,
            ..
        })
    ));
}

#[test]
fn output_is_capped_by_max_weights() {
    let bytes = write_stream(&[simple_slice()]);
    assert_eq!(decode(&bytes, 3).unwrap().len(), 3);
    assert!(matches!(
        decode(&bytes, 2),
        Err(DecodeError::TooManyWeights { max_weights: 2, .. })
    ));
    // Zero runs count too.
    let slices = [RefSlice {
        zero_run_mode: alt(3),
        weight_index_mode: gr(0),
        wtrunc: false,
        new_palette: Some(Palette::direct(0, 8)),
        indices: vec![2],
        zruns: vec![1000, 0],
    }];
    let bytes = write_stream(&slices);
    assert_eq!(decode(&bytes, 1001).unwrap().len(), 1001);
    assert!(matches!(
        decode(&bytes, 1000),
        Err(DecodeError::TooManyWeights { .. })
    ));
}
