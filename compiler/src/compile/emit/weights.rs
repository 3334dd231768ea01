//! Weight and scale streams of one operation into the read-only region, and their registers.

use super::*;
use npuc_codecs::ordering::IfmPrecision;
use npuc_codecs::scale::AccFormat as CodecAcc;

/// Encodes the scale stream and the weight streams of `op` (if it has weights) into `ro`,
/// emits their region/base/length registers and returns the weight order used.
pub(super) fn weight_commands(
    w: &mut Writer,
    ro: &mut Vec<u8>,
    target: &dyn Target,
    op: &NpuOp,
    geom: &OpGeometry,
    block: &BlockConfig,
) -> Result<WeightOrder, CompileError> {
    let enc_err = |source| CompileError::Encode {
        name: op.name.clone(),
        source,
    };
    let mut order = WeightOrder::DepthFirst;
    // Read-only data: scale stream, then the weight streams.
    if let Some(weights) = &op.weights {
        let Requant::PerChannel(channels) = &op.requant else {
            return Err(CompileError::Stream(format!(
                "{}: weights without per-channel scales",
                op.name
            )));
        };
        let acc = match op.acc {
            AccFormat::I32 => CodecAcc::I32,
            AccFormat::I48 => CodecAcc::I48,
        };
        let scales = target
            .encode_scales(channels, acc, block)
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
        order = match enc.order {
            CodecOrder::DepthFirst => WeightOrder::DepthFirst,
            CodecOrder::PartKernelFirst => WeightOrder::PartKernelFirst,
        };
        align16(ro);
        let (shi, slo) = addr(ro.len() as u64);
        ro.extend_from_slice(&scales);
        w.set(Command::SetScaleRegion(SetScaleRegion {
            region: REGION_READ_ONLY,
        }));
        w.set(Command::SetScaleBase(SetScaleBase {
            addr_hi: shi,
            addr_lo: slo,
        }));
        w.set(Command::SetScaleLength(SetScaleLength {
            length: scales.len() as u32,
        }));
        w.set(Command::SetWeightFormat(SetWeightFormat {
            weight_format: WeightFormat::Swd,
            weight_sparsity: WeightSparsity::None,
        }));
        w.set(Command::SetWeightRegion(SetWeightRegion {
            region: REGION_READ_ONLY,
        }));
        for (k, s) in enc.streams.iter().enumerate() {
            align16(ro);
            let (hi, lo) = addr(ro.len() as u64);
            let len = s.len() as u32;
            ro.extend_from_slice(s);
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
    Ok(order)
}
