//! Constructors of [`NpuOp`], one per kernel kind, and its `with_*` builders: the one place
//! that says what an operation is by default.

use crate::elementwise::logical::IDENTITY;
use crate::{DmaCopy, Fm, InputScale, Kernel, NpuOp, Requant, ResizeParams};
use npuc_backend::isa::{AccFormat, ElementwiseMode, IfmUpscaleMode, PoolingMode, RoundModeOfm};
use npuc_codecs::ordering::OhwiWeights;

/// Constructors (one per kernel kind) and builders of [`NpuOp`]. The defaults live here only:
/// no IFM2, a 1x1 kernel with unit stride and dilation and no padding, no weights, the unit
/// global scale (`OFM_SCALE` 1, shift 0) with natural rounding, no input scales, the 32-bit
/// accumulator and no IFM upscaling. The activation clamp `act` is always given.
impl NpuOp {
    /// An operation of `kernel` from `ifm` to `ofm` with the defaults; the constructors below
    /// name the kernel.
    pub fn new(
        kernel: Kernel,
        name: String,
        fused: Vec<String>,
        ifm: Fm,
        ofm: Fm,
        act: (i64, i64),
    ) -> NpuOp {
        NpuOp {
            name,
            fused,
            kernel,
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (1, 1),
            stride: (1, 1),
            dilation: (1, 1),
            pad: [0; 4],
            weights: None,
            requant: Requant::Global { scale: 1, shift: 0 },
            round: RoundModeOfm::Natural,
            ifm_scale: None,
            ifm2_scale: None,
            act,
            acc: AccFormat::I32,
            upscale: IfmUpscaleMode::None,
        }
    }

    /// NPU_OP_CONV.
    pub fn conv(name: String, fused: Vec<String>, ifm: Fm, ofm: Fm, act: (i64, i64)) -> NpuOp {
        NpuOp::new(Kernel::Conv, name, fused, ifm, ofm, act)
    }

    /// NPU_OP_DEPTHWISE.
    pub fn depthwise(name: String, fused: Vec<String>, ifm: Fm, ofm: Fm, act: (i64, i64)) -> NpuOp {
        NpuOp::new(Kernel::Depthwise, name, fused, ifm, ofm, act)
    }

    /// NPU_OP_POOL in `mode`.
    pub fn pool(
        mode: PoolingMode,
        name: String,
        fused: Vec<String>,
        ifm: Fm,
        ofm: Fm,
        act: (i64, i64),
    ) -> NpuOp {
        NpuOp::new(Kernel::Pool(mode), name, fused, ifm, ofm, act)
    }

    /// NPU_OP_ELEMENTWISE in `mode` (the second operand: [`NpuOp::with_ifm2`]).
    pub fn elementwise(
        mode: ElementwiseMode,
        name: String,
        fused: Vec<String>,
        ifm: Fm,
        ofm: Fm,
        act: (i64, i64),
    ) -> NpuOp {
        NpuOp::new(Kernel::Elementwise(mode), name, fused, ifm, ofm, act)
    }

    /// An ELEMENTWISE ADD of the scalar 0 to `ifm`: IFM2 is `ifm`'s element type broadcast
    /// from 1x1x1 with zero point 0, both input scales the identity, so the result is
    /// `ifm - ifm.zero_point` exactly, written to `ofm` (a change of type or zero point) in
    /// the accumulator `acc`. The caller registers the scalar (IFM2, value 0) at the
    /// operation's index.
    pub fn add_zero(name: String, ifm: Fm, ofm: Fm, act: (i64, i64), acc: AccFormat) -> NpuOp {
        NpuOp::elementwise(ElementwiseMode::Add, name, Vec::new(), ifm, ofm, act)
            .with_ifm2(Fm {
                shape: (1, 1, 1),
                broadcast: (true, true, true),
                zero_point: 0,
                ..ifm
            })
            .with_ifm_scale(IDENTITY)
            .with_ifm2_scale(IDENTITY)
            .with_acc(acc)
    }

    /// NPU_OP_RESIZE with `params`.
    pub fn resize(
        params: ResizeParams,
        name: String,
        fused: Vec<String>,
        ifm: Fm,
        ofm: Fm,
        act: (i64, i64),
    ) -> NpuOp {
        NpuOp::new(Kernel::Resize(params), name, fused, ifm, ofm, act)
    }

    /// NPU_OP_DMA_START copying `ifm` to `ofm` as `copy` says.
    pub fn dma(
        copy: DmaCopy,
        name: String,
        fused: Vec<String>,
        ifm: Fm,
        ofm: Fm,
        act: (i64, i64),
    ) -> NpuOp {
        NpuOp::new(Kernel::Dma(copy), name, fused, ifm, ofm, act)
    }

    /// The second input feature map (`None`: none).
    pub fn with_ifm2(self, ifm2: impl Into<Option<Fm>>) -> NpuOp {
        NpuOp {
            ifm2: ifm2.into(),
            ..self
        }
    }

    /// The undilated kernel height and width.
    pub fn with_kernel_size(self, kernel_size: (u32, u32)) -> NpuOp {
        NpuOp {
            kernel_size,
            ..self
        }
    }

    /// Stride y, x.
    pub fn with_stride(self, stride: (u32, u32)) -> NpuOp {
        NpuOp { stride, ..self }
    }

    /// Dilation y, x.
    pub fn with_dilation(self, dilation: (u32, u32)) -> NpuOp {
        NpuOp { dilation, ..self }
    }

    /// Padding top, bottom, left, right.
    pub fn with_pad(self, pad: [u32; 4]) -> NpuOp {
        NpuOp { pad, ..self }
    }

    /// OHWI weights (zero point subtracted; `None`: none).
    pub fn with_weights(self, weights: impl Into<Option<OhwiWeights>>) -> NpuOp {
        NpuOp {
            weights: weights.into(),
            ..self
        }
    }

    /// How the accumulator is requantized.
    pub fn with_requant(self, requant: Requant) -> NpuOp {
        NpuOp { requant, ..self }
    }

    /// The OFM round mode.
    pub fn with_round(self, round: RoundModeOfm) -> NpuOp {
        NpuOp { round, ..self }
    }

    /// The IFM input scale (`None`: none).
    pub fn with_ifm_scale(self, ifm_scale: impl Into<Option<InputScale>>) -> NpuOp {
        NpuOp {
            ifm_scale: ifm_scale.into(),
            ..self
        }
    }

    /// The IFM2 input scale (`None`: none).
    pub fn with_ifm2_scale(self, ifm2_scale: impl Into<Option<InputScale>>) -> NpuOp {
        NpuOp {
            ifm2_scale: ifm2_scale.into(),
            ..self
        }
    }

    /// The accumulator format.
    pub fn with_acc(self, acc: AccFormat) -> NpuOp {
        NpuOp { acc, ..self }
    }

    /// The IFM_UPSCALE mode.
    pub fn with_upscale(self, upscale: IfmUpscaleMode) -> NpuOp {
        NpuOp { upscale, ..self }
    }

    /// A 1x1 max pool of `ifm` into `ofm` with unit scale and no padding: an exact copy (any
    /// views, strides, transposes or reverses of the two), clamped to `act`.
    pub fn copy(name: String, fused: Vec<String>, ifm: Fm, ofm: Fm, act: (i64, i64)) -> NpuOp {
        NpuOp::pool(PoolingMode::Max, name, fused, ifm, ofm, act)
    }

    /// A piece of this operation (a cascade band, an OFM-depth slice): the same operation on
    /// other feature maps, without weights (the piece sets its own, and its padding).
    pub fn piece(&self, ifm: Fm, ifm2: Option<Fm>, ofm: Fm) -> NpuOp {
        NpuOp {
            name: self.name.clone(),
            fused: self.fused.clone(),
            kernel: self.kernel,
            ifm,
            ifm2,
            ofm,
            kernel_size: self.kernel_size,
            stride: self.stride,
            dilation: self.dilation,
            pad: self.pad,
            weights: None,
            requant: self.requant.clone(),
            round: self.round,
            ifm_scale: self.ifm_scale,
            ifm2_scale: self.ifm2_scale,
            act: self.act,
            acc: self.acc,
            upscale: self.upscale,
        }
    }
}
