//! One kernel operation or DMA, from the register state at its NPU_OP_* command: its MACs,
//! compute cycles (see [`super::cycles`]), bytes read and written per region and the highest
//! byte it touches in each region. Nothing here needs the data.
//!
//! Traffic model (decisions P8 and P13 in `docs/decisions.md`):
//! - the OFM is traversed block by block (NPU_SET_OFM_BLK_*), depth slices outermost (the weight
//!   stream is ordered by OFM depth block, TRM 3.9.2); each block reads the IFM window it needs
//!   (kernel halo included, padding excluded); a CONV reads every IFM channel for each depth
//!   slice, DEPTHWISE/POOL only the slice's channels;
//! - each block reads its depth slice's part of the weight and scale streams (the weight
//!   channel is "triggered for blocks that require the transfer of weights", TRM 2.3.4, and a
//!   layer "reads the weights multiple times"): the streams are read once per spatial block;
//! - the OFM is written once, block by block; chained tensors (storage `chained`) cost no
//!   memory traffic;
//! - elementwise operands are read block by block, a broadcast dimension counting 1, a scalar 0.
//!
//! Besides the bytes, every access is recorded as runs of contiguous bytes ([`traffic`]) so
//! that the memory model can count AXI bursts and beats.

use super::axi::Access;
use super::cycles::{self, AoPath, BlockJob, ConvOrder, MacJob, Traversal};
use super::traffic::{self, FmBox};
use crate::arch::ArchConfig;
use crate::isa::{
    AccFormat, AccInput, AccOutput, ActivationFormat, ActivationStorage, ActivationTranspose,
    BroadcastMode, Command, ElementwiseMode, IfmUpscaleMode, KernelDilation, OfmScaleMode,
    PoolingMode, RegisterFile, WeightFormat, WeightOrder, WeightSparsity,
};
use crate::sim::fm::{addr40, esize, saddr40, Fm};
use crate::sim::NUM_REGIONS;

/// What an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpKind {
    /// NPU_OP_CONV (incl. matrix multiply with weights from IFM2).
    Conv,
    /// NPU_OP_DEPTHWISE.
    Depthwise,
    /// NPU_OP_POOL.
    Pool,
    /// NPU_OP_ELEMENTWISE.
    Elementwise,
    /// NPU_OP_RESIZE.
    Resize,
    /// NPU_OP_DMA_START.
    #[default]
    Dma,
}

/// What the block pipeline of a kernel operation needs besides the memories (P17): the
/// blocks, each stage's cycles per block, and the accesses of one block whose latency the
/// pipeline cannot hide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pipeline {
    /// OFM blocks: the OFM's microblocks over the microblocks of one block (fractional).
    pub blocks: f64,
    /// MAC stage cycles per block.
    pub mac_block: f64,
    /// AO cycles per block (elements of a block x cycles per element).
    pub ao_block: f64,
    /// AO cycles per output element.
    pub ao_per_element: f64,
    /// Elementwise and resize: output elements (NHCWB16 depth rounded to bricks).
    pub elements: f64,
    /// Elements of one OFM block (as programmed).
    pub block_elements: f64,
    /// Scale/bias bytes one block needs, and the region they are read from.
    pub scale_block: Option<(u8, f64)>,
    /// The first block's read of each IFM in memory: region and runs.
    pub ifm_block: Vec<(u8, Access)>,
    /// The first block's OFM write: region and runs.
    pub ofm_block: Option<(u8, Access)>,
}

/// The cost of one operation, before memories are attached.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpCost {
    /// What the operation is.
    pub kind: OpKind,
    /// The weights come through the fast weight decoder's channel.
    pub fast_weights: bool,
    /// The OFM goes to the chaining buffer (a kernel operation reading it follows).
    pub chained_ofm: bool,
    /// The block pipeline (kernel operations).
    pub pipe: Pipeline,
    /// Multiply-accumulates (CONV, DEPTHWISE: OFM elements x taps x IFM depth per output).
    pub macs: u64,
    /// Cycles of the slowest compute unit (MAC, AO, weight decoders).
    pub compute_cycles: u64,
    /// Cycles of the MAC stage: the MAC unit or the weight decoders feeding it, whichever is
    /// slower (0 without MAC work).
    pub mac_cycles: u64,
    /// Cycles of the AO unit.
    pub ao_cycles: u64,
    /// Blocks the operation is processed in, one after another through the IFM fetch, MAC,
    /// AO and OFM write stages (0 for a DMA, which streams).
    pub blocks: u64,
    /// Bytes read per region.
    pub read: [u64; NUM_REGIONS],
    /// Bytes written per region.
    pub written: [u64; NUM_REGIONS],
    /// Sum of the WEIGHT*_LENGTH of the weight streams used.
    pub weight_bytes: u64,
    /// SCALE_LENGTH, when the operation reads its scale stream.
    pub scale_bytes: u64,
    /// One past the highest byte touched per region (0: untouched).
    pub extent: [u64; NUM_REGIONS],
    /// The feature-map reads per region as contiguous runs (what the memory model times).
    pub reads: [Access; NUM_REGIONS],
    /// The weight stream reads per region (a matrix multiply's IFM2 too).
    pub stream_reads: [Access; NUM_REGIONS],
    /// The scale stream reads per region.
    pub scale_reads: [Access; NUM_REGIONS],
    /// The writes per region as contiguous runs.
    pub writes: [Access; NUM_REGIONS],
}

impl OpCost {
    fn touch(&mut self, region: u8, end: u64) {
        let r = usize::from(region) % NUM_REGIONS;
        self.extent[r] = self.extent[r].max(end);
    }
    fn read(&mut self, region: u8, bytes: u64) {
        self.read[usize::from(region) % NUM_REGIONS] += bytes;
    }
    fn write(&mut self, region: u8, bytes: u64) {
        self.written[usize::from(region) % NUM_REGIONS] += bytes;
    }
    fn read_runs(&mut self, region: u8) -> &mut Access {
        &mut self.reads[usize::from(region) % NUM_REGIONS]
    }
    fn stream_runs(&mut self, region: u8) -> &mut Access {
        &mut self.stream_reads[usize::from(region) % NUM_REGIONS]
    }
    fn scale_runs(&mut self, region: u8) -> &mut Access {
        &mut self.scale_reads[usize::from(region) % NUM_REGIONS]
    }
    fn write_runs(&mut self, region: u8) -> &mut Access {
        &mut self.writes[usize::from(region) % NUM_REGIONS]
    }
}

fn m1(v: impl Into<u64>) -> u64 {
    v.into() + 1
}

fn stride(lsb: u8, msb: u8) -> u64 {
    2 * u64::from(msb) + u64::from(lsb) + 1
}

/// Whether a tensor lives in memory (not chained, not absent).
fn in_memory(fm: &Fm) -> bool {
    matches!(
        fm.storage,
        ActivationStorage::Tile2x2 | ActivationStorage::Tile3x1
    )
}

/// One past the highest byte of an `h x w x c` feature map (NHCWB16 rounds to whole bricks).
fn fm_end(fm: &Fm, h: u64, w: u64, c: u64) -> u64 {
    if !in_memory(fm) || h == 0 || w == 0 || c == 0 {
        return 0;
    }
    let c_last = if fm.format == ActivationFormat::Nhcwb16 {
        c.div_ceil(16) * 16 - 1
    } else {
        c - 1
    };
    let ys = [h - 1, fm.height[0].min(h) - 1, fm.height[1].min(h) - 1];
    let xs = [w - 1, fm.width0.min(w) - 1];
    let mut end = 0;
    for &y in &ys {
        for &x in &xs {
            if let Ok(a) = fm.addr(y, x, c_last) {
                end = end.max(a + fm.esize());
            }
        }
    }
    end
}

fn acc_bits(r: &RegisterFile) -> u32 {
    if r.acc_format.acc_format == AccFormat::I48 {
        64
    } else {
        32
    }
}

fn mac_ao_cycles(arch: &ArchConfig, r: &RegisterFile, ofm: &Fm, elements: u64) -> u64 {
    if r.acc_format.acc_output == AccOutput::Disable {
        return 0;
    }
    let path = if ofm.storage == ActivationStorage::Chained {
        AoPath::MacToChain
    } else {
        AoPath::MacToMemory
    };
    let out_bits = (esize(ofm.precision) * 8) as u32;
    let rate = cycles::ao_rate(arch, path, acc_bits(r), out_bits, false);
    cycles::ao_cycles(arch, elements, rate)
}

/// The weight streams of a CONV/DEPTHWISE: (region, base, length) of each stream used.
fn weight_streams(arch: &ArchConfig, r: &RegisterFile) -> Vec<(u64, u64)> {
    let all = [
        (
            addr40(r.weight_base.addr_hi, r.weight_base.addr_lo),
            r.weight_length.length,
        ),
        (
            addr40(r.weight1_base.addr_hi, r.weight1_base.addr_lo),
            r.weight1_length.length,
        ),
        (
            addr40(r.weight2_base.addr_hi, r.weight2_base.addr_lo),
            r.weight2_length.length,
        ),
        (
            addr40(r.weight3_base.addr_hi, r.weight3_base.addr_lo),
            r.weight3_length.length,
        ),
    ];
    let n = if r.weight_format.weight_format == WeightFormat::Fwd {
        1
    } else {
        arch.weight_decoders as usize
    };
    all.iter()
        .take(n)
        .map(|&(b, l)| (b, u64::from(l)))
        .collect()
}

/// The scale stream's (base, length), when the operation reads it (per-channel scaling).
fn scale_stream(r: &RegisterFile) -> Option<(u64, u64)> {
    (r.ofm_precision.scale_mode == OfmScaleMode::PerChannel
        && r.acc_format.acc_output == AccOutput::Enable)
        .then(|| {
            (
                addr40(r.scale_base.addr_hi, r.scale_base.addr_lo),
                u64::from(r.scale_length.length),
            )
        })
}

/// What a kernel operation reads of its weight and scale streams, wherever they are: the
/// region they are read from is applied last ([`StreamReads::apply`]), so that one cost
/// serves the same operation with its streams in another region ([`op_cost_restreamed`]).
struct StreamReads {
    /// The weight streams' (base, length) (none for a matrix multiply's IFM2 weights).
    weights: Vec<(u64, u64)>,
    /// The scale stream's (base, length).
    scale: Option<(u64, u64)>,
    /// Depth slices and spatial blocks: each block reads its slice's part of each stream.
    slices: u64,
    spatial: u64,
    /// Whether the runs are recorded ([`Walk::Traffic`]).
    traffic: bool,
    /// The OFM block depth over the OFM depth (the scales one block needs).
    block_depth: (u64, u64),
}

impl StreamReads {
    /// Adds the streams' reads from `weights` and `scales` (regions) to `c`: bytes, runs,
    /// extents, and the scales each block waits for (P17).
    fn apply(&self, c: &mut OpCost, (weights, scales): (u8, u8)) {
        if let Some((base, len)) = self.scale {
            c.read(scales, len * self.spatial);
            traffic::stream(base, len, self.slices, self.spatial, c.scale_runs(scales));
            c.touch(scales, base + len);
        }
        for &(base, len) in &self.weights {
            c.read(weights, len * self.spatial);
            if self.traffic {
                traffic::stream(base, len, self.slices, self.spatial, c.stream_runs(weights));
            }
            if len > 0 {
                c.touch(weights, base + len);
            }
        }
        let (bd, od) = self.block_depth;
        c.pipe.scale_block =
            (c.scale_bytes > 0).then(|| (scales, c.scale_bytes as f64 / od as f64 * bd as f64));
    }
}

/// The OFM's shape as stored: write_ofm (TRM 3.6.5) stores (y, x, c) at the permuted
/// coordinates of the transpose.
fn transposed<T>(t: ActivationTranspose, (y, x, c): (T, T, T)) -> (T, T, T) {
    match t {
        ActivationTranspose::Hwc => (y, x, c),
        ActivationTranspose::Whc => (x, y, c),
        ActivationTranspose::Hcw => (y, c, x),
        ActivationTranspose::Cwh => (c, x, y),
        ActivationTranspose::Chw => (c, y, x),
        ActivationTranspose::Wch => (x, c, y),
    }
}

/// Whether the operation writes its OFM to memory.
fn writes_ofm(r: &RegisterFile, ofm: &Fm) -> bool {
    r.acc_format.acc_output == AccOutput::Enable && in_memory(ofm)
}

/// The OFM of `shape`, written once: bytes and extent.
fn write_ofm(c: &mut OpCost, r: &RegisterFile, ofm: &Fm, (h, w, d): (u64, u64, u64)) {
    if !writes_ofm(r, ofm) {
        return;
    }
    c.write(ofm.region, h * w * d * ofm.esize());
    let (sh, sw, sd) = transposed(r.ofm_precision.activation_transpose, (h, w, d));
    c.touch(ofm.region, fm_end(ofm, sh, sw, sd));
}

/// The runs of writing the OFM block at rows `ys`, columns `xs`, channels `cs`.
fn write_ofm_block(c: &mut OpCost, r: &RegisterFile, ofm: &Fm, spans: Spans3, times: u64) {
    if !writes_ofm(r, ofm) {
        return;
    }
    ofm_block_runs(r, ofm, spans, times, c.write_runs(ofm.region));
}

/// The first OFM block's write, for the pipeline's fill and drain.
fn first_ofm_block(r: &RegisterFile, ofm: &Fm, spans: Spans3) -> Option<(u8, Access)> {
    if !writes_ofm(r, ofm) {
        return None;
    }
    let mut a = Access::default();
    ofm_block_runs(r, ofm, spans, 1, &mut a);
    Some((ofm.region, a))
}

fn ofm_block_runs(r: &RegisterFile, ofm: &Fm, (ys, xs, cs): Spans3, times: u64, acc: &mut Access) {
    let t = r.ofm_precision.activation_transpose;
    let (y, x, ch) = transposed(t, (ys, xs, cs));
    let b = FmBox {
        y: y.0,
        h: y.1,
        x: x.0,
        w: x.1,
        c: ch.0,
        d: ch.1,
    };
    traffic::fm_box(ofm, b, times, acc);
}

/// The cost of a kernel operation or DMA; `None` for any other command.
pub fn op_cost(arch: &ArchConfig, r: &RegisterFile, command: &Command) -> Option<OpCost> {
    op_cost_with(arch, r, command, Walk::Traffic)
}

/// [`op_cost`], and the cost of the same operation with its weight and scale streams read from
/// region `to` instead (at the same addresses: `r` with WEIGHT_REGION and SCALE_REGION `to`),
/// the feature maps costed once for both; `None` for a command that is not a CONV, DEPTHWISE
/// or POOL (cost it twice).
pub fn op_cost_restreamed(
    arch: &ArchConfig,
    r: &RegisterFile,
    command: &Command,
    to: u8,
) -> Option<(OpCost, OpCost)> {
    let (kind, flags) = kernel_kind(command)?;
    let (mut c, reads) = kernel_without_streams(arch, r, kind, flags, Walk::Traffic);
    let mut moved = c.clone();
    reads.apply(&mut c, (r.weight_region.region, r.scale_region.region));
    reads.apply(&mut moved, (to, to));
    Some((c, moved))
}

/// [`op_cost`] without the runs a CONV, DEPTHWISE or POOL reads and writes its feature maps
/// and streams in (`reads`, `stream_reads`, `writes` empty; the byte counts, the scale
/// stream and the block pipeline as [`op_cost`] has them): what the NPU's cycles
/// ([`super::PerfModel::npu_cycles`]) need, without the block walk the memories' timing needs.
pub fn op_compute_cost(arch: &ArchConfig, r: &RegisterFile, command: &Command) -> Option<OpCost> {
    op_cost_with(arch, r, command, Walk::Pipeline)
}

/// What a kernel's cost walks: its blocks' traffic too, or only what the pipeline needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    Traffic,
    Pipeline,
}

fn op_cost_with(
    arch: &ArchConfig,
    r: &RegisterFile,
    command: &Command,
    walk: Walk,
) -> Option<OpCost> {
    if let Some((kind, flags)) = kernel_kind(command) {
        return Some(kernel(arch, r, kind, flags, walk));
    }
    match *command {
        Command::OpElementwise(e) => Some(elementwise(arch, r, e.elementwise_mode)),
        Command::OpResize(_) => Some(resize(arch, r)),
        Command::OpDmaStart(_) => Some(dma(r)),
        _ => None,
    }
}

/// What [`kernel`] costs of a CONV, DEPTHWISE or POOL command: its kind and
/// `(weights_ifm2, reduce_sum)`; `None` for any other command.
fn kernel_kind(command: &Command) -> Option<(OpKind, (bool, bool))> {
    match *command {
        Command::OpConv(c) => Some((OpKind::Conv, (c.weights_ifm2 == 1, false))),
        Command::OpDepthwise(_) => Some((OpKind::Depthwise, (false, false))),
        Command::OpPool(p) => Some((
            OpKind::Pool,
            (false, p.pooling_mode == PoolingMode::ReduceSum),
        )),
        _ => None,
    }
}

/// A kernel operation's cost; `(weights_ifm2, reduce_sum)`: a CONV whose weights are IFM2,
/// a POOL that sums channels.
fn kernel(
    arch: &ArchConfig,
    r: &RegisterFile,
    kind: OpKind,
    flags: (bool, bool),
    walk: Walk,
) -> OpCost {
    let (mut c, reads) = kernel_without_streams(arch, r, kind, flags, walk);
    reads.apply(&mut c, (r.weight_region.region, r.scale_region.region));
    c
}

/// [`kernel`] without the reads of its weight and scale streams, and those reads.
fn kernel_without_streams(
    arch: &ArchConfig,
    r: &RegisterFile,
    kind: OpKind,
    (weights_ifm2, reduce_sum): (bool, bool),
    walk: Walk,
) -> (OpCost, StreamReads) {
    let traffic = walk == Walk::Traffic;
    let mut c = OpCost {
        kind,
        fast_weights: r.weight_format.weight_format == WeightFormat::Fwd,
        ..OpCost::default()
    };
    let (ifm, ifm2, ofm) = (Fm::ifm(r), Fm::ifm2(r), Fm::ofm(r));
    let (oh, ow, od) = (
        m1(r.ofm_height_m1.height_m1),
        m1(r.ofm_width_m1.width_m1),
        m1(r.ofm_depth_m1.depth_m1),
    );
    let (bh, bw, bd) = (
        m1(r.ofm_blk_height_m1.height_m1).min(oh),
        m1(r.ofm_blk_width_m1.width_m1).min(ow),
        m1(r.ofm_blk_depth_m1.depth_m1).min(od),
    );
    let ks = r.kernel_stride;
    let (sy, sx) = (
        stride(ks.stride_y_lsb, ks.stride_y_msb),
        stride(ks.stride_x_lsb, ks.stride_x_msb),
    );
    let dil = |d: KernelDilation| if d == KernelDilation::X2 { 2 } else { 1 };
    let (dy, dx) = (dil(ks.dilation_y), dil(ks.dilation_x));
    let (kh_dil, kw_dil) = (
        m1(r.kernel_height_m1.height_m1),
        m1(r.kernel_width_m1.width_m1),
    );
    let taps = kh_dil.div_ceil(dy) * kw_dil.div_ceil(dx);
    let (pt, pl) = (u64::from(r.ifm_pad_top.pad), u64::from(r.ifm_pad_left.pad));
    let (ph, pw) = (
        pt + u64::from(r.ifm_pad_bottom.pad),
        pl + u64::from(r.ifm_pad_right.pad),
    );
    // The IFM extent the operation reads (TRM 3.10.2: derived from OFM, kernel and padding);
    // with IFM upscaling the kernel walks the upscaled IFM, twice the stored size.
    let up = if r.ifm_upscale.mode == IfmUpscaleMode::None {
        1
    } else {
        2
    };
    let ifm_h_up = ((oh - 1) * sy + kh_dil).saturating_sub(ph);
    let ifm_w_up = ((ow - 1) * sx + kw_dil).saturating_sub(pw);
    let ifm_d = m1(r.ifm_depth_m1.depth_m1);
    let wide = ifm.esize() >= 2;
    let elements = oh * ow * od;

    // Blocks: depth slices outermost, each over the spatial blocks; each block reads its IFM
    // window (stored rows and columns, upscaling undone).
    let ywin = traffic::windows(oh, bh, sy, kh_dil, pt, ifm_h_up, up);
    let xwin = traffic::windows(ow, bw, sx, kw_dil, pl, ifm_w_up, up);
    let (yblk, xblk) = (traffic::spans(oh, bh), traffic::spans(ow, bw));
    // What the blocks fetch for the timing (P23): each OFM block's IFM window widened to the
    // IFM block the input buffer is filled with (the kernel's rows and columns rounded up to
    // allocation units; partial OFM blocks fetch whole IFM blocks), once per sub-kernel.
    let mb = arch.microblock_shape(r.acc_format.microblock);
    let ublk = (
        u64::from(mb.height),
        u64::from(mb.width),
        u64::from(mb.depth.max(1)),
    );
    let ifm_bits = ifm.esize() * 8;
    let order = if ks.weight_order == WeightOrder::PartKernelFirst {
        ConvOrder::KernelFirst
    } else {
        ConvOrder::DepthFirst
    };
    let sparse =
        kind == OpKind::Conv && r.weight_format.weight_sparsity == WeightSparsity::Sparse24;
    let raw_ifm_block_depth = match kind {
        OpKind::Conv => {
            cycles::conv_ifm_block_depth(arch.accelerator, order, ifm_bits, ublk.2, sparse)
        }
        _ if reduce_sum => cycles::conv_ifm_block_depth(
            arch.accelerator,
            ConvOrder::DepthFirst,
            ifm_bits,
            ublk.2,
            false,
        ),
        _ => bd,
    };
    let au = cycles::ifm_alloc_unit(arch.accelerator, ublk, raw_ifm_block_depth * ifm_bits);
    // P26: an IFM position within one word takes its share of a burst against 16 channels of
    // its element size (Vela 5.2's NHWC read burst, one IFM block depth, for the
    // part-kernel-first IFM block depth of 16 it gives narrow IFMs).
    let unit = raw_ifm_block_depth.min(16) * ifm.esize();
    let (kh, kw) = (kh_dil.div_ceil(dy), kw_dil.div_ceil(dx));
    let subkernels = kh.div_ceil(8) * kw.div_ceil(8);
    let fetch = |win: &[(u64, u64)], block: u64, s: u64, k: u64, au: u64, len: u64| {
        let f = cycles::ifm_fetch_len(block, s, k, up, au, len);
        win.iter()
            .map(|&(lo, _)| (lo.min(len - f), f))
            .collect::<Vec<_>>()
    };
    let yfetch = fetch(&ywin, bh, sy, kh_dil, au.0, ifm_h_up.div_ceil(up));
    let xfetch = fetch(&xwin, bw, sx, kw_dil, au.1, ifm_w_up.div_ceil(up));
    let slices = traffic::spans(od, bd);
    let spatial = (ywin.len() * xwin.len()) as u64;
    let (rows, cols): (u64, u64) = (
        ywin.iter().map(|w| w.1).sum(),
        xwin.iter().map(|w| w.1).sum(),
    );
    let conv = kind == OpKind::Conv || reduce_sum;
    let channels = if conv {
        slices.len() as u64 * ifm_d
    } else {
        od
    };
    let acc_ifm2 = !weights_ifm2 && r.acc_format.acc_input == AccInput::Ifm2 && in_memory(&ifm2);
    if in_memory(&ifm) {
        c.read(ifm.region, rows * cols * channels * ifm.esize());
        let d = if conv { ifm_d } else { od };
        c.touch(
            ifm.region,
            fm_end(&ifm, ifm_h_up.div_ceil(up), ifm_w_up.div_ceil(up), d),
        );
    }
    // Blocks of the same shape cost the same runs: grouped, the work does not grow with
    // their number.
    let (ygroups, xgroups) = if traffic {
        (
            traffic::pair_groups(&yfetch, &yblk),
            traffic::pair_groups(&xfetch, &xblk),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let groups = if traffic {
        traffic::groups(&slices)
    } else {
        Vec::new()
    };
    for &(c0, cd, cn) in &groups {
        let (ic, id) = if conv { (0, ifm_d) } else { (c0, cd) };
        for &((y, h), (oy, bh), yn) in &ygroups {
            for &((x, w), (ox, bw), xn) in &xgroups {
                let n = cn * yn * xn;
                if in_memory(&ifm) {
                    let b = FmBox {
                        y,
                        h,
                        x,
                        w,
                        c: ic,
                        d: id,
                    };
                    traffic::fm_box_in(&ifm, b, n * subkernels, unit, c.read_runs(ifm.region));
                }
                if acc_ifm2 {
                    let b = FmBox {
                        y: oy,
                        h: bh,
                        x: ox,
                        w: bw,
                        c: c0,
                        d: cd,
                    };
                    traffic::fm_box(&ifm2, b, n, c.read_runs(ifm2.region));
                }
                write_ofm_block(&mut c, r, &ofm, ((oy, bh), (ox, bw), (c0, cd)), n);
            }
        }
        // IFM2 as the weights of a matrix multiply (width = OFM depth, channels = IFM
        // depth): the slice's columns, per spatial block.
        if weights_ifm2 && in_memory(&ifm2) {
            let b = FmBox {
                y: 0,
                h: 1,
                x: c0,
                w: cd,
                c: 0,
                d: ifm_d,
            };
            traffic::fm_box(&ifm2, b, spatial * cn, c.stream_runs(ifm2.region));
        }
    }
    if weights_ifm2 && in_memory(&ifm2) {
        c.read(ifm2.region, od * ifm_d * ifm2.esize() * spatial);
        c.touch(ifm2.region, fm_end(&ifm2, 1, od, ifm_d));
    } else if acc_ifm2 {
        c.read(ifm2.region, elements * ifm2.esize());
        c.touch(ifm2.region, fm_end(&ifm2, oh, ow, od));
    }
    write_ofm(&mut c, r, &ofm, (oh, ow, od));
    let scale = scale_stream(r);
    c.scale_bytes = scale.map_or(0, |(_, len)| len);

    let job = MacJob {
        ofm: (oh, ow, od),
        taps,
        ifm_depth: if kind == OpKind::Conv { ifm_d } else { 1 },
        wide,
        sparse,
    };
    let mac_cycles = match kind {
        OpKind::Conv => {
            c.macs = elements.saturating_mul(taps).saturating_mul(ifm_d);
            cycles::conv_cycles(arch, ublk, order, &job)
        }
        OpKind::Depthwise => {
            c.macs = elements.saturating_mul(taps);
            cycles::depthwise_cycles(arch, &job)
        }
        _ => cycles::depthwise_cycles(arch, &job),
    };
    let mut wd_cycles = 0;
    let mut streams = Vec::new();
    if matches!(kind, OpKind::Conv | OpKind::Depthwise) && !weights_ifm2 {
        streams = weight_streams(arch, r);
        c.weight_bytes = streams.iter().map(|s| s.1).sum();
        let lens: Vec<u64> = streams.iter().map(|s| s.1).collect();
        // The decoders decode what the blocks read: the streams once per spatial block.
        let fast = r.weight_format.weight_format == WeightFormat::Fwd;
        wd_cycles = cycles::weight_decode_cycles(&lens, fast) * spatial;
    }
    let ao = mac_ao_cycles(arch, r, &ofm, elements);
    c.mac_cycles = mac_cycles.max(wd_cycles);
    c.ao_cycles = ao;
    c.chained_ofm = ofm.storage == ActivationStorage::Chained;
    c.blocks = slices.len() as u64 * spatial;
    c.compute_cycles = c.mac_cycles.max(ao);

    // The block pipeline (P17): blocks counted in microblocks, the MAC stage per block from
    // the kernel walk (at least chapter 4's rate), the AO stage per block.
    let (uh, uw, ud) = ublk;
    let ublocks = (bh.div_ceil(uh), bw.div_ceil(uw), bd.div_ceil(ud));
    let per_block = ublocks.0 * ublocks.1 * ublocks.2;
    let all = oh.div_ceil(uh) * ow.div_ceil(uw) * od.div_ceil(ud);
    let blocks = all as f64 / per_block.max(1) as f64;
    let (traversal, ifm_block_depth) = match kind {
        OpKind::Conv => {
            let t = if order == ConvOrder::KernelFirst && !weights_ifm2 {
                Traversal::PartKernel
            } else {
                Traversal::DepthFirst
            };
            (t, raw_ifm_block_depth.min(ifm_d))
        }
        OpKind::Depthwise => (Traversal::Depthwise, bd),
        // A channel sum walks the IFM depth as a depth-first convolution does.
        _ if reduce_sum => (Traversal::DepthFirst, raw_ifm_block_depth.min(ifm_d)),
        _ => (Traversal::Pool, bd),
    };
    let bj = BlockJob {
        traversal,
        kernel: (kh_dil.div_ceil(dy), kw_dil.div_ceil(dx)),
        ublocks,
        ublock_depth: ud,
        ifm_block_depth,
        ifm_depth: ifm_d,
        ifm_bits,
        acc48: r.acc_format.acc_format == AccFormat::I48,
        sparse: job.sparse,
    };
    let walk = cycles::mac_block_cycles(arch, &bj) as f64;
    let ao_pe = if ao > 0 {
        ao as f64 / elements.max(1) as f64
    } else {
        0.0
    };
    let block_elements = (bh * bw * bd) as f64;
    c.pipe = Pipeline {
        blocks,
        mac_block: walk.max(c.mac_cycles as f64 / blocks.max(1.0)),
        ao_block: (ao_pe * block_elements).ceil(),
        ao_per_element: ao_pe,
        elements: elements as f64,
        block_elements,
        scale_block: None,
        ifm_block: Vec::new(),
        ofm_block: first_ofm_block(r, &ofm, ((0, bh), (0, bw), (0, bd))),
    };
    if in_memory(&ifm) {
        if let (Some(&(y, h)), Some(&(x, w))) = (yfetch.first(), xfetch.first()) {
            let d = if conv { ifm_block_depth } else { bd };
            let mut a = Access::default();
            let b = FmBox {
                y,
                h,
                x,
                w,
                c: 0,
                d,
            };
            traffic::fm_box_in(&ifm, b, 1, unit, &mut a);
            c.pipe.ifm_block.push((ifm.region, a));
        }
    }
    let reads = StreamReads {
        weights: streams,
        scale,
        slices: slices.len() as u64,
        spatial,
        traffic,
        block_depth: (bd, od),
    };
    (c, reads)
}

/// A block's (or a group of blocks') rows, columns and channels, each as (start, length).
type Spans3 = ((u64, u64), (u64, u64), (u64, u64));

/// The OFM blocks of an operation of OFM `shape`: spans of rows, columns and channels.
type Blocks = [Vec<(u64, u64)>; 3];

fn ofm_blocks(r: &RegisterFile, (h, w, d): (u64, u64, u64)) -> Blocks {
    [
        traffic::spans(h, m1(r.ofm_blk_height_m1.height_m1)),
        traffic::spans(w, m1(r.ofm_blk_width_m1.width_m1)),
        traffic::spans(d, m1(r.ofm_blk_depth_m1.depth_m1)),
    ]
}

/// Calls `f` once per group of same-shaped blocks with their spans (starts: the gcd of the
/// group's, see [`traffic::groups`]) and how many blocks the group has.
fn for_blocks(b: &Blocks, mut f: impl FnMut(Spans3, u64)) {
    let g = [
        traffic::groups(&b[0]),
        traffic::groups(&b[1]),
        traffic::groups(&b[2]),
    ];
    for &(c, d, cn) in &g[2] {
        for &(y, h, yn) in &g[0] {
            for &(x, w, xn) in &g[1] {
                f(((y, h), (x, w), (c, d)), cn * yn * xn);
            }
        }
    }
}

/// Elements an operand contributes under a broadcast mode (broadcast dimensions count 1).
fn broadcast_dims(mode: BroadcastMode, (h, w, d): (u64, u64, u64)) -> (u64, u64, u64) {
    use BroadcastMode as B;
    let bh = matches!(mode, B::H | B::Hw | B::Ch | B::Cwh);
    let bw = matches!(mode, B::W | B::Hw | B::Cw | B::Cwh);
    let bc = matches!(mode, B::C | B::Ch | B::Cw | B::Cwh);
    (
        if bh { 1 } else { h },
        if bw { 1 } else { w },
        if bc { 1 } else { d },
    )
}

fn elementwise(arch: &ArchConfig, r: &RegisterFile, mode: ElementwiseMode) -> OpCost {
    use ElementwiseMode as M;
    let mut c = OpCost {
        kind: OpKind::Elementwise,
        ..OpCost::default()
    };
    let (ifm, ifm2, ofm) = (Fm::ifm(r), Fm::ifm2(r), Fm::ofm(r));
    let shape = (
        m1(r.ofm_height_m1.height_m1),
        m1(r.ofm_width_m1.width_m1),
        m1(r.ofm_depth_m1.depth_m1),
    );
    let elements = shape.0 * shape.1 * shape.2;
    let unary = matches!(mode, M::Lrelu | M::Abs | M::Clz | M::Not);
    let blocks = ofm_blocks(r, shape);
    let mut in_bits = 0;
    let first = [blocks[0][0], blocks[1][0], blocks[2][0]];
    let mut operand = |fm: &Fm, b: BroadcastMode, c: &mut OpCost| {
        if b == BroadcastMode::Scalar {
            return;
        }
        in_bits = in_bits.max((fm.esize() * 8) as u32);
        if in_memory(fm) {
            let (h, w, d) = broadcast_dims(b, shape);
            {
                let one = |(o, n): (u64, u64), full: u64| if full == 1 { (0, 1) } else { (o, n) };
                let ((y, bh), (x, bw), (ch, bd)) =
                    (one(first[0], h), one(first[1], w), one(first[2], d));
                let mut a = Access::default();
                let bx = FmBox {
                    y,
                    h: bh,
                    x,
                    w: bw,
                    c: ch,
                    d: bd,
                };
                traffic::fm_box(fm, bx, 1, &mut a);
                c.pipe.ifm_block.push((fm.region, a));
            }
            c.read(fm.region, h * w * d * fm.esize());
            c.touch(fm.region, fm_end(fm, h, w, d));
            // Per OFM block, the operand's box (a broadcast dimension is its one element).
            let one = |(o, n): (u64, u64), full: u64| if full == 1 { (0, 1) } else { (o, n) };
            for_blocks(&blocks, |(ys, xs, cs), n| {
                let ((y, h), (x, w), (ch, dd)) = (one(ys, h), one(xs, w), one(cs, d));
                let bx = FmBox {
                    y,
                    h,
                    x,
                    w,
                    c: ch,
                    d: dd,
                };
                traffic::fm_box(fm, bx, n, c.read_runs(fm.region));
            });
        }
    };
    operand(&ifm, r.ifm_broadcast.broadcast_mode, &mut c);
    if !unary {
        operand(&ifm2, r.ifm2_broadcast.broadcast_mode, &mut c);
    }
    write_ofm(&mut c, r, &ofm, shape);
    for_blocks(&blocks, |s, n| write_ofm_block(&mut c, r, &ofm, s, n));
    let in_bits = in_bits.max(8);
    let out_bits = (ofm.esize() * 8) as u32;
    let path = if ofm.storage == ActivationStorage::Chained {
        AoPath::ElementwiseToChain
    } else {
        AoPath::ElementwiseToMemory
    };
    c.compute_cycles = if mode == M::Div {
        cycles::div_cycles(arch, elements)
    } else {
        let rate = cycles::ao_rate(arch, path, in_bits, out_bits, !unary);
        cycles::ao_cycles(arch, elements, rate)
    };
    c.ao_cycles = c.compute_cycles;
    c.blocks = blocks.iter().map(|b| b.len() as u64).product();
    streaming_pipeline(&mut c, r, &ofm, shape, elements, first);
    c
}

/// The pipeline of an elementwise or resize operation (P17): output elements (bricks of 16
/// channels in NHCWB16) at the AO's rate, one OFM block's elements per command.
fn streaming_pipeline(
    c: &mut OpCost,
    r: &RegisterFile,
    ofm: &Fm,
    (h, w, d): (u64, u64, u64),
    elements: u64,
    first: [(u64, u64); 3],
) {
    c.chained_ofm = ofm.storage == ActivationStorage::Chained;
    let depth = if ofm.format == ActivationFormat::Nhcwb16 {
        d.div_ceil(16) * 16
    } else {
        d
    };
    let blk = (
        m1(r.ofm_blk_height_m1.height_m1),
        m1(r.ofm_blk_width_m1.width_m1),
        m1(r.ofm_blk_depth_m1.depth_m1),
    );
    c.pipe.elements = (h * w * depth) as f64;
    c.pipe.ao_per_element = c.ao_cycles as f64 / elements.max(1) as f64;
    c.pipe.block_elements = (blk.0 * blk.1 * blk.2) as f64;
    c.pipe.blocks = 1.0;
    c.pipe.ofm_block = first_ofm_block(r, ofm, (first[0], first[1], first[2]));
}

fn resize(arch: &ArchConfig, r: &RegisterFile) -> OpCost {
    let mut c = OpCost {
        kind: OpKind::Resize,
        ..OpCost::default()
    };
    let (ifm, ofm) = (Fm::ifm(r), Fm::ofm(r));
    let shape = (
        m1(r.ofm_height_m1.height_m1),
        m1(r.ofm_width_m1.width_m1),
        m1(r.ofm_depth_m1.depth_m1),
    );
    let elements = shape.0 * shape.1 * shape.2;
    let (ih, iw) = (m1(r.ifm_height0_m1.height_m1), m1(r.ifm_width0_m1.width_m1));
    let d = m1(r.ifm_depth_m1.depth_m1);
    if in_memory(&ifm) {
        c.read(ifm.region, ih * iw * d * ifm.esize());
        c.touch(ifm.region, fm_end(&ifm, ih, iw, d));
        let b = FmBox {
            y: 0,
            h: ih,
            x: 0,
            w: iw,
            c: 0,
            d,
        };
        traffic::fm_box(&ifm, b, 1, c.read_runs(ifm.region));
    }
    write_ofm(&mut c, r, &ofm, shape);
    let blocks = ofm_blocks(r, shape);
    for_blocks(&blocks, |s, n| write_ofm_block(&mut c, r, &ofm, s, n));
    let upscale = (shape.0 / ih.max(1)).min(shape.1 / iw.max(1));
    let wide = ifm.esize() >= 2;
    let out_bits = (ofm.esize() * 8) as u32;
    let ew = cycles::ao_rate(
        arch,
        AoPath::ElementwiseToMemory,
        (ifm.esize() * 8) as u32,
        out_bits,
        false,
    );
    let rs = cycles::resize_rate(arch.accelerator, wide, upscale);
    let rate = if ew.0 * rs.1 <= rs.0 * ew.1 { ew } else { rs };
    c.compute_cycles = cycles::ao_cycles(arch, elements, rate);
    c.ao_cycles = c.compute_cycles;
    c.blocks = blocks.iter().map(|b| b.len() as u64).product();
    let first = [blocks[0][0], blocks[1][0], blocks[2][0]];
    streaming_pipeline(&mut c, r, &ofm, shape, elements, first);
    c
}

fn dma(r: &RegisterFile) -> OpCost {
    use crate::isa::{DmaRegionMode, DmaStrideMode};
    let mut c = OpCost::default();
    let (sr, dr) = (r.dma0_src_region, r.dma0_dst_region);
    let len = addr40(r.dma0_len.addr_hi, r.dma0_len.addr_lo);
    let w = if sr.stride_mode == DmaStrideMode::D1 {
        1
    } else {
        u64::from(r.dma0_size0.size)
    };
    let h = if sr.stride_mode == DmaStrideMode::D3 {
        u64::from(r.dma0_size1.size)
    } else {
        1
    };
    let bytes = len * w * h;
    let end = |p: u64, s0: i64, s1: i64| {
        let last = p as i64
            + (w.saturating_sub(1) as i64) * s0.max(0)
            + (h.saturating_sub(1) as i64) * s1.max(0);
        last.max(0) as u64 + len
    };
    let src = addr40(r.dma0_src.addr_hi, r.dma0_src.addr_lo);
    let s0 = saddr40(r.dma0_src_stride0.addr_hi, r.dma0_src_stride0.addr_lo);
    let s1 = saddr40(r.dma0_src_stride1.addr_hi, r.dma0_src_stride1.addr_lo);
    c.read(sr.region, bytes);
    traffic::dma_side(src, len, (w, s0), (h, s1), c.read_runs(sr.region));
    if bytes > 0 {
        c.touch(sr.region, end(src, s0, s1));
    }
    if dr.region_mode == DmaRegionMode::External {
        let dst = addr40(r.dma0_dst.addr_hi, r.dma0_dst.addr_lo);
        let d0 = saddr40(r.dma0_dst_stride0.addr_hi, r.dma0_dst_stride0.addr_lo);
        let d1 = saddr40(r.dma0_dst_stride1.addr_hi, r.dma0_dst_stride1.addr_lo);
        c.write(dr.region, bytes);
        traffic::dma_side(dst, len, (w, d0), (h, d1), c.write_runs(dr.region));
        if bytes > 0 {
            c.touch(dr.region, end(dst, d0, d1));
        }
    }
    c
}
