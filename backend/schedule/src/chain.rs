//! Chaining (TRM 3.6.4, 2.6): an operation's OFM goes through chaining FIFO 0 straight into the
//! next operation, an ELEMENTWISE, instead of through memory.
//!
//! A pair (producer `k`, consumer `k + 1`) is chained when: the consumer is an ELEMENTWISE
//! reading the producer's whole OFM as exactly one of its operands, unbroadcast, with the
//! consumer's OFM shape; nothing else reads that OFM and it is not a graph output; the
//! producer is not a RESIZE or DMA, writes its OFM plainly (no window, reverse or transpose)
//! and is not itself a consumer; the consumer needs no LUT load (no DMA inside a chain) and
//! has the producer's accumulator format (ACC_FORMAT may not be set inside a chain). The
//! chained OFM takes no memory; the producer's inputs stay live through the consumer (the two
//! run together, so the consumer's OFM must not overwrite them); the consumer takes the
//! producer's block and microblock.

use npuc_backend::isa::Opcode;
use npuc_backend_lower::{Fm, Kernel, Lowered, View};

/// Which operand of the consumer reads the FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operand {
    Ifm,
    Ifm2,
}

/// For each operation, `Some(operand)` when its OFM is chained into the next operation's
/// `operand`.
pub(super) fn find(l: &Lowered) -> Vec<Option<Operand>> {
    let n = l.ops.len();
    let mut out: Vec<Option<Operand>> = vec![None; n];
    for k in 0..n.saturating_sub(1) {
        if k > 0 && out[k - 1].is_some() {
            continue;
        }
        let (p, c) = (&l.ops[k], &l.ops[k + 1]);
        let buf = p.ofm.buffer;
        let b = &l.buffers[buf];
        let plain = p.ofm.view == View::default();
        let ok_p = !matches!(p.kernel, Kernel::Resize(_) | Kernel::Dma(_))
            && plain
            && !b.is_output
            && !b.is_input
            && b.producer == Some(k)
            && b.last_use == Some(k + 1)
            && !l.constants.contains_key(&buf);
        if !ok_p || !matches!(c.kernel, Kernel::Elementwise(_)) {
            continue;
        }
        if l.luts.contains_key(&(k + 1)) || p.acc != c.acc || p.ofm.shape != c.ofm.shape {
            continue;
        }
        let reads = |f: &Fm| {
            f.buffer == buf
                && f.view == View::default()
                && f.broadcast == (false, false, false)
                && f.shape == c.ofm.shape
                && f.dtype == p.ofm.dtype
        };
        let on_ifm = c.ifm.buffer == buf;
        let on_ifm2 = c.ifm2.as_ref().is_some_and(|f| f.buffer == buf);
        out[k] = match (on_ifm, on_ifm2) {
            (true, false) if reads(&c.ifm) => Some(Operand::Ifm),
            (false, true) if c.ifm2.as_ref().is_some_and(reads) => Some(Operand::Ifm2),
            _ => None,
        };
    }
    out
}

/// The buffer lifetimes chaining implies: the producers' inputs live through their consumers.
pub(super) fn extend_lifetimes(l: &mut Lowered, chains: &[Option<Operand>]) {
    for (k, c) in chains.iter().enumerate() {
        if c.is_none() {
            continue;
        }
        let op = &l.ops[k];
        let inputs: Vec<usize> = std::iter::once(op.ifm.buffer)
            .chain(op.ifm2.as_ref().map(|f| f.buffer))
            .collect();
        for i in inputs {
            let b = &mut l.buffers[i];
            b.last_use = Some(b.last_use.map_or(k + 1, |u| u.max(k + 1)));
        }
    }
}

/// The IFM and IFM2 registers the chaining state rules require to be written again after a
/// chained operation (TRM 3.6.4: precision and zero point, and then the address registers).
pub(super) const IFM_STATE: [Opcode; 26] = [
    Opcode::SetIfmPrecision,
    Opcode::SetIfmZeroPoint,
    Opcode::SetIfmRegion,
    Opcode::SetIfmBase0,
    Opcode::SetIfmBase1,
    Opcode::SetIfmBase2,
    Opcode::SetIfmBase3,
    Opcode::SetIfmHeight0M1,
    Opcode::SetIfmHeight1M1,
    Opcode::SetIfmWidth0M1,
    Opcode::SetIfmStrideX,
    Opcode::SetIfmStrideY,
    Opcode::SetIfmStrideC,
    Opcode::SetIfm2Precision,
    Opcode::SetIfm2ZeroPoint,
    Opcode::SetIfm2Region,
    Opcode::SetIfm2Base0,
    Opcode::SetIfm2Base1,
    Opcode::SetIfm2Base2,
    Opcode::SetIfm2Base3,
    Opcode::SetIfm2Height0M1,
    Opcode::SetIfm2Height1M1,
    Opcode::SetIfm2Width0M1,
    Opcode::SetIfm2StrideX,
    Opcode::SetIfm2StrideY,
    Opcode::SetIfm2StrideC,
];
