//! The attainable compute bound of each operation of a schedule (the U85's
//! [`npuc_target::arch_interface::Target::compute_bounds`]): its register state written for every
//! block candidate the target offers, costed by the cost model's NPU cycles.

use super::decide::{self, U85Decisions};
use super::geometry;
use super::plan::{estimate_compute, Costing};
use super::regs::locs;
use super::weights::{Encoded, Layout};
use npuc_backend_lower::{Kernel, NpuOp};
use npuc_target::arch_interface::REGION_READ_ONLY;
use npuc_target::arch_interface::{BlockConfig, Decisions, LoweredView, Target, WeightStreams};
use npuc_target::parallel;
use std::collections::BTreeMap;

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
/// (Decisions that are not the U85's have no bounds: 0 each.)
pub(crate) fn compute_bounds(
    target: &dyn Target,
    lowered: &dyn LoweredView,
    d: &Decisions,
) -> Vec<u64> {
    match decide::u85(lowered, d) {
        Ok(d) => bounds(target, &d, true),
        Err(_) => vec![0; d.ops.len()],
    }
}

/// [`compute_bounds`]; with `shared`, the candidates write only their own registers after
/// the operation's ([`Costing`]: the same register states), else each its full commands.
fn bounds(target: &dyn Target, d: &U85Decisions, shared: bool) -> Vec<u64> {
    let l = d.lowered;
    let none = BTreeMap::new();
    let sram = (0u8..8).find(|&r| target.region_memory(r) == "Sram");
    // Each operation on its own, on every thread available (the output in order).
    parallel::map_heaviest_first(&l.ops, candidates_work, |k, op| {
        let chained = k > 0 && d.ops[k - 1].chain.is_some();
        if chained || matches!(op.kernel, Kernel::Dma(_)) {
            return 0;
        }
        let plan = d.ops[k].plan;
        // Memories aside: the feature maps and streams in SRAM, whose latency is the least.
        let mut at = locs(op, d.placement, l, &none);
        if let Some(r) = sram {
            at.ifm.0 = r;
            at.ofm.0 = r;
            if let Some(f) = &mut at.ifm2 {
                f.0 = r;
            }
        }
        let streams_in = sram.unwrap_or(REGION_READ_ONLY);
        // The registers no candidate changes are written once; each candidate then writes
        // its own ([`Costing`]: streams, weight order, OFM block, microblock), which leaves
        // the register state its full commands would (a RESIZE, whose step registers depend
        // on the block, is written in full).
        let costing = shared.then(|| Costing::new(target, op, &plan.block, &at));
        let compute = |block: &BlockConfig, layout: Option<&Layout>| match &costing {
            Some(costing) => costing.compute(block, layout, streams_in),
            None => estimate_compute(target, op, block, layout, streams_in, &at),
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
        best
    })
}

/// How much costing an operation's candidates takes, roughly: its OFM elements (the
/// candidates' block walks).
fn candidates_work(op: &NpuOp) -> u64 {
    let (h, w, c) = op.ofm.shape;
    u64::from(h) * u64::from(w) * u64::from(c)
}

#[cfg(test)]
mod tests {
    use super::bounds;
    use crate::decide::decide;
    use npuc_backend::arch::Accelerator;

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
            let l = crate::test_models::lowered(&format!("tflite/{name}"));
            for accelerator in [Accelerator::U85_128, Accelerator::U85_2048] {
                let target = crate::test_models::target(accelerator);
                let d = decide(target.as_ref(), &l).unwrap().decisions;
                let d = crate::decide::u85(&l, &d).unwrap();
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
