//! Kernel size, stride, dilation and padding registers.

use super::Writer;
use crate::compile::lower::NpuOp;
use npuc_backend::isa::{
    Command, KernelDecomposition, KernelDilation, SetIfmPadBottom, SetIfmPadLeft, SetIfmPadRight,
    SetIfmPadTop, SetKernelHeightM1, SetKernelStride, SetKernelWidthM1, WeightOrder,
};

pub(super) fn kernel_commands(w: &mut Writer, op: &NpuOp, order: WeightOrder) {
    let kd = (
        (op.kernel_size.0 - 1) * op.dilation.0 + 1,
        (op.kernel_size.1 - 1) * op.dilation.1 + 1,
    );
    let dil = |d: u32| {
        if d == 2 {
            KernelDilation::X2
        } else {
            KernelDilation::None
        }
    };
    let (sy, sx) = (op.stride.0 - 1, op.stride.1 - 1);
    w.set(Command::SetKernelHeightM1(SetKernelHeightM1 {
        height_m1: (kd.0 - 1) as u16,
    }));
    w.set(Command::SetKernelWidthM1(SetKernelWidthM1 {
        width_m1: (kd.1 - 1) as u16,
    }));
    w.set(Command::SetKernelStride(SetKernelStride {
        stride_x_lsb: (sx & 1) as u8,
        stride_y_lsb: (sy & 1) as u8,
        weight_order: order,
        dilation_x: dil(op.dilation.1),
        dilation_y: dil(op.dilation.0),
        decomposition: KernelDecomposition::D8x8,
        stride_x_msb: (sx >> 1) as u8,
        stride_y_msb: (sy >> 1) as u8,
    }));
    w.set(Command::SetIfmPadTop(SetIfmPadTop {
        pad: op.pad[0] as u8,
    }));
    w.set(Command::SetIfmPadBottom(SetIfmPadBottom {
        pad: op.pad[1] as u8,
    }));
    w.set(Command::SetIfmPadLeft(SetIfmPadLeft {
        pad: op.pad[2] as u8,
    }));
    w.set(Command::SetIfmPadRight(SetIfmPadRight {
        pad: op.pad[3] as u8,
    }));
}
