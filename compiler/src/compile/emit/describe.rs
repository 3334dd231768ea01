//! The [`Schedule`] of a written graph: the scheduling passes' neutral decisions
//! ([`Decisions`]) per operation, with the cost model's estimate of the written stream.

use crate::arch_interface::{
    ChainOperand, Decisions, FmDescription, LoweredView, StreamEstimate, Target, Written,
};
use crate::compile::alloc::CHAINED;
use crate::compile::schedule::{
    Chain, DmaCost, FeatureMap, FmPlacement, MemoryBytes, Schedule, ScheduledOp, Streams, Transfer,
};

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

/// The schedule of `d`, decided for `lowered`, as written (`w`) and estimated (`est`);
/// sources and configuration names are left for the caller to fill in. It reads the
/// decisions' neutral part only.
pub(crate) fn describe(
    target: &dyn Target,
    lowered: &dyn LoweredView,
    d: &Decisions,
    w: &Written,
    est: &StreamEstimate,
) -> Schedule {
    let l = d.program(lowered);
    let p = &d.placement;
    let n = l.op_count();
    let bounds = target.compute_bounds(lowered, d);
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
    let mut ops = Vec::with_capacity(n);
    for k in 0..n {
        let desc = l.describe_op(k);
        let o = &d.ops[k];
        // Where the writer put the feature maps (scalar operands and constants included).
        let at = &w.locations[k];
        let is_dma = l.op(k).kernel.is_none();
        let block = o.block;
        let weighted = desc.weighted;
        let names = target.block_names(&block);
        let streams = o.streams.as_ref().map(|e| Streams {
            weights: e.weights,
            weight_bytes: e.weight_bytes.clone(),
            scale_bytes: e.scale_bytes,
            read_only_offset: w.stream_offsets[k].unwrap_or(0),
        });
        let operand = |o: ChainOperand| match o {
            ChainOperand::Ifm => "ifm".to_string(),
            ChainOperand::Ifm2 => "ifm2".to_string(),
        };
        let chain = match (o.chain, k.checked_sub(1).and_then(|j| d.ops[j].chain)) {
            (Some(o), _) => Some(Chain::Producer {
                operand: operand(o),
            }),
            (None, Some(o)) => Some(Chain::Consumer {
                operand: operand(o),
            }),
            (None, None) => None,
        };
        // A DMA operation's own estimate is the writer's.
        let own_cycles = if is_dma {
            w.operators[k].cycles
        } else {
            cycles[k]
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
            ifm: fm(desc.ifm, at.ifm, at.ifm_scalar),
            ifm2: desc
                .ifm2
                .map(|f| fm(f, at.ifm2.unwrap_or((0, 0)), at.ifm2_scalar)),
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
            staging: o.staging.clone(),
            ifm_copy: o.ifm_copy.map(|c| Transfer {
                from: c.src,
                to: c.dst,
                bytes: c.size,
            }),
            chain,
            cascade: o.cascade.clone(),
            cycles: own_cycles,
            memory: std::mem::take(&mut memory[k]),
            dma: dma[k].take(),
            compute_bound: bounds[k],
            choice: o.choice.clone(),
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
