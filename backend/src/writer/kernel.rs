//! Kernel size, stride, dilation and padding registers.

use super::CommandWriter;
use crate::isa::{
    Command, KernelDecomposition, KernelDilation, SetIfmPadBottom, SetIfmPadLeft, SetIfmPadRight,
    SetIfmPadTop, SetKernelHeightM1, SetKernelStride, SetKernelWidthM1, WeightOrder,
};

/// The kernel of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRegs {
    /// Kernel (height, width), undilated.
    pub size: (u32, u32),
    /// (y, x).
    pub stride: (u32, u32),
    /// (y, x): 1 or 2.
    pub dilation: (u32, u32),
    /// Top, bottom, left, right.
    pub pad: [u32; 4],
    pub weight_order: WeightOrder,
}

/// Writes the KERNEL_* and IFM_PAD_* registers of `k`.
pub fn write_kernel(w: &mut CommandWriter, k: &KernelRegs) {
    let kd = (
        (k.size.0 - 1) * k.dilation.0 + 1,
        (k.size.1 - 1) * k.dilation.1 + 1,
    );
    let dil = |d: u32| {
        if d == 2 {
            KernelDilation::X2
        } else {
            KernelDilation::None
        }
    };
    let (sy, sx) = (k.stride.0 - 1, k.stride.1 - 1);
    w.set(Command::SetKernelHeightM1(SetKernelHeightM1 {
        height_m1: (kd.0 - 1) as u16,
    }));
    w.set(Command::SetKernelWidthM1(SetKernelWidthM1 {
        width_m1: (kd.1 - 1) as u16,
    }));
    w.set(Command::SetKernelStride(SetKernelStride {
        stride_x_lsb: (sx & 1) as u8,
        stride_y_lsb: (sy & 1) as u8,
        weight_order: k.weight_order,
        dilation_x: dil(k.dilation.1),
        dilation_y: dil(k.dilation.0),
        decomposition: KernelDecomposition::D8x8,
        stride_x_msb: (sx >> 1) as u8,
        stride_y_msb: (sy >> 1) as u8,
    }));
    w.set(Command::SetIfmPadTop(SetIfmPadTop {
        pad: k.pad[0] as u8,
    }));
    w.set(Command::SetIfmPadBottom(SetIfmPadBottom {
        pad: k.pad[1] as u8,
    }));
    w.set(Command::SetIfmPadLeft(SetIfmPadLeft {
        pad: k.pad[2] as u8,
    }));
    w.set(Command::SetIfmPadRight(SetIfmPadRight {
        pad: k.pad[3] as u8,
    }));
}
