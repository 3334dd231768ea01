//! The [`Schedule`] of a written graph: the decisions of [`super::decide`] per operation, with
//! the cost model's estimate of the written stream.

use super::decide::Decisions;
use super::geometry;
use super::regs::{block_commands, locs, op_commands};
use super::staging::Staged;
use super::weights::{Encoded, Layout};
use super::write::Written;
use crate::arch_interface::{
    BlockConfig, FmDescription, LoweredView, StreamEstimate, Target, WeightStreams,
};
use crate::compile::alloc::CHAINED;
use crate::compile::lower::Kernel;
use crate::compile::schedule::{
    CascadePart, Chain, Choice, DmaCost, FeatureMap, FmPlacement, MemoryBytes, Schedule,
    ScheduledOp, Staging, Streams, Transfer,
};
use crate::compile::REGION_READ_ONLY;
use npuc_backend::isa::ActivationFunction;
use npuc_backend::writer::CommandWriter;
use std::collections::BTreeMap;

/// Adds up (memory, read, written) triples into `acc`, keeping the memories' first-seen order.
fn add_bytes(acc: &mut Vec<MemoryBytes>, bytes: &[(String, u64, u64)]) {
    for (m, r, w) in bytes {
        if *r == 0 && *w == 0 {
            continue;
        }
        match acc.iter_mut().find(|b| &b.memory == m) {
            Some(b) => {
                b.read += r;
                b.written += w;
            }
            None => acc.push(MemoryBytes {
                memory: m.clone(),
                read: *r,
                written: *w,
            }),
        }
    }
}

/// The schedule of `d` as written (`w`) and estimated (`est`); sources and configuration
/// names are left for the caller to fill in.
pub(crate) fn describe(
    target: &dyn Target,
    d: &Decisions,
    w: &Written,
    est: &StreamEstimate,
) -> Schedule {
    let l = &d.lowered;
    let p = &d.placement;
    let n = l.op_count();
    let bounds = compute_bounds(target, d);
    // Kernel and DMA costs per operation, from the stream's estimate in stream order.
    let mut cycles = vec![0u64; n];
    let mut memory: Vec<Vec<MemoryBytes>> = vec![Vec::new(); n];
    let mut dma: Vec<Option<DmaCost>> = vec![None; n];
    let (mut kernels, mut dmas) = (w.owners.iter(), w.dma_owners.iter());
    for o in &est.ops {
        if o.dma {
            let Some(owner) = dmas.next() else { break };
            let Some(k) = *owner else { continue };
            if l.op(k).kernel.is_none() {
                add_bytes(&mut memory[k], &o.memory);
                continue;
            }
            let c = dma[k].get_or_insert(DmaCost {
                cycles: 0,
                memory: Vec::new(),
            });
            c.cycles += o.cycles;
            add_bytes(&mut c.memory, &o.memory);
        } else {
            let Some(&k) = kernels.next() else { break };
            cycles[k] += o.cycles;
            add_bytes(&mut memory[k], &o.memory);
        }
    }
    let fm = |f: FmDescription, at: (u8, u64), scalar: Option<i32>| FeatureMap {
        placement: match scalar {
            Some(value) => FmPlacement::Scalar { value },
            None if p.regions.get(f.buffer) == Some(&CHAINED) => FmPlacement::Chained,
            None => FmPlacement::Memory {
                memory: target.region_memory(at.0),
                region: at.0,
                offset: at.1,
            },
        },
        shape: f.shape,
        dtype: f.dtype,
        broadcast: f.broadcast,
    };
    let enc_bytes = |e: &Encoded| e.size();
    let mut ops = Vec::with_capacity(n);
    for (k, op) in l.ops.iter().enumerate() {
        let desc = l.describe_op(k);
        let plan = &d.ops[k].plan;
        // Where the feature maps are (U85: `locs`, scalar operands and constants included).
        let at = locs(op, p, l, &w.consts);
        let scalar = at.scalar;
        let ifm_scalar = scalar.filter(|s| !s.ifm2).map(|s| s.value);
        let ifm2_scalar = scalar.filter(|s| s.ifm2).map(|s| s.value);
        let mut ifm_at = at.ifm;
        if let Some(c) = &d.ops[k].copy {
            ifm_at = (c.dst.0, c.dst.1 + op.ifm.view.offset);
        }
        let is_dma = l.op(k).kernel.is_none();
        let block = match &d.ops[k].staged {
            Staged::Sliced { block, .. } => *block,
            _ => plan.block,
        };
        let weighted = desc.weighted;
        let names = target.block_names(&block);
        let streams = plan.enc.as_ref().map(|e| Streams {
            weights: e.weight_count,
            weight_bytes: e.stream_lens.clone(),
            scale_bytes: e.scales.len() as u64,
            read_only_offset: w.blocks[k].first().copied().unwrap_or(0),
        });
        let staging = match &d.ops[k].staged {
            Staged::Direct => Staging::Direct,
            Staged::Whole { region, at, wait } => Staging::Whole {
                region: *region,
                offset: *at,
                bytes: plan.enc.as_ref().map_or(0, enc_bytes),
                wait: *wait,
            },
            Staged::Sliced {
                region,
                bufs,
                slices,
                wait,
                ..
            } => Staging::Sliced {
                region: *region,
                buffers: *bufs,
                slice_bytes: slices.iter().map(|s| s.enc.size()).collect(),
                slice_depths: slices.iter().map(|s| s.op.ofm.shape.2).collect(),
                wait: *wait,
            },
            Staged::Cascade {
                region,
                blocks,
                wait,
                ..
            } => Staging::Cascade {
                region: *region,
                copies: blocks
                    .iter()
                    .map(|&(j, at)| {
                        [
                            j as u64,
                            at,
                            d.ops[j].plan.enc.as_ref().map_or(0, enc_bytes),
                        ]
                    })
                    .collect(),
                wait: *wait,
            },
        };
        let operand = |o: super::chain::Operand| match o {
            super::chain::Operand::Ifm => "ifm".to_string(),
            super::chain::Operand::Ifm2 => "ifm2".to_string(),
        };
        let chain = match (
            d.ops[k].chain,
            k.checked_sub(1).and_then(|j| d.ops[j].chain),
        ) {
            (Some(o), _) => Some(Chain::Producer {
                operand: operand(o),
            }),
            (None, Some(o)) => Some(Chain::Consumer {
                operand: operand(o),
            }),
            (None, None) => None,
        };
        let cascade = d.ops[k].cascade.map(|g| {
            let c = &d.cascades[g];
            let mine: Vec<u32> = c
                .pieces
                .iter()
                .filter(|piece| piece.0 == k)
                .map(|piece| piece.2 - piece.1)
                .collect();
            CascadePart {
                group: g,
                first: c.first,
                last: c.last,
                bands: mine.len(),
                band_rows: mine.iter().copied().max().unwrap_or(0),
                ring_rows: (k < c.last).then(|| c.rings[k - c.first]),
            }
        });
        let own_cycles = match &op.kernel {
            Kernel::Dma(x) => npuc_backend::writer::dma::estimate_cycles(x.bytes()),
            _ => cycles[k],
        };
        ops.push(ScheduledOp {
            index: k,
            name: l.op(k).name.to_string(),
            source: Vec::new(),
            kernel: desc.kernel,
            kernel_size: desc.kernel_size,
            stride: desc.stride,
            dilation: desc.dilation,
            ifm_upscale: desc.ifm_upscale,
            lut: desc.lut,
            ifm: fm(desc.ifm, ifm_at, ifm_scalar),
            ifm2: desc
                .ifm2
                .map(|f| fm(f, at.ifm2.unwrap_or((0, 0)), ifm2_scalar)),
            ofm: fm(desc.ofm, at.ofm, None),
            ofm_block: (!is_dma).then_some([
                block.ofm_block.0,
                block.ofm_block.1,
                block.ofm_block.2,
            ]),
            microblock: (!is_dma).then_some([
                block.microblock.0,
                block.microblock.1,
                block.microblock.2,
            ]),
            weight_format: weighted.then(|| names.weight_format.to_string()),
            weight_order: weighted.then(|| names.weight_order.to_string()),
            weight_sparsity: weighted.then(|| names.weight_sparsity.to_string()),
            streams,
            staging,
            ifm_copy: d.ops[k].copy.map(|c| Transfer {
                from: c.src,
                to: c.dst,
                bytes: c.size,
            }),
            chain,
            cascade,
            cycles: own_cycles,
            memory: std::mem::take(&mut memory[k]),
            dma: dma[k].take(),
            compute_bound: bounds[k],
            // (A cascade's operations: the program's choice of the cascade, S20.)
            choice: d.ops[k]
                .choice
                .as_ref()
                .or_else(|| d.ops[k].cascade.and_then(|g| d.cascades[g].choice.as_ref()))
                .map(|c| Choice {
                    chosen: c.chosen.0.clone(),
                    objective: c.chosen.1,
                    next: c.next.as_ref().map(|n| n.0.clone()),
                    next_objective: c.next.as_ref().map(|n| n.1),
                }),
        });
    }
    Schedule {
        accelerator: String::new(),
        system_config: String::new(),
        memory_mode: String::new(),
        rewrites: l.rewrites().iter().map(|r| r.to_string()).collect(),
        ops,
        total_cycles: est.total,
        arena_size: p.arena_size,
        fast_size: p.fast_size,
        read_only_size: w.read_only.len() as u64,
        const_copy: w.const_copy.clone(),
        compute_bound: bounds.iter().sum(),
    }
}

/// No activation table: the bound takes the operation without its LUT.
const NO_TABLE: (ActivationFunction, u8) = (ActivationFunction::LutNone, 0);

/// The attainable compute bound of `d`'s operations: for each operation, the fewest compute
/// cycles ([`Target::estimate_compute`]: its NPU cycles, memories aside) of any
/// block candidate the target offers for it, and of the plan taken (the schedule's
/// `compute_bound` is their sum).
///
/// The candidates' streams are laid out as the planner estimates them: an SWD candidate with
/// the lengths of the plan's SWD encoding, an FWD one with the target's FWD length estimate
/// (the decoders' cycles depend on the lengths). Feature maps and streams are taken to be in
/// SRAM, the memory of the least latency (the pipeline's first IFM block read and last OFM
/// block write, and its waits for scales, are the only memory terms of the NPU cycles). A DMA
/// computes nothing, and an operation reading its producer's OFM from the chaining buffer
/// runs alongside it (P24): both count nothing. Memory bandwidth and the stream DMAs are not
/// counted, so the bound is at most the stream's estimated cycles.
/// Per operation, in order.
pub(crate) fn compute_bounds(target: &dyn Target, d: &Decisions) -> Vec<u64> {
    bounds(target, d, true)
}

/// [`compute_bounds`]; with `shared`, the candidates write only their own registers after
/// the operation's (the same register states), else each its full commands.
fn bounds(target: &dyn Target, d: &Decisions, shared: bool) -> Vec<u64> {
    let l = &d.lowered;
    let none = BTreeMap::new();
    let sram = (0u8..8).find(|&r| target.region_memory(r) == "Sram");
    let mut bounds = vec![0u64; l.ops.len()];
    for (k, op) in l.ops.iter().enumerate() {
        let chained = k > 0 && d.ops[k - 1].chain.is_some();
        if chained || matches!(op.kernel, Kernel::Dma(_)) {
            continue;
        }
        let plan = &d.ops[k].plan;
        // Memories aside: the feature maps and streams in SRAM, whose latency is the least.
        let mut at = locs(op, &d.placement, l, &none);
        if let Some(r) = sram {
            at.ifm.0 = r;
            at.ofm.0 = r;
            if let Some(f) = &mut at.ifm2 {
                f.0 = r;
            }
        }
        let streams_in = sram.unwrap_or(REGION_READ_ONLY);
        // The registers no candidate changes are written once; each candidate then writes
        // its own ([`block_commands`]: streams, weight order, OFM block, microblock), which
        // leaves the register state its full commands would (a RESIZE, whose step
        // registers depend on the block, is written in full).
        let base = (shared && !matches!(op.kernel, Kernel::Resize(_))).then(|| {
            let mut w = CommandWriter::default();
            let (cmd, _) = op_commands(&mut w, op, &plan.block, None, &at, NO_TABLE);
            (w.commands, cmd)
        });
        let compute = |block: &BlockConfig, layout: Option<&Layout>| {
            let streams = layout.map(|e| (e, streams_in, 0));
            let mut w = CommandWriter::default();
            let cmd = match &base {
                Some((commands, cmd)) => {
                    w.commands.extend_from_slice(commands);
                    block_commands(&mut w, op, block, streams);
                    *cmd
                }
                None => op_commands(&mut w, op, block, streams, &at, NO_TABLE).0,
            };
            w.op(cmd);
            target.estimate_compute(&w.commands)
        };
        let taken = plan.enc.as_ref().map(Encoded::layout);
        let mut best = compute(&plan.block, taken.as_ref());
        // The SWD lengths: the plan's, or its SWD alternative's (S13).
        let swd = [Some(plan), plan.alt.as_deref(), plan.staged.as_deref()]
            .into_iter()
            .flatten()
            .filter_map(|p| p.enc.as_ref())
            .find(|e| e.format == WeightStreams::PerDecoder)
            .map(Encoded::layout);
        let fwd = match (&plan.enc, &op.weights) {
            (Some(e), Some(wt)) => target
                .fwd_length_estimate(wt)
                .map(|len| Layout::new(WeightStreams::Single, false, [e.scales.len() as u64, len])),
            _ => None,
        };
        for c in target.block_candidates(&geometry(op)) {
            let layout = match c.weight_streams {
                WeightStreams::Single => fwd.as_ref(),
                WeightStreams::PerDecoder => swd.as_ref(),
            };
            if op.weights.is_some() && layout.is_none() {
                continue;
            }
            let layout = layout.map(|l| Layout {
                sparse: c.sparse,
                ..l.clone()
            });
            best = best.min(compute(&c, layout.as_ref()));
        }
        bounds[k] = best;
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::bounds;
    use crate::compile::emit::decide::decide;
    use crate::compile::lower;
    use crate::compile::Options;
    use npuc_backend::arch::Accelerator;
    use npuc_backend::system::MemoryMap;

    #[test]
    fn bounds_on_shared_registers_are_the_bounds_of_each_candidates_full_commands() {
        // Corpus models (resize, FC, 16-bit, sparse and the cascaded MobileNetV2 included), on
        // the fewest and most MACs: every operation's bound is the same either way.
        let models = [
            "resnet8",
            "ds_cnn_16x8",
            "mobilenet_tiny",
            "transformer_encoder",
            "unet_small",
            "efficientnet_se",
            "resize_bilinear",
            "fc_16x8",
            "conv2d_pruned_2_4",
            "mobilenet_v2_035_96",
        ];
        let mut compared = 0;
        for name in models {
            let path = format!(
                "{}/../models/tflite/{name}.tflite",
                env!("CARGO_MANIFEST_DIR")
            );
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
            let g = npuc_frontend_tflite::lower::lower(&model).unwrap().graph;
            let l = lower::lower(&g).unwrap();
            for accelerator in [Accelerator::U85_128, Accelerator::U85_2048] {
                let options = Options {
                    accelerator,
                    ..Options::default()
                };
                let map = MemoryMap::new(&options.system_config, &options.memory_mode).unwrap();
                let target = crate::targets::select(&options, map);
                let d = decide(target.as_ref(), &l).unwrap();
                let full = bounds(target.as_ref(), &d, false);
                assert_eq!(
                    bounds(target.as_ref(), &d, true),
                    full,
                    "{name} {accelerator:?}"
                );
                compared += full.iter().filter(|&&b| b > 0).count();
            }
        }
        assert!(compared > 200, "{compared} bounds compared");
    }
}
