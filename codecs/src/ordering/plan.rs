//! The loop nest of TRM §3.9.2 (cleaned as in semantics §12.1), producing for
//! each stream position the OHWI index it holds, or padding.

use super::params::DerivedBlocks;
use super::{OrderingParams, WeightShape};

/// Marks a padding (zero) entry in a plan.
pub(super) const PAD: u32 = u32::MAX;

/// Builds the per-stream source indices. `shape` and `params` are validated.
pub(super) fn build(
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
                                                    let s = &mut streams[(o >> 2) & (num_wd - 1)];
                                                    for ii in 0..i_sz {
                                                        let ic = if d.depthwise {
                                                            0
                                                        } else {
                                                            ib + wi + i + ii
                                                        };
                                                        let oc = ob + ub + o;
                                                        s.push(
                                                            if oc < ofm_depth && ic < ifm_depth {
                                                                shape.index(oc, wy, wx, ic) as u32
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
