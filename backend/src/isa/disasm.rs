//! Disassembly of decoded commands, driven by the ISA table.
//!
//! Text form (for people): `0x0040 NPU_SET_IFM_PRECISION activation_type=signed ...` with enum
//! values by TRM name, signed fields sign-extended, the `addr_hi`/`addr_lo` pair of 40-bit
//! values joined (`addr=0x1000` for addresses, `stride=-16`, `length=816` otherwise), untyped
//! 16-bit values (zero points, clip bounds) shown raw with their int16 reading when negative
//! (`zero_point=65408(-128)`), and the derived kernel strides and dilations.
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

fn joined_name(spec: &CommandSpec) -> &'static str {
    let n = spec.name;
    if n.contains("_BASE")
        || n.ends_with("DMA0_SRC")
        || n.ends_with("DMA0_DST")
        || n.ends_with("DMA0_IDX")
    {
        "addr"
    } else if n.contains("STRIDE") {
        "stride"
    } else if n.ends_with("_LEN") {
        "length"
    } else if n.ends_with("_SKIP1") {
        "skip"
    } else {
        "value"
    }
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
        FieldKind::Untyped if v >= 0x8000 && f.width == 16 => format!("{v}({})", v as u16 as i16),
        FieldKind::Unsigned | FieldKind::Untyped => v.to_string(),
    }
}

/// Values the TRM derives from several fields, e.g. `stride_x = 2*stride_x_msb + stride_x_lsb + 1`.
fn derived(spec: &CommandSpec, raw: u64) -> Option<String> {
    if spec.name != "NPU_SET_KERNEL_STRIDE" {
        return None;
    }
    let get = |n: &str| spec.field(n).map_or(0, |f| f.extract(raw));
    let sx = 2 * get("stride_x_msb") + get("stride_x_lsb") + 1;
    let sy = 2 * get("stride_y_msb") + get("stride_y_lsb") + 1;
    let dx = get("dilation_x") + 1;
    let dy = get("dilation_y") + 1;
    Some(format!(" (stride {sx}x{sy}, dilation {dx}x{dy})"))
}

/// The text of one command without its offset: name then `field=value` pairs.
pub fn command_text(d: &Decoded) -> String {
    let spec = d.opcode().spec();
    let mut s = String::from(spec.name);
    if let Some(v) = joined_value(spec, d.raw) {
        match joined_name(spec) {
            "addr" => write!(s, " addr={v:#x}"),
            name => write!(s, " {name}={v}"),
        }
        .expect("writing to a String cannot fail");
        return s;
    }
    for f in spec.fields {
        let _ = write!(s, " {}={}", f.name, field_text(f, d.raw));
    }
    if let Some(extra) = derived(spec, d.raw) {
        s.push_str(&extra);
    }
    s
}

/// One disassembly line: `0x0040 NPU_... field=value ...`.
pub fn line(d: &Decoded) -> String {
    format!("{:#06x} {}", d.offset, command_text(d))
}
