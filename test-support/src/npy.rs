//! NumPy `.npy` reader (format versions 1.0 to 3.0, little-endian, C order) for the test
//! fixtures: integer, bool and float arrays.
//!
//! [`read`] / [`parse`] give the raw [`Array`]; [`Array::to_i64`] and [`Array::to_f64`]
//! widen the elements exactly; [`read_tensor`] gives an IR [`TensorValue`] for the integer
//! and bool types the IR has.

use npuc_ir::{DType, TensorValue};
use std::path::Path;

/// Element type of an array (`descr` in the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    F32,
    F64,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::F64 => 8,
        }
    }

    fn from_descr(d: &str) -> Option<Dtype> {
        Some(match d {
            "|b1" => Dtype::Bool,
            "|i1" | "<i1" | "i1" => Dtype::I8,
            "|u1" | "<u1" | "u1" => Dtype::U8,
            "<i2" => Dtype::I16,
            "<u2" => Dtype::U16,
            "<i4" => Dtype::I32,
            "<u4" => Dtype::U32,
            "<i8" => Dtype::I64,
            "<f4" => Dtype::F32,
            "<f8" => Dtype::F64,
            _ => return None,
        })
    }

    /// The IR element type, for the integer and bool types the IR has.
    pub fn ir(self) -> Option<DType> {
        Some(match self {
            Dtype::Bool => DType::Bool,
            Dtype::I8 => DType::Int8,
            Dtype::U8 => DType::UInt8,
            Dtype::I16 => DType::Int16,
            Dtype::U16 => DType::UInt16,
            Dtype::I32 => DType::Int32,
            Dtype::I64 => DType::Int64,
            Dtype::U32 | Dtype::F32 | Dtype::F64 => return None,
        })
    }
}

/// An array: element type, shape and raw little-endian C-order bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl Array {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements widened to `i64`; `Err` for float arrays.
    pub fn to_i64(&self) -> Result<Vec<i64>, String> {
        let b = &self.data;
        let v = match self.dtype {
            Dtype::Bool | Dtype::U8 => b.iter().map(|&x| i64::from(x)).collect(),
            Dtype::I8 => b.iter().map(|&x| i64::from(x as i8)).collect(),
            Dtype::I16 => b
                .chunks_exact(2)
                .map(|c| i64::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
            Dtype::U16 => b
                .chunks_exact(2)
                .map(|c| i64::from(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            Dtype::I32 => b
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            Dtype::U32 => b
                .chunks_exact(4)
                .map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            Dtype::I64 => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
            Dtype::F32 | Dtype::F64 => {
                return Err(format!("{:?} array is not an integer array", self.dtype))
            }
        };
        Ok(v)
    }

    /// The elements widened to `f64` (exact for every supported type but `i64` beyond 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        match self.dtype {
            Dtype::F32 => self
                .data
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            Dtype::F64 => self
                .data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
            _ => self
                .to_i64()
                .expect("integer array")
                .into_iter()
                .map(|v| v as f64)
                .collect(),
        }
    }

    /// The array as an IR tensor value (integer and bool arrays).
    pub fn to_tensor(&self) -> Result<TensorValue, String> {
        let dt = self
            .dtype
            .ir()
            .ok_or_else(|| format!("{:?} has no IR element type", self.dtype))?;
        TensorValue::from_le_bytes(dt, self.shape.clone(), &self.data).map_err(|e| e.to_string())
    }
}

/// The text after `'key':` in the header's Python dict literal.
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let k = format!("'{key}':");
    let at = header.find(&k)? + k.len();
    Some(header[at..].trim_start())
}

/// Parses `.npy` bytes.
pub fn parse(bytes: &[u8]) -> Result<Array, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not an npy file (no \\x93NUMPY magic)".into());
    }
    let (hlen, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported npy version {v}")),
    };
    let header = bytes
        .get(start..start + hlen)
        .ok_or("truncated npy header")?;
    let header = std::str::from_utf8(header).map_err(|_| "npy header is not UTF-8")?;
    let descr = field(header, "descr")
        .and_then(|s| s.strip_prefix('\''))
        .and_then(|s| s.split('\'').next())
        .ok_or("no descr in npy header")?;
    let dtype = Dtype::from_descr(descr).ok_or_else(|| format!("unsupported dtype {descr}"))?;
    if field(header, "fortran_order").is_some_and(|s| s.starts_with("True")) {
        return Err("fortran order is not supported".into());
    }
    let shape_s = field(header, "shape")
        .and_then(|s| s.strip_prefix('('))
        .and_then(|s| s.split(')').next())
        .ok_or("no shape in npy header")?;
    let shape = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad shape ({shape_s})"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let len = shape
        .iter()
        .product::<usize>()
        .checked_mul(dtype.size())
        .ok_or("npy size overflow")?;
    let data = bytes
        .get(start + hlen..start + hlen + len)
        .ok_or_else(|| format!("{len} data bytes expected"))?;
    Ok(Array {
        dtype,
        shape,
        data: data.to_vec(),
    })
}

/// Reads and parses a `.npy` file; errors name the file.
pub fn read(path: &Path) -> Result<Array, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&b).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a `.npy` file as an IR tensor value.
pub fn read_tensor(path: &Path) -> Result<TensorValue, String> {
    read(path)?
        .to_tensor()
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(header.len() as u16).to_le_bytes());
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn reads_signed_bytes_and_shape() {
        let a = parse(&npy("|i1", "(2, 3)", &[1, 2, 3, 0xFF, 0xFE, 0x80])).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.to_i64().unwrap(), vec![1, 2, 3, -1, -2, -128]);
    }

    #[test]
    fn reads_little_endian_int16_and_float32() {
        let a = parse(&npy("<i2", "(2,)", &[0x00, 0x80, 0xFF, 0x7F])).unwrap();
        assert_eq!(a.to_i64().unwrap(), vec![-32768, 32767]);
        let f = parse(&npy("<f4", "(1,)", &1.5f32.to_le_bytes())).unwrap();
        assert_eq!(f.to_f64(), vec![1.5]);
        assert!(f.to_i64().is_err());
    }

    #[test]
    fn scalar_shape_and_errors() {
        let a = parse(&npy("<i4", "()", &7i32.to_le_bytes())).unwrap();
        assert!(a.shape.is_empty());
        assert_eq!(a.to_i64().unwrap(), vec![7]);
        assert!(parse(&npy("<c8", "(1,)", &[0; 8])).is_err());
        assert!(parse(&npy("<i4", "(2,)", &[0; 4])).is_err());
        assert!(parse(b"not numpy").is_err());
    }

    #[test]
    fn reads_a_golden_as_tensor() {
        let v = read_tensor(&crate::models_dir().join("golden/dense/output0_0.npy")).unwrap();
        assert_eq!(v.shape().dims(), &[1, 13]);
        assert_eq!(v.dtype(), DType::Int8);
    }
}
