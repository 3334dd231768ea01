//! The Ethos-U85 target: the five configurations in a memory system, behind [`Target`].
//!
//! Lowering (`npuc_backend_lower`), block candidates (microblock, OFM block, weight order,
//! sparsity) within the internal RAM limits, weight and scale stream encoding
//! ([`npuc_codecs`]), the TRM chapter 4 cost model ([`npuc_backend::perf`]), the scheduling
//! passes ([`crate::decide`]) and the writer ([`crate::write`]).

use crate::{bounds, decide, write};
use npuc_backend::arch::{Accelerator, ArchConfig, MicroblockShape};
use npuc_backend::isa::stream::StreamDecoder;
use npuc_backend::isa::{Command, Microblock, RegisterFile, WeightFormat};
use npuc_backend::perf::op::{op_compute_cost, op_cost, op_cost_restreamed};
use npuc_backend::perf::{OpCost, PerfModel};
use npuc_backend::sim::NUM_REGIONS;
use npuc_backend::system::{MemoryKind, MemoryMap};
use npuc_backend_lower::Lowered;
use npuc_codecs::ordering::{
    IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, OhwiWeights, Operation,
    OrderingParams, WeightOrder, WeightOrdering, WeightSparsity,
};
use npuc_codecs::scale::{encode_scale_stream, AccFormat, ChannelScale, ScaleStreamParams};
use npuc_codecs::swd::encode::Planned;
use npuc_target::arch_interface::Optimise;
use npuc_target::arch_interface::{
    BlockConfig, BlockNames, CommandCounts, Commands, Decided, Decisions, DisasmCommand,
    Disassembly, EncodedWeights, InvalidStream, KernelKind, LoweredView, OpEstimate, OpGeometry,
    RegionTraffic, Registers, StreamError, StreamEstimate, Target, TargetDescription, TargetError,
    WeightStreams, WorkCommand, Written,
};
use npuc_target::payload::TargetPayload;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The Ethos-U85 in one of its five configurations, in a memory system.
///
/// A target serves one compilation (the driver's target registry makes one per compile): it
/// keeps every weight stream it encodes and the lengths of every block candidate's streams
/// it counts ([`EncodeCache`]), so that the scheduling passes, which count the same weights
/// in the same order for several block candidates and in both planning passes, count each
/// once, and encode only the chosen streams, once.
#[derive(Debug, Clone)]
pub struct U85Target {
    accelerator: Accelerator,
    arch: ArchConfig,
    perf: PerfModel,
    goal: Optimise,
    cache: Arc<EncodeCache>,
}

/// Weight streams and their lengths by what determines them: the weights (their
/// [`OhwiWeights::identity`]), the stream order ([`StreamKey`]) and the weight format. Each
/// entry keeps a clone of its weights, so that no other weight set can take their address
/// while the entry lives; entries whose weights nothing else holds any more (e.g. an
/// OFM-depth slice's, once encoded) can never be asked for again and are dropped when the
/// cache has doubled since the last sweep.
#[derive(Debug, Default)]
struct EncodeCache {
    streams: Mutex<CacheMap>,
}

#[derive(Debug, Default)]
struct CacheMap {
    /// Each key's weights (kept), its streams' lengths and, once encoded, its streams.
    map: HashMap<EncodeKey, Entry>,
    /// The size at which the next sweep runs.
    sweep_at: usize,
}

/// A cache entry: the weights (kept), the streams' byte lengths, the SWD encoder's plans of
/// the streams while only counted (the streams are made from them without planning again),
/// the streams once encoded.
#[derive(Debug)]
struct Entry {
    weights: OhwiWeights,
    lens: Vec<u64>,
    plans: Option<Plans>,
    streams: Option<Streams>,
}

/// The SWD encoder's plans of the streams, shared.
type Plans = Arc<[Planned]>;

/// The weights' [`OhwiWeights::identity`], the stream order and the weight format.
type EncodeKey = (WeightsId, StreamKey, WeightFormat);

/// [`OhwiWeights::identity`].
type WeightsId = (usize, npuc_codecs::ordering::WeightShape);

/// Exactly what the order of the weights in the streams depends on besides their shape
/// (`ordering::plan::build`, TRM 3.9.2): the derived block sizes (which read the
/// operation, order, IFM precision, sparsity, dilation, decomposition, the microblock's
/// depth and whether it is a 16-bit-only one, and the MACs), the OFM block depth (every
/// depth at least the OFM's gives one OFM block: the OFM's; 0 where the order does not
/// depend on it), and the strides where the
/// order is part-kernel-first (depth-first ignores them). The encoders read the ordered
/// values alone, so equal keys of equal weights give equal streams: candidates that differ
/// only in the microblock's height and width, or in an OFM block depth past the OFM's,
/// share one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StreamKey {
    blocks: npuc_codecs::ordering::DerivedBlocks,
    ofm_block_depth: u32,
    stride: (u32, u32),
}

impl StreamKey {
    /// The key of `params` for weights of `shape` (`None` if the parameters are invalid
    /// for it: the ordering's error then comes from ordering them).
    fn of(params: &OrderingParams, shape: npuc_codecs::ordering::WeightShape) -> Option<StreamKey> {
        let blocks = params
            .derive(shape.kernel_height, shape.kernel_width)
            .ok()?;
        let ofm_depth = u32::try_from(shape.ofm_depth).ok()?;
        // Between the OFM block loop and the microblock loop over its channels, the order
        // visits the IFM blocks, the kernel's decomposed parts and the weight blocks of an
        // IFM block: where each is one, an OFM block's microblocks follow each other as the
        // next OFM block's do, and the order is the same for every OFM block depth (a
        // multiple of the microblock depth).
        let one_ifm_block = blocks.depthwise || shape.ifm_depth <= blocks.ifm_block_depth as usize;
        let one_part = shape.kernel_width <= blocks.decomp_w as usize
            && shape.kernel_height <= blocks.decomp_h as usize;
        let one_weight_block = blocks.depthwise
            || shape.ifm_depth.min(blocks.ifm_block_depth as usize) <= blocks.wblk_i as usize;
        let ofm_block_depth = if one_ifm_block && one_part && one_weight_block {
            0
        } else {
            params.ofm_block_depth.min(ofm_depth)
        };
        Some(StreamKey {
            blocks,
            ofm_block_depth,
            stride: if blocks.partkernel {
                (params.stride_x, params.stride_y)
            } else {
                (1, 1)
            },
        })
    }
}

/// Encoded weight streams, shared.
type Streams = Arc<[Vec<u8>]>;

impl EncodeCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheMap> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of `weights` in `params`' order and `format` (`None`: not kept).
    fn key(
        weights: &OhwiWeights,
        params: &OrderingParams,
        format: WeightFormat,
    ) -> Option<EncodeKey> {
        StreamKey::of(params, weights.shape()).map(|k| (weights.identity(), k, format))
    }

    /// The streams of `weights` in `params`' order and `format`: made from the plans counted
    /// before, or by `encode` if there are none, the first time.
    fn get_or_encode(
        &self,
        weights: &OhwiWeights,
        params: &OrderingParams,
        format: WeightFormat,
        encode: impl FnOnce() -> Result<Vec<Vec<u8>>, TargetError>,
    ) -> Result<Vec<Vec<u8>>, TargetError> {
        let Some(key) = Self::key(weights, params, format) else {
            return encode();
        };
        let found = self
            .lock()
            .map
            .get(&key)
            .map(|e| (e.streams.clone(), e.plans.clone()));
        // Made outside the lock: another thread may make the same key's meanwhile, with the
        // same result (the encoders are deterministic).
        let streams = match found {
            Some((Some(streams), _)) => return Ok(streams.to_vec()),
            Some((None, Some(plans))) => plans.iter().map(Planned::encode).collect(),
            _ => encode()?,
        };
        let lens = streams.iter().map(|s| s.len() as u64).collect();
        self.insert(key, weights, lens, None, Some(streams.clone().into()));
        Ok(streams)
    }

    /// The stream lengths of `weights` in `params`' order and `format`, counted by `count`
    /// (with the SWD plans, kept) the first time.
    fn get_or_count(
        &self,
        weights: &OhwiWeights,
        params: &OrderingParams,
        format: WeightFormat,
        count: impl FnOnce() -> Result<(Vec<u64>, Option<Vec<Planned>>), TargetError>,
    ) -> Result<Vec<u64>, TargetError> {
        let Some(key) = Self::key(weights, params, format) else {
            return count().map(|(lens, _)| lens);
        };
        if let Some(e) = self.lock().map.get(&key) {
            return Ok(e.lens.clone());
        }
        let (lens, plans) = count()?;
        self.insert(key, weights, lens.clone(), plans.map(Into::into), None);
        Ok(lens)
    }

    /// Keeps `lens` and the plans or streams given for `key` (streams replace plans), then
    /// sweeps if due.
    fn insert(
        &self,
        key: EncodeKey,
        weights: &OhwiWeights,
        lens: Vec<u64>,
        plans: Option<Plans>,
        streams: Option<Streams>,
    ) {
        let mut cache = self.lock();
        let entry = cache.map.entry(key).or_insert_with(|| Entry {
            weights: weights.clone(),
            lens,
            plans: None,
            streams: None,
        });
        if entry.streams.is_none() {
            if streams.is_some() {
                entry.streams = streams;
                entry.plans = None;
            } else if entry.plans.is_none() {
                entry.plans = plans;
            }
        }
        if cache.map.len() >= cache.sweep_at {
            cache.map.retain(|_, e| e.weights.is_shared());
            cache.sweep_at = (2 * cache.map.len()).max(64);
        }
    }
}

impl U85Target {
    /// [`Target::estimate_traffic`] of an operation at its register state.
    fn traffic_of(&self, state: Option<(RegisterFile, Command)>) -> (u64, u64) {
        state
            .and_then(|(regs, c)| op_cost(&self.arch, &regs, &c))
            .map_or((0, 0), |cost| self.traffic(cost))
    }

    /// [`Target::estimate_compute`] of an operation at its register state.
    fn compute_of(&self, state: Option<(RegisterFile, Command)>) -> u64 {
        let Some((regs, c)) = state else {
            return 0;
        };
        let Some(cost) = op_compute_cost(&self.arch, &regs, &c) else {
            return 0;
        };
        // A DMA's cycles are its memories': its whole cost, timed.
        self.perf.npu_cycles(&cost).unwrap_or_else(|| {
            op_cost(&self.arch, &regs, &c).map_or(0, |cost| self.perf.op(0, "", cost).npu_cycles)
        })
    }

    /// The cycles and off-chip (DRAM, flash) bytes of an operation's cost, timed.
    fn traffic(&self, cost: OpCost) -> (u64, u64) {
        let p = self.perf.op(0, "", cost);
        let offchip = MemoryKind::ALL
            .into_iter()
            .enumerate()
            .filter(|(_, k)| *k != MemoryKind::Sram)
            .map(|(i, _)| p.memory_read[i] + p.memory_written[i])
            .sum();
        (p.cycles, offchip)
    }

    /// The target for a configuration in the default memory system
    /// ([`MemoryMap::default_u85`]).
    pub fn new(accelerator: Accelerator) -> U85Target {
        U85Target::with_memory(accelerator, MemoryMap::default_u85())
    }

    /// The target for a configuration in a memory system.
    pub fn with_memory(accelerator: Accelerator, map: MemoryMap) -> U85Target {
        let arch = accelerator.config();
        U85Target {
            accelerator,
            arch,
            perf: PerfModel::new(arch, map),
            goal: Optimise::Performance,
            cache: Arc::default(),
        }
    }

    /// The same target optimising for `goal`: [`Optimise::Size`] offers no FWD weight streams
    /// (larger than SWD) and stages nothing (staging buffers take SRAM).
    pub fn with_goal(mut self, goal: Optimise) -> U85Target {
        self.goal = goal;
        self
    }

    /// The ordering parameters and weight format of `block`'s streams for an operation.
    fn ordering_params(
        &self,
        kind: KernelKind,
        ifm_precision: IfmPrecision,
        stride: (u32, u32),
        dilation: (u32, u32),
        block: &BlockConfig,
    ) -> Result<(OrderingParams, WeightFormat), TargetError> {
        let u85 = U85Block::of(block);
        let (operation, order) = match kind {
            KernelKind::Conv => (Operation::Conv, u85.weight_order),
            KernelKind::Depthwise => (Operation::Depthwise, WeightOrder::PartKernelFirst),
            _ => {
                return Err(TargetError::Unsupported(
                    "weights for a weightless op".into(),
                ))
            }
        };
        let dil = |d: u32| {
            if d == 2 {
                KernelDilation::X2
            } else {
                KernelDilation::None
            }
        };
        let macs = MacsPerCc::from_macs(self.arch.macs_per_cc)
            .ok_or_else(|| TargetError::Unsupported("MAC count".into()))?;
        let params = OrderingParams {
            operation,
            weight_order: order,
            ifm_precision,
            weight_sparsity: match u85.weight_sparsity {
                WeightSparsity::Sparse24 if kind == KernelKind::Conv => WeightSparsity::Sparse24,
                _ => WeightSparsity::None,
            },
            stride_x: stride.1,
            stride_y: stride.0,
            dilation_x: dil(dilation.1),
            dilation_y: dil(dilation.0),
            decomposition: KernelDecomposition::D8x8,
            ofm_block_depth: block.ofm_block.2,
            microblock: u85.microblock,
            macs_per_cc: macs,
        };
        if u85.weight_format == WeightFormat::Fwd && kind != KernelKind::Conv {
            return Err(TargetError::Unsupported(
                "FWD weights are for convolutions only".into(),
            ));
        }
        Ok((params, u85.weight_format))
    }

    /// The performance model (TRM chapter 4) of this target.
    pub fn perf_model(&self) -> &PerfModel {
        &self.perf
    }
}

/// The U85's reading of a [`BlockConfig`]: its register fields (the microblock and weight
/// order from the `private` word, the weight format and sparsity from the neutral fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U85Block {
    /// ACC_FORMAT.microblock.
    pub microblock: Microblock,
    /// NPU_SET_KERNEL_STRIDE.weight_order.
    pub weight_order: WeightOrder,
    /// NPU_SET_WEIGHT_FORMAT.weight_format.
    pub weight_format: WeightFormat,
    /// NPU_SET_WEIGHT_FORMAT.weight_sparsity.
    pub weight_sparsity: WeightSparsity,
}

impl U85Block {
    /// The fields of a block this target made (`private`: microblock encoding in bits 0-7,
    /// weight order in bits 8-15).
    pub fn of(block: &BlockConfig) -> U85Block {
        U85Block {
            microblock: Microblock::from_raw(block.private & 0xff).unwrap_or_default(),
            weight_order: WeightOrder::from_raw(block.private >> 8 & 0xff).unwrap_or_default(),
            weight_format: match block.weight_streams {
                WeightStreams::PerDecoder => WeightFormat::Swd,
                WeightStreams::Single => WeightFormat::Fwd,
            },
            weight_sparsity: if block.sparse {
                WeightSparsity::Sparse24
            } else {
                WeightSparsity::None
            },
        }
    }

    /// The `private` word of a microblock and weight order.
    fn private(microblock: Microblock, order: WeightOrder) -> u32 {
        microblock.raw() | order.raw() << 8
    }
}

fn round_up(v: u32, m: u32) -> u32 {
    v.div_ceil(m) * m
}

/// The register state `commands` (this target's writer's) leave from reset, and the last
/// command that is not a register write: what the cost model costs. `None` for another
/// target's commands (a programming error) or without such a command.
fn final_state(commands: &Commands) -> Option<(RegisterFile, Command)> {
    replay(RegisterFile::default(), commands)
}

/// [`final_state`] of `commands` written after the commands that left `base` (a
/// [`RegisterFile`] of [`Target::registers_after`]).
fn final_state_after(base: &Registers, commands: &Commands) -> Option<(RegisterFile, Command)> {
    let Some(base) = base.downcast_ref::<RegisterFile>() else {
        debug_assert!(false, "registers of another target");
        return None;
    };
    replay(base.clone(), commands)
}

/// `regs` after `commands`, and the last command that is not a register write.
fn replay(mut regs: RegisterFile, commands: &Commands) -> Option<(RegisterFile, Command)> {
    let last = apply_all(&mut regs, commands)?;
    last.map(|c| (regs, c))
}

/// Applies `commands` (this target's writer's) to `regs`: the last command that is not a
/// register write, if any; `None` for another target's commands (a programming error).
fn apply_all(regs: &mut RegisterFile, commands: &Commands) -> Option<Option<Command>> {
    let Some(commands) = commands.downcast_ref::<Vec<Command>>() else {
        debug_assert!(false, "commands of another target's writer");
        return None;
    };
    let mut last = None;
    for c in commands {
        if !regs.apply(c) {
            last = Some(*c);
        }
    }
    Some(last)
}

/// [`stream_lengths`] of `weights` in `params`' order, with the SWD encoder's plans of the
/// streams (FWD: none), from which `encode_weights` makes them.
fn planned_lengths(
    params: &OrderingParams,
    format: WeightFormat,
    weights: &OhwiWeights,
) -> Result<(Vec<u64>, Option<Vec<Planned>>), TargetError> {
    if format == WeightFormat::Fwd {
        let ordering = WeightOrdering::new(params, weights.shape())?;
        return Ok((stream_lengths(&ordering, format, weights)?, None));
    }
    let plans = WeightOrdering::ordered(params, weights)?
        .iter()
        .map(|s| npuc_codecs::swd::encode::plan(s))
        .collect::<Result<Vec<Planned>, _>>()
        .map_err(|e| TargetError::Swd(e.to_string()))?;
    Ok((plans.iter().map(|p| p.len() as u64).collect(), Some(plans)))
}

/// The exact byte length of each stream of `weights` in `ordering` and `format`: the
/// lengths of the streams `encode_weights` makes, or its error.
fn stream_lengths(
    ordering: &WeightOrdering,
    format: WeightFormat,
    weights: &OhwiWeights,
) -> Result<Vec<u64>, TargetError> {
    if format == WeightFormat::Fwd {
        let merged = ordering.order_fwd(weights)?;
        npuc_codecs::fwd::choose_fwd_mode(&merged)
            .map_err(|e| TargetError::Swd(format!("FWD: {e}")))?;
        let len = npuc_codecs::fwd::fwd_encoded_len(&merged).unwrap_or(0);
        return Ok(vec![len as u64]);
    }
    let streams = ordering.order(weights)?;
    let lens = npuc_codecs::swd::encode::encoded_lens(&streams)
        .map_err(|e| TargetError::Swd(e.to_string()))?;
    Ok(lens.into_iter().map(|l| l as u64).collect())
}

impl Target for U85Target {
    fn config_word(&self) -> u32 {
        self.arch.config_word()
    }

    fn ofm_block_max(&self) -> (u32, u32, u32) {
        self.arch.ofm_block_max
    }

    /// Candidates: per microblock (convolutions with weights: every microblock the
    /// configuration has, except the 16-deep u1x1/u1x2 unless 16-bit IFM with a 1x1 kernel,
    /// TRM 3.9.2; other kernels: the first, which only sets the scale-stream grouping) and
    /// sparsity (2:4 sparse weights: dense, then sparse), weight order (convolutions with
    /// weights: depth-first and part-kernel-first; depthwise:
    /// part-kernel-first; others: depth-first), one OFM block per block depth (multiples of
    /// the microblock depth up to the OFM depth rounded up): the largest-volume block, in
    /// multiples of the microblock, whose accumulators, IFM footprint (IFM block depth 16
    /// part-kernel-first, at most 64 depth-first) and output bytes fit half of the
    /// accumulator and IFM RAMs and the output RAM (double buffering; the TRM gives no limits,
    /// these are conservative against Vela's). First: the largest volume of the preferred
    /// microblock and order.
    fn block_candidates(&self, g: &OpGeometry) -> Vec<BlockConfig> {
        let conv_weights = g.kind == KernelKind::Conv && g.weights;

        let mbs: Vec<MicroblockShape> = self
            .arch
            .microblocks()
            .into_iter()
            .filter(|mb| {
                g.kind != KernelKind::Conv
                    || !(mb.depth == 16
                        && matches!(mb.encoding, Microblock::U1x1 | Microblock::U1x2))
                    || (g.weights && g.ifm_elem_bytes == 2 && g.kernel == (1, 1))
            })
            .collect();
        // Every kind tries every microblock (decision S12): an OFM shallower than the first
        // microblock's depth (64 on U85-2048) would waste most of each block.
        let orders: &[WeightOrder] = match g.kind {
            KernelKind::Conv if g.weights => {
                &[WeightOrder::DepthFirst, WeightOrder::PartKernelFirst]
            }
            KernelKind::Depthwise => &[WeightOrder::PartKernelFirst],
            _ => &[WeightOrder::DepthFirst],
        };
        let (max_h, max_w, max_d) = self.arch.ofm_block_max;
        let ram = self.arch.ram;
        let mut out = Vec::new();
        // 2:4 sparse weights may also run sparse (after the dense candidates).
        let sparsities: &[bool] = if conv_weights && g.sparse_2_4 {
            &[false, true]
        } else {
            &[false]
        };
        for &sparsity in sparsities {
            for mb in &mbs {
                let mb = *mb;
                for &order in orders {
                    let lim_h = round_up(g.ofm.0, mb.height).min(max_h);
                    let lim_w = round_up(g.ofm.1, mb.width).min(max_w);
                    let lim_d = round_up(g.ofm.2, mb.depth).min(max_d);
                    let fits = |h: u32, w: u32, d: u32| -> bool {
                        let acc = u64::from(h * w * d) * u64::from(g.acc_bytes);
                        let ih = u64::from((h - 1) * g.stride.0 + g.kernel.0);
                        let iw = u64::from((w - 1) * g.stride.1 + g.kernel.1);
                        let id = match (g.kind, order) {
                            (KernelKind::Conv, WeightOrder::PartKernelFirst) => 16,
                            (KernelKind::Conv, _) if sparsity => {
                                u64::from(round_up(g.ifm_depth.min(128), 16))
                            }
                            (KernelKind::Conv, _) => u64::from(round_up(g.ifm_depth.min(64), 16)),
                            _ => u64::from(round_up(d, 16)),
                        };
                        let inputs = if g.kind == KernelKind::Elementwise {
                            2
                        } else {
                            1
                        };
                        let ifm = ih * iw * id * u64::from(g.ifm_elem_bytes) * inputs;
                        let ob = u64::from(h * w * d * g.ofm_elem_bytes);
                        acc <= u64::from(ram.accumulator) / 2
                            && ifm <= u64::from(ram.ifm) / 2
                            && ob <= u64::from(ram.output)
                    };
                    let mut per_depth = Vec::new();
                    let mut d = mb.depth;
                    while d <= lim_d {
                        let mut best = None;
                        let mut best_vol = 0u64;
                        let mut h = mb.height;
                        while h <= lim_h {
                            let mut w = mb.width;
                            while w <= lim_w {
                                let vol = u64::from(h * w * d);
                                if vol > best_vol && fits(h, w, d) {
                                    best_vol = vol;
                                    best = Some((h, w, d));
                                }
                                w += mb.width;
                            }
                            h += mb.height;
                        }
                        if let Some(b) = best {
                            per_depth.push((best_vol, b));
                        }
                        d += mb.depth;
                    }
                    // Largest volume first (ties: the shallower block, as before).
                    per_depth.sort_by_key(|&(vol, (_, _, d))| (std::cmp::Reverse(vol), d));
                    if per_depth.is_empty() {
                        per_depth.push((0, (mb.height, mb.width, mb.depth)));
                    }
                    out.extend(per_depth.into_iter().map(|(_, b)| BlockConfig {
                        ofm_block: b,
                        microblock: (mb.height, mb.width, mb.depth),
                        weight_streams: WeightStreams::PerDecoder,
                        sparse: sparsity,
                        private: U85Block::private(mb.encoding, order),
                    }));
                }
            }
        }
        // Convolutions may also read one FWD stream (after every SWD candidate: ties keep SWD).
        if conv_weights && self.goal == Optimise::Performance {
            let fwd: Vec<BlockConfig> = out
                .iter()
                .map(|b| BlockConfig {
                    weight_streams: WeightStreams::Single,
                    ..*b
                })
                .collect();
            out.extend(fwd);
        }
        out
    }

    fn block_names(&self, block: &BlockConfig) -> BlockNames {
        let b = U85Block::of(block);
        BlockNames {
            weight_format: b.weight_format.name(),
            weight_order: b.weight_order.name(),
            weight_sparsity: b.weight_sparsity.name(),
        }
    }

    fn encode_weights(
        &self,
        kind: KernelKind,
        weights: &OhwiWeights,
        ifm_precision: IfmPrecision,
        stride: (u32, u32),
        dilation: (u32, u32),
        block: &BlockConfig,
    ) -> Result<EncodedWeights, TargetError> {
        let (params, format) =
            self.ordering_params(kind, ifm_precision, stride, dilation, block)?;
        let streams = self.cache.get_or_encode(weights, &params, format, || {
            if format == WeightFormat::Fwd {
                let merged = WeightOrdering::new(&params, weights.shape())?.order_fwd(weights)?;
                let stream = npuc_codecs::fwd::encode_fwd(&merged)
                    .map_err(|e| TargetError::Swd(format!("FWD: {e}")))?;
                return Ok(vec![stream]);
            }
            let streams = WeightOrdering::ordered(&params, weights)?;
            npuc_codecs::swd::encode::encode_streams(&streams)
                .map_err(|e| TargetError::Swd(e.to_string()))
        })?;
        Ok(EncodedWeights { streams })
    }

    /// The lengths of each weight set are kept with the SWD encoder's plans
    /// ([`EncodeCache`]): `encode_weights` makes the streams of the ones chosen from them.
    fn weight_stream_lengths(
        &self,
        kind: KernelKind,
        weights: &[&OhwiWeights],
        ifm_precision: IfmPrecision,
        stride: (u32, u32),
        dilation: (u32, u32),
        block: &BlockConfig,
    ) -> Result<Vec<Vec<u64>>, TargetError> {
        let (params, format) =
            self.ordering_params(kind, ifm_precision, stride, dilation, block)?;
        // Each weight set (a block candidate's, or an operation's OFM-depth slice's) is kept
        // with its plans, from which the streams are made if it is chosen (a slice's entry
        // goes in the cache's next sweep once nothing holds its weights).
        weights
            .iter()
            .map(|w| {
                self.cache
                    .get_or_count(w, &params, format, || planned_lengths(&params, format, w))
            })
            .collect()
    }

    fn encode_scales(
        &self,
        channels: &[ChannelScale],
        acc: AccFormat,
        block: &BlockConfig,
    ) -> Result<Vec<u8>, TargetError> {
        let params = ScaleStreamParams {
            acc,
            microblock_depth: block.microblock.2,
            reverse_c: false,
        };
        Ok(encode_scale_stream(channels, &params)?)
    }

    /// A 32-byte header and the weights packed at the mode's width (ordering padding ignored).
    fn fwd_length_estimate(&self, weights: &OhwiWeights) -> Option<u64> {
        let mode = npuc_codecs::fwd::choose_fwd_mode(weights.values()).ok()?;
        let words = weights.values().len().div_ceil(mode.weights_per_word()) as u64;
        Some(32 * (1 + words))
    }

    fn estimate_traffic(&self, commands: &Commands) -> (u64, u64) {
        self.traffic_of(final_state(commands))
    }

    fn registers_after(&self, commands: &Commands) -> Box<Registers> {
        let mut regs = RegisterFile::default();
        apply_all(&mut regs, commands);
        Box::new(regs)
    }

    fn estimate_traffic_after(&self, base: &Registers, commands: &Commands) -> (u64, u64) {
        self.traffic_of(final_state_after(base, commands))
    }

    fn estimate_traffic_restreamed_after(
        &self,
        base: &Registers,
        commands: &Commands,
        to: u8,
    ) -> [(u64, u64); 2] {
        let Some((regs, c)) = final_state_after(base, commands) else {
            return [(0, 0); 2];
        };
        if let Some((here, there)) = op_cost_restreamed(&self.arch, &regs, &c, to) {
            return [self.traffic(here), self.traffic(there)];
        }
        // Not a kernel with streams of its own: the registers with the streams moved.
        let mut moved = regs.clone();
        moved.weight_region.region = to;
        moved.scale_region.region = to;
        [&regs, &moved]
            .map(|r| op_cost(&self.arch, r, &c).map_or((0, 0), |cost| self.traffic(cost)))
    }

    fn estimate_compute(&self, commands: &Commands) -> u64 {
        self.compute_of(final_state(commands))
    }

    fn estimate_compute_after(&self, base: &Registers, commands: &Commands) -> u64 {
        self.compute_of(final_state_after(base, commands))
    }

    /// Kernel commands are NPU_OP_CONV, _DEPTHWISE, _POOL, _ELEMENTWISE and _RESIZE, DMA
    /// commands NPU_OP_DMA_START (decoded through the ISA table; counting stops at the first
    /// word that does not decode).
    fn count_commands(&self, payload: &TargetPayload) -> CommandCounts {
        let mut c = CommandCounts::default();
        let Ok(words) = payload.command_words() else {
            return c;
        };
        for d in StreamDecoder::new(&words).map_while(Result::ok) {
            match d.command {
                Command::OpConv(_)
                | Command::OpDepthwise(_)
                | Command::OpPool(_)
                | Command::OpElementwise(_)
                | Command::OpResize(_) => c.kernel += 1,
                Command::OpDmaStart(_) => c.dma += 1,
                _ => {}
            }
        }
        c
    }

    /// The TRM chapter 4 model ([`PerfModel::stream`]) in this target's memory system.
    fn estimate_stream(&self, payload: &TargetPayload) -> Result<StreamEstimate, StreamError> {
        let words = payload
            .command_words()
            .map_err(|e| StreamError(e.to_string()))?;
        let perf = self
            .perf
            .stream(&words)
            .map_err(|e| StreamError(e.to_string()))?;
        Ok(StreamEstimate {
            ops: perf
                .ops
                .iter()
                .map(|o| OpEstimate {
                    dma: o.instruction == "NPU_OP_DMA_START",
                    offset: o.offset,
                    instruction: o.instruction,
                    cycles: o.cycles,
                    start: o.start,
                    end: o.end,
                    macs: o.cost.macs,
                    compute_cycles: o.cost.compute_cycles,
                    memory: MemoryKind::ALL
                        .into_iter()
                        .enumerate()
                        .map(|(i, k)| (k.name().to_string(), o.memory_read[i], o.memory_written[i]))
                        .collect(),
                    memory_cycles: o.memory_cycles.to_vec(),
                    weight_bytes: o.cost.weight_bytes,
                    scale_bytes: o.cost.scale_bytes,
                    regions: (0..NUM_REGIONS)
                        .map(|r| RegionTraffic {
                            read: o.cost.read[r],
                            written: o.cost.written[r],
                            stream_read: o.cost.stream_reads[r].bytes(),
                            extent: o.cost.extent[r],
                        })
                        .collect(),
                })
                .collect(),
            total: perf.total_cycles,
            peak: perf.peak.to_vec(),
        })
    }

    /// The simulator's validation ([`npuc_backend::sim::validate`]) in this configuration;
    /// more regions than the NPU has is an error, fewer are not mapped.
    fn validate(
        &self,
        payload: &TargetPayload,
        regions: &[Option<u64>],
        read_only: Option<&[u8]>,
    ) -> Result<(), InvalidStream> {
        use npuc_backend::sim::validate::{validate, ValidationError};
        let invalid = |reason: String| InvalidStream {
            reason,
            offset: None,
        };
        let words = payload
            .command_words()
            .map_err(|e| invalid(e.to_string()))?;
        if regions.len() > NUM_REGIONS {
            return Err(invalid(format!(
                "{} regions given, the NPU has {NUM_REGIONS}",
                regions.len()
            )));
        }
        let mut sizes = [None; NUM_REGIONS];
        sizes[..regions.len()].copy_from_slice(regions);
        validate(self.accelerator, &words, &sizes, read_only)
            .map(|_| ())
            .map_err(|e| InvalidStream {
                offset: match &e {
                    ValidationError::Sim(npuc_backend::sim::SimError::Command {
                        offset, ..
                    }) => Some(*offset),
                    _ => None,
                },
                reason: e.to_string(),
            })
    }

    fn lower(&self, graph: &npuc_ir::Graph) -> Result<Box<dyn LoweredView>, TargetError> {
        let mut lowered =
            npuc_backend_lower::lower(graph).map_err(|e| TargetError::Lower(Box::new(e)))?;
        // L53: one-row copies of shallow maps folded into rows where a taller microblock is
        // shallower (the 1024 and 2048).
        npuc_backend_lower::fold_shallow_rows(&mut lowered, &self.arch);
        Ok(Box::new(lowered))
    }

    fn work_commands(&self, payload: &TargetPayload) -> Option<Vec<WorkCommand>> {
        let words = payload.command_words().ok()?;
        let address = |hi: u8, lo: u32| (u64::from(hi) << 32) | u64::from(lo);
        let mut regs = RegisterFile::default();
        let mut out = Vec::new();
        for d in StreamDecoder::new(&words) {
            let d = d.ok()?;
            if regs.apply(&d.command) {
                continue;
            }
            let offset = u32::try_from(d.offset).ok()?;
            let kernel = |out: &mut Vec<WorkCommand>| {
                out.push(WorkCommand {
                    offset,
                    dma: false,
                    region: regs.ofm_region.region,
                    address: address(regs.ofm_base0.addr_hi, regs.ofm_base0.addr_lo),
                })
            };
            match d.command {
                Command::OpStop(_) => break,
                Command::OpConv(_)
                | Command::OpDepthwise(_)
                | Command::OpPool(_)
                | Command::OpElementwise(_)
                | Command::OpResize(_) => kernel(&mut out),
                Command::OpDmaStart(_) => out.push(WorkCommand {
                    offset,
                    dma: true,
                    region: regs.dma0_dst_region.region,
                    address: address(regs.dma0_dst.addr_hi, regs.dma0_dst.addr_lo),
                }),
                _ => {}
            }
        }
        Some(out)
    }

    fn disassemble(&self, payload: &TargetPayload) -> Disassembly {
        let mut out = Disassembly::default();
        let words = match payload.command_words() {
            Ok(words) => words,
            Err(e) => {
                out.error = Some(StreamError(e.to_string()));
                return out;
            }
        };
        for d in StreamDecoder::new(&words) {
            match d {
                Ok(d) => out.commands.push(DisasmCommand {
                    offset: d.offset,
                    name: d.opcode().spec().name,
                    line: npuc_backend::isa::disasm::line(&d),
                    fields: npuc_backend::isa::disasm::raw_fields(&d),
                }),
                Err(e) => {
                    out.error = Some(StreamError(e.to_string()));
                    break;
                }
            }
        }
        out
    }

    fn decide(&self, lowered: &dyn LoweredView) -> Result<Decided, TargetError> {
        // The passes read the U85's own form of the program (decision A3).
        let l: &Lowered = lowered.as_any().downcast_ref().ok_or_else(|| {
            TargetError::Stream("the lowered program is not the Ethos-U85's".to_string())
        })?;
        decide::decide(self, l)
    }

    fn write(
        &self,
        lowered: &dyn LoweredView,
        decisions: &Decisions,
    ) -> Result<Written, TargetError> {
        write::write(lowered, decisions)
    }

    fn compute_bounds(&self, lowered: &dyn LoweredView, decisions: &Decisions) -> Vec<u64> {
        bounds::compute_bounds(self, lowered, decisions)
    }

    fn region_memory(&self, region: u8) -> String {
        self.perf
            .map
            .region_memory(u32::from(region))
            .name()
            .to_string()
    }

    fn describe(&self) -> TargetDescription {
        let map = &self.perf.map;
        TargetDescription {
            name: self.accelerator.name().to_string(),
            macs_per_cycle: self.accelerator.macs_per_cc(),
            system_config: map.system.name.clone(),
            memory_mode: map.mode.name.clone(),
            clock_hz: map.system.core_clock,
            region_memories: (0..NUM_REGIONS)
                .map(|r| map.region_memory(r as u32).name().to_string())
                .collect(),
        }
    }

    /// Region 2 is a memory of its own when the arena is not in SRAM but the staging area is
    /// (the `Dedicated_Sram` modes); its capacity is `arena_cache_size` (no limit when the mode
    /// does not give one).
    fn fast_storage(&self) -> Option<u64> {
        let map = &self.perf.map;
        (map.arena != MemoryKind::Sram && map.cache == MemoryKind::Sram)
            .then(|| map.mode.arena_cache_size.unwrap_or(u64::MAX))
    }

    /// Region 2 with its capacity where it is a memory of its own, else the arena (region 1)
    /// when it is SRAM (no limit); never when the constants are in SRAM themselves.
    fn staging(&self) -> Option<(u8, u64)> {
        let map = &self.perf.map;
        if map.constants == MemoryKind::Sram || self.goal == Optimise::Size {
            return None;
        }
        match self.fast_storage() {
            Some(cap) => Some((2, cap)),
            None if map.arena == MemoryKind::Sram => Some((1, u64::MAX)),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{U85Block, U85Target};
    use npuc_backend::arch::Accelerator;
    use npuc_backend::isa::Microblock;
    use npuc_codecs::ordering::{IfmPrecision, OhwiWeights, WeightOrder, WeightShape};
    use npuc_target::arch_interface::{BlockConfig, KernelKind, Target, WeightStreams};

    fn weights(seed: u32) -> OhwiWeights {
        let shape = WeightShape {
            ofm_depth: 32,
            kernel_height: 3,
            kernel_width: 3,
            ifm_depth: 8,
        };
        let mut x = seed | 1;
        let values = (0..shape.len())
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 255) as i16 - 127
            })
            .collect();
        OhwiWeights::new(shape, values).unwrap()
    }

    fn encode(t: &U85Target, w: &OhwiWeights, depth: u32, streams: WeightStreams) -> Vec<Vec<u8>> {
        let block = block_of(t, depth, streams);
        t.encode_weights(
            KernelKind::Conv,
            w,
            IfmPrecision::B8,
            (1, 1),
            (1, 1),
            &block,
        )
        .unwrap()
        .streams
    }

    /// A block of OFM depth `depth` for 8-bit 3x3 convolutions.
    fn block_of(t: &U85Target, depth: u32, streams: WeightStreams) -> BlockConfig {
        // (A 16-deep u1x1/u1x2 microblock is for 16-bit IFMs and 1x1 kernels only.)
        let mb = t
            .arch
            .microblocks()
            .into_iter()
            .find(|mb| {
                mb.depth != 16 || !matches!(mb.encoding, Microblock::U1x1 | Microblock::U1x2)
            })
            .unwrap();
        BlockConfig {
            ofm_block: (mb.height, mb.width, depth),
            microblock: (mb.height, mb.width, mb.depth),
            weight_streams: streams,
            sparse: false,
            private: U85Block::private(mb.encoding, WeightOrder::DepthFirst),
        }
    }

    #[test]
    fn a_weight_stream_is_encoded_once_per_weights_and_ordering() {
        let t = U85Target::new(Accelerator::U85_256);
        let fresh = U85Target::new(Accelerator::U85_256);
        let entries = || t.cache.streams.lock().unwrap().map.len();
        let a = weights(7);
        let swd = encode(&t, &a, 16, WeightStreams::PerDecoder);
        assert_eq!(entries(), 1);
        // The same weights (a clone shares them) and ordering: the cached streams.
        assert_eq!(encode(&t, &a.clone(), 16, WeightStreams::PerDecoder), swd);
        assert_eq!(entries(), 1);
        // Another OFM block depth, where the order does not depend on it (one IFM block of 8
        // channels, a 3x3 kernel): the same entry.
        assert_eq!(encode(&t, &a, 32, WeightStreams::PerDecoder), swd);
        assert_eq!(entries(), 1);
        // Another ordering (96 input channels in two IFM blocks: the block depth orders
        // them), another format, other weights with equal values: new entries, each what a
        // target without a cache encodes.
        let deep = random_weights(3, 32, 96);
        for (w, depth, streams) in [
            (deep.clone(), 16, WeightStreams::PerDecoder),
            (deep.clone(), 32, WeightStreams::PerDecoder),
            (a.clone(), 16, WeightStreams::Single),
            (weights(7), 16, WeightStreams::PerDecoder),
        ] {
            let before = entries();
            assert_eq!(
                encode(&t, &w, depth, streams),
                encode(&fresh, &w, depth, streams)
            );
            assert_eq!(entries(), before + 1);
        }
    }

    /// Weights of `ofm_depth` output channels of a random 3x3x`ifm_depth` kernel, a share
    /// of them zero.
    fn random_weights(seed: u32, ofm_depth: usize, ifm_depth: usize) -> OhwiWeights {
        let shape = WeightShape {
            ofm_depth,
            kernel_height: 3,
            kernel_width: 3,
            ifm_depth,
        };
        let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let zeros = next() % 90;
        let spread = 1 + next() % [7, 60, 255][seed as usize % 3];
        let values = (0..shape.len())
            .map(|_| {
                let v = next();
                if v % 100 < zeros {
                    0
                } else {
                    ((v >> 8) % (2 * spread + 1)) as i16 - spread as i16
                }
            })
            .collect();
        OhwiWeights::new(shape, values).unwrap()
    }

    /// Property: the lengths counted for several weights at once (slices of one depth, then
    /// a shorter last one) are the lengths of the streams `encode_weights` makes of each, for
    /// SWD and FWD, every configuration and block depth; and the target that counted them
    /// then makes (from the plans it kept) exactly the streams of a target with nothing
    /// cached.
    #[test]
    fn stream_lengths_of_slices_are_the_encoded_lengths() {
        let mut oks = [0usize; 2];
        for seed in 0..48u32 {
            let acc = [
                Accelerator::U85_128,
                Accelerator::U85_256,
                Accelerator::U85_512,
                Accelerator::U85_1024,
                Accelerator::U85_2048,
            ][seed as usize % 5];
            let t = U85Target::new(acc);
            let ifm_depth = 1 + (seed as usize * 7) % 40;
            // Multiples of every microblock depth.
            let depth = [64, 128, 64, 192, 64][seed as usize % 5];
            let last = 1 + (seed as usize * 5) % depth;
            let count = 1 + seed as usize % 4;
            let slices: Vec<OhwiWeights> = (0..count)
                .map(|k| random_weights(seed * 16 + k as u32, depth, ifm_depth))
                .chain(std::iter::once(random_weights(
                    seed * 16 + 15,
                    last,
                    ifm_depth,
                )))
                .collect();
            let refs: Vec<&OhwiWeights> = slices.iter().collect();
            for streams in [WeightStreams::PerDecoder, WeightStreams::Single] {
                let block = block_of(&t, depth as u32, streams);
                let counted = t
                    .weight_stream_lengths(
                        KernelKind::Conv,
                        &refs,
                        IfmPrecision::B8,
                        (1, 1),
                        (1, 1),
                        &block,
                    )
                    .map_err(|e| e.to_string());
                // Encoded one at a time by a target with nothing cached; the first error.
                let encode = |target: &U85Target| -> Result<Vec<Vec<Vec<u8>>>, String> {
                    slices
                        .iter()
                        .map(|w| {
                            let enc = target
                                .encode_weights(
                                    KernelKind::Conv,
                                    w,
                                    IfmPrecision::B8,
                                    (1, 1),
                                    (1, 1),
                                    &block,
                                )
                                .map_err(|e| e.to_string())?;
                            Ok(enc.streams)
                        })
                        .collect()
                };
                let fresh = encode(&U85Target::new(acc));
                let lens = |s: &Vec<Vec<u8>>| s.iter().map(|s| s.len() as u64).collect();
                let encoded: Result<Vec<Vec<u64>>, String> =
                    fresh.clone().map(|f| f.iter().map(lens).collect());
                assert_eq!(counted, encoded, "seed {seed}, {streams:?}");
                assert_eq!(encode(&t), fresh, "seed {seed}, {streams:?}");
                oks[usize::from(streams == WeightStreams::Single)] += usize::from(counted.is_ok());
            }
        }
        // Most cases have lengths (FWD refuses some value spans).
        assert!(oks[0] == 48 && oks[1] >= 16, "{oks:?}");
    }

    /// Every block candidate of every operation with weights of these corpus models, on three
    /// configurations: candidates whose [`super::StreamKey`]s are equal order the weights
    /// into the same streams (the same source index at every position, so the encoders,
    /// which read the ordered values alone, make the same bytes); and a target that counts
    /// each candidate (keeping the plans) then encodes it makes exactly the streams of a
    /// target that encodes it with nothing cached.
    #[test]
    fn candidates_with_equal_stream_keys_have_equal_streams() {
        use super::{StreamKey, WeightOrdering};
        use crate::geometry;
        use npuc_backend_lower::Kernel;
        use npuc_target::arch_interface::WeightStreams;
        use std::collections::HashMap;
        let models = [
            "mobilenet_tiny",
            "ds_cnn",
            "resnet8_16x8",
            "efficientnet_se",
            "conv2d_16x8_1x1_relu6",
            "conv2d_16x8_dil2",
            "dw_5x5_dil2",
            "conv2d_3x3_s3",
            "conv2d_pruned_2_4",
            "mobilenet_v2_050_128_pruned",
        ];
        let (mut keys, mut shared, mut encoded) = (0usize, 0usize, 0usize);
        for name in models {
            let l = crate::test_models::lowered(&format!("tflite/{name}"));
            for acc in [
                Accelerator::U85_128,
                Accelerator::U85_256,
                Accelerator::U85_2048,
            ] {
                let t = U85Target::new(acc);
                for op in &l.ops {
                    let Some(w) = &op.weights else { continue };
                    let kind = match op.kernel {
                        Kernel::Conv => KernelKind::Conv,
                        Kernel::Depthwise => KernelKind::Depthwise,
                        _ => continue,
                    };
                    let precision = if op.ifm.elem_bytes() == 2 {
                        IfmPrecision::B16
                    } else {
                        IfmPrecision::B8
                    };
                    let mut orders: HashMap<_, Vec<Vec<Option<usize>>>> = HashMap::new();
                    let cands = t.block_candidates(&geometry(op));
                    for c in &cands {
                        let Ok((params, format)) =
                            t.ordering_params(kind, precision, op.stride, op.dilation, c)
                        else {
                            continue;
                        };
                        let (Some(key), Ok(ordering)) = (
                            StreamKey::of(&params, w.shape()),
                            WeightOrdering::new(&params, w.shape()),
                        ) else {
                            continue;
                        };
                        let sources: Vec<Vec<Option<usize>>> = (0..ordering.num_streams())
                            .map(|k| ordering.stream_sources(k).collect())
                            .collect();
                        let order = if c.weight_streams == WeightStreams::Single {
                            vec![ordering.merge_fwd(&sources)]
                        } else {
                            sources
                        };
                        match orders.get(&(key, format)) {
                            Some(o) => {
                                assert!(*o == order, "{name} {acc:?} {}: {c:?}", op.name);
                                shared += 1;
                            }
                            None => {
                                orders.insert((key, format), order);
                                keys += 1;
                            }
                        }
                    }
                    // Counted (plans kept), then encoded: the streams made from scratch.
                    if encoded < 150 {
                        let fresh = U85Target::new(acc);
                        let args = (kind, precision, op.stride, op.dilation);
                        for c in &cands {
                            let lens =
                                t.weight_stream_lengths(args.0, &[w], args.1, args.2, args.3, c);
                            let made = t.encode_weights(args.0, w, args.1, args.2, args.3, c);
                            let want = fresh.encode_weights(args.0, w, args.1, args.2, args.3, c);
                            match (lens, made, want) {
                                (Ok(lens), Ok(made), Ok(want)) => {
                                    assert_eq!(made.streams, want.streams, "{name}: {c:?}");
                                    let made: Vec<u64> =
                                        made.streams.iter().map(|s| s.len() as u64).collect();
                                    assert_eq!(lens, vec![made], "{name}: {c:?}");
                                    encoded += 1;
                                }
                                (Err(a), Err(b), Err(e)) => {
                                    assert_eq!(a.to_string(), e.to_string());
                                    assert_eq!(b.to_string(), e.to_string());
                                }
                                (a, b, e) => panic!(
                                    "{name} {c:?}: {:?} {:?} {:?}",
                                    a.is_ok(),
                                    b.is_ok(),
                                    e.is_ok()
                                ),
                            }
                        }
                    }
                }
            }
        }
        // The keys merge candidates (microblocks of one depth, block depths that do not
        // change the order).
        assert!(keys > 100 && shared > keys, "{keys} keys, {shared} shared");
        eprintln!("{keys} keys, {shared} candidates sharing one");
        assert!(encoded >= 150, "{encoded}");
    }

    #[test]
    fn entries_of_weights_no_one_holds_are_swept() {
        let t = U85Target::new(Accelerator::U85_256);
        let kept = weights(1);
        encode(&t, &kept, 16, WeightStreams::PerDecoder);
        for seed in 2..200 {
            encode(&t, &weights(seed), 16, WeightStreams::PerDecoder);
        }
        let cache = t.cache.streams.lock().unwrap();
        assert!(cache.map.len() < 64, "{}", cache.map.len());
        assert!(cache
            .map
            .values()
            .any(|e| e.weights.identity() == kept.identity()));
    }
}
