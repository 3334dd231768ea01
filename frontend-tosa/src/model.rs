//! The owned, verified view of a TOSA flatbuffer.

use std::collections::HashMap;

use crate::error::TosaError;
use crate::ids::{BlockId, OperatorId, TensorIndex};
use crate::schema as fb;
use crate::schema::{AttributeT, DType, Op};

/// The TOSA file identifier, at bytes 4..8.
pub const TOSA_IDENTIFIER: &[u8; 4] = b"TOSA";

/// Limits handed to the flatbuffers verifier: default depth and table limits, and an
/// "apparent size" (bytes visited when shared objects are expanded) of at most 8x the file
/// (at least 1 MiB, at most 2 GiB) so that a file sharing one object many times is rejected.
fn verifier_options(file_len: usize) -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: 1_000_000,
        max_apparent_size: file_len.saturating_mul(8).clamp(1 << 20, 1 << 31),
        ignore_missing_null_terminator: false,
    }
}

/// The serialization's TOSA version (`Version` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TosaVersion {
    pub major: i32,
    pub minor: i32,
    pub patch: i32,
    pub draft: bool,
}

impl core::fmt::Display for TosaVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if self.draft {
            write!(f, "-draft")?;
        }
        Ok(())
    }
}

/// A parsed TOSA graph: everything copied out of the flatbuffer into owned data.
///
/// Construct it with [`TosaModel::parse`]. Inside each block every name an operator or the
/// block's input/output list mentions is defined (as a tensor or a shape) exactly once, and
/// every constant's data size matches its shape and element type.
#[derive(Debug, Clone, PartialEq)]
pub struct TosaModel {
    pub version: TosaVersion,
    /// `software_version` of the writer (`major.minor.micro[modifier]`), when recorded.
    pub software_version: Option<String>,
    pub regions: Vec<Region>,
}

/// A region: a named list of basic blocks (the first region's first block is the graph).
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    pub name: String,
    pub blocks: Vec<Block>,
}

/// A basic block: tensors, constant shapes, operators in execution order, inputs, outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub id: BlockId,
    pub tensors: Vec<Tensor>,
    pub shapes: Vec<ShapeValue>,
    pub operators: Vec<Operator>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    names: HashMap<String, Name>,
}

/// What a name of a block refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    Tensor(TensorIndex),
    /// Index into [`Block::shapes`].
    Shape(usize),
}

impl Block {
    /// What `name` refers to in this block.
    pub fn lookup(&self, name: &str) -> Option<Name> {
        self.names.get(name).copied()
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        match self.lookup(name)? {
            Name::Tensor(i) => self.tensors.get(i.0),
            Name::Shape(_) => None,
        }
    }

    /// The shape value named `name`: a `shapes` entry, or a tensor of type `SHAPE` with data.
    pub fn shape_value(&self, name: &str) -> Option<Vec<i64>> {
        match self.lookup(name)? {
            Name::Shape(i) => self.shapes.get(i).map(|s| s.values.clone()),
            Name::Tensor(i) => {
                let t = self.tensors.get(i.0)?;
                if t.dtype != DType::SHAPE {
                    return None;
                }
                let data = t.data.as_ref()?;
                Some(
                    data.chunks_exact(8)
                        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .collect(),
                )
            }
        }
    }
}

/// A tensor of a block.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub index: TensorIndex,
    pub name: String,
    pub shape: Vec<i32>,
    /// Element type (the schema's `DType`; values this schema does not know are kept).
    pub dtype: DType,
    /// Constant data, exactly as many bytes as the shape and type need (writer padding
    /// removed). `None` for tensors without data (activations, inputs, variables).
    pub data: Option<Vec<u8>>,
    /// File offset of the constant data.
    pub data_offset: Option<usize>,
    pub variable: bool,
    pub is_unranked: bool,
    pub variable_name: Option<String>,
    /// `offset`/`size` of data stored outside the flatbuffer (not resolved by this reader).
    pub external: Option<(u64, u64)>,
}

impl Tensor {
    /// Number of elements, `None` for negative dimensions or on overflow.
    pub fn num_elements(&self) -> Option<usize> {
        element_count(&self.shape)
    }
}

/// A `TosaShape` entry: a constant shape value (CONST_SHAPE result) of `rank` int64 values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeValue {
    pub name: String,
    pub rank: u32,
    pub values: Vec<i64>,
}

/// An operator: TOSA opcode, attribute (object-API union) and operand names.
#[derive(Debug, Clone, PartialEq)]
pub struct Operator {
    pub id: OperatorId,
    pub op: Op,
    pub attribute: AttributeT,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// `location.text`, when recorded.
    pub location: Option<String>,
}

impl Operator {
    /// The operator's TOSA name (`CONV2D`, or `UNKNOWN_OP(n)`).
    pub fn name(&self) -> String {
        op_name(self.op)
    }
}

/// TOSA name of an opcode.
pub fn op_name(op: Op) -> String {
    match op.variant_name() {
        Some(n) => n.to_string(),
        None => format!("UNKNOWN_OP({})", op.0),
    }
}

/// TOSA name of an element type.
pub fn dtype_name(dt: DType) -> String {
    match dt.variant_name() {
        Some(n) => n.to_string(),
        None => format!("UNKNOWN_DTYPE({})", dt.0),
    }
}

/// Bytes needed for `n` elements of `dt`, `None` for types without a fixed size here
/// (block-scaled and unknown types) or on overflow. INT4 is packed two per byte; INT48 is 6
/// bytes; SHAPE is int64.
pub fn data_size(dt: DType, n: usize) -> Option<usize> {
    let per = match dt {
        DType::INT4 => return Some(n.div_ceil(2)),
        DType::FP6E2M3 | DType::FP6E3M2 | DType::FP4E2M1 | DType::MXINT8 => return None,
        DType::BOOL | DType::INT8 | DType::FP8E4M3 | DType::FP8E5M2 | DType::FP8UE8M0 => 1,
        DType::INT16 | DType::FP16 | DType::BF16 => 2,
        DType::INT32 | DType::FP32 => 4,
        DType::INT48 => 6,
        DType::INT64 | DType::SHAPE => 8,
        _ => return None,
    };
    n.checked_mul(per)
}

fn element_count(shape: &[i32]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    })
}

fn offset_in(buf: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize)
}

impl TosaModel {
    /// Verifies `bytes` as a TOSA flatbuffer (identifier `TOSA`) and copies it out.
    pub fn parse(bytes: &[u8]) -> Result<TosaModel, TosaError> {
        if bytes.len() < 8 {
            return Err(TosaError::TooShort { len: bytes.len() });
        }
        if &bytes[4..8] != TOSA_IDENTIFIER {
            return Err(TosaError::WrongIdentifier {
                found: String::from_utf8_lossy(&bytes[4..8]).into_owned(),
            });
        }
        let opts = verifier_options(bytes.len());
        let g = fb::root_as_tosa_graph_with_opts(&opts, bytes)?;
        let v = g.version();
        let version = TosaVersion {
            major: v._major(),
            minor: v._minor(),
            patch: v._patch(),
            draft: v._draft(),
        };
        let software_version = g.software_version().map(|s| {
            format!(
                "{}.{}.{}{}",
                s._major(),
                s._minor(),
                s._micro(),
                s._modifier().unwrap_or("")
            )
        });
        let mut regions = Vec::new();
        for (ri, r) in g.regions().into_iter().flatten().enumerate() {
            let mut blocks = Vec::new();
            for (bi, b) in r.blocks().into_iter().flatten().enumerate() {
                blocks.push(parse_block(bytes, ri, bi, &b)?);
            }
            regions.push(Region {
                name: r.name().unwrap_or("").to_string(),
                blocks,
            });
        }
        Ok(TosaModel {
            version,
            software_version,
            regions,
        })
    }

    /// The first region's first block (the graph's entry block), if any.
    pub fn main_block(&self) -> Option<&Block> {
        self.regions.first()?.blocks.first()
    }

    /// All blocks, region by region.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.regions.iter().flat_map(|r| r.blocks.iter())
    }
}

fn strings(v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<&str>>>) -> Vec<String> {
    v.into_iter().flatten().map(str::to_string).collect()
}

fn parse_block(
    buf: &[u8],
    region: usize,
    block: usize,
    b: &fb::TosaBasicBlock<'_>,
) -> Result<Block, TosaError> {
    let id = BlockId {
        region,
        block,
        name: b.name().unwrap_or("").to_string(),
    };
    let mut names: HashMap<String, Name> = HashMap::new();
    let define = |names: &mut HashMap<String, Name>,
                  name: &str,
                  what: Name,
                  describe: &dyn Fn(Name) -> String|
     -> Result<(), TosaError> {
        if let Some(&prev) = names.get(name) {
            return Err(TosaError::DuplicateName {
                block: id.clone(),
                name: name.to_string(),
                first: describe(prev),
                second: describe(what),
            });
        }
        names.insert(name.to_string(), what);
        Ok(())
    };
    let describe = |n: Name| match n {
        Name::Tensor(i) => format!("tensor {i}"),
        Name::Shape(i) => format!("shape {i}"),
    };

    let mut tensors = Vec::new();
    for (i, t) in b.tensors().into_iter().flatten().enumerate() {
        let index = TensorIndex(i);
        let name = t.name().ok_or_else(|| TosaError::MissingName {
            block: id.clone(),
            what: format!("tensor {i}"),
        })?;
        let shape: Vec<i32> = t.shape().into_iter().flatten().collect();
        let dtype = t.type_();
        let (data, data_offset) = match t.data() {
            None => (None, None),
            Some(v) => {
                let raw = v.bytes();
                let offset = offset_in(buf, raw);
                let n = element_count(&shape);
                let expected = n.and_then(|n| data_size(dtype, n));
                match (n, expected) {
                    // An empty vector on a non-empty tensor is "no data".
                    (Some(n), _) if raw.is_empty() && n > 0 => (None, None),
                    (None, _) => {
                        return Err(TosaError::InvalidShape {
                            block: id.clone(),
                            tensor: index,
                            name: name.to_string(),
                            shape,
                            reason: "a constant needs non-negative dimensions whose product \
                                     fits usize"
                                .into(),
                        })
                    }
                    (Some(_), Some(expected)) => {
                        // Writers may pad the data (tosa-opt pads to 8 bytes); never short.
                        if raw.len() < expected || raw.len() > expected.next_multiple_of(8) {
                            return Err(TosaError::DataSizeMismatch {
                                block: id.clone(),
                                tensor: index,
                                name: name.to_string(),
                                shape,
                                dtype: dtype_name(dtype),
                                offset,
                                expected,
                                actual: raw.len(),
                            });
                        }
                        (Some(raw[..expected].to_vec()), Some(offset))
                    }
                    // Unknown element size: keep the bytes as stored.
                    (Some(_), None) => (Some(raw.to_vec()), Some(offset)),
                }
            }
        };
        define(&mut names, name, Name::Tensor(index), &describe)?;
        tensors.push(Tensor {
            index,
            name: name.to_string(),
            shape,
            dtype,
            data,
            data_offset,
            variable: t.variable(),
            is_unranked: t.is_unranked(),
            variable_name: t.variable_name().map(str::to_string),
            external: (t.size() != 0).then(|| (t.offset(), t.size())),
        });
    }

    let mut shapes = Vec::new();
    for (i, s) in b.shapes().into_iter().flatten().enumerate() {
        let name = s.name().ok_or_else(|| TosaError::MissingName {
            block: id.clone(),
            what: format!("shape {i}"),
        })?;
        let rank = s.rank();
        let (raw, offset) = match s.data() {
            Some(v) => (v.bytes(), offset_in(buf, v.bytes())),
            None => (&[][..], 0),
        };
        let expected = rank as usize * 8;
        // A rank-0 shape (the shape of a scalar) has no values, but the reference
        // serializer stores a zero-length vector as one padding int64 (the conformance
        // suite's RESHAPE to rank 0): accept that padding when it is zero.
        let raw = if rank == 0 && raw.len() == 8 && raw.iter().all(|&b| b == 0) {
            &raw[..0]
        } else {
            raw
        };
        if raw.len() != expected {
            return Err(TosaError::ShapeDataSize {
                block: id.clone(),
                name: name.to_string(),
                rank,
                offset,
                expected,
                actual: raw.len(),
            });
        }
        let values = raw
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        define(&mut names, name, Name::Shape(i), &describe)?;
        shapes.push(ShapeValue {
            name: name.to_string(),
            rank,
            values,
        });
    }

    let check = |context: String, name: &str| -> Result<(), TosaError> {
        if names.contains_key(name) {
            Ok(())
        } else {
            Err(TosaError::DanglingName {
                block: id.clone(),
                context,
                name: name.to_string(),
            })
        }
    };

    let mut operators = Vec::new();
    for (i, o) in b.operators().into_iter().flatten().enumerate() {
        let op = o.op();
        let inputs = strings(o.inputs());
        let outputs = strings(o.outputs());
        for (k, n) in inputs.iter().enumerate() {
            check(format!("operator {i} ({}) input {k}", op_name(op)), n)?;
        }
        for (k, n) in outputs.iter().enumerate() {
            check(format!("operator {i} ({}) output {k}", op_name(op)), n)?;
        }
        let attribute = o.unpack().attribute;
        operators.push(Operator {
            id: OperatorId(i),
            op,
            attribute,
            inputs,
            outputs,
            location: o.location().and_then(|l| l.text()).map(str::to_string),
        });
    }
    let inputs = strings(b.inputs());
    let outputs = strings(b.outputs());
    for (k, n) in inputs.iter().enumerate() {
        check(format!("block input {k}"), n)?;
    }
    for (k, n) in outputs.iter().enumerate() {
        check(format!("block output {k}"), n)?;
    }
    Ok(Block {
        id,
        tensors,
        shapes,
        operators,
        inputs,
        outputs,
        names,
    })
}
