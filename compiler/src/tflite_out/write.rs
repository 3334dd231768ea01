//! Writing the partitioned model as a TFLite file in Vela's layout.
//!
//! The source model is unpacked into the generated object API (`ModelT`), each NPU segment's
//! operators are replaced by one `ethos-u` custom operator, and the model is packed again:
//!
//! * the operator's inputs are the COP1 payload, `read_only` (region 0), `scratch` (region 1)
//!   and `scratch_fast` (region 2: a tensor of its own when the segment uses the fast memory of
//!   the Dedicated_Sram modes, else the scratch tensor again, as in Vela's shared-SRAM modes),
//!   then the segment's input feature maps; its outputs are the segment's output feature maps;
//! * every segment has its own scratch tensor, placed after the previous segment's in the arena
//!   (`OfflineMemoryAllocation`: the scratch tensor at its base, each feature map at base +
//!   its offset in the segment's arena), so no segment can overwrite a tensor another one
//!   still needs; every other feature map (CPU operators only) and every `scratch_fast` tensor
//!   gets a slot of its own after the segments' areas, and constants get -1;
//! * a feature map read by a segment but already placed by an earlier one (a graph input or a
//!   segment output read by two segments) is copied by a CPU `RESHAPE` to the same shape into a
//!   new tensor placed in the reading segment's arena;
//! * tensors and buffers nothing refers to any more (the folded weights) are dropped, and
//!   buffers stored past the flatbuffer are inlined.

#![allow(clippy::field_reassign_with_default)] // the generated types are non-exhaustive

use super::partition::Partition;
use super::TfliteOutError;
use crate::container::{LayerMaps, SourceEntry, StreamLayers};
use npuc_backend::cop::write_cop1;
use npuc_frontend_tflite::schema::{
    self, BufferT, BuiltinOperator, BuiltinOptionsT, MetadataT, ModelT, OperatorCodeT, OperatorT,
    ReshapeOptionsT, TensorT, TensorType,
};
use npuc_frontend_tflite::vela::{ETHOS_U_CUSTOM_CODE, OFFLINE_MEMORY_ALLOCATION};
use npuc_frontend_tflite::TfliteModel;
use std::collections::BTreeMap;

/// The ID register word Vela writes into COP1 payloads for the Ethos-U85.
pub const ETHOS_U85_ID_WORD: u32 = 0x2000_7000;

/// Arena alignment of each segment's scratch area.
const SEGMENT_ALIGN: u64 = 16;

fn unpack(bytes: &[u8]) -> Result<ModelT, TfliteOutError> {
    let opts = flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: 1_000_000,
        max_apparent_size: bytes.len().saturating_mul(8).clamp(1 << 20, 1 << 31),
        ..flatbuffers::VerifierOptions::default()
    };
    let m = schema::root_as_model_with_opts(&opts, bytes)
        .map_err(|e| TfliteOutError::Write(format!("re-reading the model: {e}")))?;
    // The generated `Model::unpack`, field by field, but a buffer's bytes copied as one slice
    // (the generated code collects them byte by byte: most of the writer's time on a model of
    // megabytes).
    let mut t = ModelT::default();
    t.version = m.version();
    t.operator_codes = m
        .operator_codes()
        .map(|x| x.iter().map(|c| c.unpack()).collect());
    t.subgraphs = m
        .subgraphs()
        .map(|x| x.iter().map(|g| g.unpack()).collect());
    t.description = m.description().map(str::to_string);
    t.buffers = m.buffers().map(|x| {
        x.iter()
            .map(|b| {
                let mut u = BufferT::default();
                u.data = b.data().map(|d| d.bytes().to_vec());
                u.offset = b.offset();
                u.size = b.size();
                u
            })
            .collect()
    });
    t.metadata_buffer = m.metadata_buffer().map(|x| x.into_iter().collect());
    t.metadata = m.metadata().map(|x| x.iter().map(|d| d.unpack()).collect());
    t.signature_defs = m
        .signature_defs()
        .map(|x| x.iter().map(|d| d.unpack()).collect());
    t.external_buffer_groups = m
        .external_buffer_groups()
        .map(|x| x.iter().map(|g| g.unpack()).collect());
    t.external_buffers = m
        .external_buffers()
        .map(|x| x.iter().map(|e| e.unpack()).collect());
    Ok(t)
}

fn opcode_index(m: &mut ModelT, builtin: BuiltinOperator, custom: Option<&str>) -> u32 {
    let codes = m.operator_codes.get_or_insert_with(Vec::new);
    let found = codes.iter().position(|c| {
        let b = if c.builtin_code.0 == 0 {
            BuiltinOperator(i32::from(c.deprecated_builtin_code))
        } else {
            c.builtin_code
        };
        b == builtin && c.custom_code.as_deref() == custom
    });
    let idx = found.unwrap_or_else(|| {
        let mut c = OperatorCodeT::default();
        c.deprecated_builtin_code = builtin.0.min(127) as i8;
        c.custom_code = custom.map(str::to_string);
        c.version = 1;
        c.builtin_code = builtin;
        codes.push(c);
        codes.len() - 1
    });
    idx as u32
}

struct Builder {
    tensors: Vec<TensorT>,
    buffers: Vec<BufferT>,
    offsets: BTreeMap<usize, i64>,
}

impl Builder {
    fn buffer(&mut self, data: Option<Vec<u8>>) -> u32 {
        let mut b = BufferT::default();
        b.data = data;
        self.buffers.push(b);
        (self.buffers.len() - 1) as u32
    }

    fn tensor(
        &mut self,
        name: String,
        shape: Vec<i32>,
        ty: TensorType,
        data: Option<Vec<u8>>,
    ) -> i32 {
        let buffer = self.buffer(data);
        let mut t = TensorT::default();
        t.shape = Some(shape);
        t.type_ = ty;
        t.buffer = buffer;
        t.name = Some(name);
        self.tensors.push(t);
        (self.tensors.len() - 1) as i32
    }

    fn bytes_tensor(&mut self, name: String, len: usize, data: Option<Vec<u8>>) -> i32 {
        let len = i32::try_from(len).unwrap_or(i32::MAX);
        self.tensor(name, vec![len], TensorType::UINT8, data)
    }
}

/// Bytes per element of a TFLite type (8 for types npuc does not know, an upper bound).
fn element_bytes(t: TensorType) -> u64 {
    match t {
        TensorType::INT8 | TensorType::UINT8 | TensorType::BOOL => 1,
        TensorType::INT16 | TensorType::UINT16 | TensorType::FLOAT16 => 2,
        TensorType::INT32 | TensorType::UINT32 | TensorType::FLOAT32 => 4,
        _ => 8,
    }
}

/// Writes the output model.
pub fn write(
    bytes: &[u8],
    model: &TfliteModel,
    part: &Partition,
) -> Result<Vec<u8>, TfliteOutError> {
    let mut m = unpack(bytes)?;
    // Inline buffers stored past the flatbuffer.
    for (b, src) in m.buffers.iter_mut().flatten().zip(model.buffers()) {
        if b.offset > 1 {
            b.data = Some(src.data.clone());
            b.offset = 0;
            b.size = 0;
        }
    }
    let ethos_u = opcode_index(&mut m, BuiltinOperator::CUSTOM, Some(ETHOS_U_CUSTOM_CODE));
    let needs_copy = part.segments.len() > 1;
    let reshape = needs_copy.then(|| opcode_index(&mut m, BuiltinOperator::RESHAPE, None));
    let mut sg = m
        .subgraphs
        .as_mut()
        .and_then(|s| s.first_mut())
        .map(std::mem::take)
        .ok_or_else(|| TfliteOutError::Write("the model has no subgraph".into()))?;
    let mut b = Builder {
        tensors: sg.tensors.take().unwrap_or_default(),
        buffers: m.buffers.take().unwrap_or_default(),
        offsets: BTreeMap::new(),
    };
    let old_ops = sg.operators.take().unwrap_or_default();
    let first_of: BTreeMap<usize, usize> = part
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| (s.ops[0].index(), i))
        .collect();
    let in_segment: std::collections::BTreeSet<usize> = part
        .segments
        .iter()
        .flat_map(|s| s.ops.iter().map(|o| o.index()))
        .collect();
    let mut ops = Vec::new();
    let mut base = 0u64;
    for (k, op) in old_ops.into_iter().enumerate() {
        let Some(&si) = first_of.get(&k) else {
            if !in_segment.contains(&k) {
                ops.push(op);
            }
            continue;
        };
        let seg = &part.segments[si];
        let c = &seg.model;
        let tag = format!("npuc_segment_{si}");
        let payload = write_cop1(
            c.config_word,
            ETHOS_U85_ID_WORD,
            &c.payload.command_words()?,
        )
        .ok_or_else(|| TfliteOutError::Write(format!("{tag}: command stream too long")))?;
        let cmd = b.bytes_tensor(
            format!("{tag}_command_stream"),
            payload.len(),
            Some(payload),
        );
        let ro = b.bytes_tensor(
            format!("{tag}_read_only"),
            c.read_only.len(),
            Some(c.read_only.clone()),
        );
        let scratch = b.bytes_tensor(format!("{tag}_scratch"), c.arena_size as usize, None);
        b.offsets.insert(scratch as usize, base as i64);
        // Region 2: the fast memory of the Dedicated_Sram modes has a tensor of its own (the
        // runtime maps it to SRAM); otherwise the scratch tensor again, as Vela does.
        let scratch_fast = if c.fast_size > 0 {
            b.bytes_tensor(format!("{tag}_scratch_fast"), c.fast_size as usize, None)
        } else {
            scratch
        };
        let mut inputs = vec![cmd, ro, scratch, scratch_fast];
        for (t, p) in seg.inputs.iter().zip(&c.inputs) {
            let want = (base + p.offset) as i64;
            let mut t = t.index() as i32;
            if b.offsets.get(&(t as usize)).is_some_and(|&o| o != want) {
                // Already placed elsewhere: copy it into this segment's arena.
                let src = b.tensors[t as usize].clone();
                let shape = src.shape.clone().unwrap_or_default();
                let name = format!("{}_{tag}", src.name.as_deref().unwrap_or("t"));
                let copy = b.tensor(name, shape.clone(), src.type_, None);
                b.tensors[copy as usize].quantization = src.quantization.clone();
                let shape_bytes = shape.iter().flat_map(|d| d.to_le_bytes()).collect();
                let shape_t = b.tensor(
                    format!("{tag}_copy_shape_{copy}"),
                    vec![shape.len() as i32],
                    TensorType::INT32,
                    Some(shape_bytes),
                );
                let mut opts = ReshapeOptionsT::default();
                opts.new_shape = Some(shape);
                let mut op = OperatorT::default();
                op.opcode_index = reshape.expect("reshape opcode when copying");
                op.inputs = Some(vec![t, shape_t]);
                op.outputs = Some(vec![copy]);
                op.builtin_options = BuiltinOptionsT::ReshapeOptions(Box::new(opts));
                ops.push(op);
                t = copy;
            }
            b.offsets.insert(t as usize, want);
            inputs.push(t);
        }
        let mut outputs = Vec::new();
        for (t, p) in seg.outputs.iter().zip(&c.outputs) {
            b.offsets.insert(t.index(), (base + p.offset) as i64);
            outputs.push(t.index() as i32);
        }
        let mut op = OperatorT::default();
        op.opcode_index = ethos_u;
        op.inputs = Some(inputs);
        op.outputs = Some(outputs);
        // As Vela writes it: a FlexBuffer holding the integer 1.
        op.custom_options = Some(vec![1, 4, 1]);
        ops.push(op);
        base = (base + c.arena_size).next_multiple_of(SEGMENT_ALIGN);
    }
    // Every other feature map (read or written by CPU operators only, or a graph input or
    // output no segment touches) gets its own slot after the segments' areas.
    let referenced = ops
        .iter()
        .flat_map(|o| {
            let ins = o.inputs.iter().flatten();
            ins.chain(o.outputs.iter().flatten())
        })
        .chain(sg.inputs.iter().flatten())
        .chain(sg.outputs.iter().flatten())
        .copied()
        .filter(|&t| t >= 0)
        .map(|t| t as usize)
        .collect::<std::collections::BTreeSet<usize>>();
    for t in referenced {
        let Some(tensor) = b.tensors.get(t) else {
            continue;
        };
        let constant = b
            .buffers
            .get(tensor.buffer as usize)
            .and_then(|x| x.data.as_ref())
            .is_some_and(|d| !d.is_empty());
        if constant || b.offsets.contains_key(&t) {
            continue;
        }
        let n: u64 = tensor
            .shape
            .iter()
            .flatten()
            .map(|&d| d.max(1) as u64)
            .product();
        b.offsets.insert(t, base as i64);
        base = (base + n * element_bytes(tensor.type_)).next_multiple_of(SEGMENT_ALIGN);
    }
    sg.operators = Some(ops);
    sg.tensors = Some(b.tensors);
    m.buffers = Some(b.buffers);
    let offsets = b.offsets;
    m.subgraphs.as_mut().expect("subgraphs")[0] = sg;
    add_layers(&mut m, &layer_maps(model, part));
    super::compact::compact(&mut m, offsets)?;
    // Room for the buffers' bytes and the tables up front: growing the builder copies all it
    // holds, each time it doubles.
    let data: usize = m
        .buffers
        .iter()
        .flatten()
        .map(|b| b.data.as_ref().map_or(0, Vec::len))
        .sum();
    let mut fbb = flatbuffers::FlatBufferBuilder::with_capacity(data + (1 << 16));
    let root = m.pack(&mut fbb);
    schema::finish_model_buffer(&mut fbb, root);
    Ok(fbb.finished_data().to_vec())
}

/// The layer maps of a partition's segments, in the order their `ethos-u` operators are
/// written (by first operator), with the operators left on the CPU.
fn layer_maps(model: &TfliteModel, part: &Partition) -> LayerMaps {
    let mut segments: Vec<_> = part.segments.iter().collect();
    segments.sort_by_key(|s| s.ops.first().map(|o| o.index()));
    let sg = model.main_subgraph();
    let attributed: Vec<_> = segments
        .iter()
        .map(|s| crate::layers::operator_entries(&s.model))
        .collect();
    LayerMaps {
        // Every segment attributed, or no map at all.
        version: if attributed.iter().all(|(_, ok)| *ok) {
            crate::layers::LAYERS_VERSION
        } else {
            0
        },
        streams: attributed
            .into_iter()
            .map(|(operators, _)| StreamLayers { operators })
            .collect(),
        cpu_operators: part
            .cpu_ops()
            .map(|o| SourceEntry {
                index: Some(o.op as u32),
                op: o.opcode.clone(),
                output: sg
                    .operators
                    .get(o.op)
                    .and_then(|op| op.outputs.first())
                    .and_then(|&t| sg.tensor(t))
                    .map_or_else(String::new, |t| t.name.clone()),
            })
            .collect(),
    }
}

/// Adds the `npuc_layers` metadata ([`crate::layers::TFLITE_METADATA_NAME`]): which source
/// operator each command of each `ethos-u` operator comes from (nothing when there is no map).
pub(super) fn add_layers(m: &mut ModelT, maps: &LayerMaps) {
    use prost::Message;
    let metadata = m.metadata.get_or_insert_with(Vec::new);
    metadata.retain(|e| e.name.as_deref() != Some(crate::layers::TFLITE_METADATA_NAME));
    if maps.version == 0 {
        return;
    }
    let buffers = m.buffers.get_or_insert_with(Vec::new);
    let mut b = BufferT::default();
    b.data = Some(maps.encode_to_vec());
    buffers.push(b);
    let mut e = MetadataT::default();
    e.name = Some(crate::layers::TFLITE_METADATA_NAME.into());
    e.buffer = (buffers.len() - 1) as u32;
    m.metadata.get_or_insert_with(Vec::new).push(e);
}

/// Adds the `OfflineMemoryAllocation` metadata for subgraph 0 (`offsets` by final tensor
/// index; every other tensor gets -1).
pub(super) fn add_offline_allocation(
    m: &mut ModelT,
    n_tensors: usize,
    offsets: &BTreeMap<usize, i64>,
) {
    let mut words: Vec<i32> = vec![0, 1, n_tensors as i32];
    words.extend((0..n_tensors).map(|t| offsets.get(&t).map_or(-1, |&o| o as i32)));
    let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let buffers = m.buffers.get_or_insert_with(Vec::new);
    let mut b = BufferT::default();
    b.data = Some(data);
    buffers.push(b);
    let buffer = (buffers.len() - 1) as u32;
    let metadata = m.metadata.get_or_insert_with(Vec::new);
    metadata.retain(|e| e.name.as_deref() != Some(OFFLINE_MEMORY_ALLOCATION));
    let mut e = MetadataT::default();
    e.name = Some(OFFLINE_MEMORY_ALLOCATION.into());
    e.buffer = buffer;
    metadata.push(e);
}

#[cfg(test)]
mod tests {
    use super::{schema, unpack};

    /// The writer's unpack (buffers copied as slices) gives the generated object API's model
    /// (corpus models with weight buffers).
    #[test]
    fn the_model_is_unpacked_as_the_generated_unpack_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for path in [
            "models/tflite/mobilenet_v1_050_128_clustered.tflite",
            "models/tflite/ds_cnn_16x8.tflite",
            "models/tflite/transformer_encoder.tflite",
        ] {
            let bytes = std::fs::read(root.join(path)).expect(path);
            let generated = schema::root_as_model(&bytes).expect(path).unpack();
            assert!(generated.buffers.iter().flatten().any(|b| b.data.is_some()));
            assert_eq!(unpack(&bytes).expect(path), generated, "{path}");
        }
    }
}
