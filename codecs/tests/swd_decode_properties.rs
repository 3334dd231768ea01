//! Properties of the SWD decoder: it never panics, whatever the bytes, and it
//! inverts the TRM §3.9.10 chunk syntax for any valid slice sequence (written
//! with the test-local reference writer in `common::swd_ref`).

mod common;

use common::swd_ref::{write_stream, RefSlice};
use npuc_codecs::swd::decode::{decode, decode_traced};
use npuc_codecs::swd::{Palette, WeightIndexMode, ZeroRunMode};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes give values or an error, never a panic, and never more
    /// values than allowed.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), max in 0usize..5000) {
        if let Ok(w) = decode(&bytes, max) {
            prop_assert!(w.len() <= max);
        }
    }

    /// Random tails after a plausible slice header prefix reach deeper into the
    /// chunk decoder; still no panic.
    #[test]
    fn random_chunks_never_panic(
        bytes in common::bits::header_then_chunks(),
    ) {
        let _ = decode(&bytes, 4096);
    }
}

/// Parameters of one generated slice before its indices are made valid.
#[derive(Clone, Debug)]
struct SliceSpec {
    alternating_zdiv: Option<u8>,
    wdiv: u8,
    wtrunc: bool,
    palette: Option<Palette>,
    raw_indices: Vec<u16>,
    zruns: Vec<u64>,
}

fn palette_strategy() -> impl Strategy<Value = Palette> {
    (0u8..32, 2u8..=9, prop_oneof![Just(0usize), 2usize..=32]).prop_flat_map(|(dirofs, bits, n)| {
        proptest::collection::vec(0u16..(1 << bits), n).prop_map(move |entries| Palette {
            dirofs,
            palette_bits: bits,
            entries,
        })
    })
}

fn slice_strategy() -> impl Strategy<Value = SliceSpec> {
    (
        prop_oneof![Just(None), (0u8..4).prop_map(Some)],
        prop::sample::select(vec![0u8, 1, 2, 3, 4, 5, 7]),
        any::<bool>(),
        prop::option::weighted(0.6, palette_strategy()),
        proptest::collection::vec(0u16..512, 1..60),
        proptest::collection::vec(prop_oneof![4 => 0u64..4, 2 => 0u64..40, 1 => 0u64..400], 61),
    )
        .prop_map(
            |(alternating_zdiv, wdiv, wtrunc, palette, raw_indices, zruns)| SliceSpec {
                alternating_zdiv,
                wdiv,
                wtrunc,
                palette,
                raw_indices,
                zruns,
            },
        )
}

/// True if `index` can be coded in this slice under the §3.9 rules.
fn index_ok(
    index: u16,
    palette: &Palette,
    alternating: bool,
    mode: WeightIndexMode,
    wtrunc: bool,
) -> bool {
    let Some(value) = palette.index_to_value(index) else {
        return false;
    };
    let codable = match mode {
        WeightIndexMode::GolombRice { wdiv } => {
            let q = u32::from(index) >> wdiv;
            q <= if wtrunc { 2 } else { 31 }
        }
        WeightIndexMode::Uncompressed => u32::from(index) < (1 << palette.uncompressed_bits()),
    };
    codable && !(alternating && value == 0)
}

/// Turns specs into valid slices and the values they must decode to.
fn build(specs: &[SliceSpec]) -> (Vec<RefSlice>, Vec<i16>) {
    let mut slices = Vec::new();
    let mut expected = Vec::new();
    let mut palette: Option<Palette> = None;
    let mut prev_alternating: Option<bool> = None;
    for spec in specs {
        // The first slice and any change of mode need a new palette.
        let mut new_palette = spec.palette.clone();
        let alternating = spec.alternating_zdiv.is_some();
        if palette.is_none() || prev_alternating != Some(alternating) {
            new_palette.get_or_insert_with(|| Palette::direct(0, 8));
        }
        let current = new_palette.clone().or_else(|| palette.clone()).unwrap();
        let mode = if spec.wdiv == 7 {
            WeightIndexMode::Uncompressed
        } else {
            WeightIndexMode::GolombRice { wdiv: spec.wdiv }
        };
        let indices: Vec<u16> = spec
            .raw_indices
            .iter()
            .copied()
            .filter(|&i| index_ok(i, &current, alternating, mode, spec.wtrunc))
            .collect();
        if indices.is_empty() {
            continue;
        }
        palette = Some(current.clone());
        prev_alternating = Some(alternating);
        let zero_run_mode = match spec.alternating_zdiv {
            Some(zdiv) => ZeroRunMode::Alternating { zdiv },
            None => ZeroRunMode::NoZeroRuns,
        };
        let newpal = usize::from(new_palette.is_some());
        let zruns: Vec<u64> = if alternating {
            spec.zruns[..indices.len() + newpal].to_vec()
        } else {
            Vec::new()
        };
        // Expected values, in §3.9.9 order.
        let zeros = |out: &mut Vec<i16>, n: u64| out.extend(std::iter::repeat_n(0, n as usize));
        if alternating && newpal == 1 {
            zeros(&mut expected, zruns[0]);
        }
        for (i, &index) in indices.iter().enumerate() {
            expected.push(current.index_to_value(index).unwrap());
            if alternating {
                zeros(&mut expected, zruns[i + newpal]);
            }
        }
        slices.push(RefSlice {
            zero_run_mode,
            weight_index_mode: mode,
            wtrunc: spec.wtrunc,
            new_palette,
            indices,
            zruns,
        });
    }
    (slices, expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// decode(write(slices)) gives back the slices' weights, for every
    /// combination of zdiv, wdiv, wtrunc, palette and newpal.
    #[test]
    fn decodes_every_valid_slice_sequence(specs in proptest::collection::vec(slice_strategy(), 1..6)) {
        let (slices, expected) = build(&specs);
        prop_assume!(!slices.is_empty());
        let bytes = write_stream(&slices);
        let d = decode_traced(&bytes, expected.len()).unwrap();
        prop_assert_eq!(&d.weights, &expected);
        prop_assert_eq!(d.slices.len(), slices.len());
        prop_assert_eq!(d.end_bit, bytes.len() as u64 * 8);
        // One fewer allowed weight is an error, not a truncation.
        prop_assert!(decode(&bytes, expected.len() - 1).is_err());
    }
}
