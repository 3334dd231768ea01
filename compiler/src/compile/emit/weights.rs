//! Weight and scale streams of one operation: encoding, their layout as one contiguous block
//! (the unit a staging DMA copies) and their region/base/length registers.

use super::regs::align16;
use super::{addr, Writer};
use crate::arch_interface::{BlockConfig, OpGeometry, Target};
use crate::compile::lower::{NpuOp, Requant};
use crate::compile::{CompileError, REGION_READ_ONLY};
use npuc_backend::isa::{
    Command, DmaIdxMode, DmaRegionMode, DmaStrideMode, OpDmaStart, SetDma0Dst, SetDma0DstRegion,
    SetDma0Len, SetDma0Src, SetDma0SrcRegion, SetScaleBase, SetScaleLength, SetScaleRegion,
    SetWeight1Base, SetWeight1Length, SetWeight2Base, SetWeight2Length, SetWeight3Base,
    SetWeight3Length, SetWeightBase, SetWeightFormat, SetWeightLength, SetWeightRegion,
    WeightFormat, WeightSparsity,
};
use npuc_codecs::ordering::IfmPrecision;

/// The encoded scale stream and weight streams (one per weight decoder, or one FWD stream)
/// of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Encoded {
    pub scales: Vec<u8>,
    pub streams: Vec<Vec<u8>>,
    pub format: WeightFormat,
    pub sparsity: WeightSparsity,
    /// Number of weights the streams encode (one byte each before compression).
    pub weight_count: u64,
}

/// How a stream block is laid out: the weight format, and the offset and length of the scale
/// stream, then of each weight stream, within the block (each part 16-byte aligned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Layout {
    pub format: WeightFormat,
    pub sparsity: WeightSparsity,
    pub parts: Vec<(u64, u32)>,
}

impl Layout {
    /// The layout of parts of `lens` bytes (scale stream first).
    pub(super) fn new(
        format: WeightFormat,
        sparsity: WeightSparsity,
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
            sparsity,
            parts,
        }
    }
}

impl Encoded {
    /// Its layout.
    pub(super) fn layout(&self) -> Layout {
        Layout::new(
            self.format,
            self.sparsity,
            std::iter::once(&self.scales)
                .chain(&self.streams)
                .map(|s| s.len() as u64),
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
        std::iter::once(&self.scales)
            .chain(&self.streams)
            .map(|s| (s.len() as u64).next_multiple_of(16))
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
) -> Result<Option<Encoded>, CompileError> {
    let Some(weights) = &op.weights else {
        return Ok(None);
    };
    let enc_err = |source| CompileError::Encode {
        name: op.name.clone(),
        source,
    };
    let Requant::PerChannel(channels) = &op.requant else {
        return Err(CompileError::Stream(format!(
            "{}: weights without per-channel scales",
            op.name
        )));
    };
    let scales = target
        .encode_scales(channels, op.acc, block)
        .map_err(enc_err)?;
    let ifm_precision = if op.ifm.elem_bytes() == 2 {
        IfmPrecision::B16
    } else {
        IfmPrecision::B8
    };
    let enc = target
        .encode_weights(
            geom.kind,
            weights,
            ifm_precision,
            op.stride,
            op.dilation,
            block,
        )
        .map_err(enc_err)?;
    Ok(Some(Encoded {
        scales,
        streams: enc.streams,
        format: block.weight_format,
        sparsity: block.weight_sparsity,
        weight_count: weights.values().len() as u64,
    }))
}

/// Emits the scale and weight registers for a stream block laid out as `layout` at `base` in
/// `region`.
pub(super) fn weight_registers(w: &mut Writer, layout: &Layout, region: u8, base: u64) {
    let parts = &layout.parts;
    let (shi, slo) = addr(base + parts[0].0);
    w.set(Command::SetScaleRegion(SetScaleRegion { region }));
    w.set(Command::SetScaleBase(SetScaleBase {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetScaleLength(SetScaleLength {
        length: parts[0].1,
    }));
    w.set(Command::SetWeightFormat(SetWeightFormat {
        weight_format: layout.format,
        weight_sparsity: layout.sparsity,
    }));
    w.set(Command::SetWeightRegion(SetWeightRegion { region }));
    for (k, &(off, len)) in parts[1..].iter().enumerate() {
        let (hi, lo) = addr(base + off);
        let (b, l) = match k {
            0 => (
                Command::SetWeightBase(SetWeightBase {
                    addr_hi: hi,
                    addr_lo: lo,
                }),
                Command::SetWeightLength(SetWeightLength { length: len }),
            ),
            1 => (
                Command::SetWeight1Base(SetWeight1Base {
                    addr_hi: hi,
                    addr_lo: lo,
                }),
                Command::SetWeight1Length(SetWeight1Length { length: len }),
            ),
            2 => (
                Command::SetWeight2Base(SetWeight2Base {
                    addr_hi: hi,
                    addr_lo: lo,
                }),
                Command::SetWeight2Length(SetWeight2Length { length: len }),
            ),
            _ => (
                Command::SetWeight3Base(SetWeight3Base {
                    addr_hi: hi,
                    addr_lo: lo,
                }),
                Command::SetWeight3Length(SetWeight3Length { length: len }),
            ),
        };
        w.set(b);
        w.set(l);
    }
}

/// Emits a DMA copying `len` bytes from region 0 at `src` to `region` at `dst`
/// (mem2mem, 1D, external destination).
pub(super) fn dma_commands(w: &mut Writer, src: u64, region: u8, dst: u64, len: u64) {
    copy_commands(w, (REGION_READ_ONLY, src), (region, dst), len);
}

/// Emits a DMA copying `len` bytes from `(region, address)` `src` to `dst` (mem2mem, 1D,
/// external destination).
pub(super) fn copy_commands(
    w: &mut Writer,
    (sr, src): (u8, u64),
    (region, dst): (u8, u64),
    len: u64,
) {
    let (shi, slo) = addr(src);
    let (dhi, dlo) = addr(dst);
    let (lhi, llo) = addr(len);
    w.set(Command::SetDma0SrcRegion(SetDma0SrcRegion {
        region: sr,
        region_mode: DmaRegionMode::External,
        stride_mode: DmaStrideMode::D1,
        idx_mode: DmaIdxMode::Disabled,
    }));
    w.set(Command::SetDma0Src(SetDma0Src {
        addr_hi: shi,
        addr_lo: slo,
    }));
    w.set(Command::SetDma0DstRegion(SetDma0DstRegion {
        region,
        region_mode: DmaRegionMode::External,
        idx_mode: DmaIdxMode::Disabled,
    }));
    w.set(Command::SetDma0Dst(SetDma0Dst {
        addr_hi: dhi,
        addr_lo: dlo,
    }));
    w.set(Command::SetDma0Len(SetDma0Len {
        addr_hi: lhi,
        addr_lo: llo,
    }));
    w.op(Command::OpDmaStart(OpDmaStart {}));
}
