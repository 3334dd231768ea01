//! Disassembly of decoded commands, driven by the ISA table.
//!
//! Text form (for people): `0x0040 NPU_SET_IFM_PRECISION activation_type=signed ...` with enum
//! values by TRM name, signed fields sign-extended and the `addr_hi`/`addr_lo` pair of 40-bit
//! values joined (`addr=0x1000` for addresses, `value=-16` for strides and lengths).
//!
//! Field form (the machine-readable contract): every field of the table by its TRM name with
//! the unsigned integer held in its bit range.

use super::stream::Decoded;
use super::table::{CommandSpec, FieldKind, FieldSpec};
use std::fmt::Write;

/// Every field of the command with the unsigned integer held in its bit range, in table order.
pub fn raw_fields(d: &Decoded) -> Vec<(&'static str, u64)> {
    let spec = d.opcode().spec();
    spec.fields
        .iter()
        .map(|f| (f.name, f.extract(d.raw)))
        .collect()
}

/// The 40-bit value of an `addr_hi`/`addr_lo` pair, sign-extended when `addr_hi` is signed.
pub fn joined_value(spec: &CommandSpec, raw: u64) -> Option<i64> {
    let hi = spec.field("addr_hi")?;
    let lo = spec.field("addr_lo")?;
    let bits = (hi.extract(raw) << 32) | lo.extract(raw);
    Some(match hi.kind {
        FieldKind::Signed => FieldSpec::sign_extend(bits, 40),
        _ => bits as i64,
    })
}

fn is_address(spec: &CommandSpec) -> bool {
    let n = spec.name;
    n.contains("_BASE")
        || n.ends_with("DMA0_SRC")
        || n.ends_with("DMA0_DST")
        || n.ends_with("DMA0_IDX")
}

/// Text for one field value: enum name, signed or unsigned integer.
pub fn field_text(f: &FieldSpec, raw: u64) -> String {
    let v = f.extract(raw);
    match f.kind {
        FieldKind::Enum(id) => id
            .spec()
            .name_of(v)
            .map_or_else(|| format!("reserved({v})"), str::to_string),
        FieldKind::Signed => f.value(raw).to_string(),
        FieldKind::Bitset => format!("{v:#x}"),
        FieldKind::Unsigned | FieldKind::Untyped => v.to_string(),
    }
}

/// The text of one command without its offset: name then `field=value` pairs.
pub fn command_text(d: &Decoded) -> String {
    let spec = d.opcode().spec();
    let mut s = String::from(spec.name);
    if let Some(v) = joined_value(spec, d.raw) {
        if is_address(spec) {
            let _ = write!(s, " addr={v:#x}");
        } else {
            let _ = write!(s, " value={v}");
        }
        return s;
    }
    for f in spec.fields {
        let _ = write!(s, " {}={}", f.name, field_text(f, d.raw));
    }
    s
}

/// One disassembly line: `0x0040 NPU_... field=value ...`.
pub fn line(d: &Decoded) -> String {
    format!("{:#06x} {}", d.offset, command_text(d))
}
