//! The weight ordering (TRM §3.9.2) on small hand-worked examples, one loop
//! of the nest per test. Weights are numbered so that each value names its
//! OHWI position: `value = 1 + flat index` (within i16 range).

use npuc_codecs::ordering::{
    IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock, OhwiWeights,
    Operation, OrderingError, OrderingParams, WeightOrder, WeightOrdering, WeightShape,
    WeightSparsity,
};

fn conv(order: WeightOrder) -> OrderingParams {
    OrderingParams {
        operation: Operation::Conv,
        weight_order: order,
        ifm_precision: IfmPrecision::B8,
        weight_sparsity: WeightSparsity::None,
        stride_x: 1,
        stride_y: 1,
        dilation_x: KernelDilation::None,
        dilation_y: KernelDilation::None,
        decomposition: KernelDecomposition::D8x8,
        ofm_block_depth: 8,
        microblock: Microblock::U1x4,
        macs_per_cc: MacsPerCc::M256,
    }
}

fn shape(o: usize, h: usize, w: usize, i: usize) -> WeightShape {
    WeightShape {
        ofm_depth: o,
        kernel_height: h,
        kernel_width: w,
        ifm_depth: i,
    }
}

/// Orders numbered weights; returns stream 0 as (o, y, x, i) tuples, `None` for padding.
fn positions(params: &OrderingParams, s: WeightShape) -> Vec<Option<(usize, usize, usize, usize)>> {
    let ordering = WeightOrdering::new(params, s).unwrap();
    ordering
        .stream_sources(0)
        .map(|src| {
            src.map(|f| {
                let i = f % s.ifm_depth;
                let x = (f / s.ifm_depth) % s.kernel_width;
                let y = (f / s.ifm_depth / s.kernel_width) % s.kernel_height;
                let o = f / s.ifm_depth / s.kernel_width / s.kernel_height;
                (o, y, x, i)
            })
        })
        .collect()
}

/// Depth first, 8-bit: per kernel position, groups of `i_sz = 8` input
/// channels, within each all `wblk_o` output channels, the whole 64-deep IFM
/// block (`wblk_i = 64`), zero padded past the IFM depth.
#[test]
fn depth_first_groups_eight_input_channels_per_output_channel() {
    let p = positions(&conv(WeightOrder::DepthFirst), shape(8, 1, 1, 16));
    assert_eq!(p.len(), 64 * 8);
    assert_eq!(p[0], Some((0, 0, 0, 0)));
    assert_eq!(p[7], Some((0, 0, 0, 7)));
    assert_eq!(p[8], Some((1, 0, 0, 0)));
    assert_eq!(p[63], Some((7, 0, 0, 7)));
    assert_eq!(p[64], Some((0, 0, 0, 8)));
    assert_eq!(p[127], Some((7, 0, 0, 15)));
    assert!(p[128..].iter().all(Option::is_none));
}

/// Part-kernel first, 8-bit: kernel positions in a snake (even rows left to
/// right, odd rows right to left), padded to a multiple of `wblk_k = 5`.
#[test]
fn part_kernel_first_snakes_and_pads_to_wblk_k() {
    let p = positions(&conv(WeightOrder::PartKernelFirst), shape(8, 3, 3, 16));
    let block = 16 * 8; // wblk_i * wblk_o per kernel position
    assert_eq!(p.len(), 10 * block);
    let kernel_order: Vec<(usize, usize)> = (0..9)
        .map(|k| {
            let (_, y, x, _) = p[k * block].unwrap();
            (y, x)
        })
        .collect();
    assert_eq!(
        kernel_order,
        [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 2),
            (1, 1),
            (1, 0),
            (2, 0),
            (2, 1),
            (2, 2)
        ]
    );
    assert!(p[9 * block..].iter().all(Option::is_none));
}

/// Part-kernel first with stride 2: stride phases (py, px) outermost, each a
/// snake over the positions of that phase.
#[test]
fn strided_part_kernel_visits_stride_phases() {
    let mut params = conv(WeightOrder::PartKernelFirst);
    params.stride_x = 2;
    params.stride_y = 2;
    let p = positions(&params, shape(8, 3, 3, 8));
    let block = 16 * 8;
    let kernel_order: Vec<(usize, usize)> = (0..9)
        .map(|k| {
            let (_, y, x, _) = p[k * block].unwrap();
            (y, x)
        })
        .collect();
    assert_eq!(
        kernel_order,
        [
            (0, 0),
            (0, 2),
            (2, 2),
            (2, 0),
            (0, 1),
            (2, 1),
            (1, 0),
            (1, 2),
            (1, 1)
        ]
    );
}

/// IFM blocks are traversed forward for even OFM blocks and backward for odd ones.
#[test]
fn ifm_blocks_are_serpentine_across_ofm_blocks() {
    let p = positions(&conv(WeightOrder::PartKernelFirst), shape(16, 1, 1, 40));
    let per_ifm_block = 5 * 16 * 8; // wblk_k positions * wblk_i * wblk_o
    let ifm_block_starts: Vec<(usize, usize)> = (0..6)
        .map(|b| {
            let (o, _, _, i) = p[b * per_ifm_block].unwrap();
            (o, i)
        })
        .collect();
    assert_eq!(
        ifm_block_starts,
        [(0, 0), (0, 16), (0, 32), (8, 32), (8, 16), (8, 0)]
    );
}

/// With 4 weight decoders, output channel `o` of a microblock goes to stream `(o >> 2) & 3`.
#[test]
fn output_channels_are_dealt_to_weight_decoders_in_fours() {
    let mut params = conv(WeightOrder::DepthFirst);
    params.macs_per_cc = MacsPerCc::M1024;
    params.ofm_block_depth = 32; // u1x4 on 1024 MACs: microblock depth 32
    let s = shape(32, 1, 1, 8);
    let ordering = WeightOrdering::new(&params, s).unwrap();
    assert_eq!(ordering.num_streams(), 4);
    for k in 0..4 {
        let first: Vec<usize> = ordering.stream_sources(k).take(64).flatten().collect();
        // Stream k holds output channels 4k..4k+4, then 16+4k..16+4k+4, ...
        let channels: Vec<usize> = first.iter().map(|f| f / 8).collect();
        assert_eq!(channels[0], 4 * k);
        assert_eq!(channels[8], 4 * k + 1);
        assert_eq!(channels[32], 16 + 4 * k);
    }
}

/// Depthwise on U85-256 with 16-bit IFM: `wblk_k = 10` and `dw16_pad_k = 2`
/// zero positions after each group (TRM Table 3-90).
#[test]
fn depthwise_16_bit_pads_dw_pad_k_positions() {
    let mut params = conv(WeightOrder::DepthFirst);
    params.operation = Operation::Depthwise;
    params.ifm_precision = IfmPrecision::B16;
    let values: Vec<i16> = (1..=3 * 3 * 8).collect();
    let w = OhwiWeights::from_depthwise_hwc(3, 3, 8, &values).unwrap();
    let ordering = WeightOrdering::new(&params, w.shape()).unwrap();
    let s = &ordering.order(&w).unwrap()[0];
    assert_eq!(s.len(), (10 + 2) * 8);
    // First position (0,0): channels 0..8, i.e. TFLite [0][0][0][c] = 1 + c.
    assert_eq!(&s[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(s[9 * 8..].iter().all(|&v| v == 0));
    assert_eq!(w.to_depthwise_hwc(), values);
}

/// A kernel wider than the decomposition is split into sub-kernels, x outer.
#[test]
fn kernels_are_decomposed_into_sub_kernels() {
    let mut params = conv(WeightOrder::PartKernelFirst);
    params.decomposition = KernelDecomposition::D4x4;
    let p = positions(&params, shape(8, 1, 6, 8));
    let block = 16 * 8;
    // Sub-kernel x 0..4 (4 positions, padded to 5), then x 4..6 (2, padded to 5).
    assert_eq!(p.len(), 10 * block);
    assert_eq!(p[3 * block].map(|t| t.2), Some(3));
    assert!(p[4 * block].is_none());
    assert_eq!(p[5 * block].map(|t| t.2), Some(4));
    assert_eq!(p[6 * block].map(|t| t.2), Some(5));
}

#[test]
fn invalid_parameters_are_rejected() {
    let s = shape(8, 3, 3, 8);
    let mut p = conv(WeightOrder::DepthFirst);
    p.stride_x = 4;
    assert!(matches!(
        WeightOrdering::new(&p, s),
        Err(OrderingError::InvalidParams { .. })
    ));
    let mut p = conv(WeightOrder::DepthFirst);
    p.microblock = Microblock::U1x1; // 128 MACs only
    assert!(matches!(
        WeightOrdering::new(&p, s),
        Err(OrderingError::InvalidParams { .. })
    ));
    let mut p = conv(WeightOrder::DepthFirst);
    p.ofm_block_depth = 12; // not a multiple of the microblock depth 8
    assert!(matches!(
        WeightOrdering::new(&p, s),
        Err(OrderingError::InvalidParams { .. })
    ));
    // u1x2 on 256 MACs is 16 deep: conv needs 16-bit IFM and a 1x1 kernel.
    let mut p = conv(WeightOrder::DepthFirst);
    p.microblock = Microblock::U1x2;
    p.ofm_block_depth = 16;
    assert!(matches!(
        WeightOrdering::new(&p, s),
        Err(OrderingError::InvalidParams { .. })
    ));
    p.ifm_precision = IfmPrecision::B16;
    assert!(WeightOrdering::new(&p, shape(8, 1, 1, 8)).is_ok());
    // ...but depthwise may use it with 8-bit IFM (Vela does, TRM Table 4-1).
    let mut p = conv(WeightOrder::DepthFirst);
    p.operation = Operation::Depthwise;
    p.microblock = Microblock::U1x2;
    p.ofm_block_depth = 16;
    assert!(WeightOrdering::new(&p, shape(8, 3, 3, 1)).is_ok());
    assert!(matches!(
        WeightOrdering::new(&p, s),
        Err(OrderingError::DepthwiseIfmDepth { ifm_depth: 8 })
    ));
    assert_eq!(
        WeightOrdering::new(&p, shape(0, 3, 3, 1)),
        Err(OrderingError::EmptyShape)
    );
}
