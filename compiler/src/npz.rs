//! A NumPy `.npz` writer: a ZIP archive (stored, no compression) of `.npy` members, as
//! `numpy.savez` writes it.
//!
//! The member types are the ones Vela's raw output holds ([`Member`]): 0-d byte strings
//! (`|S<n>`), 0-d and n-d little-endian int64 arrays, empty float64 arrays (what NumPy makes
//! of an empty Python list) and 1-d object arrays of quantization records (`{"quant_type",
//! "scale", "zero_point"}` dicts), the last written as NumPy pickles them (protocol 3, the
//! arrays inside rebuilt by `numpy.core.multiarray._reconstruct`).
//!
//! ```
//! use npuc::npz::{self, Member};
//! let bytes = npz::write(&[("size", Member::I64Scalar(7))]);
//! assert_eq!(&bytes[..4], b"PK\x03\x04");
//! ```

/// How `real = scale * (q - zero_point)` is recorded for one tensor of Vela's raw output.
#[derive(Debug, Clone, PartialEq)]
pub enum QuantRecord {
    /// No quantization (`quant_type` `"none"`, empty arrays).
    None,
    /// One scale and zero point (`"per_tensor"`).
    PerTensor { scale: f32, zero_point: i32 },
    /// One per channel (`"per_channel"`).
    PerChannel {
        scales: Vec<f32>,
        zero_points: Vec<i32>,
    },
}

/// One member of the archive.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    /// A 0-d byte string, `|S<len>` (`|S1` holding `b""` when empty, as NumPy stores it).
    Bytes(Vec<u8>),
    /// A 0-d `<i8`.
    I64Scalar(i64),
    /// An n-d `<i8` array in C order.
    I64 { shape: Vec<usize>, data: Vec<i64> },
    /// An empty list: shape `(0,)`, `<f8`.
    Empty,
    /// A 1-d object array of quantization records.
    Quantizations(Vec<QuantRecord>),
}

fn shape_text(shape: &[usize]) -> String {
    match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A version 1.0 `.npy` header for `descr` and `shape`, padded to a multiple of 64 bytes.
pub fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_text(shape)
    );
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

fn npy(m: &Member) -> Vec<u8> {
    match m {
        Member::Bytes(b) => {
            let data: &[u8] = if b.is_empty() { &[0] } else { b };
            let mut out = npy_header(&format!("|S{}", data.len()), &[]);
            out.extend_from_slice(data);
            out
        }
        Member::I64Scalar(v) => {
            let mut out = npy_header("<i8", &[]);
            out.extend_from_slice(&v.to_le_bytes());
            out
        }
        Member::I64 { shape, data } => {
            let mut out = npy_header("<i8", shape);
            out.extend(data.iter().flat_map(|v| v.to_le_bytes()));
            out
        }
        Member::Empty => npy_header("<f8", &[0]),
        Member::Quantizations(q) => {
            let mut out = npy_header("|O", &[q.len()]);
            out.extend(pickle_records(q));
            out
        }
    }
}

/// Pickle opcodes (protocol 3) used below.
struct Pickler(Vec<u8>);

impl Pickler {
    fn global(&mut self, module: &str, name: &str) {
        self.0.push(b'c');
        self.0
            .extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    }
    fn int(&mut self, v: i32) {
        if (0..256).contains(&v) {
            self.0.extend_from_slice(&[b'K', v as u8]);
        } else {
            self.0.push(b'J');
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn str(&mut self, s: &str) {
        self.0.push(b'X');
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.push(b'B');
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
    }
    fn op(&mut self, code: &[u8]) {
        self.0.extend_from_slice(code);
    }
    /// `numpy.dtype(code, False, True)` with its state (version 3, byte order, no fields,
    /// element size and alignment -1 as NumPy records them, flags).
    fn dtype(&mut self, code: &str, order: &str, flags: i32) {
        self.global("numpy", "dtype");
        self.str(code);
        self.op(b"\x89\x88\x87R"); // False, True, TUPLE3, REDUCE
        self.op(b"(");
        self.int(3);
        self.str(order);
        self.op(b"NNN");
        self.int(-1);
        self.int(-1);
        self.int(flags);
        self.op(b"tb"); // TUPLE, BUILD
    }
    /// An empty `ndarray` of `(0,)` rebuilt by `_reconstruct`, then given its state
    /// `(1, shape, dtype, is_fortran, data)`; `data` pushes the last element.
    fn array(&mut self, len: usize, dtype: impl FnOnce(&mut Self), data: impl FnOnce(&mut Self)) {
        self.global("numpy.core.multiarray", "_reconstruct");
        self.global("numpy", "ndarray");
        self.int(0);
        self.op(b"\x85"); // TUPLE1
        self.bytes(b"b");
        self.op(b"\x87R("); // TUPLE3, REDUCE, MARK
        self.int(1);
        self.int(len as i32);
        self.op(b"\x85");
        dtype(self);
        self.op(b"\x89"); // not Fortran order
        data(self);
        self.op(b"tb");
    }
    fn numeric(&mut self, code: &str, raw: &[u8], len: usize) {
        self.array(len, |p| p.dtype(code, "<", 0), |p| p.bytes(raw));
    }
    fn record(&mut self, q: &QuantRecord) {
        let (kind, scales, zps): (&str, Vec<f32>, Vec<i32>) = match q {
            QuantRecord::None => ("none", vec![], vec![]),
            QuantRecord::PerTensor { scale, zero_point } => {
                ("per_tensor", vec![*scale], vec![*zero_point])
            }
            QuantRecord::PerChannel {
                scales,
                zero_points,
            } => ("per_channel", scales.clone(), zero_points.clone()),
        };
        self.op(b"}(");
        self.str("quant_type");
        self.str(kind);
        self.str("scale");
        let raw: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.numeric("f4", &raw, scales.len());
        self.str("zero_point");
        let raw: Vec<u8> = zps.iter().flat_map(|z| z.to_le_bytes()).collect();
        self.numeric("i4", &raw, zps.len());
        self.op(b"u"); // SETITEMS
    }
}

fn pickle_records(records: &[QuantRecord]) -> Vec<u8> {
    let mut p = Pickler(b"\x80\x03".to_vec());
    p.array(
        records.len(),
        |p| p.dtype("O8", "|", 63),
        |p| {
            p.op(b"](");
            for r in records {
                p.record(r);
            }
            p.op(b"e"); // APPENDS
        },
    );
    p.op(b".");
    p.0
}

/// CRC-32 (IEEE 802.3, reflected, as ZIP uses it).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// A ZIP archive of stored members (no compression, no ZIP64: the members and the archive
/// stay below 4 GiB), every timestamp 1980-01-01 00:00 as NumPy writes them.
pub fn zip(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    const DOS_DATE: u16 = (1 << 5) | 1; // 1980-01-01
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in members {
        let offset = out.len() as u32;
        let crc = crc32(data);
        let size = data.len() as u32;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&0u16.to_le_bytes()); // stored
            v.extend_from_slice(&0u16.to_le_bytes()); // time
            v.extend_from_slice(&DOS_DATE.to_le_bytes());
            v.extend_from_slice(&crc.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(b"PK\x03\x04");
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    let cd_size = central.len() as u32;
    out.extend_from_slice(&central);
    let n = members.len() as u16;
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0, 0, 0, 0]); // disk numbers
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment
    out
}

/// The `.npz` archive of `members` (each stored as `<name>.npy`), in this order.
pub fn write<S: AsRef<str>>(members: &[(S, Member)]) -> Vec<u8> {
    let files: Vec<(String, Vec<u8>)> = members
        .iter()
        .map(|(name, m)| (format!("{}.npy", name.as_ref()), npy(m)))
        .collect();
    zip(&files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_the_standard_check_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn headers_are_padded_to_64_bytes_as_numpy_pads_them() {
        let h = npy_header("<i8", &[]);
        assert_eq!(h.len(), 128);
        assert!(String::from_utf8_lossy(&h).contains("'shape': (), }"));
        assert_eq!(npy_header("<i8", &[2, 6]).len() % 64, 0);
    }

    #[test]
    fn empty_bytes_are_one_nul_byte_as_numpy_stores_b_empty() {
        let b = npy(&Member::Bytes(vec![]));
        assert!(String::from_utf8_lossy(&b).contains("'|S1'"));
        assert_eq!(b.last(), Some(&0));
    }
}
