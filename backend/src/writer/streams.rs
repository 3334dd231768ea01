//! Weight and scale stream registers: where an operation's encoded streams are.

use super::{addr, CommandWriter};
use crate::isa::{
    Command, SetScaleBase, SetScaleLength, SetScaleRegion, SetWeight1Base, SetWeight1Length,
    SetWeight2Base, SetWeight2Length, SetWeight3Base, SetWeight3Length, SetWeightBase,
    SetWeightFormat, SetWeightLength, SetWeightRegion, WeightFormat, WeightSparsity,
};

/// Writes the SCALE_* and WEIGHT*_ registers of a stream block at `(region, base)`: `parts`
/// are (offset in the block, length) of the scale stream, then of up to four weight streams
/// (one per weight decoder).
pub fn write_streams(
    w: &mut CommandWriter,
    (region, base): (u8, u64),
    parts: &[(u64, u32)],
    weight_format: WeightFormat,
    weight_sparsity: WeightSparsity,
) {
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
        weight_format,
        weight_sparsity,
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
