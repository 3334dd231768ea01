//! Minimal `.npy` reader for test fixtures: little-endian int8/int16/int32/
//! float32/float64 arrays in C order (NPY format versions 1-3).

/// An array read from a `.npy` file, widened to `f64` (exact for the supported types).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Elements in C order.
    pub data: Vec<f64>,
}

impl NpyArray {
    /// Elements converted to i16; panics if any is not an integer in range.
    pub fn to_i16(&self) -> Vec<i16> {
        self.data
            .iter()
            .map(|&v| {
                assert!(v.fract() == 0.0 && v >= i16::MIN as f64 && v <= i16::MAX as f64);
                v as i16
            })
            .collect()
    }
}

/// Reads an `.npy` file; panics with a message on anything unsupported.
pub fn read_npy(path: &std::path::Path) -> NpyArray {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_npy(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `.npy` bytes.
pub fn parse_npy(bytes: &[u8]) -> Result<NpyArray, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not an npy file".into());
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or("truncated header")?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        v => return Err(format!("unsupported npy version {v}")),
    };
    let header = std::str::from_utf8(
        bytes
            .get(start..start + header_len)
            .ok_or("truncated header")?,
    )
    .map_err(|e| e.to_string())?;
    let descr = dict_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    if dict_value(header, "fortran_order")?.trim() != "False" {
        return Err("fortran order not supported".into());
    }
    let shape_text = dict_value(header, "shape")?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let count: usize = shape.iter().product();
    let body = &bytes[start + header_len..];
    let (size, read): (usize, fn(&[u8]) -> f64) = match descr {
        "|i1" | "i1" => (1, |b| b[0] as i8 as f64),
        "|u1" | "u1" => (1, |b| b[0] as f64),
        "<i2" => (2, |b| i16::from_le_bytes([b[0], b[1]]) as f64),
        "<i4" => (4, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        "<f4" => (4, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        "<f8" => (8, |b| {
            f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        }),
        other => return Err(format!("unsupported dtype {other}")),
    };
    if body.len() < count * size {
        return Err(format!(
            "body has {} bytes, need {}",
            body.len(),
            count * size
        ));
    }
    let data = body.chunks_exact(size).take(count).map(read).collect();
    Ok(NpyArray { shape, data })
}

/// The text of `key`'s value in the header's Python dict literal.
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let pat = format!("'{key}':");
    let at = header.find(&pat).ok_or(format!("no {key} in header"))? + pat.len();
    let rest = header[at..].trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else {
        rest.find(',')
    }
    .ok_or(format!("unterminated {key}"))?;
    Ok(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_v1_int8_array() {
        let header = "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[1, 2, 3, 0xFF, 0xFE, 0x80]);
        let a = parse_npy(&bytes).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.to_i16(), vec![1, 2, 3, -1, -2, -128]);
    }
}
