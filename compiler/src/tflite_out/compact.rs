//! Dropping the tensors and buffers of the output model that nothing refers to any more, and
//! adding the arena offsets once the tensor indices are final.

use super::write::add_offline_allocation;
use super::TfliteOutError;
use npuc_frontend_tflite::schema::ModelT;
use std::collections::BTreeMap;

fn remap(v: &mut Option<Vec<i32>>, map: &[Option<i32>]) {
    for t in v.iter_mut().flatten() {
        if *t >= 0 {
            *t = map[*t as usize].expect("used tensor");
        }
    }
}

/// Compacts subgraph 0's tensors and the model's buffers, then writes
/// `OfflineMemoryAllocation` from `offsets` (keyed by subgraph 0 tensor index before
/// compaction).
pub(super) fn compact(m: &mut ModelT, offsets: BTreeMap<usize, i64>) -> Result<(), TfliteOutError> {
    let sg = &mut m.subgraphs.as_mut().expect("subgraphs")[0];
    let n = sg.tensors.as_ref().map_or(0, Vec::len);
    let mut used = vec![false; n];
    let mut mark = |v: &Option<Vec<i32>>| -> Result<(), TfliteOutError> {
        for &t in v.iter().flatten() {
            if t >= 0 {
                *used.get_mut(t as usize).ok_or_else(|| {
                    TfliteOutError::Write(format!("tensor index {t} out of range"))
                })? = true;
            }
        }
        Ok(())
    };
    mark(&sg.inputs)?;
    mark(&sg.outputs)?;
    for op in sg.operators.iter().flatten() {
        mark(&op.inputs)?;
        mark(&op.outputs)?;
        mark(&op.intermediates)?;
    }
    let mut map = vec![None; n];
    let mut next = 0;
    for (t, u) in used.iter().enumerate() {
        if *u {
            map[t] = Some(next);
            next += 1;
        }
    }
    let old = sg.tensors.take().unwrap_or_default();
    sg.tensors = Some(
        old.into_iter()
            .zip(&used)
            .filter_map(|(t, &u)| u.then_some(t))
            .collect(),
    );
    remap(&mut sg.inputs, &map);
    remap(&mut sg.outputs, &map);
    for op in sg.operators.iter_mut().flatten() {
        remap(&mut op.inputs, &map);
        remap(&mut op.outputs, &map);
        remap(&mut op.intermediates, &map);
    }
    for sig in m.signature_defs.iter_mut().flatten() {
        if sig.subgraph_index != 0 {
            continue;
        }
        for tm in sig
            .inputs
            .iter_mut()
            .chain(sig.outputs.iter_mut())
            .flatten()
        {
            if let Some(Some(t)) = map.get(tm.tensor_index as usize) {
                tm.tensor_index = *t as u32;
            }
        }
    }
    let offsets: BTreeMap<usize, i64> = offsets
        .into_iter()
        .filter_map(|(t, o)| map.get(t).copied().flatten().map(|t| (t as usize, o)))
        .collect();
    // Buffers: keep 0 (the empty sentinel) and everything a tensor or metadata entry names.
    let nb = m.buffers.as_ref().map_or(0, Vec::len);
    let mut bused = vec![false; nb];
    if nb > 0 {
        bused[0] = true;
    }
    let mut bmark = |b: u32| {
        if let Some(x) = bused.get_mut(b as usize) {
            *x = true;
        }
    };
    for t in m
        .subgraphs
        .iter()
        .flatten()
        .flat_map(|s| s.tensors.iter().flatten())
    {
        bmark(t.buffer);
    }
    for e in m.metadata.iter().flatten() {
        bmark(e.buffer);
    }
    for &b in m.metadata_buffer.iter().flatten() {
        bmark(b as u32);
    }
    let mut bmap = vec![0u32; nb];
    let mut next = 0u32;
    for (i, u) in bused.iter().enumerate() {
        if *u {
            bmap[i] = next;
            next += 1;
        }
    }
    let old = m.buffers.take().unwrap_or_default();
    m.buffers = Some(
        old.into_iter()
            .zip(&bused)
            .filter_map(|(b, &u)| u.then_some(b))
            .collect(),
    );
    let fix = |b: u32| bmap.get(b as usize).copied().unwrap_or(0);
    for t in m
        .subgraphs
        .iter_mut()
        .flatten()
        .flat_map(|s| s.tensors.iter_mut().flatten())
    {
        t.buffer = fix(t.buffer);
    }
    for e in m.metadata.iter_mut().flatten() {
        e.buffer = fix(e.buffer);
    }
    for b in m.metadata_buffer.iter_mut().flatten() {
        *b = fix(*b as u32) as i32;
    }
    let n_tensors = m.subgraphs.as_ref().expect("subgraphs")[0]
        .tensors
        .as_ref()
        .map_or(0, Vec::len);
    add_offline_allocation(m, n_tensors, &offsets);
    Ok(())
}
