//! Typed parameters of the weight ordering (TRM §3.9.2) and the block sizes
//! derived from them.

use super::OrderingError;
pub use crate::isa_fields::{
    KernelDecomposition, KernelDilation, Microblock, WeightOrder, WeightSparsity,
};

/// The kernel operation reading the weights (`NPU_OP_CONV` / `NPU_OP_DEPTHWISE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `NPU_OP_CONV` (convolution, fully connected).
    Conv,
    /// `NPU_OP_DEPTHWISE`: always ordered part-kernel first.
    Depthwise,
}

/// `NPU_SET_IFM_PRECISION.activation_precision` for convolutions (8 or 16 bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IfmPrecision {
    /// `b8`.
    B8,
    /// `b16` (`ifm16bit`).
    B16,
}

impl KernelDilation {
    /// The register flag, 0 or 1 (`decomp_w = decomp_size >> dilation_x`).
    pub fn flag(self) -> u32 {
        self.raw()
    }
}

impl KernelDecomposition {
    /// `decomp_size`: 8 or 4.
    pub fn decomp_size(self) -> u32 {
        match self {
            Self::D8x8 => 8,
            Self::D4x4 => 4,
        }
    }
}

/// `CONFIG.macs_per_cc`: the NPU configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacsPerCc {
    /// Ethos-U85-128.
    M128,
    /// Ethos-U85-256.
    M256,
    /// Ethos-U85-512.
    M512,
    /// Ethos-U85-1024.
    M1024,
    /// Ethos-U85-2048.
    M2048,
}

impl MacsPerCc {
    /// Parses a MAC count (128, 256, ..., 2048).
    pub fn from_macs(macs: u32) -> Option<Self> {
        Some(match macs {
            128 => Self::M128,
            256 => Self::M256,
            512 => Self::M512,
            1024 => Self::M1024,
            2048 => Self::M2048,
            _ => return None,
        })
    }

    /// The MAC count.
    pub fn macs(self) -> u32 {
        match self {
            Self::M128 => 128,
            Self::M256 => 256,
            Self::M512 => 512,
            Self::M1024 => 1024,
            Self::M2048 => 2048,
        }
    }

    /// `num_wd`: number of weight decoders / SWD streams (TRM Table 3-90).
    pub fn num_wd(self) -> u32 {
        match self {
            Self::M128 | Self::M256 => 1,
            Self::M512 => 2,
            Self::M1024 | Self::M2048 => 4,
        }
    }

    /// `dw8_pad_k` / `dw16_pad_k`: zero kernel positions a depthwise ordering
    /// adds per `wblk_k` group (TRM Table 3-90).
    pub fn dw_pad_k(self, ifm_precision: IfmPrecision) -> u32 {
        match (self, ifm_precision) {
            (Self::M128 | Self::M256, IfmPrecision::B8) => 0,
            (Self::M128 | Self::M256 | Self::M512, _) => 2,
            (Self::M1024 | Self::M2048, _) => 6,
        }
    }

    /// `microblock_depth()` (TRM §3.6): output channels per microblock, or
    /// `None` if the microblock is not available on this configuration.
    pub fn microblock_depth(self, microblock: Microblock) -> Option<u32> {
        let m = self.macs();
        let (divisor, allowed) = match microblock {
            Microblock::U1x1 => (8, m == 128),
            Microblock::U1x2 => (16, m <= 256),
            Microblock::U1x4 => (32, m >= 256),
            Microblock::U2x2 => (32, m >= 256),
            Microblock::U2x4 => (64, m == 1024),
            Microblock::U4x4 => (128, m == 2048),
        };
        allowed.then_some(m / divisor)
    }
}

/// Everything the weight ordering depends on besides the weight shape
/// (TRM §3.9.2). Field names follow the registers they come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OrderingParams {
    /// `NPU_OP_CONV` or `NPU_OP_DEPTHWISE`.
    pub operation: Operation,
    /// `NPU_SET_KERNEL_STRIDE.weight_order` (ignored for depthwise, which is part-kernel first).
    pub weight_order: WeightOrder,
    /// `NPU_SET_IFM_PRECISION.activation_precision`.
    pub ifm_precision: IfmPrecision,
    /// `NPU_SET_WEIGHT_FORMAT.weight_sparsity`.
    pub weight_sparsity: WeightSparsity,
    /// Kernel stride in x, 1..=3.
    pub stride_x: u32,
    /// Kernel stride in y, 1..=3.
    pub stride_y: u32,
    /// `NPU_SET_KERNEL_STRIDE.dilation_x`.
    pub dilation_x: KernelDilation,
    /// `NPU_SET_KERNEL_STRIDE.dilation_y`.
    pub dilation_y: KernelDilation,
    /// `NPU_SET_KERNEL_STRIDE.decomposition`.
    pub decomposition: KernelDecomposition,
    /// `NPU_SET_OFM_BLK_DEPTH_M1 + 1`; a multiple of the microblock depth.
    pub ofm_block_depth: u32,
    /// `NPU_SET_ACC_FORMAT.microblock`.
    pub microblock: Microblock,
    /// `CONFIG.macs_per_cc`.
    pub macs_per_cc: MacsPerCc,
}

/// Block sizes derived from [`OrderingParams`] (TRM §3.9.2 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DerivedBlocks {
    /// `depthwise`.
    pub depthwise: bool,
    /// `partkernel`: part-kernel-first order (always for depthwise).
    pub partkernel: bool,
    /// `num_wd`: number of streams.
    pub num_wd: u32,
    /// `dw_pad_k` for this configuration and IFM precision (used by depthwise only).
    pub dw_pad_k: u32,
    /// `ifm_block_depth`: input channels per IFM block.
    pub ifm_block_depth: u32,
    /// `wblk_k`: kernel positions per weight block (part-kernel first), else 1.
    pub wblk_k: u32,
    /// `wblk_o`: output channels per weight block (`microblock_depth()`).
    pub wblk_o: u32,
    /// `wblk_i`: input channels per weight block.
    pub wblk_i: u32,
    /// `i_sz`: input channels per innermost group (1 depthwise, 16 sparse, else 8).
    pub i_sz: u32,
    /// `decomp_w` / `decomp_h`: sub-kernel size limits.
    pub decomp_w: u32,
    /// See `decomp_w`.
    pub decomp_h: u32,
}

impl DerivedBlocks {
    /// `wblk_size = wblk_k * wblk_o * wblk_i / num_wd`: per-stream entries of
    /// one weight block, the unit in which FWD merges the streams.
    pub fn wblk_size(&self) -> usize {
        (self.wblk_k * self.wblk_o * self.wblk_i / self.num_wd) as usize
    }
}

impl OrderingParams {
    /// Checks the parameters against the TRM constraints and derives the block sizes.
    ///
    /// # Errors
    /// [`OrderingError::InvalidParams`] naming the violated rule.
    pub fn derive(
        &self,
        kernel_height: usize,
        kernel_width: usize,
    ) -> Result<DerivedBlocks, OrderingError> {
        let bad = |rule: &'static str| Err(OrderingError::InvalidParams { rule });
        if !(1..=3).contains(&self.stride_x) || !(1..=3).contains(&self.stride_y) {
            return bad("kernel strides must be 1..=3");
        }
        let Some(mbd) = self.macs_per_cc.microblock_depth(self.microblock) else {
            return bad("microblock not available for this macs_per_cc");
        };
        if self.ofm_block_depth == 0 || self.ofm_block_depth % mbd != 0 {
            return bad("ofm_block_depth must be a nonzero multiple of microblock_depth()");
        }
        let depthwise = self.operation == Operation::Depthwise;
        let sparse = self.weight_sparsity == WeightSparsity::Sparse24;
        let ifm16bit = self.ifm_precision == IfmPrecision::B16;
        if depthwise && sparse {
            return bad("depthwise requires weight_sparsity == none");
        }
        let mb_i16only =
            mbd == 16 && matches!(self.microblock, Microblock::U1x1 | Microblock::U1x2);
        if mb_i16only && !depthwise && !(ifm16bit && kernel_height == 1 && kernel_width == 1) {
            return bad(
                "16-deep u1x1/u1x2 microblock needs 16-bit IFM and a 1x1 kernel (non-depthwise)",
            );
        }
        let partkernel = self.weight_order == WeightOrder::PartKernelFirst || depthwise;
        let ifm_block_depth = if partkernel {
            16
        } else if !sparse && mb_i16only {
            32
        } else if !sparse || ifm16bit {
            64
        } else {
            128
        };
        let wblk_k = match (partkernel, !ifm16bit && !sparse && !depthwise) {
            (false, _) => 1,
            (true, true) => 5,
            (true, false) => 10,
        };
        let wblk_i = if depthwise {
            1
        } else if partkernel && ifm16bit && !sparse {
            8
        } else {
            ifm_block_depth
        };
        let i_sz = match (depthwise, sparse) {
            (true, _) => 1,
            (false, true) => 16,
            (false, false) => 8,
        };
        let decomp = self.decomposition.decomp_size();
        Ok(DerivedBlocks {
            depthwise,
            partkernel,
            num_wd: self.macs_per_cc.num_wd(),
            dw_pad_k: self.macs_per_cc.dw_pad_k(self.ifm_precision),
            ifm_block_depth,
            wblk_k,
            wblk_o: mbd,
            wblk_i,
            i_sz,
            decomp_w: decomp >> self.dilation_x.flag(),
            decomp_h: decomp >> self.dilation_y.flag(),
        })
    }
}
