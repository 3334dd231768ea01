//! Element types of TFLite tensors.

use core::fmt;

/// The element type of a tensor (`tflite.TensorType` in the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorType {
    Float32,
    Float16,
    Int32,
    Uint8,
    Int64,
    String,
    Bool,
    Int16,
    Complex64,
    Int8,
    Float64,
    Complex128,
    Uint64,
    Resource,
    Variant,
    Uint32,
    Uint16,
    Int4,
    Bfloat16,
    Int2,
    Uint4,
    Float8E4m3fn,
    Float8E5m2,
}

impl TensorType {
    /// All types, in schema code order (`ALL[code]` has that code).
    pub const ALL: [TensorType; 23] = [
        TensorType::Float32,
        TensorType::Float16,
        TensorType::Int32,
        TensorType::Uint8,
        TensorType::Int64,
        TensorType::String,
        TensorType::Bool,
        TensorType::Int16,
        TensorType::Complex64,
        TensorType::Int8,
        TensorType::Float64,
        TensorType::Complex128,
        TensorType::Uint64,
        TensorType::Resource,
        TensorType::Variant,
        TensorType::Uint32,
        TensorType::Uint16,
        TensorType::Int4,
        TensorType::Bfloat16,
        TensorType::Int2,
        TensorType::Uint4,
        TensorType::Float8E4m3fn,
        TensorType::Float8E5m2,
    ];

    /// The type with the given schema code, `None` for codes this schema does not know.
    pub fn from_code(code: i8) -> Option<Self> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// The schema code of this type.
    pub fn code(self) -> i8 {
        // ALL has 23 entries, so the position always fits.
        Self::ALL.iter().position(|&t| t == self).unwrap_or(0) as i8
    }

    /// The name as TFLite spells it (`"INT8"`, `"FLOAT32"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TensorType::Float32 => "FLOAT32",
            TensorType::Float16 => "FLOAT16",
            TensorType::Int32 => "INT32",
            TensorType::Uint8 => "UINT8",
            TensorType::Int64 => "INT64",
            TensorType::String => "STRING",
            TensorType::Bool => "BOOL",
            TensorType::Int16 => "INT16",
            TensorType::Complex64 => "COMPLEX64",
            TensorType::Int8 => "INT8",
            TensorType::Float64 => "FLOAT64",
            TensorType::Complex128 => "COMPLEX128",
            TensorType::Uint64 => "UINT64",
            TensorType::Resource => "RESOURCE",
            TensorType::Variant => "VARIANT",
            TensorType::Uint32 => "UINT32",
            TensorType::Uint16 => "UINT16",
            TensorType::Int4 => "INT4",
            TensorType::Bfloat16 => "BFLOAT16",
            TensorType::Int2 => "INT2",
            TensorType::Uint4 => "UINT4",
            TensorType::Float8E4m3fn => "FLOAT8_E4M3FN",
            TensorType::Float8E5m2 => "FLOAT8_E5M2",
        }
    }

    /// Bits per element in a buffer, `None` for types without a fixed element size
    /// (`STRING`, `RESOURCE`, `VARIANT`). Sub-byte types are packed (`INT4`: two per byte).
    pub fn bits(self) -> Option<u32> {
        Some(match self {
            TensorType::Int2 => 2,
            TensorType::Int4 | TensorType::Uint4 => 4,
            TensorType::Uint8
            | TensorType::Int8
            | TensorType::Bool
            | TensorType::Float8E4m3fn
            | TensorType::Float8E5m2 => 8,
            TensorType::Int16 | TensorType::Uint16 | TensorType::Float16 | TensorType::Bfloat16 => {
                16
            }
            TensorType::Int32 | TensorType::Uint32 | TensorType::Float32 => 32,
            TensorType::Int64
            | TensorType::Uint64
            | TensorType::Float64
            | TensorType::Complex64 => 64,
            TensorType::Complex128 => 128,
            TensorType::String | TensorType::Resource | TensorType::Variant => return None,
        })
    }

    /// Bytes needed to store `elements` packed elements (rounded up to whole bytes),
    /// `None` for types without a fixed element size or on overflow.
    pub fn byte_size(self, elements: usize) -> Option<usize> {
        let bits = elements.checked_mul(self.bits()? as usize)?;
        Some(bits.div_ceil(8))
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_in_schema_order() {
        for (code, ty) in TensorType::ALL.iter().enumerate() {
            assert_eq!(TensorType::from_code(code as i8), Some(*ty));
            assert_eq!(ty.code() as usize, code);
        }
        assert_eq!(TensorType::from_code(9), Some(TensorType::Int8));
        assert_eq!(TensorType::from_code(23), None);
        assert_eq!(TensorType::from_code(-1), None);
    }

    #[test]
    fn names_follow_the_schema_spelling() {
        for ty in TensorType::ALL {
            let generated = crate::schema::TensorType(ty.code()).variant_name();
            assert_eq!(generated, Some(ty.name()));
        }
    }

    #[test]
    fn sub_byte_types_are_packed() {
        assert_eq!(TensorType::Int4.byte_size(3), Some(2));
        assert_eq!(TensorType::Int2.byte_size(5), Some(2));
        assert_eq!(TensorType::Int16.byte_size(3), Some(6));
        assert_eq!(TensorType::String.byte_size(3), None);
        assert_eq!(TensorType::Int64.byte_size(usize::MAX), None);
    }
}
