//! The counted stream lengths (`swd::encode::encoded_len`, `fwd::fwd_encoded_len`) are the
//! lengths of the streams the encoders make, for random weights (dense, sparse, clustered),
//! orderings (operation, weight order, 2:4 sparsity, precision, block depth) and OFM-depth
//! slices of them: the compiler costs candidates by the counted lengths and encodes only
//! the chosen ones.

use npuc_codecs::fwd::{encode_fwd, fwd_encoded_len};
use npuc_codecs::ordering::{
    IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock, OhwiWeights,
    Operation, OrderingParams, WeightOrder, WeightOrdering, WeightShape, WeightSparsity,
};
use npuc_codecs::swd::encode::{encode, encoded_len, encoded_lens};
use proptest::prelude::*;

/// Weights of `n` values: `zero_pct` % zeros, the rest from `levels` distinct values of
/// magnitude up to `max`, from the xorshift32 seed.
fn weights(n: usize, seed: u32, zero_pct: u32, levels: u32, max: i16) -> Vec<i16> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    (0..n)
        .map(|_| {
            if next() % 100 < zero_pct {
                0
            } else {
                // level < levels, so v <= max (computed in i32: level * max exceeds i16).
                let level = i32::try_from(next() % levels).unwrap();
                let scaled = level * i32::from(max) / i32::try_from(levels.max(1)).unwrap();
                let v = i16::try_from(scaled).unwrap().max(1);
                if next() % 2 == 0 {
                    v
                } else {
                    -v
                }
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn counted_swd_length_is_the_encoded_length(
        n in 0usize..6000,
        seed in any::<u32>(),
        zero_pct in 0u32..=100,
        levels in 1u32..300,
        max in 1i16..=255,
        runs in any::<bool>(),
    ) {
        let mut w = weights(n, seed, zero_pct, levels, max);
        if runs {
            // Long zero runs (the ordering's padding) every 700 weights.
            for k in (0..w.len()).step_by(700) {
                let end = (k + 130).min(w.len());
                w[k..end].iter_mut().for_each(|v| *v = 0);
            }
        }
        prop_assert_eq!(encoded_len(&w).unwrap(), encode(&w).unwrap().len());
    }

    #[test]
    fn counted_lengths_of_ordered_slices_are_the_encoded_lengths(
        (o, h, kw, i) in (1usize..40, 1usize..4, 1usize..4, 1usize..48),
        (c0, depth) in (0usize..40, 1usize..40),
        (depthwise, part_kernel, sparse, b16, mb_mult) in
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), 1u32..4),
        (macs, mb) in (prop::sample::select(vec![128u32, 256, 2048]), 0usize..4),
        (seed, zero_pct, levels) in (any::<u32>(), 0u32..=100, 1u32..200),
    ) {
        let i = if depthwise { 1 } else { i };
        let values = weights(o * h * kw * i, seed, zero_pct, levels, 127);
        // An OFM-depth slice c0..c0 + depth of the operation's weights.
        let c0 = c0 % o;
        let depth = depth.min(o - c0);
        let per = h * kw * i;
        let shape = WeightShape { ofm_depth: depth, kernel_height: h, kernel_width: kw, ifm_depth: i };
        let sub = OhwiWeights::new(shape, values[c0 * per..(c0 + depth) * per].to_vec()).unwrap();
        let macs_per_cc = MacsPerCc::from_macs(macs).unwrap();
        let microblock = [Microblock::U1x1, Microblock::U1x2, Microblock::U2x2, Microblock::U2x4][mb];
        let Some(mbd) = macs_per_cc.microblock_depth(microblock) else {
            return Ok(());
        };
        // The 16-deep u1x1/u1x2 microblocks need 16-bit 1x1 convolutions.
        let mb_i16only = mbd == 16 && matches!(microblock, Microblock::U1x1 | Microblock::U1x2);
        prop_assume!(depthwise || !mb_i16only || (b16 && h == 1 && kw == 1));
        let params = OrderingParams {
            operation: if depthwise { Operation::Depthwise } else { Operation::Conv },
            weight_order: if part_kernel || depthwise {
                WeightOrder::PartKernelFirst
            } else {
                WeightOrder::DepthFirst
            },
            ifm_precision: if b16 { IfmPrecision::B16 } else { IfmPrecision::B8 },
            weight_sparsity: if sparse && !depthwise {
                WeightSparsity::Sparse24
            } else {
                WeightSparsity::None
            },
            stride_x: 1,
            stride_y: 1,
            dilation_x: KernelDilation::None,
            dilation_y: KernelDilation::None,
            decomposition: KernelDecomposition::D8x8,
            ofm_block_depth: mbd * mb_mult,
            microblock,
            macs_per_cc,
        };
        let Ok(ordering) = WeightOrdering::new(&params, shape) else {
            return Ok(());
        };
        // SWD: one stream per weight decoder (2:4 sparsity: only weights it can carry).
        if let Ok(streams) = ordering.order(&sub) {
            let counted = encoded_lens(&streams).unwrap();
            let encoded: Vec<usize> = streams.iter().map(|s| encode(s).unwrap().len()).collect();
            prop_assert_eq!(counted, encoded);
        }
        // FWD: one merged stream (convolutions).
        if !depthwise {
            if let Ok(merged) = ordering.order_fwd(&sub) {
                if let Ok(stream) = encode_fwd(&merged) {
                    prop_assert_eq!(fwd_encoded_len(&merged), Some(stream.len()));
                }
            }
        }
    }
}
