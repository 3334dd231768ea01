//! The shape of the instruction table. The table's contents are generated (see `generated.rs`);
//! this module defines what a row is and the bit arithmetic every consumer shares.

use super::generated::{EnumId, Opcode};

/// cmd0 (one 32-bit word) or cmd1 (header word plus one payload word), TRM 3.5.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmdKind {
    /// One word: header with payload_0 in bits [31:16].
    Cmd0,
    /// Two words: header with payload_0, then payload_1 (command bits [63:32]).
    Cmd1,
}

impl CmdKind {
    /// Number of 32-bit words of a command of this kind.
    pub const fn words(self) -> usize {
        match self {
            CmdKind::Cmd0 => 1,
            CmdKind::Cmd1 => 2,
        }
    }
}

/// How a field's bits are interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// Unsigned integer.
    Unsigned,
    /// Two's complement integer of the field's width.
    Signed,
    /// A 16-bit value whose signedness depends on other state (zero points, clip bounds).
    Untyped,
    /// A bit mask (IRQ masks).
    Bitset,
    /// A value of an enumerated type.
    Enum(EnumId),
}

/// One payload field of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// Field name as in the TRM tables (`addr_hi`, `stride_x_lsb`, ...).
    pub name: &'static str,
    /// Lowest bit within the 64-bit command (payload_1 is bits [63:32]).
    pub lo: u8,
    /// Width in bits.
    pub width: u8,
    /// Interpretation.
    pub kind: FieldKind,
    /// Meaning, from the TRM.
    pub description: &'static str,
}

impl FieldSpec {
    /// Mask of the field's value (not shifted).
    pub const fn value_mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }

    /// The unsigned integer held in the field's bit range.
    pub const fn extract(&self, raw: u64) -> u64 {
        (raw >> self.lo) & self.value_mask()
    }

    /// The field's value sign-extended if it is a signed field, else as unsigned.
    pub fn value(&self, raw: u64) -> i64 {
        let v = self.extract(raw);
        match self.kind {
            FieldKind::Signed => Self::sign_extend(v, u32::from(self.width)),
            _ => v as i64,
        }
    }

    /// Interprets the low `width` bits of `v` as two's complement.
    pub const fn sign_extend(v: u64, width: u32) -> i64 {
        let shift = 64 - width;
        ((v << shift) as i64) >> shift
    }

    /// `v` if it fits in `width` unsigned bits.
    pub const fn pack_unsigned(v: u64, width: u32) -> Option<u64> {
        if width < 64 && v >> width != 0 {
            None
        } else {
            Some(v)
        }
    }

    /// The two's complement bits of `v` if it fits in `width` signed bits.
    pub const fn pack_signed(v: i64, width: u32) -> Option<u64> {
        let min = -(1i64 << (width - 1));
        let max = (1i64 << (width - 1)) - 1;
        if v < min || v > max {
            None
        } else {
            Some((v as u64) & ((1u64 << width) - 1))
        }
    }
}

/// One row of the instruction table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The instruction.
    pub opcode: Opcode,
    /// TRM name, e.g. `NPU_SET_IFM_BASE0`.
    pub name: &'static str,
    /// cmd0 or cmd1.
    pub kind: CmdKind,
    /// The 10-bit opcode field.
    pub code: u16,
    /// Bits that must be zero (header bits [13:10] and every reserved payload bit).
    pub reserved: u64,
    /// TRM section describing the instruction.
    pub trm_section: &'static str,
    /// One-line description from the TRM.
    pub description: &'static str,
    /// Payload fields, in table order.
    pub fields: &'static [FieldSpec],
}

impl CommandSpec {
    /// Header bits [15:0]: control bits [15:14] and opcode [9:0].
    pub const fn header(&self) -> u16 {
        match self.kind {
            CmdKind::Cmd0 => self.code,
            CmdKind::Cmd1 => self.code | (1 << 14),
        }
    }

    /// Whether this is an `NPU_OP_*` instruction (starts or waits for work) rather than a SET.
    pub fn is_op(&self) -> bool {
        self.name.starts_with("NPU_OP_")
    }

    /// Looks a field up by name.
    pub fn field(&self, name: &str) -> Option<&'static FieldSpec> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One non-reserved value of an enumerated type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumValueSpec {
    /// Encoded value.
    pub value: u32,
    /// TRM name (`tile2x2`, `b8`, ...).
    pub name: &'static str,
    /// Meaning, from the TRM.
    pub description: &'static str,
}

/// An enumerated type of the ISA, e.g. `activation_storage_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumSpec {
    /// Its id.
    pub id: EnumId,
    /// TRM type name, with the `_t` suffix.
    pub name: &'static str,
    /// Its valid values; every other value is reserved.
    pub values: &'static [EnumValueSpec],
}

impl EnumSpec {
    /// The TRM name of `value`, or `None` if it is reserved.
    pub fn name_of(&self, value: u64) -> Option<&'static str> {
        self.values
            .iter()
            .find(|v| u64::from(v.value) == value)
            .map(|v| v.name)
    }
}

/// A field value that cannot be encoded (too wide) or decoded (reserved enum value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{command}: field {field} holds a value that is out of range or reserved")]
pub struct FieldError {
    /// Instruction name.
    pub command: &'static str,
    /// Field name.
    pub field: &'static str,
}
