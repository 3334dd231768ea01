//! Properties of the weight ordering (TRM §3.9.2) over random shapes and
//! parameters: every weight appears exactly once, everything else is zero
//! padding, all decoders get equally long streams, and ordering, FWD merging
//! and their inverses round-trip.

use npuc_codecs::ordering::{
    IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock, OhwiWeights,
    Operation, OrderingParams, WeightOrder, WeightOrdering, WeightShape, WeightSparsity,
};
use proptest::prelude::*;

const MICROBLOCKS: [Microblock; 6] = [
    Microblock::U1x1,
    Microblock::U1x2,
    Microblock::U1x4,
    Microblock::U2x2,
    Microblock::U2x4,
    Microblock::U4x4,
];

fn case_strategy() -> impl Strategy<Value = (OrderingParams, WeightShape)> {
    (
        (
            prop::sample::select(vec![128u32, 256, 512, 1024, 2048]),
            0usize..6,
            1u32..5,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (
            1u32..=3,
            1u32..=3,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (1usize..70, 1usize..11, 1usize..11, 1usize..80),
    )
        .prop_filter_map(
            "microblock must exist on the configuration",
            |(
                (macs, mb, blk_mult, depthwise, part_kernel, b16, sparse),
                (sx, sy, dx, dy, d4),
                (o, h, w, i),
            )| {
                let macs_per_cc = MacsPerCc::from_macs(macs)?;
                let microblock = MICROBLOCKS[mb];
                let mbd = macs_per_cc.microblock_depth(microblock)?;
                let params = OrderingParams {
                    operation: if depthwise {
                        Operation::Depthwise
                    } else {
                        Operation::Conv
                    },
                    weight_order: if part_kernel {
                        WeightOrder::PartKernelFirst
                    } else {
                        WeightOrder::DepthFirst
                    },
                    ifm_precision: if b16 {
                        IfmPrecision::B16
                    } else {
                        IfmPrecision::B8
                    },
                    weight_sparsity: if sparse && !depthwise {
                        WeightSparsity::Sparse24
                    } else {
                        WeightSparsity::None
                    },
                    stride_x: sx,
                    stride_y: sy,
                    dilation_x: if dx {
                        KernelDilation::X2
                    } else {
                        KernelDilation::None
                    },
                    dilation_y: if dy {
                        KernelDilation::X2
                    } else {
                        KernelDilation::None
                    },
                    decomposition: if d4 {
                        KernelDecomposition::D4x4
                    } else {
                        KernelDecomposition::D8x8
                    },
                    ofm_block_depth: mbd * blk_mult,
                    microblock,
                    macs_per_cc,
                };
                let shape = WeightShape {
                    ofm_depth: o,
                    kernel_height: h,
                    kernel_width: w,
                    ifm_depth: if depthwise { 1 } else { i },
                };
                // The 16-deep u1x1/u1x2 microblocks need 16-bit 1x1 convolutions.
                let mb_i16only =
                    mbd == 16 && matches!(microblock, Microblock::U1x1 | Microblock::U1x2);
                let allowed = depthwise || !mb_i16only || (b16 && h == 1 && w == 1);
                allowed.then_some((params, shape))
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn ordering_is_a_permutation_plus_zero_padding((params, shape) in case_strategy(), seed in any::<u64>()) {
        let ordering = WeightOrdering::new(&params, shape).unwrap();
        let n = ordering.num_streams();
        prop_assert_eq!(n as u32, params.macs_per_cc.num_wd());

        // Every OHWI position appears exactly once over all streams.
        let mut seen = vec![0u8; shape.len()];
        let len0 = ordering.stream_len(0);
        for k in 0..n {
            prop_assert_eq!(ordering.stream_len(k), len0, "streams have equal length");
            for src in ordering.stream_sources(k).flatten() {
                seen[src] += 1;
            }
        }
        prop_assert!(seen.iter().all(|&c| c == 1));

        // Random nonzero weights: padding entries are exactly the zeros.
        let values: Vec<i16> = (0..shape.len())
            .map(|f| {
                let v = ((f as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) % 255;
                v as i16 + 1
            })
            .collect();
        let w = OhwiWeights::new(shape, values).unwrap();
        let streams = ordering.order(&w).unwrap();
        let nonzero: usize = streams.iter().flatten().filter(|&&v| v != 0).count();
        prop_assert_eq!(nonzero, shape.len());
        prop_assert_eq!(ordering.unorder(&streams).unwrap(), w.clone());

        // FWD merge: a convolution's streams are whole weight blocks, and
        // split_fwd inverts merge_fwd.
        let merged = ordering.merge_fwd(&streams);
        prop_assert_eq!(merged.len(), len0 * n);
        prop_assert_eq!(ordering.split_fwd(&merged), streams.clone());
        if params.operation == Operation::Conv {
            prop_assert_eq!(len0 % ordering.blocks().wblk_size(), 0);
        }
        prop_assert_eq!(ordering.order_fwd(&w).unwrap(), merged);
    }

    /// A nonzero value in a padding position is reported, not dropped.
    #[test]
    fn unorder_rejects_nonzero_padding((params, shape) in case_strategy()) {
        let ordering = WeightOrdering::new(&params, shape).unwrap();
        let w = OhwiWeights::new(shape, vec![1; shape.len()]).unwrap();
        let mut streams = ordering.order(&w).unwrap();
        let pad = ordering.stream_sources(0).position(|s| s.is_none());
        if let Some(pos) = pad {
            streams[0][pos] = 5;
            prop_assert!(ordering.unorder(&streams).is_err());
        }
    }
}
