//! The Ethos-U85 target of npuc: [`U85Target`], the driver's `Target` for the U85, with the
//! scheduling passes its `Target::decide` runs and the stream sequencing its `Target::write`
//! runs.
//!
//! `decide` runs the scheduling passes:
//! 1. `chain`: an OFM read only by the next operation, an ELEMENTWISE, goes through a
//!    chaining FIFO; the other feature maps are placed (`npuc_target::alloc`).
//! 2. `cascade`: where intermediate feature maps spill out of the fast memory, runs of
//!    operations are computed band by band through ring buffers when the cost model says so.
//! 3. `plan`: each operation's microblock, OFM block and weight order are chosen by the
//!    target's cost model among the candidates it offers, and its weight and scale streams are
//!    encoded for that choice; the streams of each operation form one block in region 0.
//! 4. `staging` and `optimise`: where the cost model says it pays and a buffer fits, an
//!    operation's block is copied by DMA into the staging memory while the previous operation
//!    runs (the greedy, and the global program of decision S13).
//!
//! Their result is the neutral `Decisions` (decision A3) with the U85's own plans inside;
//! `write` writes the command stream and region 0 from the lowered operations and those
//! decisions (through `npuc_backend::writer`), and `bounds` is the compute bound. The driver
//! reaches all of it through the `Target` trait only.

use npuc_backend::isa::{AccFormat, ActivationPrecision, ActivationType};
use npuc_backend::writer::output::clip;
use npuc_backend_lower::{kind_of, Fm, Lowered, NpuOp};
use npuc_target::arch_interface::{OpGeometry, TargetError};

pub mod bounds;
pub mod cascade;
mod chain;
mod decide;
mod lut;
mod optimise;
mod plan;
mod regs;
mod slice;
mod staging;
mod target;
#[cfg(test)]
mod test_models;
mod weights;
pub mod write;

pub use target::{U85Block, U85Target};

pub(crate) fn geometry(op: &NpuOp) -> OpGeometry {
    let kd = (
        (op.kernel_size.0 - 1) * op.dilation.0 + 1,
        (op.kernel_size.1 - 1) * op.dilation.1 + 1,
    );
    OpGeometry {
        kind: kind_of(op.kernel),
        ofm: op.ofm.shape,
        ifm_depth: op.ifm.shape.2,
        kernel: kd,
        stride: op.stride,
        ifm_elem_bytes: op.ifm.elem_bytes(),
        ofm_elem_bytes: op.ofm.elem_bytes(),
        acc_bytes: match op.acc {
            AccFormat::I32 => 4,
            AccFormat::I48 => 8,
        },
        weights: op.weights.is_some(),
        sparse_2_4: op.weights.as_ref().is_some_and(|w| w.is_sparse_2_4()),
    }
}

/// ACTIVATION_PRECISION of a feature map's element type.
fn precision(fm: &Fm) -> ActivationPrecision {
    match fm.elem_bytes() {
        1 => ActivationPrecision::B8,
        2 => ActivationPrecision::B16,
        4 => ActivationPrecision::B32,
        _ => ActivationPrecision::B64,
    }
}

/// ACTIVATION_TYPE of a feature map's element type.
fn activation_type(fm: &Fm) -> ActivationType {
    if fm.dtype.is_unsigned() {
        ActivationType::Unsigned
    } else {
        ActivationType::Signed
    }
}

/// Refuses an operation whose activation bounds the OFM clipping cannot express (16-bit
/// bounds, or none).
fn check_activation(op: &NpuOp) -> Result<(), TargetError> {
    if clip(op.act, op.ofm.dtype.is_unsigned()).is_none() {
        return Err(TargetError::Stream(format!(
            "{}: activation bounds {:?} are neither 16-bit nor absent",
            op.name, op.act
        )));
    }
    Ok(())
}

/// The constant buffers read as feature maps, in the order of first use.
pub(crate) fn const_operands(l: &Lowered) -> Vec<usize> {
    let mut out = Vec::new();
    for op in &l.ops {
        for fm in std::iter::once(&op.ifm).chain(op.ifm2.as_ref()) {
            if l.constants.contains_key(&fm.buffer) && !out.contains(&fm.buffer) {
                out.push(fm.buffer);
            }
        }
    }
    out
}
