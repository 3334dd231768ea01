//! Weight and scale/bias streams of a kernel operation (TRM 3.7, 3.9), decoded once per
//! operation through the codecs crate into plain arrays.

use super::error::Fault;
use super::fm::addr40;
use super::memory::Memory;
use crate::arch::ArchConfig;
use crate::isa::{self, RegisterFile};
use npuc_codecs::fwd::{decode_fwd, FwdHeader};
use npuc_codecs::ordering::{
    IfmPrecision, MacsPerCc, Operation, OrderingParams, WeightOrdering, WeightShape,
};
use npuc_codecs::scale::{decode_scale_stream, ScaleStreamParams};
use npuc_codecs::swd;

/// `microblock_depth()` (TRM 3.6.4) for the current ACC_FORMAT.
pub fn microblock_depth(arch: &ArchConfig, regs: &RegisterFile) -> Result<u32, Fault> {
    let macs = MacsPerCc::from_macs(arch.macs_per_cc).ok_or(Fault::Unsupported("macs_per_cc"))?;
    let mb = regs.acc_format.microblock;
    macs.microblock_depth(mb).ok_or_else(|| {
        Fault::assert(
            "3.10.13",
            "microblock permitted for CONFIG.macs_per_cc",
            format!("{} with {} MACs", mb.name(), arch.macs_per_cc),
        )
    })
}

/// Per-channel bias, scale and shift from the scale/bias stream.
#[derive(Debug, Clone, Default)]
pub struct Scales {
    /// `read_bias(oc)`.
    pub bias: Vec<i64>,
    /// `read_scale(oc)`: (scale, shift).
    pub scale: Vec<(i64, u32)>,
    /// Bytes of the stream read (`NPU_SET_SCALE_LENGTH`).
    pub bytes: u64,
}

/// Reads and decodes the scale/bias stream for `ofm_depth` channels.
pub fn read_scales(
    arch: &ArchConfig,
    regs: &RegisterFile,
    mem: &mut Memory,
    ofm_depth: usize,
) -> Result<Scales, Fault> {
    let params = ScaleStreamParams {
        acc: regs.acc_format.acc_format,
        microblock_depth: microblock_depth(arch, regs)?,
        reverse_c: regs.ofm_precision.activation_reverse == isa::ActivationReverse::C,
    };
    let base = addr40(regs.scale_base.addr_hi, regs.scale_base.addr_lo);
    let length = u64::from(regs.scale_length.length);
    let expected = params
        .stream_len(ofm_depth)
        .map_err(|e| Fault::Scales(e.to_string()))? as u64;
    if length < expected {
        return Err(Fault::Scales(format!(
            "NPU_SET_SCALE_LENGTH {length} is shorter than the {expected} bytes {ofm_depth} channels need"
        )));
    }
    let unknown = mem.constants_unknown();
    let bytes = mem.read_stream_bytes(regs.scale_region.region, base, length)?;
    if unknown {
        return Ok(Scales {
            bias: vec![0; ofm_depth],
            scale: vec![(1 << 30, 30); ofm_depth],
            bytes: length,
        });
    }
    let records = decode_scale_stream(&bytes[..expected as usize], ofm_depth, &params)
        .map_err(|e| Fault::Scales(e.to_string()))?;
    Ok(Scales {
        bias: records.iter().map(|r| r.bias).collect(),
        scale: records
            .iter()
            .map(|r| (i64::from(r.scale), u32::from(r.shift)))
            .collect(),
        bytes: length,
    })
}

/// Decoded weights in `[oc][ky][kx][ic]` order (undilated kernel; `ic` is 1 for depthwise).
#[derive(Debug, Clone)]
pub struct Weights {
    /// Shape.
    pub shape: WeightShape,
    /// Values, C order (empty when [`read_weights`] did not make them).
    pub values: Vec<i32>,
    /// Encoded bytes read (sum of the WEIGHT*_LENGTH of the streams used).
    pub bytes: u64,
}

/// The ordering parameters of the current registers (TRM 3.9.2).
pub fn ordering_params(
    arch: &ArchConfig,
    regs: &RegisterFile,
    depthwise: bool,
) -> Result<OrderingParams, Fault> {
    let ks = regs.kernel_stride;
    let stride = |lsb: u8, msb: u8| 2 * u32::from(msb) + u32::from(lsb) + 1;
    Ok(OrderingParams {
        operation: if depthwise {
            Operation::Depthwise
        } else {
            Operation::Conv
        },
        weight_order: ks.weight_order,
        ifm_precision: match regs.ifm_precision.activation_precision {
            isa::ActivationPrecision::B16 => IfmPrecision::B16,
            _ => IfmPrecision::B8,
        },
        weight_sparsity: regs.weight_format.weight_sparsity,
        stride_x: stride(ks.stride_x_lsb, ks.stride_x_msb),
        stride_y: stride(ks.stride_y_lsb, ks.stride_y_msb),
        dilation_x: ks.dilation_x,
        dilation_y: ks.dilation_y,
        decomposition: ks.decomposition,
        ofm_block_depth: u32::from(regs.ofm_blk_depth_m1.depth_m1) + 1,
        microblock: regs.acc_format.microblock,
        macs_per_cc: MacsPerCc::from_macs(arch.macs_per_cc)
            .ok_or(Fault::Unsupported("macs_per_cc"))?,
    })
}

/// Reads and decodes the weights of the current CONV/DEPTHWISE operation.
///
/// Without `values` (a check-only operation, [`super::validate::check_only_op`], computes no
/// output) dense SWD streams are walked as [`swd::decode::decode`] walks them, with the same
/// checks and errors, but their values are not made ([`swd::decode::decoded_len`]) and
/// [`Weights::values`] is empty. FWD and 2:4 sparse streams are decoded all the same (the
/// TRM 3.10.63 assert is on the values).
pub fn read_weights(
    arch: &ArchConfig,
    regs: &RegisterFile,
    mem: &mut Memory,
    shape: WeightShape,
    depthwise: bool,
    values: bool,
) -> Result<Weights, Fault> {
    let params = ordering_params(arch, regs, depthwise)?;
    let ordering_fault = |e: npuc_codecs::ordering::OrderingError| Fault::Weights(e.to_string());
    let region = regs.weight_region.region;
    let fwd = regs.weight_format.weight_format == isa::WeightFormat::Fwd;
    let streams_meta = [
        (
            addr40(regs.weight_base.addr_hi, regs.weight_base.addr_lo),
            regs.weight_length.length,
        ),
        (
            addr40(regs.weight1_base.addr_hi, regs.weight1_base.addr_lo),
            regs.weight1_length.length,
        ),
        (
            addr40(regs.weight2_base.addr_hi, regs.weight2_base.addr_lo),
            regs.weight2_length.length,
        ),
        (
            addr40(regs.weight3_base.addr_hi, regs.weight3_base.addr_lo),
            regs.weight3_length.length,
        ),
    ];
    let mut bytes_read = 0u64;
    let walk_only =
        !values && !fwd && regs.weight_format.weight_sparsity != isa::WeightSparsity::Sparse24;
    if mem.constants_unknown() || walk_only {
        // Without the values, the streams' lengths are all the order gives (without its table).
        let stream_lens = WeightOrdering::stream_lens(&params, shape).map_err(ordering_fault)?;
        return read_lengths_only(mem, region, fwd, &streams_meta, &stream_lens, shape);
    }
    let ordering = WeightOrdering::new(&params, shape).map_err(ordering_fault)?;
    let n = ordering.num_streams();
    let streams: Vec<Vec<i16>> = if fwd {
        let (base, len) = streams_meta[0];
        let bytes = mem.read_stream_bytes(region, base, u64::from(len))?;
        bytes_read += u64::from(len);
        let count = ordering.stream_len(0) * n;
        let header = FwdHeader::parse(bytes).map_err(|e| Fault::Weights(e.to_string()))?;
        let per_word = header.mode().weights_per_word();
        let need = 32 * (1 + count.div_ceil(per_word));
        if bytes.len() < need {
            return Err(Fault::Weights(format!(
                "FWD stream of {} bytes is shorter than the {need} bytes {count} weights need",
                bytes.len()
            )));
        }
        let merged =
            decode_fwd(&bytes[..need], count).map_err(|e| Fault::Weights(e.to_string()))?;
        ordering.split_fwd(&merged)
    } else {
        let mut out = Vec::with_capacity(n);
        for (k, &(base, len)) in streams_meta.iter().enumerate().take(n) {
            let bytes = mem.read_stream_bytes(region, base, u64::from(len))?;
            bytes_read += u64::from(len);
            let want = ordering.stream_len(k);
            let values = swd::decode::decode(bytes, want)
                .map_err(|e| Fault::Weights(format!("stream {k}: {e}")))?;
            if values.len() != want {
                return Err(Fault::Weights(format!(
                    "stream {k} decodes to {} weights, the ordering needs {want}",
                    values.len()
                )));
            }
            out.push(values);
        }
        out
    };
    let mut values = vec![0i32; shape.len()];
    for (k, stream) in streams.iter().enumerate() {
        for (src, &v) in ordering.stream_sources(k).zip(stream) {
            if let Some(i) = src {
                values[i] = i32::from(v);
            }
        }
    }
    if regs.weight_format.weight_sparsity == isa::WeightSparsity::Sparse24 {
        check_sparse_2_4(&values, shape)?;
    }
    Ok(Weights {
        shape,
        values,
        bytes: bytes_read,
    })
}

/// [`read_weights`] where no value is made: with the constants unknown, the streams' bytes are
/// read and the weights are zeros; else (a check-only operation's dense SWD streams) each
/// stream is walked as [`swd::decode::decode`] walks it, with the same checks and errors,
/// counting its weights ([`swd::decode::decoded_len`]), and the values are left empty.
/// `stream_lens`: the weights (and padding) the ordering puts in each stream.
fn read_lengths_only(
    mem: &mut Memory,
    region: u8,
    fwd: bool,
    streams_meta: &[(u64, u32); 4],
    stream_lens: &[usize],
    shape: WeightShape,
) -> Result<Weights, Fault> {
    let n = stream_lens.len();
    let mut bytes_read = 0u64;
    if mem.constants_unknown() {
        let lengths = if fwd {
            &streams_meta[..1]
        } else {
            &streams_meta[..n.min(4)]
        };
        for &(base, len) in lengths {
            mem.read_stream_bytes(region, base, u64::from(len))?;
            bytes_read += u64::from(len);
        }
        return Ok(Weights {
            shape,
            values: vec![0; shape.len()],
            bytes: bytes_read,
        });
    }
    for (k, &(base, len)) in streams_meta.iter().enumerate().take(n) {
        let bytes = mem.read_stream_bytes(region, base, u64::from(len))?;
        bytes_read += u64::from(len);
        let want = stream_lens[k];
        let count = swd::decode::decoded_len(bytes, want)
            .map_err(|e| Fault::Weights(format!("stream {k}: {e}")))?;
        if count != want {
            return Err(Fault::Weights(format!(
                "stream {k} decodes to {count} weights, the ordering needs {want}"
            )));
        }
    }
    Ok(Weights {
        shape,
        values: Vec::new(),
        bytes: bytes_read,
    })
}

/// TRM 3.10.63 `sparse_2_4`: weights in -127..=127 and at most 2 non-zero weights in each
/// group of 4 consecutive input channels (channels 4g..4g+3 of one output channel and kernel
/// position; a last group of fewer than 4 channels included). docs/decisions.md, simulator #31.
fn check_sparse_2_4(values: &[i32], shape: WeightShape) -> Result<(), Fault> {
    let c = shape.ifm_depth.max(1);
    for (row, taps) in values.chunks(c).enumerate() {
        let (oc, k) = (row / (shape.kernel_height * shape.kernel_width).max(1), row);
        for (g, group) in taps.chunks(4).enumerate() {
            if let Some(&v) = group.iter().find(|v| !(-127..=127).contains(*v)) {
                return Err(Fault::assert(
                    "3.10.63",
                    "sparse_2_4: weight stream values in the range -127 to +127",
                    format!("weight {v} of OFM channel {oc}"),
                ));
            }
            let nonzero = group.iter().filter(|&&v| v != 0).count();
            if nonzero > 2 {
                return Err(Fault::assert(
                    "3.10.63",
                    "sparse_2_4: 2 out of each group of 4 weights in the input channel dimension are zero",
                    format!(
                        "OFM channel {oc}, kernel position {}, input channels {}..{}: {group:?}",
                        k % (shape.kernel_height * shape.kernel_width).max(1),
                        4 * g,
                        4 * g + group.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}
