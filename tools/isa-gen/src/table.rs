//! Reading the instruction table (`commands.csv`, `enums.csv`) into a checked model.
//!
//! The CSV files are the single description of the Ethos-U85 ISA (TRM 3.10 and 3.11). This
//! module parses them and checks them for internal consistency: every bit of every command is
//! either the header, a payload field or a reserved bit, exactly once; every enum a field names
//! exists; opcodes are unique per command kind.

use std::collections::BTreeMap;
use std::fmt;

/// An error in the table, naming the row and what is wrong.
#[derive(Debug)]
pub struct TableError(pub String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableError {}

fn err<T>(msg: impl Into<String>) -> Result<T, TableError> {
    Err(TableError(msg.into()))
}

/// cmd0 (one word) or cmd1 (two words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cmd0,
    Cmd1,
}

/// How a payload field's bits are to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    Unsigned,
    Signed,
    Untyped,
    Bitset,
    Enum(String),
}

/// One payload field: `name[hi:lo]=type, description`.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub lo: u32,
    pub width: u32,
    pub ty: FieldType,
    pub description: String,
}

/// One instruction row.
#[derive(Debug, Clone)]
pub struct Command {
    pub name: String,
    pub kind: Kind,
    pub opcode: u16,
    pub description: String,
    pub fields: Vec<Field>,
    /// Mask of the bits that must be zero (including header bits [13:10]).
    pub reserved: u64,
    pub trm_section: String,
}

/// One enum value (reserved values are not listed).
#[derive(Debug, Clone)]
pub struct EnumValue {
    pub value: u32,
    pub name: String,
    pub description: String,
}

/// One enum type, e.g. `pooling_mode_t`.
#[derive(Debug, Clone)]
pub struct EnumType {
    pub name: String,
    pub values: Vec<EnumValue>,
}

/// The whole checked table.
#[derive(Debug)]
pub struct Table {
    pub commands: Vec<Command>,
    pub enums: Vec<EnumType>,
}

fn parse_bit_range(s: &str) -> Result<(u32, u32), TableError> {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    let (hi, lo) = match inner.split_once(':') {
        Some((h, l)) => (h, l),
        None => (inner, inner),
    };
    let hi: u32 = hi
        .parse()
        .map_err(|_| TableError(format!("bad bit range {s:?}")))?;
    let lo: u32 = lo
        .parse()
        .map_err(|_| TableError(format!("bad bit range {s:?}")))?;
    if lo > hi || hi > 63 {
        return err(format!("bad bit range {s:?}"));
    }
    Ok((hi, lo))
}

fn mask(hi: u32, lo: u32) -> u64 {
    let width = hi - lo + 1;
    let ones = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    ones << lo
}

/// Parses `name[hi:lo]=type, description; name2[..]=...`.
fn parse_fields(row: &str, text: &str) -> Result<Vec<Field>, TableError> {
    if text.trim() == "(none)" {
        return Ok(Vec::new());
    }
    let mut parts: Vec<String> = Vec::new();
    for part in text.split("; ") {
        let starts_field = part
            .split_once('[')
            .map(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .unwrap_or(false);
        match parts.last_mut() {
            Some(prev) if !starts_field => {
                prev.push_str("; ");
                prev.push_str(part);
            }
            _ => parts.push(part.to_string()),
        }
    }
    let mut fields = Vec::new();
    for part in parts {
        let Some((head, rest)) = part.split_once('=') else {
            return err(format!("{row}: field without '=': {part:?}"));
        };
        let Some((name, range)) = head.split_once('[') else {
            return err(format!("{row}: field without bit range: {part:?}"));
        };
        let (hi, lo) = parse_bit_range(&format!("[{range}"))?;
        let (ty_text, description) = match rest.split_once(", ") {
            Some((t, d)) => (t.trim(), d.trim()),
            None => (rest.trim(), ""),
        };
        let ty = if let Some(e) = ty_text.strip_prefix("enum ") {
            FieldType::Enum(e.trim().to_string())
        } else if ty_text.starts_with("unsigned integer") {
            FieldType::Unsigned
        } else if ty_text.starts_with("signed integer") {
            FieldType::Signed
        } else if ty_text.starts_with("untyped") {
            FieldType::Untyped
        } else if ty_text.starts_with("bitset") {
            FieldType::Bitset
        } else {
            return err(format!("{row}: unknown field type {ty_text:?}"));
        };
        let description = if description.is_empty() && ty_text.contains('(') {
            ty_text.to_string()
        } else {
            description.to_string()
        };
        fields.push(Field {
            name: name.to_string(),
            lo,
            width: hi - lo + 1,
            ty,
            description,
        });
    }
    Ok(fields)
}

fn parse_reserved(row: &str, text: &str) -> Result<u64, TableError> {
    let mut m = 0u64;
    let mut rest = text;
    while let Some(start) = rest.find('[') {
        let Some(end) = rest[start..].find(']') else {
            return err(format!("{row}: unterminated reserved range in {text:?}"));
        };
        let (hi, lo) = parse_bit_range(&rest[start..start + end + 1])?;
        m |= mask(hi, lo);
        rest = &rest[start + end + 1..];
    }
    Ok(m)
}

fn parse_hex(row: &str, s: &str) -> Result<u32, TableError> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u32::from_str_radix(digits, 16).map_err(|_| TableError(format!("{row}: bad hex {s:?}")))
}

fn parse_enum_value(s: &str) -> Result<(u32, u32), TableError> {
    let parse_one = |v: &str| -> Result<u32, TableError> {
        let v = v.trim();
        let r = if let Some(h) = v.strip_prefix("0x") {
            u32::from_str_radix(h, 16)
        } else if let Some(b) = v.strip_prefix("0b") {
            u32::from_str_radix(b, 2)
        } else {
            v.parse()
        };
        r.map_err(|_| TableError(format!("bad enum value {v:?}")))
    };
    match s.split_once("..") {
        Some((a, b)) => Ok((parse_one(a)?, parse_one(b)?)),
        None => {
            let v = parse_one(s)?;
            Ok((v, v))
        }
    }
}

/// Reads and checks both CSV files.
pub fn read(commands_csv: &str, enums_csv: &str) -> Result<Table, TableError> {
    let enums = read_enums(enums_csv)?;
    let mut rdr = csv::Reader::from_reader(commands_csv.as_bytes());
    let headers = rdr
        .headers()
        .map_err(|e| TableError(e.to_string()))?
        .clone();
    let col = |name: &str| -> Result<usize, TableError> {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| TableError(format!("commands.csv: no column {name}")))
    };
    let (c_name, c_stream, c_op, c_desc, c_fields, c_res, c_sec) = (
        col("name")?,
        col("stream")?,
        col("opcode_hex")?,
        col("description")?,
        col("payload_fields")?,
        col("reserved_bits")?,
        col("trm_section")?,
    );
    let mut commands = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| TableError(e.to_string()))?;
        let name = rec[c_name].to_string();
        let kind = match &rec[c_stream] {
            "cmd0" => Kind::Cmd0,
            "cmd1" => Kind::Cmd1,
            other => return err(format!("{name}: unknown stream {other:?}")),
        };
        let opcode = parse_hex(&name, &rec[c_op])?;
        if opcode > 0x3ff {
            return err(format!("{name}: opcode {opcode:#x} wider than 10 bits"));
        }
        let fields = parse_fields(&name, &rec[c_fields])?;
        let reserved = parse_reserved(&name, &rec[c_res])?;
        commands.push(Command {
            name,
            kind,
            opcode: opcode as u16,
            description: rec[c_desc].to_string(),
            fields,
            reserved,
            trm_section: rec[c_sec].to_string(),
        });
    }
    let table = Table { commands, enums };
    check(&table)?;
    Ok(table)
}

fn read_enums(enums_csv: &str) -> Result<Vec<EnumType>, TableError> {
    let mut rdr = csv::Reader::from_reader(enums_csv.as_bytes());
    let mut by_name: BTreeMap<String, EnumType> = BTreeMap::new();
    let mut order = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| TableError(e.to_string()))?;
        let ty = rec[0].to_string();
        // Rows that document pseudocode-only or register-only types are not ISA enums.
        if !ty.ends_with("_t") {
            continue;
        }
        let name = rec.get(3).unwrap_or("").to_string();
        let description = rec.get(4).unwrap_or("").to_string();
        if name == "Reserved" {
            continue;
        }
        let (lo, hi) = parse_enum_value(&rec[2])?;
        if lo != hi {
            return err(format!("{ty}: a range {lo}..{hi} that is not Reserved"));
        }
        let entry = by_name.entry(ty.clone()).or_insert_with(|| {
            order.push(ty.clone());
            EnumType {
                name: ty.clone(),
                values: Vec::new(),
            }
        });
        if entry.values.iter().any(|v| v.value == lo || v.name == name) {
            return err(format!("{ty}: duplicate value {lo} or name {name}"));
        }
        entry.values.push(EnumValue {
            value: lo,
            name,
            description,
        });
    }
    Ok(order
        .into_iter()
        .filter_map(|n| by_name.remove(&n))
        .collect())
}

fn check(table: &Table) -> Result<(), TableError> {
    let mut seen = BTreeMap::new();
    for c in &table.commands {
        if let Some(prev) = seen.insert((c.kind == Kind::Cmd1, c.opcode), c.name.clone()) {
            return err(format!("{} and {prev} share an opcode", c.name));
        }
        let total = if c.kind == Kind::Cmd1 { 64 } else { 32 };
        // Header: opcode [9:0], reserved [13:10], control [15:14].
        let mut covered = 0xffffu64;
        let mut add = |m: u64, what: &str| -> Result<(), TableError> {
            if covered & m != 0 {
                return err(format!("{}: {what} overlaps other bits", c.name));
            }
            covered |= m;
            Ok(())
        };
        for f in &c.fields {
            if f.lo + f.width > total {
                return err(format!("{}: field {} outside the command", c.name, f.name));
            }
            add(mask(f.lo + f.width - 1, f.lo), &f.name)?;
            if let FieldType::Enum(e) = &f.ty {
                let Some(et) = table.enums.iter().find(|t| &t.name == e) else {
                    return err(format!(
                        "{}: field {} names unknown enum {e}",
                        c.name, f.name
                    ));
                };
                if et
                    .values
                    .iter()
                    .any(|v| u64::from(v.value) >= 1u64 << f.width)
                {
                    return err(format!(
                        "{}: enum {e} does not fit field {}",
                        c.name, f.name
                    ));
                }
            }
        }
        add(c.reserved & !0x3c00, "reserved bits")?;
        let all = if total == 64 {
            u64::MAX
        } else {
            (1u64 << total) - 1
        };
        if covered != all {
            return err(format!(
                "{}: bits {:#x} are neither field nor reserved",
                c.name,
                all & !covered
            ));
        }
        let mut names: Vec<&str> = c.fields.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        if names.len() != c.fields.len() {
            return err(format!("{}: duplicate field names", c.name));
        }
    }
    Ok(())
}
