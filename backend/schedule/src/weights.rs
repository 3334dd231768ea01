//! Weight and scale streams of one operation: encoding, their layout as one contiguous block
//! (the unit a staging DMA copies) and their region/base/length registers.

use super::regs::align16;
use npuc_backend::isa::{DmaRegionMode, WeightFormat, WeightSparsity};
use npuc_backend::writer::dma::write_copy;
use npuc_backend::writer::streams::write_streams;
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{NpuOp, Requant};
use npuc_codecs::ordering::{IfmPrecision, OhwiWeights};
use npuc_target::arch_interface::REGION_READ_ONLY;
use npuc_target::arch_interface::{BlockConfig, OpGeometry, Target, TargetError, WeightStreams};

/// The encoded scale stream and weight streams (one per weight decoder, or one FWD stream)
/// of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Encoded {
    /// The block the streams are for.
    pub block: BlockConfig,
    pub scales: Vec<u8>,
    /// The weight streams; empty while only their lengths are known ([`counted`], [`count`];
    /// [`encode_counted`] makes them).
    pub streams: Vec<Vec<u8>>,
    /// The byte length of each weight stream.
    pub stream_lens: Vec<u64>,
    pub format: WeightStreams,
    pub sparse: bool,
    /// Number of weights the streams encode (one byte each before compression).
    pub weight_count: u64,
}

/// How a stream block is laid out: how the weights are streamed and whether sparse, and the
/// offset and length of the scale stream, then of each weight stream, within the block (each
/// part 16-byte aligned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Layout {
    pub format: WeightStreams,
    pub sparse: bool,
    pub parts: Vec<(u64, u32)>,
}

impl Layout {
    /// The layout of parts of `lens` bytes (scale stream first).
    pub(super) fn new(
        format: WeightStreams,
        sparse: bool,
        lens: impl IntoIterator<Item = u64>,
    ) -> Layout {
        let mut at = 0u64;
        let parts = lens
            .into_iter()
            .map(|len| {
                let p = (at, len as u32);
                at = (at + len).next_multiple_of(16);
                p
            })
            .collect();
        Layout {
            format,
            sparse,
            parts,
        }
    }
}

impl Encoded {
    /// Its layout.
    pub(super) fn layout(&self) -> Layout {
        Layout::new(
            self.format,
            self.sparse,
            std::iter::once(self.scales.len() as u64).chain(self.stream_lens.iter().copied()),
        )
    }

    /// The block: the parts at their offsets, zero padded to 16 bytes.
    pub(super) fn block(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for s in std::iter::once(&self.scales).chain(&self.streams) {
            out.extend_from_slice(s);
            align16(&mut out);
        }
        out
    }

    /// Size of the block in bytes.
    pub(super) fn size(&self) -> u64 {
        std::iter::once(self.scales.len() as u64)
            .chain(self.stream_lens.iter().copied())
            .map(|len| len.next_multiple_of(16))
            .sum()
    }
}

/// Encodes the scale stream and the weight streams of `op` for `block` (`None` for an
/// operation without a weight stream).
pub(super) fn encode(
    target: &dyn Target,
    op: &NpuOp,
    geom: &OpGeometry,
    block: &BlockConfig,
) -> Result<Option<Encoded>, TargetError> {
    let Some((weights, precision, scales)) = prepare(target, op, block)? else {
        return Ok(None);
    };
    let enc = target
        .encode_weights(geom.kind, weights, precision, op.stride, op.dilation, block)
        .map_err(enc_err(op))?;
    let stream_lens = enc.streams.iter().map(|s| s.len() as u64).collect();
    Ok(Some(Encoded {
        block: *block,
        scales,
        streams: enc.streams,
        stream_lens,
        format: block.weight_streams,
        sparse: block.sparse,
        weight_count: weights.values().len() as u64,
    }))
}

/// Like [`encode`] for each of `ops`, the OFM-depth slices of one operation (`geom`: the
/// geometry of any of them; they share kernel kind, IFM precision, stride and dilation), with
/// the weight streams' lengths only (counted by the target without making the streams,
/// exactly those [`encode`] gives, and for all slices at once, so that slices of one shape
/// share the work that depends on the shape alone): for costing candidates. `None` if one
/// of them has no weight stream.
pub(super) fn counted(
    target: &dyn Target,
    ops: &[NpuOp],
    geom: &OpGeometry,
    block: &BlockConfig,
) -> Result<Option<Vec<Encoded>>, TargetError> {
    let Some(first) = ops.first() else {
        return Ok(Some(Vec::new()));
    };
    let mut prepared = Vec::with_capacity(ops.len());
    for op in ops {
        let Some(p) = prepare(target, op, block)? else {
            return Ok(None);
        };
        prepared.push(p);
    }
    let precision = prepared[0].1;
    let shared = (precision, first.stride, first.dilation);
    if let Some((_, op)) = prepared
        .iter()
        .zip(ops)
        .find(|(p, op)| (p.1, op.stride, op.dilation) != shared)
    {
        return Err(TargetError::Stream(format!(
            "{}: slices of one operation with different IFM precisions, strides or dilations",
            op.name
        )));
    }
    let weights: Vec<&OhwiWeights> = prepared.iter().map(|p| p.0).collect();
    let lens = target
        .weight_stream_lengths(
            geom.kind,
            &weights,
            precision,
            first.stride,
            first.dilation,
            block,
        )
        .map_err(enc_err(first))?;
    Ok(Some(
        prepared
            .into_iter()
            .zip(lens)
            .map(|((weights, _, scales), stream_lens)| Encoded {
                block: *block,
                scales,
                streams: Vec::new(),
                stream_lens,
                format: block.weight_streams,
                sparse: block.sparse,
                weight_count: weights.values().len() as u64,
            })
            .collect(),
    ))
}

/// Like [`counted`] for `ops`, the OFM-depth slices of the operation whose SWD streams
/// `whole` holds, each with `per_channel` weights per OFM channel, with the weight streams'
/// lengths estimated rather than counted: each stream of a slice is taken to be as long per
/// weight as the operation's stream is ([`estimated_length`]). The slices need no weight
/// values (`ops` may be without them). For ranking slice candidates before the ones taken
/// are counted (decision S24).
pub(super) fn estimated(
    target: &dyn Target,
    ops: &[NpuOp],
    block: &BlockConfig,
    whole: &Encoded,
    per_channel: u64,
) -> Result<Vec<Encoded>, TargetError> {
    ops.iter()
        .map(|op| {
            let weight_count = per_channel * u64::from(op.ofm.shape.2);
            Ok(Encoded {
                block: *block,
                scales: scale_stream(target, op, block)?,
                streams: Vec::new(),
                stream_lens: whole
                    .stream_lens
                    .iter()
                    .map(|&len| estimated_length(len, whole.weight_count, weight_count))
                    .collect(),
                format: block.weight_streams,
                sparse: block.sparse,
                weight_count,
            })
        })
        .collect()
}

/// The estimated length of an SWD stream of `part` of the `whole` weights a stream of `len`
/// bytes encodes: `len` pro rata, rounded up to the stream's 16-byte alignment. (On the
/// corpus's slice candidates, all five configurations, the counted lengths are on average
/// 0.7 % below this, the median equal; decision S24.)
pub(super) fn estimated_length(len: u64, whole: u64, part: u64) -> u64 {
    (len * part).div_ceil(whole.max(1)).next_multiple_of(16)
}

/// Like [`encode`], with the weight streams' lengths only ([`counted`] for one operation):
/// for costing a block candidate; [`encode_counted`] makes the streams of the one chosen.
pub(super) fn count(
    target: &dyn Target,
    op: &NpuOp,
    geom: &OpGeometry,
    block: &BlockConfig,
) -> Result<Option<Encoded>, TargetError> {
    Ok(counted(target, std::slice::from_ref(op), geom, block)?.and_then(|mut e| e.pop()))
}

/// Makes the weight streams of `enc` (from [`count`] or [`counted`] for `op`) if only their
/// lengths are known: exactly as long as counted, or an error.
pub(super) fn encode_counted(
    target: &dyn Target,
    op: &NpuOp,
    enc: &mut Encoded,
) -> Result<(), TargetError> {
    if enc.streams.len() == enc.stream_lens.len() {
        return Ok(());
    }
    let made = encode(target, op, &super::geometry(op), &enc.block)?;
    match made {
        Some(e) if e.stream_lens == enc.stream_lens && e.scales == enc.scales => {
            enc.streams = e.streams;
            Ok(())
        }
        other => Err(TargetError::Stream(format!(
            "{}: weight streams of {:?} bytes, counted {:?}",
            op.name,
            other.map(|e| e.stream_lens),
            enc.stream_lens
        ))),
    }
}

/// The error of encoding `op`'s streams.
fn enc_err(op: &NpuOp) -> impl Fn(TargetError) -> TargetError + '_ {
    |source| TargetError::Encode {
        name: op.name.clone(),
        source: Box::new(source),
    }
}

/// An operation's weights, its IFM precision and its encoded scale stream.
type Prepared<'a> = (&'a OhwiWeights, IfmPrecision, Vec<u8>);

/// `op`'s weights, its IFM precision and its encoded scale stream for `block` (`None` for an
/// operation without weights).
fn prepare<'a>(
    target: &dyn Target,
    op: &'a NpuOp,
    block: &BlockConfig,
) -> Result<Option<Prepared<'a>>, TargetError> {
    let Some(weights) = &op.weights else {
        return Ok(None);
    };
    let scales = scale_stream(target, op, block)?;
    let ifm_precision = if op.ifm.elem_bytes() == 2 {
        IfmPrecision::B16
    } else {
        IfmPrecision::B8
    };
    Ok(Some((weights, ifm_precision, scales)))
}

/// `op`'s scale stream for `block`.
fn scale_stream(
    target: &dyn Target,
    op: &NpuOp,
    block: &BlockConfig,
) -> Result<Vec<u8>, TargetError> {
    let Requant::PerChannel(channels) = &op.requant else {
        return Err(TargetError::Stream(format!(
            "{}: weights without per-channel scales",
            op.name
        )));
    };
    target
        .encode_scales(channels, op.acc, block)
        .map_err(enc_err(op))
}

/// Emits the scale and weight registers for a stream block laid out as `layout` at `base` in
/// `region`.
pub(super) fn weight_registers(w: &mut CommandWriter, layout: &Layout, region: u8, base: u64) {
    write_streams(
        w,
        (region, base),
        &layout.parts,
        match layout.format {
            WeightStreams::PerDecoder => WeightFormat::Swd,
            WeightStreams::Single => WeightFormat::Fwd,
        },
        if layout.sparse {
            WeightSparsity::Sparse24
        } else {
            WeightSparsity::None
        },
    );
}

/// Emits a DMA copying `len` bytes from region 0 at `src` to `region` at `dst`
/// (mem2mem, 1D, external destination).
pub(super) fn dma_commands(w: &mut CommandWriter, src: u64, region: u8, dst: u64, len: u64) {
    copy_commands(w, (REGION_READ_ONLY, src), (region, dst), len);
}

/// Emits a DMA copying `len` bytes from `(region, address)` `src` to `dst` (mem2mem, 1D,
/// external destination).
pub(super) fn copy_commands(w: &mut CommandWriter, src: (u8, u64), dst: (u8, u64), len: u64) {
    write_copy(w, src, dst, DmaRegionMode::External, len);
}

#[cfg(test)]
mod tests {
    use super::estimated_length;

    #[test]
    fn a_slice_stream_is_estimated_pro_rata_in_whole_16_byte_units() {
        // A quarter of 1,000 weights coded in 4,000 bytes: 1,000 bytes, 1,008 aligned.
        assert_eq!(estimated_length(4_000, 1_000, 250), 1_008);
        // Exact multiples stay; the whole is the whole.
        assert_eq!(estimated_length(4_096, 1_024, 512), 2_048);
        assert_eq!(estimated_length(4_096, 1_024, 1_024), 4_096);
        // One weight of many still takes one unit; no weights, none.
        assert_eq!(estimated_length(4_096, 1_000_000, 1), 16);
        assert_eq!(estimated_length(4_096, 1_000, 0), 0);
    }
}
