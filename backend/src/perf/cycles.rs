//! Throughput of the MAC unit, the AO unit and the weight decoders (TRM chapter 4).
//!
//! - Convolution (Tables 4-1..4-10): each of kernel taps (k), OFM height/width/depth (h, w, d)
//!   and IFM depth (n) is rounded up to its granule; the rounded work runs at the table's MACs
//!   per cycle. `k_rnd(k, s, r) = floor(k/s)*s + max(k%s, r)`.
//! - AO unit (Tables 4-11, 4-12, 4-13): elements per cycle = NUM_SU x a factor that depends on
//!   the input and output widths; DIV takes 68 cycles per output sample (per SU).
//! - Resize (Table 4-14): per SU, the lower of the resize rate and the elementwise rate.
//! - Weight decoders (TRM 2.3.4): a standard decoder reads at most 64 bits/cycle, the fast
//!   decoder 256 bits/cycle.

use super::axi::gcd;
use crate::arch::{Accelerator, ArchConfig};

/// `k_rnd(k, s, r)` of TRM chapter 4.
pub fn k_rnd(k: u64, s: u64, r: u64) -> u64 {
    (k / s) * s + (k % s).max(r)
}

/// How a convolution walks its kernel (NPU_SET_KERNEL_STRIDE.weight_order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvOrder {
    /// depth_first: kernel granule 1, IFM depth granule 32 (64 with sparsity).
    DepthFirst,
    /// part_kernel_first: kernel granule `k_rnd`, IFM depth granule 8 or 16.
    KernelFirst,
}

/// The shape of a MAC-unit job, as chapter 4's tables count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacJob {
    /// OFM height, width, depth.
    pub ofm: (u64, u64, u64),
    /// Kernel taps (undilated kernel height x width).
    pub taps: u64,
    /// IFM depth per OFM channel (1 for depthwise and pooling).
    pub ifm_depth: u64,
    /// 16-bit activations.
    pub wide: bool,
    /// 2:4 sparse weights.
    pub sparse: bool,
}

/// Granule of one dimension: `x` rounded up to a multiple of `g`.
fn up(x: u64, g: u64) -> u64 {
    x.div_ceil(g.max(1)) * g.max(1)
}

/// Cycles of a CONV on the MAC unit: the rounded-up work at the table's rate. The OFM granule
/// is the microblock the stream selects (ACC_FORMAT.microblock: chapter 4's OFM granules are
/// the microblocks of TRM 3.10.13); 16-bit activations run at half the rate, 2:4 sparsity at
/// twice the rate (entries marked `*`).
///
/// The 8-bit tables have no row for a 2:4 sparse kernel-first convolution of IFM depth <= 8
/// (the `ifm_depth<=8` row is "no sparsity", the sparse row is `ifm_depth>8`): that case
/// takes the `ifm_depth<=8` row's granules at twice the rate, as Vela 5.2's estimate halves
/// the dense part-kernel walk for any IFM depth (decision P27). The 16-bit tables' kernel-first
/// row covers every depth (sparsity: IFM granule 16 at twice the rate) and is kept.
pub fn conv_cycles(arch: &ArchConfig, ublk: (u64, u64, u64), order: ConvOrder, j: &MacJob) -> u64 {
    let (oh, ow, od) = j.ofm;
    let (gk, gn) = match order {
        ConvOrder::DepthFirst => (j.taps, if j.sparse { 64 } else { 32 }),
        ConvOrder::KernelFirst if j.wide => (k_rnd(j.taps, 10, 4), if j.sparse { 16 } else { 8 }),
        ConvOrder::KernelFirst if j.ifm_depth <= 8 => (k_rnd(j.taps, 5, 4), 8),
        ConvOrder::KernelFirst if j.sparse => (k_rnd(j.taps, 10, 4), 16),
        ConvOrder::KernelFirst => (k_rnd(j.taps, 5, 2), 16),
    };
    let work = up(oh, ublk.0) * up(ow, ublk.1) * up(od, ublk.2) * gk * up(j.ifm_depth, gn);
    let mut rate = u64::from(arch.macs_per_cc);
    if j.wide {
        rate /= 2;
    }
    if j.sparse {
        rate *= 2;
    }
    work.div_ceil(rate)
}

/// Depthwise (and pooling) granule (h, w, d) and MACs per cycle (Tables 4-1..4-10,
/// DepthwiseConv2D / DepthwiseConv1D rows).
pub fn depthwise_granule(acc: Accelerator, wide: bool, one_d: bool) -> ((u64, u64, u64), u64) {
    use Accelerator::*;
    match (acc, wide, one_d) {
        (U85_128, false, _) => ((1, 1, 16), 16),
        (U85_128, true, _) => ((1, 2, 8), 8),
        (U85_256, false, false) => ((1, 2, 16), 32),
        (U85_256, false, true) => ((1, 2, 16), 32),
        (U85_256, true, false) => ((2, 2, 8), 16),
        (U85_256, true, true) => ((1, 4, 8), 16),
        (U85_512, false, false) => ((2, 2, 16), 64),
        (U85_512, false, true) => ((1, 4, 16), 64),
        (U85_512, true, false) => ((2, 2, 8), 16),
        (U85_512, true, true) => ((1, 4, 8), 16),
        (U85_1024, false, false) => ((2, 4, 16), 128),
        (U85_1024, false, true) => ((1, 4, 16), 64),
        (U85_1024, true, false) => ((2, 4, 8), 64),
        (U85_1024, true, true) => ((1, 4, 8), 32),
        (U85_2048, false, false) => ((4, 4, 16), 256),
        (U85_2048, false, true) => ((1, 4, 16), 64),
        (U85_2048, true, false) => ((4, 4, 8), 128),
        (U85_2048, true, true) => ((1, 4, 8), 32),
    }
}

/// Cycles of a DEPTHWISE (or POOL) on the MAC unit: OFM rounded to the depthwise granule,
/// taps to `k_rnd(k, 10, 4)`, at the depthwise rate.
pub fn depthwise_cycles(arch: &ArchConfig, j: &MacJob) -> u64 {
    let one_d = j.ofm.0 == 1;
    let ((gh, gw, gd), rate) = depthwise_granule(arch.accelerator, j.wide, one_d);
    let work = up(j.ofm.0, gh) * up(j.ofm.1, gw) * up(j.ofm.2, gd) * k_rnd(j.taps, 10, 4);
    work.div_ceil(rate)
}

/// Where an AO operand comes from / goes to, with its width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AoPath {
    /// Results of the MAC unit (accumulator buffer) to memory (output buffer).
    MacToMemory,
    /// Results of the MAC unit to the chaining buffer.
    MacToChain,
    /// Elementwise inputs (chaining buffer) to memory.
    ElementwiseToMemory,
    /// Elementwise inputs to the chaining buffer.
    ElementwiseToChain,
}

/// Factor of the OFM DMA interface (Table 4-13: OFM_DATA_W over NUM_SU x output width).
fn dma_factor(arch: &ArchConfig, out_bits: u32) -> (u64, u64) {
    let need = arch.scaling_units * out_bits;
    if need <= arch.ofm_data_width {
        (1, 1)
    } else {
        let (n, d) = (u64::from(arch.ofm_data_width), u64::from(need));
        let g = gcd(n, d);
        (n / g, d / g)
    }
}

fn min_frac(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    if a.0 * b.1 <= b.0 * a.1 {
        a
    } else {
        b
    }
}

/// Elements per cycle per scaling unit as a fraction (num, den), Tables 4-11 and 4-12.
/// The limits: the chaining buffer halves the rate with a 32-bit CB input of a binary
/// operation or any 32-bit CB output; the 32-bit AO pipeline halves it for 64-bit outputs;
/// the OFM DMA interface (Table 4-13) limits wide outputs to memory.
pub fn ao_rate(
    arch: &ArchConfig,
    path: AoPath,
    in_bits: u32,
    out_bits: u32,
    binary: bool,
) -> (u64, u64) {
    let mut r = (1, 1);
    match path {
        AoPath::MacToMemory => {
            if out_bits >= 64 {
                r = min_frac(r, (1, 2));
            }
            r = min_frac(r, dma_factor(arch, out_bits));
        }
        AoPath::MacToChain => {
            if out_bits >= 32 {
                r = (1, 2);
            }
        }
        AoPath::ElementwiseToChain => {
            if in_bits >= 32 || out_bits >= 32 {
                r = (1, 2);
            }
        }
        AoPath::ElementwiseToMemory => {
            if in_bits >= 32 && binary {
                r = min_frac(r, (1, 2));
            }
            if out_bits >= 64 {
                r = min_frac(r, (1, 2));
            }
            r = min_frac(r, dma_factor(arch, out_bits));
        }
    }
    r
}

/// Cycles for the AO unit to produce `elements` outputs at `rate` per SU.
pub fn ao_cycles(arch: &ArchConfig, elements: u64, rate: (u64, u64)) -> u64 {
    (elements * rate.1).div_ceil(u64::from(arch.scaling_units) * rate.0)
}

/// OP_DIV: 68 cycles per output sample, each SU working on its own samples (§4.2).
pub fn div_cycles(arch: &ArchConfig, elements: u64) -> u64 {
    (elements * 68).div_ceil(u64::from(arch.scaling_units))
}

/// Resize rate per SU (Table 4-14): 8-bit one element per cycle (1024: half below upscale 2,
/// 2048: half below upscale 4), 16-bit one element every other cycle.
pub fn resize_rate(acc: Accelerator, wide: bool, upscale: u64) -> (u64, u64) {
    if wide {
        return (1, 2);
    }
    match acc {
        Accelerator::U85_1024 if upscale < 2 => (1, 2),
        Accelerator::U85_2048 if upscale < 4 => (1, 2),
        _ => (1, 1),
    }
}

/// Cycles the weight decoders need for `bytes` of standard (SWD, 64 bits/cycle each, one
/// decoder per stream) or fast (FWD, 256 bits/cycle) weight streams.
pub fn weight_decode_cycles(bytes_per_stream: &[u64], fast: bool) -> u64 {
    let bits_per_cycle = if fast { 256 } else { 64 };
    bytes_per_stream
        .iter()
        .map(|b| (b * 8).div_ceil(bits_per_cycle))
        .max()
        .unwrap_or(0)
}

/// How a MAC-unit operation walks its kernel in the per-block model (P17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traversal {
    /// CONV, depth first.
    DepthFirst,
    /// CONV, part kernel first.
    PartKernel,
    /// DEPTHWISE.
    Depthwise,
    /// POOL (no weights).
    Pool,
}

/// One OFM block of a MAC-unit operation, as the per-block model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockJob {
    /// How the kernel is walked.
    pub traversal: Traversal,
    /// Kernel height and width (taps, undilated).
    pub kernel: (u64, u64),
    /// Microblocks in the block along height, width, depth.
    pub ublocks: (u64, u64, u64),
    /// Microblock depth.
    pub ublock_depth: u64,
    /// IFM channels the block consumes per pass (the IFM block depth, at most the IFM depth).
    pub ifm_block_depth: u64,
    /// IFM depth of the operation (CONV: passes of `ifm_block_depth`).
    pub ifm_depth: u64,
    /// IFM element bits.
    pub ifm_bits: u64,
    /// 48-bit accumulators.
    pub acc48: bool,
    /// 2:4 sparse weights.
    pub sparse: bool,
}

/// MAC cores of a configuration (the 512 has two, the 1024 and 2048 four).
pub fn mac_cores(acc: Accelerator) -> u64 {
    match acc {
        Accelerator::U85_128 | Accelerator::U85_256 => 1,
        Accelerator::U85_512 => 2,
        Accelerator::U85_1024 | Accelerator::U85_2048 => 4,
    }
}

/// IFM block depth of a CONV (the IFM channels one pass over the kernel consumes): 16 part
/// kernel first, 32 with 32-bit IFMs or a 16-deep microblock on the 128/256 without sparsity,
/// 128 for sparse 8-bit, else 64 (Vela 5.2's block configurations, P17).
pub fn conv_ifm_block_depth(
    acc: Accelerator,
    order: ConvOrder,
    ifm_bits: u64,
    ublock_depth: u64,
    sparse: bool,
) -> u64 {
    if order == ConvOrder::KernelFirst {
        16
    } else if ifm_bits == 32
        || (matches!(acc, Accelerator::U85_128 | Accelerator::U85_256)
            && ublock_depth == 16
            && !sparse)
    {
        32
    } else if sparse && ifm_bits == 8 {
        128
    } else {
        64
    }
}

/// Cycles of one OFM block on the MAC unit (decision P17; the TRM's rates, chapter 4, are the
/// peak, reached at full granules; it is silent on what else bounds a block). The kernel is
/// walked in sub-kernels of at most 8x8 taps, each in kernel steps (a tap depth first, 4 taps
/// part kernel first or depthwise, 2 taps part kernel first at 16 bits); a step takes, per
/// microblock column of depth, the longer of the weight delivery (32 weights per microblock
/// depth lane per core: `32 x ublock depth / (8 x cores)` cycles) and the MAC work; a block
/// of a single microblock position adds 2 cycles per step (3 with 48-bit accumulators on the
/// 128) for the accumulator turnaround. Pooling takes `max(4, taps)` cycles per microblock,
/// times `bits / 2`. A CONV repeats the block for every IFM block depth.
pub fn mac_block_cycles(arch: &ArchConfig, j: &BlockJob) -> u64 {
    let (nh, nw, nd) = j.ublocks;
    let nwh = nh * nw;
    let wb = 32 * j.ublock_depth / (8 * mac_cores(arch.accelerator));
    let mut total = 0;
    let (kh, kw) = j.kernel;
    let mut x = 0;
    while x < kw.max(1) {
        let mut y = 0;
        while y < kh.max(1) {
            let sub = (kh.max(1) - y).min(8) * (kw.max(1) - x).min(8);
            let (steps, mut cycles) = match j.traversal {
                Traversal::Pool => (1, sub.max(4) * nwh * nd * (j.ifm_bits / 2)),
                Traversal::Depthwise => {
                    let steps = sub.div_ceil(4);
                    (steps, wb.max(4 * nwh * (j.ifm_bits / 8)) * steps * nd)
                }
                Traversal::DepthFirst => (
                    sub,
                    wb.max(j.ifm_block_depth / 8 * nwh) * sub * nd * (j.ifm_bits / 8),
                ),
                Traversal::PartKernel => {
                    let steps = sub.div_ceil(if j.ifm_bits == 16 { 2 } else { 4 });
                    (
                        steps,
                        wb.max(4 * nwh) * steps * nd * j.ifm_block_depth.div_ceil(8),
                    )
                }
            };
            if j.sparse && matches!(j.traversal, Traversal::DepthFirst | Traversal::PartKernel) {
                cycles /= 2;
            }
            let turnaround = if j.acc48 && arch.macs_per_cc <= 128 {
                3
            } else {
                2
            };
            let mut delay = 0;
            if nwh == 1 {
                if nd == 1 {
                    delay = turnaround * steps;
                } else if steps > 1 {
                    delay = turnaround * (steps - 1) * nd;
                }
            }
            if j.traversal == Traversal::PartKernel {
                delay *= j.ifm_block_depth.div_ceil(8);
            }
            total += cycles + delay;
            y += 8;
        }
        x += 8;
    }
    if matches!(j.traversal, Traversal::DepthFirst | Traversal::PartKernel) {
        total *= j.ifm_depth.div_ceil(j.ifm_block_depth.max(1));
    }
    total
}

/// AO cycles per output element at `rate` elements per SU per cycle.
pub fn ao_cycles_per_element(arch: &ArchConfig, rate: (u64, u64)) -> f64 {
    rate.1 as f64 / (f64::from(arch.scaling_units) * rate.0 as f64)
}

/// Height and width of the IFM allocation unit (AU) in which the input buffer is filled, by
/// configuration, OFM microblock `(h, w, d)` and the bits of one IFM block depth (decision
/// P23; not in the TRM, Vela 5.2's figures): an IFM block of an OFM block is the window
/// the block's kernel needs rounded up to whole AUs. The AU narrows as the block depth
/// widens past 128 and 256 bits.
pub fn ifm_alloc_unit(acc: Accelerator, ublock: (u64, u64, u64), depth_bits: u64) -> (u64, u64) {
    let wide = usize::from(depth_bits > 128) + usize::from(depth_bits > 256);
    let rows: [(u64, u64); 3] = match acc {
        Accelerator::U85_128 => [(1, 2), (1, 1), (1, 1)],
        Accelerator::U85_256 | Accelerator::U85_512 => {
            if ublock.0 == 1 && ublock.1 == 4 {
                [(1, 4), (1, 2), (1, 1)]
            } else {
                [(2, 2), (1, 2), (1, 1)]
            }
        }
        Accelerator::U85_1024 => {
            if ublock.0 == 1 {
                [(2, 4), (1, 4), (1, 2)]
            } else {
                [(2, 4), (2, 2), (1, 2)]
            }
        }
        Accelerator::U85_2048 => {
            if ublock.0 == 1 {
                [(4, 4), (2, 4), (1, 4)]
            } else {
                [(4, 4), (2, 4), (2, 2)]
            }
        }
    };
    rows[wide]
}

/// The IFM rows (or columns) one OFM block of `block` rows fetches (decision P23): the rows
/// its kernel needs (`(block - 1) x stride + kernel`, the kernel at most a sub-kernel of 8,
/// upscaling undone) rounded up to the AU, at most the IFM's `len`.
pub fn ifm_fetch_len(block: u64, stride: u64, kernel: u64, up: u64, au: u64, len: u64) -> u64 {
    let need = ((block.max(1) - 1) * stride + kernel.min(8)).div_ceil(up.max(1));
    need.next_multiple_of(au.max(1)).min(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifm_alloc_units() {
        // An 8-bit part-kernel-first block (16 deep, 128 bits) on the 2048 in its 4x4x16
        // microblock fills 4x4 units; a 64-deep 8-bit block (512 bits) 2x2 units.
        assert_eq!(
            ifm_alloc_unit(Accelerator::U85_2048, (4, 4, 16), 128),
            (4, 4)
        );
        assert_eq!(
            ifm_alloc_unit(Accelerator::U85_2048, (2, 2, 64), 512),
            (2, 2)
        );
        assert_eq!(
            ifm_alloc_unit(Accelerator::U85_2048, (1, 4, 64), 512),
            (1, 4)
        );
        assert_eq!(ifm_alloc_unit(Accelerator::U85_256, (1, 4, 8), 128), (1, 4));
        assert_eq!(ifm_alloc_unit(Accelerator::U85_256, (2, 2, 8), 256), (1, 2));
        assert_eq!(
            ifm_alloc_unit(Accelerator::U85_1024, (2, 4, 16), 256),
            (2, 2)
        );
        assert_eq!(ifm_alloc_unit(Accelerator::U85_128, (1, 2, 8), 128), (1, 2));
        // mobilenet's first convolution on the 2048 (Vela's IFM block 28x36 for a 12x16 OFM
        // block, 3x3 stride 2): 25 -> 28 rows, 33 -> 36 columns.
        assert_eq!(ifm_fetch_len(12, 2, 3, 1, 4, 128), 28);
        assert_eq!(ifm_fetch_len(16, 2, 3, 1, 4, 128), 36);
        // At most the IFM; a 10-tap kernel fetches per sub-kernel of 8.
        assert_eq!(ifm_fetch_len(16, 2, 3, 1, 4, 30), 30);
        assert_eq!(ifm_fetch_len(16, 2, 10, 1, 2, 49), 38);
        // Upscaling undone: 2x nearest upscale halves the rows fetched.
        assert_eq!(ifm_fetch_len(8, 1, 3, 2, 1, 64), 5);
    }

    #[test]
    fn k_rnd_matches_chapter_4() {
        assert_eq!(k_rnd(9, 5, 2), 9);
        assert_eq!(k_rnd(1, 5, 2), 2);
        assert_eq!(k_rnd(1, 10, 4), 4);
        assert_eq!(k_rnd(9, 10, 4), 9);
        assert_eq!(k_rnd(11, 10, 4), 14);
        assert_eq!(k_rnd(6, 5, 4), 9);
    }

    #[test]
    fn full_granules_run_at_the_table_rate() {
        let arch = Accelerator::U85_256.config();
        // 8-bit depth-first 1x1 conv, OFM 2x2x8 granule, IFM 32: 1024 MACs at 256/cycle.
        let j = MacJob {
            ofm: (2, 2, 8),
            taps: 1,
            ifm_depth: 32,
            wide: false,
            sparse: false,
        };
        assert_eq!(conv_cycles(&arch, (2, 2, 8), ConvOrder::DepthFirst, &j), 4);
        // 16-bit: half the rate.
        let j16 = MacJob { wide: true, ..j };
        assert_eq!(
            conv_cycles(&arch, (2, 2, 8), ConvOrder::DepthFirst, &j16),
            8
        );
        // 2:4 sparsity: IFM granule 64, twice the rate.
        let js = MacJob {
            ifm_depth: 64,
            sparse: true,
            ..j
        };
        assert_eq!(conv_cycles(&arch, (2, 2, 8), ConvOrder::DepthFirst, &js), 4);
        // One OFM element costs as much as a whole granule.
        let j1 = MacJob {
            ofm: (1, 1, 1),
            ..j
        };
        assert_eq!(conv_cycles(&arch, (2, 2, 8), ConvOrder::DepthFirst, &j1), 4);
    }

    #[test]
    fn kernel_first_rounds_taps() {
        let arch = Accelerator::U85_256.config();
        // 3x3 kernel, IFM depth 3 (<= 8): k_rnd(9,5,4) = 9, IFM granule 8.
        let j = MacJob {
            ofm: (2, 2, 8),
            taps: 9,
            ifm_depth: 3,
            wide: false,
            sparse: false,
        };
        assert_eq!(
            conv_cycles(&arch, (2, 2, 8), ConvOrder::KernelFirst, &j),
            32 * 9 * 8 / 256
        );
    }

    #[test]
    fn sparse_kernel_first_below_depth_9_halves_the_dense_row() {
        // P27: ds_cnn's first convolution (8-bit, IFM depth 1, 10x4 kernel, 2:4 sparse) on the
        // 256 in 2x2x8 microblocks: the `ifm_depth<=8` row (k_rnd(40,5,4) = 44 taps, IFM
        // granule 8) at twice the rate, half the dense figure (Vela 5.2's block walk: 6 240
        // cycles for the 25x5x64 OFM).
        let arch = Accelerator::U85_256.config();
        let dense = MacJob {
            ofm: (25, 5, 64),
            taps: 40,
            ifm_depth: 1,
            wide: false,
            sparse: false,
        };
        let sparse = MacJob {
            sparse: true,
            ..dense
        };
        let kf = ConvOrder::KernelFirst;
        assert_eq!(conv_cycles(&arch, (2, 2, 8), kf, &dense), 13_728);
        assert_eq!(conv_cycles(&arch, (2, 2, 8), kf, &sparse), 6_864);
        // Above depth 8 the sparse row: k_rnd(40,10,4) = 44 taps, IFM granule 16, twice the rate.
        let deep = MacJob {
            ifm_depth: 16,
            ..sparse
        };
        assert_eq!(conv_cycles(&arch, (2, 2, 8), kf, &deep), 13_728);
        // 16 bits: one kernel-first row for every depth; sparsity's IFM granule of 16 at twice
        // the rate gives a 1-channel IFM no speed-up (Table 4-4).
        let wide = MacJob {
            wide: true,
            ..dense
        };
        let wide_sparse = MacJob {
            wide: true,
            ..sparse
        };
        assert_eq!(conv_cycles(&arch, (2, 2, 8), kf, &wide), 27_456);
        assert_eq!(conv_cycles(&arch, (2, 2, 8), kf, &wide_sparse), 27_456);
    }

    #[test]
    fn depthwise_rates() {
        let arch = Accelerator::U85_256.config();
        let j = MacJob {
            ofm: (1, 2, 16),
            taps: 9,
            ifm_depth: 1,
            wide: false,
            sparse: false,
        };
        // 32 outputs x 9 taps at 32 MACs/cycle.
        assert_eq!(depthwise_cycles(&arch, &j), 9);
    }

    #[test]
    fn ao_rates_follow_tables_4_11_to_4_13() {
        let a256 = Accelerator::U85_256.config();
        let a512 = Accelerator::U85_512.config();
        let a2048 = Accelerator::U85_2048.config();
        assert_eq!(ao_rate(&a256, AoPath::MacToMemory, 32, 8, false), (1, 1));
        assert_eq!(ao_rate(&a256, AoPath::MacToMemory, 32, 64, false), (1, 2));
        assert_eq!(ao_rate(&a512, AoPath::MacToMemory, 32, 32, false), (1, 2));
        assert_eq!(ao_rate(&a2048, AoPath::MacToMemory, 32, 16, false), (1, 2));
        assert_eq!(ao_rate(&a256, AoPath::MacToChain, 32, 32, false), (1, 2));
        assert_eq!(
            ao_rate(&a256, AoPath::ElementwiseToMemory, 32, 8, true),
            (1, 2)
        );
        assert_eq!(
            ao_rate(&a256, AoPath::ElementwiseToMemory, 32, 8, false),
            (1, 1)
        );
        assert_eq!(
            ao_rate(&a512, AoPath::ElementwiseToMemory, 8, 32, true),
            (1, 2)
        );
        assert_eq!(ao_cycles(&a256, 100, (1, 1)), 25);
        assert_eq!(div_cycles(&a256, 4), 68);
    }
}
