//! Which NPU operation, and so which source operators, each command of a compiled stream
//! comes from: what the container manifest and the `.tflite` output record
//! ([`crate::container::OperatorEntry::commands`] and `sources`, layer map version
//! [`LAYERS_VERSION`]) and what `npuc report --per-layer` groups the commands by.
//!
//! The attribution (decision P22): every kernel command belongs to the operation the writer
//! emitted it for (one per operation, one per OFM-depth slice of a sliced one, one per band
//! of each operation of a cascade); the one DMA of a DMA operation belongs to it; every other
//! DMA (streams or an IFM staged into SRAM, a lookup table, the copy of the constants at the
//! start) belongs to the operation of the next kernel command, the one it prepares (trailing
//! DMAs, if any, to the last operation). It is rebuilt from the [`Schedule`] and the written
//! stream alone, and checked: if the stream's kernel commands do not match the schedule's
//! operations one for one, there is no map (and `--per-layer` says so).

use crate::arch_interface::Target;
use crate::compile::schedule::{FmPlacement, Schedule, Staging};
use crate::container::{LayerMaps, OperatorEntry, SourceEntry};
use crate::payload::TargetPayload;
use crate::targets;

/// The version of the layer map (operators' `sources` and `commands`) this npuc writes.
pub const LAYERS_VERSION: u32 = 1;

/// The name of the `.tflite` metadata entry holding the layer maps of the `ethos-u`
/// operators ([`LayerMaps`], protobuf).
pub const TFLITE_METADATA_NAME: &str = "npuc_layers";

/// What the schedule says comes next in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A kernel command of this operation.
    Kernel(usize),
    /// A kernel command of one of the cascade's operations `first..=last`.
    Cascade(usize, usize),
    /// The DMA of this DMA operation.
    Dma(usize),
}

fn ofm_at(s: &Schedule, k: usize) -> Option<(u8, u64)> {
    match &s.ops[k].ofm.placement {
        FmPlacement::Memory { region, offset, .. } => Some((*region, *offset)),
        _ => None,
    }
}

/// The byte offsets of the kernel and DMA commands of each operation of `schedule` in
/// `payload`, the program `target` wrote for it (see the module documentation); `None` when
/// the program and the schedule do not match.
pub fn attribute(
    target: &dyn Target,
    payload: &TargetPayload,
    schedule: &Schedule,
) -> Option<Vec<Vec<u32>>> {
    let cmds = target.work_commands(payload)?;
    let n = schedule.ops.len();
    let mut slots = Vec::new();
    let mut k = 0;
    while k < n {
        let op = &schedule.ops[k];
        if op.kernel == "DMA" {
            slots.push(Slot::Dma(k));
        } else if let Some(c) = &op.cascade {
            let last = c.last.min(n - 1);
            let pieces: usize = (k..=last)
                .map(|j| schedule.ops[j].cascade.as_ref().map_or(0, |c| c.bands))
                .sum();
            slots.extend(std::iter::repeat_n(Slot::Cascade(k, last), pieces));
            k = last + 1;
            continue;
        } else {
            let parts = match &op.staging {
                Staging::Sliced { slice_depths, .. } => slice_depths.len().max(1),
                _ => 1,
            };
            slots.extend(std::iter::repeat_n(Slot::Kernel(k), parts));
        }
        k += 1;
    }
    let mut owned: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut pending: Vec<u32> = Vec::new();
    let mut next = slots.iter().copied().peekable();
    let mut last_owner = None;
    for c in &cmds {
        if c.dma {
            match next.peek() {
                // The DMA operation's own DMA writes its OFM's region.
                Some(&Slot::Dma(j)) if ofm_at(schedule, j).is_none_or(|o| o.0 == c.region) => {
                    next.next();
                    owned[j].append(&mut pending);
                    owned[j].push(c.offset);
                    last_owner = Some(j);
                }
                _ => pending.push(c.offset),
            }
            continue;
        }
        let j = match next.next()? {
            Slot::Kernel(j) => j,
            Slot::Dma(_) => return None,
            Slot::Cascade(first, last) => {
                // The operation whose OFM buffer holds the command's OFM: the same region and
                // the highest start at or below its base (the cascade's buffers are disjoint).
                (first..=last)
                    .filter_map(|j| ofm_at(schedule, j).map(|o| (j, o)))
                    .filter(|(_, (r, at))| *r == c.region && *at <= c.address)
                    .max_by_key(|(j, (_, at))| (*at, *j))
                    .map_or(first, |(j, _)| j)
            }
        };
        owned[j].append(&mut pending);
        owned[j].push(c.offset);
        last_owner = Some(j);
    }
    if next.next().is_some() {
        return None;
    }
    if !pending.is_empty() {
        owned[last_owner?].append(&mut pending);
    }
    for o in &mut owned {
        o.sort_unstable();
    }
    Some(owned)
}

/// The manifest's operator entries of a compiled model: each NPU operation with its source
/// operators and, when the attribution succeeds, its commands.
pub fn operator_entries(m: &crate::compile::CompiledModel) -> (Vec<OperatorEntry>, bool) {
    let target = targets::reader(Some(m.accelerator));
    let owned = attribute(target.as_ref(), &m.payload, &m.schedule);
    let entries = m
        .operators
        .iter()
        .enumerate()
        .map(|(k, o)| OperatorEntry {
            name: o.name.clone(),
            kernel: o.kernel.clone(),
            fused: o.fused.clone(),
            estimated_cycles: o.cycles,
            sources: m.schedule.ops.get(k).map_or_else(Vec::new, |s| {
                s.source
                    .iter()
                    .map(|src| SourceEntry {
                        index: src.index.map(|i| i as u32),
                        op: src.op.clone(),
                        output: src.output.clone(),
                    })
                    .collect()
            }),
            commands: owned
                .as_ref()
                .and_then(|c| c.get(k).cloned())
                .unwrap_or_default(),
        })
        .collect();
    (entries, owned.is_some())
}

/// The layer maps of an npuc container or `.tflite` output: per command stream (in the order
/// [`crate::artifact::Artifact`] lists them), its NPU operations with sources and commands;
/// `None` when the file records none (a foreign stream, an older npuc's output).
pub fn layer_maps(bytes: &[u8]) -> Option<LayerMaps> {
    use prost::Message;
    if bytes.get(..4) == Some(&crate::container::MAGIC[..]) {
        let m = crate::container::from_bytes(bytes).ok()?.manifest;
        if m.layers_version == 0 {
            return None;
        }
        return Some(LayerMaps {
            version: m.layers_version,
            streams: vec![crate::container::StreamLayers {
                operators: m.operators,
            }],
            cpu_operators: Vec::new(),
        });
    }
    let model = npuc_frontend_tflite::TfliteModel::parse(bytes).ok()?;
    let data = model.metadata_bytes(TFLITE_METADATA_NAME)?;
    let maps = LayerMaps::decode(data).ok()?;
    (maps.version != 0).then_some(maps)
}
