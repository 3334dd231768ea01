//! Typed tensor storage: constant data, interpreter inputs and results.

use crate::types::{DType, Shape, TensorType};
use thiserror::Error;

/// Flat, row-major element storage; the variant fixes the element type.
///
/// `I48` holds each 48-bit value sign-extended in an `i64`; constructors check the range.
/// `F32` holds IEEE-754 binary32 bit patterns (equality is bitwise, NaN payloads are kept);
/// [`TensorData::from_f32`] and [`TensorData::to_f32_vec`] convert.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TensorData {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    I48(Vec<i64>),
    I64(Vec<i64>),
    F32(Vec<u32>),
}

/// Errors building or decoding [`TensorData`] / [`TensorValue`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DataError {
    #[error("value {value} at element {index} does not fit {dtype}")]
    OutOfRange {
        dtype: DType,
        index: usize,
        value: i64,
    },
    #[error("{len} bytes is not a whole number of {dtype} elements")]
    ByteLength { dtype: DType, len: usize },
    #[error("shape {shape} needs {expected} elements, data has {actual}")]
    ElementCount {
        shape: Shape,
        expected: usize,
        actual: usize,
    },
    #[error("shape {0} has too many elements")]
    TooLarge(Shape),
}

impl TensorData {
    /// Element type of the storage.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::Bool(_) => DType::Bool,
            TensorData::I8(_) => DType::Int8,
            TensorData::U8(_) => DType::UInt8,
            TensorData::I16(_) => DType::Int16,
            TensorData::U16(_) => DType::UInt16,
            TensorData::I32(_) => DType::Int32,
            TensorData::I48(_) => DType::Int48,
            TensorData::I64(_) => DType::Int64,
            TensorData::F32(_) => DType::Float32,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::Bool(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::I16(v) => v.len(),
            TensorData::U16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I48(v) | TensorData::I64(v) => v.len(),
            TensorData::F32(v) => v.len(),
        }
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to `i64` (unsigned types zero-extend, `Bool` is 0/1, `F32` gives
    /// the bit pattern).
    pub fn get(&self, i: usize) -> Option<i64> {
        Some(match self {
            TensorData::Bool(v) => i64::from(*v.get(i)?),
            TensorData::I8(v) => i64::from(*v.get(i)?),
            TensorData::U8(v) => i64::from(*v.get(i)?),
            TensorData::I16(v) => i64::from(*v.get(i)?),
            TensorData::U16(v) => i64::from(*v.get(i)?),
            TensorData::I32(v) => i64::from(*v.get(i)?),
            TensorData::I48(v) | TensorData::I64(v) => *v.get(i)?,
            TensorData::F32(v) => i64::from(*v.get(i)?),
        })
    }

    /// All elements widened to `i64` (unsigned types zero-extend, `Bool` is 0/1, `F32` gives
    /// the bit patterns).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        match self {
            TensorData::Bool(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::I8(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::I16(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::U16(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
            TensorData::I48(v) | TensorData::I64(v) => v.clone(),
            TensorData::F32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        }
    }

    /// `F32` storage holding `values`.
    pub fn from_f32(values: &[f32]) -> TensorData {
        TensorData::F32(values.iter().map(|x| x.to_bits()).collect())
    }

    /// The elements of `F32` storage as `f32`s (`None` for the other types).
    pub fn to_f32_vec(&self) -> Option<Vec<f32>> {
        match self {
            TensorData::F32(v) => Some(v.iter().map(|&b| f32::from_bits(b)).collect()),
            _ => None,
        }
    }

    /// Narrows `values` to `dtype`, failing on the first value outside the type's range
    /// (`Bool` accepts only 0 and 1; `Float32` takes bit patterns).
    pub fn from_i64(dtype: DType, values: &[i64]) -> Result<TensorData, DataError> {
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, &v)| !dtype.contains(v))
        {
            return Err(DataError::OutOfRange {
                dtype,
                index,
                value,
            });
        }
        // Every value is in range, so the `as` conversions below are exact.
        Ok(match dtype {
            DType::Bool => TensorData::Bool(values.iter().map(|&v| v != 0).collect()),
            DType::Int8 => TensorData::I8(values.iter().map(|&v| v as i8).collect()),
            DType::UInt8 => TensorData::U8(values.iter().map(|&v| v as u8).collect()),
            DType::Int16 => TensorData::I16(values.iter().map(|&v| v as i16).collect()),
            DType::UInt16 => TensorData::U16(values.iter().map(|&v| v as u16).collect()),
            DType::Int32 => TensorData::I32(values.iter().map(|&v| v as i32).collect()),
            DType::Int48 => TensorData::I48(values.to_vec()),
            DType::Int64 => TensorData::I64(values.to_vec()),
            DType::Float32 => TensorData::F32(values.iter().map(|&v| v as u32).collect()),
        })
    }

    /// A tensor of `n` zeros (`false`).
    pub fn zeros(dtype: DType, n: usize) -> TensorData {
        match dtype {
            DType::Bool => TensorData::Bool(vec![false; n]),
            DType::Int8 => TensorData::I8(vec![0; n]),
            DType::UInt8 => TensorData::U8(vec![0; n]),
            DType::Int16 => TensorData::I16(vec![0; n]),
            DType::UInt16 => TensorData::U16(vec![0; n]),
            DType::Int32 => TensorData::I32(vec![0; n]),
            DType::Int48 => TensorData::I48(vec![0; n]),
            DType::Int64 => TensorData::I64(vec![0; n]),
            DType::Float32 => TensorData::F32(vec![0; n]),
        }
    }

    /// Little-endian raw bytes, `dtype().byte_size()` bytes per element (`Int48`: 6 bytes,
    /// `Bool`: one byte 0/1).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.dtype().byte_size());
        match self {
            TensorData::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
            TensorData::I8(v) => out.extend(v.iter().map(|&x| x as u8)),
            TensorData::U8(v) => out.extend_from_slice(v),
            TensorData::I16(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
            TensorData::U16(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
            TensorData::I32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
            TensorData::I48(v) => v.iter().for_each(|x| out.extend(&x.to_le_bytes()[..6])),
            TensorData::I64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
            TensorData::F32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        }
        out
    }

    /// Decodes little-endian raw bytes (the inverse of [`TensorData::to_le_bytes`]). `Bool`
    /// bytes are true when non-zero; `Int48` elements are sign-extended from 6 bytes.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Result<TensorData, DataError> {
        let size = dtype.byte_size();
        if bytes.len() % size != 0 {
            return Err(DataError::ByteLength {
                dtype,
                len: bytes.len(),
            });
        }
        let chunks = bytes.chunks_exact(size);
        Ok(match dtype {
            DType::Bool => TensorData::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::Int8 => TensorData::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::UInt8 => TensorData::U8(bytes.to_vec()),
            DType::Int16 => {
                TensorData::I16(chunks.map(|c| i16::from_le_bytes([c[0], c[1]])).collect())
            }
            DType::UInt16 => {
                TensorData::U16(chunks.map(|c| u16::from_le_bytes([c[0], c[1]])).collect())
            }
            DType::Int32 => TensorData::I32(
                chunks
                    .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            DType::Float32 => TensorData::F32(
                chunks
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            DType::Int48 => TensorData::I48(
                chunks
                    .map(|c| {
                        let raw = i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], 0, 0]);
                        (raw << 16) >> 16
                    })
                    .collect(),
            ),
            DType::Int64 => TensorData::I64(
                chunks
                    .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect(),
            ),
        })
    }
}

/// A tensor's value: shape plus typed data. Interpreter inputs and results use this type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorValue {
    shape: Shape,
    data: TensorData,
}

impl TensorValue {
    /// Pairs a shape with data, checking that the element counts agree.
    pub fn new(shape: impl Into<Shape>, data: TensorData) -> Result<TensorValue, DataError> {
        let shape = shape.into();
        let expected = shape
            .num_elements()
            .ok_or_else(|| DataError::TooLarge(shape.clone()))?;
        if expected != data.len() {
            return Err(DataError::ElementCount {
                shape,
                expected,
                actual: data.len(),
            });
        }
        Ok(TensorValue { shape, data })
    }

    /// Narrows `values` to `dtype` (see [`TensorData::from_i64`]) and checks the shape.
    pub fn from_i64(
        dtype: DType,
        shape: impl Into<Shape>,
        values: &[i64],
    ) -> Result<TensorValue, DataError> {
        TensorValue::new(shape, TensorData::from_i64(dtype, values)?)
    }

    /// Decodes little-endian raw bytes (see [`TensorData::from_le_bytes`]) and checks the shape.
    pub fn from_le_bytes(
        dtype: DType,
        shape: impl Into<Shape>,
        bytes: &[u8],
    ) -> Result<TensorValue, DataError> {
        TensorValue::new(shape, TensorData::from_le_bytes(dtype, bytes)?)
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Element type and shape.
    pub fn tensor_type(&self) -> TensorType {
        TensorType::new(self.dtype(), self.shape.clone())
    }

    /// The typed storage.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// Consumes the value, returning its storage.
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// Elements widened to `i64`.
    pub fn to_i64_vec(&self) -> Vec<i64> {
        self.data.to_i64_vec()
    }

    /// Little-endian raw bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.data.to_le_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_round_trip_every_type() {
        for dt in DType::ALL {
            let vals: Vec<i64> = [dt.min_value(), 0, 1, dt.max_value()].to_vec();
            let d = TensorData::from_i64(dt, &vals).unwrap();
            let bytes = d.to_le_bytes();
            assert_eq!(bytes.len(), 4 * dt.byte_size());
            assert_eq!(TensorData::from_le_bytes(dt, &bytes).unwrap(), d);
            assert_eq!(d.to_i64_vec(), vals);
        }
    }

    #[test]
    fn int48_is_six_bytes_sign_extended() {
        let d = TensorData::from_i64(DType::Int48, &[-2]).unwrap();
        assert_eq!(d.to_le_bytes(), vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn range_and_count_errors() {
        assert!(matches!(
            TensorData::from_i64(DType::Int8, &[1, 128]),
            Err(DataError::OutOfRange { index: 1, .. })
        ));
        assert!(TensorValue::from_i64(DType::Int8, [2, 2], &[1, 2, 3]).is_err());
        assert!(TensorData::from_le_bytes(DType::Int32, &[1, 2, 3]).is_err());
    }
}
