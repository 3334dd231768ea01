//! The U85's lowered program ([`Lowered`]) behind the neutral view the schedule framework
//! reads ([`LoweredView`]): allocation, the scheduling passes' own reads and the schedule's
//! description see buffers, feature-map buffers, kernel kinds and names, never `NpuOp`
//! (decision A2; here, beside the program, since the trait is the crate `npuc-target`'s).

use crate::{Fm, Kernel, Lowered};
use npuc_backend::isa::IfmUpscaleMode;
use npuc_target::arch_interface::{
    BufferView, FmDescription, KernelKind, LoweredView, OpDescription, OpView,
};

/// The kernel kind of a kernel, as block selection sees it.
pub fn kind_of(k: Kernel) -> KernelKind {
    match k {
        Kernel::Conv => KernelKind::Conv,
        Kernel::Depthwise => KernelKind::Depthwise,
        Kernel::Pool(_) => KernelKind::Pool,
        Kernel::Elementwise(_) => KernelKind::Elementwise,
        // Block choice as for a 1x1 pool (the IFM block is never larger than the OFM block's).
        // (A DMA has no block.)
        Kernel::Resize(_) | Kernel::Dma(_) => KernelKind::Pool,
    }
}

/// The name of a kernel (as the operator list gives it).
pub fn kernel_name(k: Kernel) -> &'static str {
    match k {
        Kernel::Conv => "CONV",
        Kernel::Depthwise => "DEPTHWISE",
        Kernel::Pool(_) => "POOL",
        Kernel::Elementwise(_) => "ELEMENTWISE",
        Kernel::Resize(_) => "RESIZE",
        Kernel::Dma(_) => "DMA",
    }
}

/// The schedule's kernel text: the TRM operation, and a pool's or elementwise's mode.
fn kernel_text(k: Kernel) -> String {
    match k {
        Kernel::Pool(m) => format!("POOL {}", m.name()),
        Kernel::Elementwise(m) => format!("ELEMENTWISE {}", m.name()),
        _ => kernel_name(k).to_string(),
    }
}

fn fm(f: &Fm) -> FmDescription {
    FmDescription {
        buffer: f.buffer,
        shape: [f.shape.0, f.shape.1, f.shape.2],
        dtype: f.dtype.name().to_string(),
        broadcast: [f.broadcast.0, f.broadcast.1, f.broadcast.2],
    }
}

impl LoweredView for Lowered {
    fn buffer_count(&self) -> usize {
        self.buffers.len()
    }

    fn buffer(&self, i: usize) -> BufferView {
        let b = &self.buffers[i];
        BufferView {
            size: b.size,
            producer: b.producer,
            last_use: b.last_use,
            is_input: b.is_input,
            is_output: b.is_output,
            constant: self.constants.contains_key(&i),
        }
    }

    fn op_count(&self) -> usize {
        self.ops.len()
    }

    fn op(&self, k: usize) -> OpView<'_> {
        let op = &self.ops[k];
        OpView {
            name: &op.name,
            kernel: (!matches!(op.kernel, Kernel::Dma(_))).then(|| kind_of(op.kernel)),
            ifm: op.ifm.buffer,
            ifm2: op.ifm2.as_ref().map(|f| f.buffer),
            ofm: op.ofm.buffer,
        }
    }

    fn describe_op(&self, k: usize) -> OpDescription {
        let op = &self.ops[k];
        OpDescription {
            kernel: kernel_text(op.kernel),
            kernel_size: [op.kernel_size.0, op.kernel_size.1],
            stride: [op.stride.0, op.stride.1],
            dilation: [op.dilation.0, op.dilation.1],
            ifm_upscale: (op.upscale != IfmUpscaleMode::None)
                .then(|| op.upscale.name().to_string()),
            lut: self.luts.get(&k).map(|t| t.function.name().to_string()),
            ifm: fm(&op.ifm),
            ifm2: op.ifm2.as_ref().map(fm),
            ofm: fm(&op.ofm),
            weighted: op.weights.is_some(),
        }
    }

    fn tensor_buffer(&self, t: npuc_ir::TensorId) -> Option<usize> {
        self.buffer_holding(t)
    }

    fn rewrites(&self) -> &[&'static str] {
        &self.rewrites
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
