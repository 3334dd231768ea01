//! A small NumPy `.npy` reader and writer (format versions 1.0-3.0 read, 1.0 written) for
//! little-endian int8/uint8/int16/uint16/int32/uint32/int64/float32 arrays in C order.

use std::fmt;

/// Element type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `|b1` (one byte, 0 or 1).
    Bool,
    /// `|i1`.
    I8,
    /// `|u1`.
    U8,
    /// `<i2`.
    I16,
    /// `<u2`.
    U16,
    /// `<i4`.
    I32,
    /// `<u4`.
    U32,
    /// `<i8`.
    I64,
    /// `<f4`.
    F32,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 => 8,
        }
    }

    /// The NumPy `descr` string.
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::Bool => "|b1",
            Dtype::I8 => "|i1",
            Dtype::U8 => "|u1",
            Dtype::I16 => "<i2",
            Dtype::U16 => "<u2",
            Dtype::I32 => "<i4",
            Dtype::U32 => "<u4",
            Dtype::I64 => "<i8",
            Dtype::F32 => "<f4",
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
            _ => return None,
        })
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.descr())
    }
}

/// An array: dtype, shape and little-endian C-order bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<usize>,
    /// Raw little-endian bytes, C order.
    pub data: Vec<u8>,
}

/// Why a file is not a supported `.npy`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// Not a `.npy` file or a truncated header.
    #[error("not a .npy file: {0}")]
    Format(String),
    /// An unsupported dtype or Fortran order.
    #[error("unsupported .npy array: {0}")]
    Unsupported(String),
}

fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let k = format!("'{key}':");
    let at = header.find(&k)? + k.len();
    Some(header[at..].trim_start())
}

/// Parses a `.npy` file.
pub fn read(bytes: &[u8]) -> Result<Array, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(NpyError::Format("missing \\x93NUMPY magic".into()));
    }
    let (hlen, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(NpyError::Format(format!("version {v}"))),
    };
    let header = bytes
        .get(start..start + hlen)
        .ok_or_else(|| NpyError::Format("truncated header".into()))?;
    let header =
        std::str::from_utf8(header).map_err(|_| NpyError::Format("header not UTF-8".into()))?;
    let descr = field(header, "descr")
        .and_then(|s| s.strip_prefix('\''))
        .and_then(|s| s.split('\'').next())
        .ok_or_else(|| NpyError::Format("no descr".into()))?;
    let dtype =
        Dtype::from_descr(descr).ok_or_else(|| NpyError::Unsupported(format!("dtype {descr}")))?;
    if field(header, "fortran_order").is_some_and(|s| s.starts_with("True")) {
        return Err(NpyError::Unsupported("Fortran order".into()));
    }
    let shape_s = field(header, "shape")
        .and_then(|s| s.strip_prefix('('))
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| NpyError::Format("no shape".into()))?;
    let shape = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| NpyError::Format(format!("shape {shape_s}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let n: usize = shape.iter().product();
    let len = n
        .checked_mul(dtype.size())
        .ok_or_else(|| NpyError::Format("size overflow".into()))?;
    let data = bytes
        .get(start + hlen..start + hlen + len)
        .ok_or_else(|| NpyError::Format(format!("{} data bytes expected", len)))?;
    Ok(Array {
        dtype,
        shape,
        data: data.to_vec(),
    })
}

/// Serialises an array as a version 1.0 `.npy` file.
pub fn write(a: &Array) -> Vec<u8> {
    let shape = match a.shape.len() {
        1 => format!("({},)", a.shape[0]),
        _ => format!(
            "({})",
            a.shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        a.dtype.descr(),
        shape
    );
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + a.data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a = Array {
            dtype: Dtype::I16,
            shape: vec![1, 2, 3],
            data: (0..12).collect(),
        };
        let b = write(&a);
        assert_eq!((b.len() - a.data.len()) % 64, 0);
        assert_eq!(read(&b).unwrap(), a);
    }
}
