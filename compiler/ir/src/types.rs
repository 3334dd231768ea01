//! Element types, shapes and tensor types.

use std::fmt;

/// Element type of a tensor.
///
/// Integer types are two's complement (signed) or plain binary (unsigned).
/// `Int48` values are held in an `i64` in memory (see [`crate::TensorData`]) and must lie in
/// `[-2^47, 2^47)`. `Bool` holds `false`/`true` (0/1 in arithmetic contexts).
///
/// `Float32` (IEEE-754 binary32) exists only for the float operators a TFLite converter leaves
/// between quantized ones ([`crate::FloatOp`]): they run on the CPU, never on an NPU. Its
/// elements are carried as their bit patterns (`0..=u32::MAX`) wherever values are `i64`s
/// ([`crate::TensorData::get`], the interpreter), so data movement stays bit-exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    Int48,
    Int64,
    Float32,
}

impl DType {
    /// All element types, in declaration order.
    pub const ALL: [DType; 9] = [
        DType::Bool,
        DType::Int8,
        DType::UInt8,
        DType::Int16,
        DType::UInt16,
        DType::Int32,
        DType::Int48,
        DType::Int64,
        DType::Float32,
    ];

    /// Short lowercase name used by the text dump: `bool`, `i8`, `u8`, `i16`, `u16`, `i32`,
    /// `i48`, `i64`, `f32`.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "i8",
            DType::UInt8 => "u8",
            DType::Int16 => "i16",
            DType::UInt16 => "u16",
            DType::Int32 => "i32",
            DType::Int48 => "i48",
            DType::Int64 => "i64",
            DType::Float32 => "f32",
        }
    }

    /// Width in bits (1 for `Bool`).
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 1,
            DType::Int8 | DType::UInt8 => 8,
            DType::Int16 | DType::UInt16 => 16,
            DType::Int32 | DType::Float32 => 32,
            DType::Int48 => 48,
            DType::Int64 => 64,
        }
    }

    /// Bytes per element in the little-endian raw encoding (`Bool` is one byte, `Int48` six).
    pub fn byte_size(self) -> usize {
        match self {
            DType::Bool => 1,
            _ => (self.bits() / 8) as usize,
        }
    }

    /// True for the signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int48 | DType::Int64
        )
    }

    /// True for the unsigned integer types (`UInt8`, `UInt16`).
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::UInt8 | DType::UInt16)
    }

    /// True for all types except `Bool` and `Float32`.
    pub fn is_integer(self) -> bool {
        !matches!(self, DType::Bool | DType::Float32)
    }

    /// True for `Float32`.
    pub fn is_float(self) -> bool {
        self == DType::Float32
    }

    /// Smallest representable value (for `Float32`: the smallest bit pattern, 0).
    pub fn min_value(self) -> i64 {
        match self {
            DType::Bool | DType::UInt8 | DType::UInt16 | DType::Float32 => 0,
            DType::Int64 => i64::MIN,
            _ => -(1i64 << (self.bits() - 1)),
        }
    }

    /// Largest representable value (for `Float32`: the largest bit pattern, `u32::MAX`).
    pub fn max_value(self) -> i64 {
        match self {
            DType::Bool => 1,
            DType::Float32 => i64::from(u32::MAX),
            DType::UInt8 => 255,
            DType::UInt16 => 65535,
            DType::Int64 => i64::MAX,
            _ => (1i64 << (self.bits() - 1)) - 1,
        }
    }

    /// True if `v` is representable in this type.
    pub fn contains(self, v: i64) -> bool {
        v >= self.min_value() && v <= self.max_value()
    }

    /// Same-width signed counterpart (`UInt8` → `Int8`, `UInt16` → `Int16`), else `self`.
    pub fn to_signed(self) -> DType {
        match self {
            DType::UInt8 => DType::Int8,
            DType::UInt16 => DType::Int16,
            t => t,
        }
    }

    /// Wraps `v` to this type's width: keeps the low `bits()` bits and reinterprets them as this
    /// type (two's complement truncation; `Bool` maps non-zero to 1; `Float32` keeps the low 32
    /// bits as a bit pattern).
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            DType::Bool => i64::from(v != 0),
            DType::Int8 => v as i8 as i64,
            DType::UInt8 => v as u8 as i64,
            DType::Int16 => v as i16 as i64,
            DType::UInt16 => v as u16 as i64,
            DType::Int32 => v as i32 as i64,
            DType::Int48 => (v << 16) >> 16,
            DType::Int64 => v,
            DType::Float32 => v as u32 as i64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor shape: one extent per dimension, outermost first (row-major / "linear packed"
/// layout, TOSA spec §1.7 "Data Layouts"). Rank 0 (a scalar) is allowed; extents must be ≥ 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    /// Builds a shape from anything that yields extents.
    pub fn new(dims: impl Into<Vec<usize>>) -> Shape {
        Shape(dims.into())
    }

    /// The empty (rank-0) shape.
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Extents as a slice.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of elements, or `None` if the product overflows `usize`.
    pub fn num_elements(&self) -> Option<usize> {
        self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// Row-major strides in elements (the last dimension has stride 1).
    pub fn strides(&self) -> Vec<usize> {
        let mut s = vec![1usize; self.0.len()];
        for i in (0..self.0.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1].saturating_mul(self.0[i + 1]);
        }
        s
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Shape {
        Shape(v)
    }
}

impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Shape {
        Shape(v.to_vec())
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Shape {
        Shape(v.to_vec())
    }
}

impl std::ops::Deref for Shape {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Element type plus shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Shape,
}

impl TensorType {
    /// Builds a tensor type.
    pub fn new(dtype: DType, shape: impl Into<Shape>) -> TensorType {
        TensorType {
            dtype,
            shape: shape.into(),
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.dtype, self.shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(DType::Int8.min_value(), -128);
        assert_eq!(DType::Int8.max_value(), 127);
        assert_eq!(DType::UInt16.max_value(), 65535);
        assert_eq!(DType::Int48.min_value(), -(1i64 << 47));
        assert_eq!(DType::Int48.wrap(1i64 << 47), -(1i64 << 47));
        assert_eq!(DType::Int8.wrap(200), -56);
        assert_eq!(DType::UInt8.wrap(-1), 255);
    }

    #[test]
    fn shape_helpers() {
        let s = Shape::from([2, 3, 4]);
        assert_eq!(s.strides(), vec![12, 4, 1]);
        assert_eq!(s.num_elements(), Some(24));
        assert_eq!(Shape::scalar().num_elements(), Some(1));
        assert_eq!(s.to_string(), "[2,3,4]");
    }
}
