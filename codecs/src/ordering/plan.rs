//! The loop nest of TRM §3.9.2 (cleaned as in semantics §12.1), producing for
//! each stream position the OHWI index it holds, or padding.

use super::params::DerivedBlocks;
use super::{OrderingParams, WeightShape};

/// Marks a padding (zero) entry in a plan.
pub(super) const PAD: u32 = u32::MAX;

/// What the loop nest writes at each stream position: made from the OHWI index there (a run
/// of consecutive indices at a time), or the padding.
pub(super) trait Entries<T: Copy> {
    /// The padding entry.
    const PAD: T;
    /// Appends the entries of the OHWI indices `at..at + len`.
    fn run(&self, s: &mut Vec<T>, at: usize, len: usize);
    /// The entry of the OHWI index `at`.
    fn one(&self, at: usize) -> T;
}

/// The OHWI indices themselves ([`PAD`] for padding): the table.
pub(super) struct Indices;

impl Entries<u32> for Indices {
    const PAD: u32 = PAD;
    fn run(&self, s: &mut Vec<u32>, at: usize, len: usize) {
        // (An OHWI index of a valid shape is below `PAD`: `WeightOrdering::new` checks.)
        s.extend((at..at + len).map(|i| i as u32));
    }
    fn one(&self, at: usize) -> u32 {
        at as u32
    }
}

/// The weights at the indices (zero for padding): the weights in stream order, a run copied
/// as a slice.
pub(super) struct Values<'a>(pub &'a [i16]);

impl Entries<i16> for Values<'_> {
    const PAD: i16 = 0;
    fn run(&self, s: &mut Vec<i16>, at: usize, len: usize) {
        s.extend_from_slice(&self.0[at..at + len]);
    }
    fn one(&self, at: usize) -> i16 {
        self.0[at]
    }
}

/// No contents (a zero-sized entry): the streams' lengths, as the loop nest walks them (the
/// reference [`lengths`] is tested against).
#[cfg(test)]
pub(super) struct Lengths;

#[cfg(test)]
impl Entries<()> for Lengths {
    const PAD: () = ();
    fn run(&self, s: &mut Vec<()>, _: usize, len: usize) {
        s.extend(std::iter::repeat_n((), len));
    }
    fn one(&self, _: usize) {}
}

/// Builds the per-stream source indices. `shape` and `params` are validated.
pub(super) fn build(
    params: &OrderingParams,
    d: &DerivedBlocks,
    shape: WeightShape,
) -> Vec<Vec<u32>> {
    build_with(params, d, shape, &Indices)
}

/// The loop nest's bounds and steps (from the parameters, their derived blocks and the
/// shape), as [`build_with`] walks them and [`lengths`] counts them.
struct Nest {
    num_wd: usize,
    ofm_depth: usize,
    ifm_depth: usize,
    kw: usize,
    kh: usize,
    blk_d: usize,
    ifm_blk: usize,
    wblk_k: usize,
    wblk_o: usize,
    wblk_i: usize,
    i_sz: usize,
    decomp_w: usize,
    decomp_h: usize,
    /// Padding positions after each `wblk_k` positions of a depthwise part (0 otherwise).
    dw_pad_k: usize,
    /// The IFM depth the IFM blocks cover (1 for depthwise).
    ifm_loop_end: usize,
}

impl Nest {
    fn new(params: &OrderingParams, d: &DerivedBlocks, shape: WeightShape) -> Nest {
        Nest {
            num_wd: d.num_wd as usize,
            ofm_depth: shape.ofm_depth,
            ifm_depth: shape.ifm_depth,
            kw: shape.kernel_width,
            kh: shape.kernel_height,
            blk_d: params.ofm_block_depth as usize,
            ifm_blk: d.ifm_block_depth as usize,
            wblk_k: d.wblk_k as usize,
            wblk_o: d.wblk_o as usize,
            wblk_i: d.wblk_i as usize,
            i_sz: d.i_sz as usize,
            decomp_w: d.decomp_w as usize,
            decomp_h: d.decomp_h as usize,
            dw_pad_k: if d.depthwise { d.dw_pad_k as usize } else { 0 },
            ifm_loop_end: if d.depthwise { 1 } else { shape.ifm_depth },
        }
    }
}

/// The loop nest of [`build`] with every entry made by `entries` from its OHWI index, and
/// its padding: the source indices or the weights themselves in stream order ([`lengths`]
/// counts the entries without the walk).
pub(super) fn build_with<T: Copy, E: Entries<T>>(
    params: &OrderingParams,
    d: &DerivedBlocks,
    shape: WeightShape,
    entries: &E,
) -> Vec<Vec<T>> {
    let Nest {
        num_wd,
        ofm_depth,
        ifm_depth,
        kw,
        kh,
        blk_d,
        ifm_blk,
        wblk_k,
        wblk_o,
        wblk_i,
        i_sz,
        decomp_w,
        decomp_h,
        dw_pad_k,
        ifm_loop_end,
    } = Nest::new(params, d, shape);
    // Room for every weight and half as much padding: most plans never grow.
    let cap = (shape.len() + shape.len() / 2) / num_wd + 64;
    let mut streams: Vec<Vec<T>> = (0..num_wd).map(|_| Vec::with_capacity(cap)).collect();
    let (str_x, str_y) = if d.partkernel {
        (params.stride_x as usize, params.stride_y as usize)
    } else {
        (1, 1)
    };
    let ifm_blocks: Vec<usize> = (0..ifm_loop_end).step_by(ifm_blk).collect();

    let pad_all = |streams: &mut Vec<Vec<T>>, n: usize| {
        for s in streams.iter_mut() {
            s.resize(s.len() + n / num_wd, E::PAD);
        }
    };

    for (ob_i, ob) in (0..ofm_depth).step_by(blk_d).enumerate() {
        // IFM blocks are visited in serpentine order: forward for even OFM blocks.
        let forward = ob_i % 2 == 0;
        for bi in 0..ifm_blocks.len() {
            let ib = ifm_blocks[if forward {
                bi
            } else {
                ifm_blocks.len() - 1 - bi
            }];
            for sx in (0..kw).step_by(decomp_w) {
                for sy in (0..kh).step_by(decomp_h) {
                    let sw = (kw - sx).min(decomp_w);
                    let sh = (kh - sy).min(decomp_h);
                    let iblk_depth = if d.depthwise {
                        1
                    } else {
                        ifm_blk.min(ifm_depth - ib)
                    };
                    for wi in (0..iblk_depth).step_by(wblk_i) {
                        for ub in (0..blk_d.min(ofm_depth - ob)).step_by(wblk_o) {
                            let mut n = (sw * sh).div_ceil(wblk_k) * wblk_k;
                            for py in 0..str_y {
                                for px in 0..str_x {
                                    let skh = (sh + str_y - 1 - py) / str_y;
                                    let skw = (sw + str_x - 1 - px) / str_x;
                                    for ky in 0..skh {
                                        for kx in 0..skw {
                                            let x = if ky % 2 == 0 { kx } else { skw - 1 - kx };
                                            n -= 1;
                                            let wx = sx + px + x * str_x;
                                            let wy = sy + py + ky * str_y;
                                            for i in (0..wblk_i).step_by(i_sz) {
                                                for o in 0..wblk_o {
                                                    let s = &mut streams[(o >> 2) & (num_wd - 1)];
                                                    push_entries(
                                                        s,
                                                        (shape, entries),
                                                        ob + ub + o,
                                                        (wy, wx),
                                                        if d.depthwise {
                                                            None
                                                        } else {
                                                            Some(ib + wi + i)
                                                        },
                                                        i_sz,
                                                    );
                                                }
                                            }
                                            if d.depthwise && n % wblk_k == 0 {
                                                pad_all(&mut streams, dw_pad_k * wblk_o);
                                            }
                                        }
                                    }
                                }
                            }
                            if n > 0 {
                                pad_all(&mut streams, (n + dw_pad_k) * wblk_i * wblk_o);
                            }
                        }
                    }
                }
            }
        }
    }
    streams
}

/// The number of entries of each stream [`build_with`] makes, counted per unit of its loop
/// nest (OFM block, IFM block, kernel part, weight block, OFM sub-block) instead of per
/// entry: a unit of `P` kernel positions gives every one of its `wblk_o` OFM channels
/// `ceil(wblk_i / i_sz) * i_sz` entries per position in that channel's stream, the padding
/// after every `wblk_k`-th position of a depthwise part, and the part's tail padding to a
/// multiple of `wblk_k` positions, exactly as the loop nest adds them.
pub(super) fn lengths(
    params: &OrderingParams,
    d: &DerivedBlocks,
    shape: WeightShape,
) -> Vec<usize> {
    let Nest {
        num_wd,
        ofm_depth,
        ifm_depth,
        kw,
        kh,
        blk_d,
        ifm_blk,
        wblk_k,
        wblk_o,
        wblk_i,
        i_sz,
        decomp_w,
        decomp_h,
        dw_pad_k,
        ifm_loop_end,
    } = Nest::new(params, d, shape);
    let mut lens = vec![0usize; num_wd];
    // The OFM channels of a weight block each stream takes (channel `o` goes to stream
    // `(o >> 2) & (num_wd - 1)`), and the entries of one channel at one position.
    let mut per_stream = vec![0usize; num_wd];
    for o in 0..wblk_o {
        per_stream[(o >> 2) & (num_wd - 1)] += 1;
    }
    let per_channel = wblk_i.div_ceil(i_sz) * i_sz;
    // Adds to every stream its entries of `units` units of `p` kernel positions each.
    let add_units = |lens: &mut [usize], p: usize, units: usize| {
        let n0 = p.div_ceil(wblk_k) * wblk_k;
        let mut pad = 0;
        if d.depthwise {
            pad += (p / wblk_k) * (dw_pad_k * wblk_o / num_wd);
        }
        if n0 > p {
            pad += (n0 - p + dw_pad_k) * wblk_i * wblk_o / num_wd;
        }
        for (l, &c) in lens.iter_mut().zip(&per_stream) {
            *l += units * (p * c * per_channel + pad);
        }
    };
    for ob in (0..ofm_depth).step_by(blk_d) {
        let sub_blocks = blk_d.min(ofm_depth - ob).div_ceil(wblk_o);
        for ib in (0..ifm_loop_end).step_by(ifm_blk) {
            let iblk_depth = if d.depthwise {
                1
            } else {
                ifm_blk.min(ifm_depth - ib)
            };
            let units = iblk_depth.div_ceil(wblk_i) * sub_blocks;
            for sx in (0..kw).step_by(decomp_w) {
                for sy in (0..kh).step_by(decomp_h) {
                    let p = (kw - sx).min(decomp_w) * (kh - sy).min(decomp_h);
                    add_units(&mut lens, p, units);
                }
            }
        }
    }
    lens
}

/// Pushes the `i_sz` entries of OFM channel `oc` at kernel position `(wy, wx)`: IFM channels
/// `ic0..ic0 + i_sz` (`None`: depthwise, channel 0 every time), padding for channels past
/// the IFM depth or an OFM channel past the OFM depth.
#[inline(always)]
fn push_entries<T: Copy, E: Entries<T>>(
    s: &mut Vec<T>,
    (shape, entries): (WeightShape, &E),
    oc: usize,
    (wy, wx): (usize, usize),
    ic0: Option<usize>,
    i_sz: usize,
) {
    if oc >= shape.ofm_depth {
        s.extend(std::iter::repeat_n(E::PAD, i_sz));
        return;
    }
    match ic0 {
        None => {
            let at = entries.one(shape.index(oc, wy, wx, 0));
            s.extend(std::iter::repeat_n(at, i_sz));
        }
        Some(ic0) => {
            let valid = shape.ifm_depth.saturating_sub(ic0).min(i_sz);
            if valid > 0 {
                entries.run(s, shape.index(oc, wy, wx, ic0), valid);
            }
            s.extend(std::iter::repeat_n(E::PAD, i_sz - valid));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ordering::{
        IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock, Operation,
        WeightOrder, WeightSparsity,
    };
    use proptest::prelude::*;

    /// The loop nest as first written, one entry at a time: the reference [`build`] must
    /// equal.
    #[allow(clippy::too_many_lines)]
    fn build_reference(
        params: &OrderingParams,
        d: &DerivedBlocks,
        shape: WeightShape,
    ) -> Vec<Vec<u32>> {
        let num_wd = d.num_wd as usize;
        let mut streams: Vec<Vec<u32>> = vec![Vec::new(); num_wd];
        let ofm_depth = shape.ofm_depth;
        let ifm_depth = shape.ifm_depth;
        let (kw, kh) = (shape.kernel_width, shape.kernel_height);
        let (blk_d, ifm_blk) = (params.ofm_block_depth as usize, d.ifm_block_depth as usize);
        let (wblk_k, wblk_o, wblk_i, i_sz) = (
            d.wblk_k as usize,
            d.wblk_o as usize,
            d.wblk_i as usize,
            d.i_sz as usize,
        );
        let (decomp_w, decomp_h) = (d.decomp_w as usize, d.decomp_h as usize);
        let (str_x, str_y) = if d.partkernel {
            (params.stride_x as usize, params.stride_y as usize)
        } else {
            (1, 1)
        };
        let dw_pad_k = if d.depthwise { d.dw_pad_k as usize } else { 0 };
        let ifm_loop_end = if d.depthwise { 1 } else { ifm_depth };
        let ifm_blocks: Vec<usize> = (0..ifm_loop_end).step_by(ifm_blk).collect();

        let pad_all = |streams: &mut Vec<Vec<u32>>, n: usize| {
            for s in streams.iter_mut() {
                s.resize(s.len() + n / num_wd, PAD);
            }
        };

        for (ob_i, ob) in (0..ofm_depth).step_by(blk_d).enumerate() {
            // IFM blocks are visited in serpentine order: forward for even OFM blocks.
            let forward = ob_i % 2 == 0;
            for bi in 0..ifm_blocks.len() {
                let ib = ifm_blocks[if forward {
                    bi
                } else {
                    ifm_blocks.len() - 1 - bi
                }];
                for sx in (0..kw).step_by(decomp_w) {
                    for sy in (0..kh).step_by(decomp_h) {
                        let sw = (kw - sx).min(decomp_w);
                        let sh = (kh - sy).min(decomp_h);
                        let iblk_depth = if d.depthwise {
                            1
                        } else {
                            ifm_blk.min(ifm_depth - ib)
                        };
                        for wi in (0..iblk_depth).step_by(wblk_i) {
                            for ub in (0..blk_d.min(ofm_depth - ob)).step_by(wblk_o) {
                                let mut n = (sw * sh).div_ceil(wblk_k) * wblk_k;
                                for py in 0..str_y {
                                    for px in 0..str_x {
                                        let skh = (sh + str_y - 1 - py) / str_y;
                                        let skw = (sw + str_x - 1 - px) / str_x;
                                        for ky in 0..skh {
                                            for kx in 0..skw {
                                                let x = if ky % 2 == 0 { kx } else { skw - 1 - kx };
                                                n -= 1;
                                                let wx = sx + px + x * str_x;
                                                let wy = sy + py + ky * str_y;
                                                for i in (0..wblk_i).step_by(i_sz) {
                                                    for o in 0..wblk_o {
                                                        let s =
                                                            &mut streams[(o >> 2) & (num_wd - 1)];
                                                        for ii in 0..i_sz {
                                                            let ic = if d.depthwise {
                                                                0
                                                            } else {
                                                                ib + wi + i + ii
                                                            };
                                                            let oc = ob + ub + o;
                                                            s.push(
                                                                if oc < ofm_depth && ic < ifm_depth
                                                                {
                                                                    shape.index(oc, wy, wx, ic)
                                                                        as u32
                                                                } else {
                                                                    PAD
                                                                },
                                                            );
                                                        }
                                                    }
                                                }
                                                if d.depthwise && n % wblk_k == 0 {
                                                    pad_all(&mut streams, dw_pad_k * wblk_o);
                                                }
                                            }
                                        }
                                    }
                                }
                                if n > 0 {
                                    pad_all(&mut streams, (n + dw_pad_k) * wblk_i * wblk_o);
                                }
                            }
                        }
                    }
                }
            }
        }
        streams
    }

    const MICROBLOCKS: [Microblock; 6] = [
        Microblock::U1x1,
        Microblock::U1x2,
        Microblock::U1x4,
        Microblock::U2x2,
        Microblock::U2x4,
        Microblock::U4x4,
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// `build` (entries pushed per IFM-channel run, streams reserved) gives the
        /// reference's plan for every operation, order, precision, sparsity, stride,
        /// dilation, decomposition, block depth, microblock and configuration.
        #[test]
        fn build_is_the_reference_loop_nest(
            (macs, mb, blk_mult, depthwise, part_kernel, b16, sparse) in (
                prop::sample::select(vec![128u32, 256, 512, 1024, 2048]),
                0usize..6, 1u32..5, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(),
            ),
            (sx, sy, dx, dy, d4) in (1u32..=3, 1u32..=3, any::<bool>(), any::<bool>(), any::<bool>()),
            (o, h, w, i) in (1usize..70, 1usize..11, 1usize..11, 1usize..80),
        ) {
            let macs_per_cc = MacsPerCc::from_macs(macs).unwrap();
            let microblock = MICROBLOCKS[mb];
            let Some(mbd) = macs_per_cc.microblock_depth(microblock) else {
                return Ok(());
            };
            let params = OrderingParams {
                operation: if depthwise { Operation::Depthwise } else { Operation::Conv },
                weight_order: if part_kernel {
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
                stride_x: sx,
                stride_y: sy,
                dilation_x: if dx { KernelDilation::X2 } else { KernelDilation::None },
                dilation_y: if dy { KernelDilation::X2 } else { KernelDilation::None },
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
            let Ok(d) = params.derive(h, w) else {
                return Ok(());
            };
            prop_assert_eq!(build(&params, &d, shape), build_reference(&params, &d, shape));
            // The lengths counted per unit are the loop nest's.
            let walked: Vec<usize> =
                build_with(&params, &d, shape, &Lengths).iter().map(Vec::len).collect();
            prop_assert_eq!(lengths(&params, &d, shape), walked);
            // The weights ordered in one walk are the table's order of them.
            let values = (0..shape.len()).map(|k| ((k * 37) % 509) as i16 - 254).collect();
            let weights = crate::ordering::OhwiWeights::new(shape, values).unwrap();
            let table = crate::ordering::WeightOrdering::new(&params, shape).unwrap();
            prop_assert_eq!(
                crate::ordering::WeightOrdering::ordered(&params, &weights).unwrap(),
                table.order(&weights).unwrap()
            );
            let lens: Vec<usize> = (0..table.num_streams()).map(|k| table.stream_len(k)).collect();
            prop_assert_eq!(
                crate::ordering::WeightOrdering::stream_lens(&params, shape).unwrap(),
                lens
            );
        }
    }
}
