//! Lowering a parsed TOSA 1.0 block to the npuc IR.
//!
//! The profile is PRO-INT + EXT-INT16 + EXT-DOUBLEROUND + EXT-INT4 (INT4 weights, constant or
//! graph inputs, and INT4 CONST / IDENTITY, all held as `i8`: constants are unpacked, two per
//! byte). Each operator's input types are checked against its 1.0 modes;
//! constant operands become IR attributes; the IR's inferred output type must equal the
//! declared TOSA output type.

use std::collections::HashMap;

use npuc_ir::validate::infer_output_types;
use npuc_ir::{
    ArithmeticRightShiftAttrs, AvgPool2dAttrs, AvgPoolRounding, AxisAttrs, CastAttrs, ClampAttrs,
    Conv3dAttrs, ConvAttrs, DType, Graph, MatMulAttrs, MulAttrs, NegateAttrs, Op, PadAttrs,
    PoolAttrs, RescaleAttrs, RescaleRounding, ReshapeAttrs, ResizeAttrs, ResizeMode, Shape,
    SliceAttrs, TableAttrs, TableData, TensorData, TensorId, TensorType, TileAttrs, TransposeAttrs,
    TransposeConvAttrs,
};

use crate::error::{LowerError, OpAt};
use crate::model::{dtype_name, Block, Name, Operator, Tensor, TosaModel};
use crate::schema::{self as fb, AttributeT};

/// Lowers the model's single basic block into a validated IR graph.
///
/// The graph is named after the block; IR tensors keep the TOSA tensor names and each
/// operator is named after its output tensor.
pub fn lower(model: &TosaModel) -> Result<Graph, LowerError> {
    let v = model.version;
    if v.major != 1 || v.minor != 0 {
        return Err(LowerError::UnsupportedVersion {
            version: v.to_string(),
        });
    }
    let blocks = model.blocks().count();
    if blocks > 1 {
        return Err(LowerError::MultipleBlocks {
            regions: model.regions.len(),
            blocks,
        });
    }
    let block = model.main_block().ok_or(LowerError::NoBlock)?;
    let mut cx = Lower {
        block,
        g: Graph::new(block.id.name.clone()),
        ids: HashMap::new(),
        producer: HashMap::new(),
    };
    for name in &block.inputs {
        let ty = cx.declared_type(name)?;
        let t = cx.g.add_input(name.clone(), ty);
        cx.ids.insert(name.clone(), t);
    }
    for op in &block.operators {
        for out in &op.outputs {
            if let Some(&first) = cx.producer.get(out.as_str()) {
                return Err(LowerError::ProducedTwice {
                    block: block.id.clone(),
                    name: out.clone(),
                    first,
                    second: op.id,
                });
            }
            cx.producer.insert(out.clone(), op.id);
        }
        cx.lower_op(op)?;
    }
    let mut outputs = Vec::new();
    for name in &block.outputs {
        let t = match cx.ids.get(name) {
            Some(&t) => t,
            None => match block.tensor(name) {
                Some(t) if t.data.is_some() => cx.constant(t)?,
                _ => {
                    return Err(LowerError::OutputNotProduced {
                        block: block.id.clone(),
                        name: name.clone(),
                    })
                }
            },
        };
        outputs.push(t);
    }
    cx.g.set_outputs(outputs)?;
    npuc_ir::validate(&cx.g)?;
    Ok(cx.g)
}

struct Lower<'a> {
    block: &'a Block,
    g: Graph,
    ids: HashMap<String, TensorId>,
    producer: HashMap<String, crate::OperatorId>,
}

/// Maps a TOSA element type to the IR type of a tensor (INT4 constants are widened to i8).
fn ir_dtype(dt: fb::DType) -> Option<DType> {
    Some(match dt {
        fb::DType::BOOL => DType::Bool,
        fb::DType::INT4 | fb::DType::INT8 => DType::Int8,
        fb::DType::INT16 => DType::Int16,
        fb::DType::INT32 => DType::Int32,
        fb::DType::INT48 => DType::Int48,
        _ => return None,
    })
}

/// One operator being lowered: helpers that name it in errors.
struct At<'o> {
    at: OpAt,
    op: &'o Operator,
}

impl At<'_> {
    fn err(&self, reason: impl Into<String>) -> LowerError {
        LowerError::Op {
            at: self.at.clone(),
            reason: reason.into(),
        }
    }

    fn operand_err(&self, slot: usize, reason: impl Into<String>) -> LowerError {
        LowerError::Operand {
            at: self.at.clone(),
            operand: self.op.inputs.get(slot).cloned().unwrap_or_default(),
            reason: format!("input {slot}: {}", reason.into()),
        }
    }

    fn arity(&self, inputs: usize) -> Result<(), LowerError> {
        if self.op.inputs.len() != inputs {
            return Err(self.err(format!(
                "has {} inputs, expected {inputs}",
                self.op.inputs.len()
            )));
        }
        if self.op.outputs.len() != 1 {
            return Err(self.err(format!("has {} outputs, expected 1", self.op.outputs.len())));
        }
        Ok(())
    }

    fn missing_attr(&self) -> LowerError {
        self.err(format!(
            "attribute missing or of the wrong kind ({:?})",
            attr_kind(&self.op.attribute)
        ))
    }
}

fn attr_kind(a: &AttributeT) -> String {
    let s = format!("{a:?}");
    s.split('(').next().unwrap_or("").to_string()
}

fn i32_list(
    at: &At<'_>,
    what: &str,
    v: &Option<Vec<i32>>,
    len: usize,
    min: i32,
) -> Result<Vec<usize>, LowerError> {
    let v = v.as_deref().unwrap_or(&[]);
    if v.len() != len {
        return Err(at.err(format!("{what} has {} entries, expected {len}", v.len())));
    }
    v.iter()
        .map(|&x| {
            if x < min {
                Err(at.err(format!("{what} {v:?}: each entry must be >= {min}")))
            } else {
                Ok(x as usize)
            }
        })
        .collect()
}

fn arr2(v: Vec<usize>) -> [usize; 2] {
    [v[0], v[1]]
}

fn arr4(v: Vec<usize>) -> [usize; 4] {
    [v[0], v[1], v[2], v[3]]
}

/// Decodes constant bytes of TOSA type `dt` into IR data (INT4: two per byte, low nibble
/// first, sign-extended to i8).
fn decode(dt: fb::DType, bytes: &[u8], n: usize) -> Option<TensorData> {
    if dt == fb::DType::INT4 {
        let v = (0..n)
            .map(|i| {
                let b = *bytes.get(i / 2)?;
                let nib = if i % 2 == 0 { b & 0x0f } else { b >> 4 };
                Some(((nib << 4) as i8) >> 4)
            })
            .collect::<Option<Vec<i8>>>()?;
        return Some(TensorData::I8(v));
    }
    let d = TensorData::from_le_bytes(ir_dtype(dt)?, bytes).ok()?;
    (d.len() == n).then_some(d)
}

const I8: &[fb::DType] = &[fb::DType::INT8];
const I32: &[fb::DType] = &[fb::DType::INT32];
const I8_16: &[fb::DType] = &[fb::DType::INT8, fb::DType::INT16];
const I8_16_32: &[fb::DType] = &[fb::DType::INT8, fb::DType::INT16, fb::DType::INT32];
const BOOL: &[fb::DType] = &[fb::DType::BOOL];
const ANY: &[fb::DType] = &[
    fb::DType::BOOL,
    fb::DType::INT8,
    fb::DType::INT16,
    fb::DType::INT32,
];

/// IDENTITY also passes EXT-INT4 tensors (held as i8) and EXT-INT16's INT48.
const ANY_I4_48: &[fb::DType] = &[
    fb::DType::BOOL,
    fb::DType::INT4,
    fb::DType::INT8,
    fb::DType::INT16,
    fb::DType::INT32,
    fb::DType::INT48,
];

const I8_16_32_48: &[fb::DType] = &[
    fb::DType::INT8,
    fb::DType::INT16,
    fb::DType::INT32,
    fb::DType::INT48,
];

/// The TOSA operators npuc lowers, each with the element types its (first data) input may
/// have: the table `lower_op` checks every operator against and reads its types from, and
/// that `npuc supported-ops` prints.
pub const OPERATORS: &[(fb::Op, &[fb::DType])] = &[
    (fb::Op::ARGMAX, I8_16),
    (fb::Op::AVG_POOL2D, I8_16),
    (fb::Op::CONV2D, I8_16),
    (fb::Op::CONV3D, I8_16),
    (fb::Op::DEPTHWISE_CONV2D, I8_16),
    (fb::Op::MATMUL, I8_16),
    (fb::Op::MAX_POOL2D, I8_16),
    (fb::Op::TRANSPOSE_CONV2D, I8_16),
    (fb::Op::CLAMP, I8_16),
    (fb::Op::ADD, I32),
    (fb::Op::ARITHMETIC_RIGHT_SHIFT, I8_16_32),
    (fb::Op::BITWISE_AND, I8_16_32),
    (fb::Op::BITWISE_OR, I8_16_32),
    (fb::Op::BITWISE_XOR, I8_16_32),
    (fb::Op::INTDIV, I32),
    (fb::Op::LOGICAL_AND, BOOL),
    (fb::Op::LOGICAL_LEFT_SHIFT, I8_16_32),
    (fb::Op::LOGICAL_RIGHT_SHIFT, I8_16_32),
    (fb::Op::LOGICAL_OR, BOOL),
    (fb::Op::LOGICAL_XOR, BOOL),
    (fb::Op::MAXIMUM, I32),
    (fb::Op::MINIMUM, I32),
    (fb::Op::MUL, I8_16_32),
    (fb::Op::SUB, I32),
    (fb::Op::TABLE, I8_16),
    (fb::Op::ABS, I32),
    (fb::Op::BITWISE_NOT, I8_16_32),
    (fb::Op::CLZ, I32),
    (fb::Op::LOGICAL_NOT, BOOL),
    (fb::Op::NEGATE, I8_16_32),
    (fb::Op::SELECT, ANY),
    (fb::Op::EQUAL, I32),
    (fb::Op::GREATER, I32),
    (fb::Op::GREATER_EQUAL, I32),
    (fb::Op::REDUCE_ALL, BOOL),
    (fb::Op::REDUCE_ANY, BOOL),
    (fb::Op::REDUCE_MAX, I8_16_32),
    (fb::Op::REDUCE_MIN, I8_16_32),
    (fb::Op::REDUCE_SUM, I32),
    (fb::Op::CONCAT, ANY),
    (fb::Op::PAD, ANY),
    (fb::Op::RESHAPE, ANY),
    (fb::Op::REVERSE, ANY),
    (fb::Op::SLICE, ANY),
    (fb::Op::TILE, ANY),
    (fb::Op::TRANSPOSE, ANY),
    (fb::Op::GATHER, I8_16_32),
    (fb::Op::SCATTER, I8_16_32),
    (fb::Op::RESIZE, I8_16),
    (fb::Op::CAST, ANY),
    (fb::Op::RESCALE, I8_16_32_48),
    (fb::Op::IDENTITY, ANY_I4_48),
    (fb::Op::CONST, &[]),
    (fb::Op::CONST_SHAPE, &[]),
];

/// The input element types of a supported operator ([`OPERATORS`]; none for others).
pub fn types(op: fb::Op) -> &'static [fb::DType] {
    OPERATORS
        .iter()
        .find(|(o, _)| *o == op)
        .map_or(&[], |(_, t)| t)
}

impl<'a> Lower<'a> {
    fn tensor_decl(&self, name: &str) -> Result<&'a Tensor, LowerError> {
        self.block.tensor(name).ok_or_else(|| LowerError::Tensor {
            block: self.block.id.clone(),
            name: name.to_string(),
            reason: "is a shape, where a tensor is needed".into(),
        })
    }

    fn tensor_err(&self, t: &Tensor, reason: impl Into<String>) -> LowerError {
        LowerError::Tensor {
            block: self.block.id.clone(),
            name: t.name.clone(),
            reason: reason.into(),
        }
    }

    fn static_shape(&self, t: &Tensor) -> Result<Shape, LowerError> {
        if t.is_unranked {
            return Err(self.tensor_err(t, "unranked tensors are not supported"));
        }
        if t.external.is_some() {
            return Err(self.tensor_err(t, "data stored outside the flatbuffer is not supported"));
        }
        let dims = t
            .shape
            .iter()
            .map(|&d| usize::try_from(d).ok())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| self.tensor_err(t, format!("dynamic shape {:?}", t.shape)))?;
        Ok(Shape::new(dims))
    }

    /// The IR type of a graph input or an operator's declared output. An INT4 tensor (EXT-INT4)
    /// is an i8 tensor holding values in -8..=7, as the TOSA reference model reads and writes
    /// INT4 data (one int8 element each); only the operators that accept INT4 take it.
    fn declared_type(&self, name: &str) -> Result<TensorType, LowerError> {
        let t = self.tensor_decl(name)?;
        let shape = self.static_shape(t)?;
        let dt = ir_dtype(t.dtype).ok_or_else(|| {
            self.tensor_err(
                t,
                format!(
                    "element type {} is outside the integer profile",
                    dtype_name(t.dtype)
                ),
            )
        })?;
        Ok(TensorType::new(dt, shape))
    }

    fn constant(&mut self, t: &Tensor) -> Result<TensorId, LowerError> {
        if let Some(&id) = self.ids.get(&t.name) {
            return Ok(id);
        }
        let shape = self.static_shape(t)?;
        let n = t.num_elements().unwrap_or(0);
        let data = t
            .data
            .as_deref()
            .and_then(|b| decode(t.dtype, b, n))
            .ok_or_else(|| {
                self.tensor_err(
                    t,
                    format!(
                        "constant of type {} is outside the integer profile",
                        dtype_name(t.dtype)
                    ),
                )
            })?;
        let id = self.g.add_const(t.name.clone(), shape, data)?;
        self.ids.insert(t.name.clone(), id);
        Ok(id)
    }

    /// The IR tensor for input `slot` (a graph input, an earlier result or a constant),
    /// with its TOSA element type checked against `allowed`.
    fn input(
        &mut self,
        at: &At<'_>,
        slot: usize,
        allowed: &[fb::DType],
    ) -> Result<(TensorId, fb::DType), LowerError> {
        let name = &at.op.inputs[slot];
        let t = self.tensor_decl(name)?;
        if !allowed.contains(&t.dtype) {
            return Err(at.operand_err(
                slot,
                format!(
                    "element type {} is not allowed here (profile allows {})",
                    dtype_name(t.dtype),
                    allowed
                        .iter()
                        .map(|d| dtype_name(*d))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if let Some(&id) = self.ids.get(name) {
            return Ok((id, t.dtype));
        }
        if t.data.is_some() {
            return Ok((self.constant(t)?, t.dtype));
        }
        Err(LowerError::NotYetProduced {
            block: self.block.id.clone(),
            op: at.op.id,
            name: name.clone(),
        })
    }

    /// The values of a compile-time-constant tensor input (zero points, multipliers, ...).
    fn const_values(
        &self,
        at: &At<'_>,
        slot: usize,
        allowed: &[fb::DType],
    ) -> Result<(Vec<i64>, fb::DType), LowerError> {
        let name = at
            .op
            .inputs
            .get(slot)
            .ok_or_else(|| at.err(format!("input {slot} missing")))?;
        let t = self.tensor_decl(name)?;
        if !allowed.contains(&t.dtype) {
            return Err(at.operand_err(
                slot,
                format!("element type {} not allowed here", dtype_name(t.dtype)),
            ));
        }
        let bytes = t.data.as_deref().ok_or_else(|| {
            at.operand_err(slot, "must be a compile-time constant (CONST with data)")
        })?;
        let n = t
            .num_elements()
            .ok_or_else(|| at.operand_err(slot, "bad shape"))?;
        let d = decode(t.dtype, bytes, n)
            .ok_or_else(|| at.operand_err(slot, "undecodable constant"))?;
        Ok((d.to_i64_vec(), t.dtype))
    }

    /// A single-element zero point of the same type as the operand it applies to.
    fn zero_point(
        &self,
        at: &At<'_>,
        slot: usize,
        of: fb::DType,
        what: &str,
    ) -> Result<i64, LowerError> {
        let (v, dt) = self.const_values(at, slot, &[of])?;
        if v.len() != 1 {
            return Err(at.operand_err(slot, format!("{what} must have one element")));
        }
        let zp = v[0];
        if zp != 0 && of != fb::DType::INT8 {
            return Err(at.operand_err(
                slot,
                format!("{what} is {zp}; it must be 0 for {} data", dtype_name(dt)),
            ));
        }
        Ok(zp)
    }

    /// The values of a CONST_SHAPE input.
    fn shape_values(&self, at: &At<'_>, slot: usize, len: usize) -> Result<Vec<i64>, LowerError> {
        let name = &at.op.inputs[slot];
        let v = match self.block.lookup(name) {
            Some(Name::Shape(_)) | Some(Name::Tensor(_)) => self.block.shape_value(name),
            None => None,
        }
        .ok_or_else(|| at.operand_err(slot, "must be a CONST_SHAPE value"))?;
        if v.len() != len {
            return Err(at.operand_err(
                slot,
                format!("shape value has {} entries, expected {len}", v.len()),
            ));
        }
        Ok(v)
    }

    fn nonneg(&self, at: &At<'_>, slot: usize, v: &[i64]) -> Result<Vec<usize>, LowerError> {
        v.iter()
            .map(|&x| usize::try_from(x).ok())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| at.operand_err(slot, format!("values {v:?} must be non-negative")))
    }

    /// Adds the IR operator, checking the inferred output type against the declared one.
    fn emit(&mut self, at: &At<'_>, op: Op, inputs: &[TensorId]) -> Result<(), LowerError> {
        let out_name = &at.op.outputs[0];
        let declared = self.declared_type(out_name)?;
        let mut types = Vec::with_capacity(inputs.len());
        for &t in inputs {
            types.push(
                self.g
                    .tensor(t)
                    .map(|x| x.ty.clone())
                    .ok_or(npuc_ir::GraphError::UnknownTensor(t))?,
            );
        }
        let inferred = infer_output_types(&op, &types).map_err(|e| {
            at.err(match e.slot {
                Some(s) => format!("input {s}: {}", e.message),
                None => e.message,
            })
        })?;
        if inferred.first() != Some(&declared) {
            return Err(at.err(format!(
                "output {out_name:?} is declared {declared}, the operator produces {}",
                inferred
                    .first()
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "nothing".into())
            )));
        }
        let t = self.g.add_tensor(out_name.clone(), declared);
        self.g.add_op(out_name.clone(), op, inputs, &[t])?;
        self.ids.insert(out_name.clone(), t);
        Ok(())
    }

    fn lower_op(&mut self, o: &Operator) -> Result<(), LowerError> {
        use fb::Op as T;
        let at = At {
            at: OpAt {
                block: self.block.id.clone(),
                op: o.id,
                kind: o.name(),
            },
            op: o,
        };
        let at = &at;
        let a = &o.attribute;
        if !OPERATORS.iter().any(|(op, _)| *op == o.op) {
            return Err(LowerError::UnsupportedOperator {
                at: at.at.clone(),
                op: o.name(),
            });
        }
        match o.op {
            T::CONST => {
                for out in &o.outputs {
                    let t = self.tensor_decl(out)?;
                    if t.data.is_none() {
                        return Err(at.err(format!("output {out:?} has no data")));
                    }
                }
                Ok(())
            }
            T::CONST_SHAPE => {
                for out in &o.outputs {
                    if self.block.shape_value(out).is_none() {
                        return Err(at.err(format!("output {out:?} is not a constant shape")));
                    }
                }
                Ok(())
            }
            T::ARGMAX => {
                at.arity(1)?;
                let AttributeT::ArgMaxAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, _) = self.input(at, 0, types(o.op))?;
                let axis = axis(at, x.axis)?;
                self.emit(at, Op::ArgMax(AxisAttrs { axis }), &[i])
            }
            T::AVG_POOL2D => {
                at.arity(3)?;
                let AttributeT::AvgPool2dAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, dt) = self.input(at, 0, types(o.op))?;
                if x.acc_type != fb::DType::INT32 {
                    return Err(at.err(format!(
                        "acc_type {} (INT32 required)",
                        dtype_name(x.acc_type)
                    )));
                }
                let input_zp = self.zero_point(at, 1, dt, "input_zp")?;
                let output_zp = self.zero_point(at, 2, dt, "output_zp")?;
                let attrs = AvgPool2dAttrs {
                    kernel: arr2(i32_list(at, "kernel", &x.kernel, 2, 1)?),
                    stride: arr2(i32_list(at, "stride", &x.stride, 2, 1)?),
                    pad: arr4(i32_list(at, "pad", &x.pad, 4, 0)?),
                    input_zp,
                    output_zp,
                    rounding: AvgPoolRounding::Tosa,
                };
                self.emit(at, Op::AvgPool2d(attrs), &[i])
            }
            T::CONV2D | T::DEPTHWISE_CONV2D | T::TRANSPOSE_CONV2D => self.conv(at),
            T::CONV3D => self.conv3d(at),
            T::MATMUL => {
                at.arity(4)?;
                let (x, dt) = self.input(at, 0, types(o.op))?;
                let (y, _) = self.input(at, 1, &[dt])?;
                let a_zp = self.zero_point(at, 2, dt, "A_zp")?;
                let b_zp = self.zero_point(at, 3, dt, "B_zp")?;
                self.emit(at, Op::MatMul(MatMulAttrs { a_zp, b_zp }), &[x, y])
            }
            T::MAX_POOL2D => {
                at.arity(1)?;
                let AttributeT::MaxPool2dAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, _) = self.input(at, 0, types(o.op))?;
                let attrs = PoolAttrs {
                    kernel: arr2(i32_list(at, "kernel", &x.kernel, 2, 1)?),
                    stride: arr2(i32_list(at, "stride", &x.stride, 2, 1)?),
                    pad: arr4(i32_list(at, "pad", &x.pad, 4, 0)?),
                };
                self.emit(at, Op::MaxPool2d(attrs), &[i])
            }
            T::CLAMP => {
                at.arity(1)?;
                let AttributeT::ClampAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, dt) = self.input(at, 0, types(o.op))?;
                let size = if dt == fb::DType::INT8 { 1 } else { 2 };
                let read = |what: &str, v: &Option<Vec<u8>>| -> Result<i64, LowerError> {
                    match v.as_deref() {
                        Some(b) if b.len() >= size => Ok(if size == 1 {
                            i64::from(b[0] as i8)
                        } else {
                            i64::from(i16::from_le_bytes([b[0], b[1]]))
                        }),
                        _ => Err(at.err(format!("{what} needs {size} bytes"))),
                    }
                };
                let min = read("min_val", &x.min_val)?;
                let max = read("max_val", &x.max_val)?;
                self.emit(at, Op::Clamp(ClampAttrs { min, max }), &[i])
            }
            T::ADD | T::SUB | T::MAXIMUM | T::MINIMUM | T::INTDIV => {
                let op = match o.op {
                    T::ADD => Op::Add,
                    T::SUB => Op::Sub,
                    T::MAXIMUM => Op::Maximum,
                    T::MINIMUM => Op::Minimum,
                    _ => Op::IntDiv,
                };
                self.binary(at, op, types(o.op))
            }
            T::EQUAL | T::GREATER | T::GREATER_EQUAL => {
                let op = match o.op {
                    T::EQUAL => Op::Equal,
                    T::GREATER => Op::Greater,
                    _ => Op::GreaterEqual,
                };
                self.binary(at, op, types(o.op))
            }
            T::BITWISE_AND | T::BITWISE_OR | T::BITWISE_XOR => {
                let op = match o.op {
                    T::BITWISE_AND => Op::BitwiseAnd,
                    T::BITWISE_OR => Op::BitwiseOr,
                    _ => Op::BitwiseXor,
                };
                self.binary(at, op, types(o.op))
            }
            T::LOGICAL_LEFT_SHIFT => self.binary(at, Op::LogicalLeftShift, types(o.op)),
            T::LOGICAL_RIGHT_SHIFT => self.binary(at, Op::LogicalRightShift, types(o.op)),
            T::ARITHMETIC_RIGHT_SHIFT => {
                let AttributeT::ArithmeticRightShiftAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let op = Op::ArithmeticRightShift(ArithmeticRightShiftAttrs { round: x.round });
                self.binary(at, op, types(o.op))
            }
            T::LOGICAL_AND | T::LOGICAL_OR | T::LOGICAL_XOR => {
                let op = match o.op {
                    T::LOGICAL_AND => Op::LogicalAnd,
                    T::LOGICAL_OR => Op::LogicalOr,
                    _ => Op::LogicalXor,
                };
                self.binary(at, op, types(o.op))
            }
            T::MUL => {
                at.arity(3)?;
                let (x, dt) = self.input(at, 0, types(o.op))?;
                let (y, _) = self.input(at, 1, &[dt])?;
                let (s, _) = self.const_values(at, 2, I8)?;
                let shift = match s.as_slice() {
                    [s] => *s,
                    _ => return Err(at.operand_err(2, "shift must have one element")),
                };
                if !(0..=63).contains(&shift) {
                    return Err(at.operand_err(2, format!("shift {shift} outside 0..=63")));
                }
                if shift != 0 && dt != fb::DType::INT32 {
                    return Err(at.operand_err(
                        2,
                        format!("shift {shift} must be 0 for {} inputs", dtype_name(dt)),
                    ));
                }
                let op = Op::Mul(MulAttrs { shift: shift as u8 });
                self.emit(at, op, &[x, y])
            }
            T::TABLE => {
                at.arity(2)?;
                let (i, dt) = self.input(at, 0, types(o.op))?;
                let (v, _) = self.const_values(at, 1, &[dt])?;
                let table = if dt == fb::DType::INT8 {
                    if v.len() != 256 {
                        return Err(at.operand_err(1, format!("{} entries, 256 needed", v.len())));
                    }
                    TableData::I8(v.iter().map(|&x| x as i8).collect())
                } else {
                    if v.len() != 513 {
                        return Err(at.operand_err(1, format!("{} entries, 513 needed", v.len())));
                    }
                    TableData::I16(v.iter().map(|&x| x as i16).collect())
                };
                self.emit(at, Op::Table(TableAttrs { table }), &[i])
            }
            T::ABS => self.unary(at, Op::Abs, types(o.op)),
            T::CLZ => self.unary(at, Op::Clz, types(o.op)),
            T::BITWISE_NOT => self.unary(at, Op::BitwiseNot, types(o.op)),
            T::LOGICAL_NOT => self.unary(at, Op::LogicalNot, types(o.op)),
            T::IDENTITY => self.unary(at, Op::Identity, types(o.op)),
            T::NEGATE => {
                at.arity(3)?;
                let (i, dt) = self.input(at, 0, types(o.op))?;
                let input_zp = self.zero_point(at, 1, dt, "input1_zp")?;
                let output_zp = self.zero_point(at, 2, dt, "output_zp")?;
                let op = Op::Negate(NegateAttrs {
                    input_zp,
                    output_zp,
                });
                self.emit(at, op, &[i])
            }
            T::SELECT => {
                at.arity(3)?;
                let (c, _) = self.input(at, 0, BOOL)?;
                let (x, dt) = self.input(at, 1, types(o.op))?;
                let (y, _) = self.input(at, 2, &[dt])?;
                self.emit(at, Op::Select, &[c, x, y])
            }
            T::REDUCE_ALL | T::REDUCE_ANY | T::REDUCE_MAX | T::REDUCE_MIN | T::REDUCE_SUM => {
                at.arity(1)?;
                let ax = match a {
                    AttributeT::ReduceAllAttribute(x) => x.axis,
                    AttributeT::ReduceAnyAttribute(x) => x.axis,
                    AttributeT::ReduceMaxAttribute(x) => x.axis,
                    AttributeT::ReduceMinAttribute(x) => x.axis,
                    AttributeT::ReduceSumAttribute(x) => x.axis,
                    _ => return Err(at.missing_attr()),
                };
                let attrs = AxisAttrs {
                    axis: axis(at, ax)?,
                };
                let (op, allowed) = match o.op {
                    T::REDUCE_ALL => (Op::ReduceAll(attrs), types(T::REDUCE_ALL)),
                    T::REDUCE_ANY => (Op::ReduceAny(attrs), types(T::REDUCE_ANY)),
                    T::REDUCE_MAX => (Op::ReduceMax(attrs), types(T::REDUCE_MAX)),
                    T::REDUCE_MIN => (Op::ReduceMin(attrs), types(T::REDUCE_MIN)),
                    _ => (Op::ReduceSum(attrs), types(T::REDUCE_SUM)),
                };
                let (i, _) = self.input(at, 0, allowed)?;
                self.emit(at, op, &[i])
            }
            T::CONCAT => {
                let AttributeT::ConcatAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                if o.inputs.is_empty() || o.outputs.len() != 1 {
                    return Err(at.err("needs at least one input and exactly one output"));
                }
                let (first, dt) = self.input(at, 0, types(o.op))?;
                let mut ins = vec![first];
                for slot in 1..o.inputs.len() {
                    ins.push(self.input(at, slot, &[dt])?.0);
                }
                let attrs = AxisAttrs {
                    axis: axis(at, x.axis)?,
                };
                self.emit(at, Op::Concat(attrs), &ins)
            }
            T::PAD => {
                at.arity(3)?;
                let (i, dt) = self.input(at, 0, types(o.op))?;
                let rank = self.rank_of(i);
                let p = self.shape_values(at, 1, 2 * rank)?;
                let p = self.nonneg(at, 1, &p)?;
                let (pc, _) = self.const_values(at, 2, &[dt])?;
                let pad_const = match pc.as_slice() {
                    [v] => *v,
                    _ => return Err(at.operand_err(2, "pad_const must have one element")),
                };
                let padding = p.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
                self.emit(at, Op::Pad(PadAttrs { padding, pad_const }), &[i])
            }
            T::RESHAPE => {
                at.arity(2)?;
                let (i, _) = self.input(at, 0, types(o.op))?;
                let out_rank = self.declared_type(&o.outputs[0])?.shape.rank();
                let s = self.shape_values(at, 1, out_rank)?;
                let shape = Shape::new(self.nonneg(at, 1, &s)?);
                self.emit(at, Op::Reshape(ReshapeAttrs { shape }), &[i])
            }
            T::REVERSE => {
                at.arity(1)?;
                let AttributeT::ReverseAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, _) = self.input(at, 0, types(o.op))?;
                let attrs = AxisAttrs {
                    axis: axis(at, x.axis)?,
                };
                self.emit(at, Op::Reverse(attrs), &[i])
            }
            T::SLICE => {
                at.arity(3)?;
                let (i, _) = self.input(at, 0, types(o.op))?;
                let rank = self.rank_of(i);
                let start = self.shape_values(at, 1, rank)?;
                let start = self.nonneg(at, 1, &start)?;
                let size = self.shape_values(at, 2, rank)?;
                let size = self.nonneg(at, 2, &size)?;
                self.emit(at, Op::Slice(SliceAttrs { start, size }), &[i])
            }
            T::TILE => {
                at.arity(2)?;
                let (i, _) = self.input(at, 0, types(o.op))?;
                let rank = self.rank_of(i);
                let m = self.shape_values(at, 1, rank)?;
                let multiples = self.nonneg(at, 1, &m)?;
                self.emit(at, Op::Tile(TileAttrs { multiples }), &[i])
            }
            T::TRANSPOSE => {
                at.arity(1)?;
                let AttributeT::TransposeAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let (i, _) = self.input(at, 0, types(o.op))?;
                let rank = self.rank_of(i);
                let perms = i32_list(at, "perms", &x.perms, rank, 0)?;
                self.emit(at, Op::Transpose(TransposeAttrs { perms }), &[i])
            }
            T::GATHER => {
                at.arity(2)?;
                let (v, _) = self.input(at, 0, types(o.op))?;
                let (ix, _) = self.input(at, 1, I32)?;
                self.emit(at, Op::Gather, &[v, ix])
            }
            T::SCATTER => {
                at.arity(3)?;
                let (v, dt) = self.input(at, 0, types(o.op))?;
                let (ix, _) = self.input(at, 1, I32)?;
                let (x, _) = self.input(at, 2, &[dt])?;
                self.emit(at, Op::Scatter, &[v, ix, x])
            }
            T::RESIZE => {
                at.arity(4)?;
                let AttributeT::ResizeAttribute(x) = a else {
                    return Err(at.missing_attr());
                };
                let mode = match x.mode {
                    fb::ResizeMode::NEAREST => ResizeMode::NearestNeighbor,
                    fb::ResizeMode::BILINEAR => ResizeMode::Bilinear,
                    m => return Err(at.err(format!("resize mode {m:?}"))),
                };
                let (i, _) = self.input(at, 0, types(o.op))?;
                let s = self.shape_values(at, 1, 4)?;
                let off = self.shape_values(at, 2, 2)?;
                let b = self.shape_values(at, 3, 2)?;
                let attrs = ResizeAttrs {
                    mode,
                    scale: [s[0], s[1], s[2], s[3]],
                    offset: [off[0], off[1]],
                    border: [b[0], b[1]],
                };
                self.emit(at, Op::Resize(attrs), &[i])
            }
            T::CAST => {
                at.arity(1)?;
                let (i, din) = self.input(at, 0, types(o.op))?;
                let out = self.tensor_decl(&o.outputs[0])?;
                let dout = out.dtype;
                if !ANY.contains(&dout) || dout == din {
                    return Err(at.err(format!(
                        "CAST {} -> {} is not an integer-profile mode",
                        dtype_name(din),
                        dtype_name(dout)
                    )));
                }
                let to = ir_dtype(dout).unwrap_or(DType::Int32);
                self.emit(at, Op::Cast(CastAttrs { to }), &[i])
            }
            T::RESCALE => self.rescale(at),
            _ => Err(LowerError::UnsupportedOperator {
                at: at.at.clone(),
                op: o.name(),
            }),
        }
    }

    fn rank_of(&self, t: TensorId) -> usize {
        self.g.tensor(t).map(|x| x.ty.shape.rank()).unwrap_or(0)
    }

    fn unary(&mut self, at: &At<'_>, op: Op, allowed: &[fb::DType]) -> Result<(), LowerError> {
        at.arity(1)?;
        let (i, _) = self.input(at, 0, allowed)?;
        self.emit(at, op, &[i])
    }

    fn binary(&mut self, at: &At<'_>, op: Op, allowed: &[fb::DType]) -> Result<(), LowerError> {
        at.arity(2)?;
        let (x, dt) = self.input(at, 0, allowed)?;
        let (y, _) = self.input(at, 1, &[dt])?;
        self.emit(at, op, &[x, y])
    }

    fn conv(&mut self, at: &At<'_>) -> Result<(), LowerError> {
        at.arity(5)?;
        let o = at.op;
        let (pad, stride, dilation, acc) = match &o.attribute {
            AttributeT::Conv2dAttribute(x) if o.op == fb::Op::CONV2D => (
                i32_list(at, "pad", &x.pad, 4, 0)?,
                i32_list(at, "stride", &x.stride, 2, 1)?,
                i32_list(at, "dilation", &x.dilation, 2, 1)?,
                x.acc_type,
            ),
            AttributeT::DepthwiseConv2dAttribute(x) if o.op == fb::Op::DEPTHWISE_CONV2D => (
                i32_list(at, "pad", &x.pad, 4, 0)?,
                i32_list(at, "stride", &x.stride, 2, 1)?,
                i32_list(at, "dilation", &x.dilation, 2, 1)?,
                x.acc_type,
            ),
            AttributeT::TransposeConv2dAttribute(x) if o.op == fb::Op::TRANSPOSE_CONV2D => {
                // out_pad may be negative; range-checked below.
                let p = x.out_pad.as_deref().unwrap_or(&[]);
                if p.len() != 4 {
                    return Err(at.err(format!("out_pad has {} entries, expected 4", p.len())));
                }
                (
                    vec![0; 4],
                    i32_list(at, "stride", &x.stride, 2, 1)?,
                    vec![1, 1],
                    x.acc_type,
                )
            }
            _ => return Err(at.missing_attr()),
        };
        let ([i, w, b], input_zp, weight_zp) = self.conv_operands(at, acc)?;
        let op = match o.op {
            fb::Op::CONV2D | fb::Op::DEPTHWISE_CONV2D => {
                let attrs = ConvAttrs {
                    pad: arr4(pad),
                    stride: arr2(stride),
                    dilation: arr2(dilation),
                    input_zp,
                    weight_zp,
                };
                if o.op == fb::Op::CONV2D {
                    Op::Conv2d(attrs)
                } else {
                    Op::DepthwiseConv2d(attrs)
                }
            }
            _ => {
                let p = match &o.attribute {
                    AttributeT::TransposeConv2dAttribute(x) => {
                        x.out_pad.clone().unwrap_or_default()
                    }
                    _ => return Err(at.missing_attr()),
                };
                Op::TransposeConv2d(TransposeConvAttrs {
                    out_pad: [p[0].into(), p[1].into(), p[2].into(), p[3].into()],
                    stride: arr2(stride),
                    input_zp,
                    weight_zp,
                })
            }
        };
        self.emit(at, op, &[i, w, b])
    }

    /// The input, weight and bias of a convolution with their zero points, after the
    /// profile's type rules: i8 x i8 or i8 x i4 into i32, i16 x i8 into i48 (`acc_type`).
    fn conv_operands(
        &mut self,
        at: &At<'_>,
        acc: fb::DType,
    ) -> Result<([TensorId; 3], i64, i64), LowerError> {
        let (i, din) = self.input(at, 0, types(at.op.op))?;
        let wt: &[fb::DType] = if din == fb::DType::INT8 {
            &[fb::DType::INT8, fb::DType::INT4]
        } else {
            I8
        };
        let (w, wdt) = self.input(at, 1, wt)?;
        let (acc_need, bias_t) = if din == fb::DType::INT8 {
            (fb::DType::INT32, fb::DType::INT32)
        } else {
            (fb::DType::INT48, fb::DType::INT48)
        };
        if acc != acc_need {
            return Err(at.err(format!(
                "acc_type {} for {} input (profile needs {})",
                dtype_name(acc),
                dtype_name(din),
                dtype_name(acc_need)
            )));
        }
        let (b, _) = self.input(at, 2, &[bias_t])?;
        let input_zp = self.zero_point(at, 3, din, "input_zp")?;
        let weight_zp = self.zero_point(at, 4, wdt, "weight_zp")?;
        Ok(([i, w, b], input_zp, weight_zp))
    }

    fn conv3d(&mut self, at: &At<'_>) -> Result<(), LowerError> {
        at.arity(5)?;
        let AttributeT::Conv3dAttribute(x) = &at.op.attribute else {
            return Err(at.missing_attr());
        };
        let pad = i32_list(at, "pad", &x.pad, 6, 0)?;
        let stride = i32_list(at, "stride", &x.stride, 3, 1)?;
        let dilation = i32_list(at, "dilation", &x.dilation, 3, 1)?;
        let (ins, input_zp, weight_zp) = self.conv_operands(at, x.acc_type)?;
        let attrs = Conv3dAttrs {
            pad: [pad[0], pad[1], pad[2], pad[3], pad[4], pad[5]],
            stride: [stride[0], stride[1], stride[2]],
            dilation: [dilation[0], dilation[1], dilation[2]],
            input_zp,
            weight_zp,
        };
        self.emit(at, Op::Conv3d(attrs), &ins)
    }

    fn rescale(&mut self, at: &At<'_>) -> Result<(), LowerError> {
        at.arity(5)?;
        let AttributeT::RescaleAttribute(x) = &at.op.attribute else {
            return Err(at.missing_attr());
        };
        let rounding = match x.rounding_mode {
            fb::RoundingMode::SINGLE_ROUND => RescaleRounding::SingleRound,
            fb::RoundingMode::DOUBLE_ROUND => RescaleRounding::DoubleRound,
            m => {
                return Err(at.err(format!(
                    "rounding_mode {m:?} (SINGLE_ROUND or DOUBLE_ROUND expected)"
                )))
            }
        };
        if rounding == RescaleRounding::DoubleRound && !x.scale32 {
            return Err(at.err("DOUBLE_ROUND requires scale32"));
        }
        let (i, din) = self.input(at, 0, types(at.op.op))?;
        let out = self.tensor_decl(&at.op.outputs[0])?;
        let dout = out.dtype;
        if !I8_16_32.contains(&dout) {
            return Err(at.err(format!("output type {} not allowed", dtype_name(dout))));
        }
        let channels = if x.per_channel {
            let shape = self
                .g
                .tensor(i)
                .map(|t| t.ty.shape.0.clone())
                .unwrap_or_default();
            *shape
                .last()
                .ok_or_else(|| at.err("per_channel needs an input of rank >= 1"))?
        } else {
            1
        };
        let mult_t = if x.scale32 {
            fb::DType::INT32
        } else {
            fb::DType::INT16
        };
        let (mult, _) = self.const_values(at, 1, &[mult_t])?;
        let (shift, _) = self.const_values(at, 2, I8)?;
        if mult.len() != channels || shift.len() != channels {
            return Err(at.err(format!(
                "{} multipliers and {} shifts, {channels} needed",
                mult.len(),
                shift.len()
            )));
        }
        if let Some(s) = shift.iter().find(|s| !(2..=62).contains(*s)) {
            return Err(at.operand_err(2, format!("shift {s} outside 2..=62")));
        }
        if x.scale32 {
            if let Some(m) = mult.iter().find(|m| **m < 0) {
                return Err(at.operand_err(1, format!("multiplier {m} is negative")));
            }
        }
        let zp = |slot: usize, dt: fb::DType, unsigned: bool, what: &str| {
            let (v, _) = self.const_values(at, slot, &[dt])?;
            let z = match v.as_slice() {
                [z] => *z,
                _ => return Err(at.operand_err(slot, format!("{what} must have one element"))),
            };
            let z = match (unsigned, dt) {
                (true, fb::DType::INT8) => z & 0xff,
                (true, fb::DType::INT16) => z & 0xffff,
                _ => z,
            };
            let ok = match dt {
                fb::DType::INT8 => true,
                fb::DType::INT16 if unsigned => z == 0 || z == 32768,
                _ => z == 0,
            };
            if !ok {
                return Err(at.operand_err(
                    slot,
                    format!(
                        "{what} {z} not allowed for {}{} data",
                        if unsigned { "unsigned " } else { "" },
                        dtype_name(dt)
                    ),
                ));
            }
            Ok(z)
        };
        let input_zp = zp(3, din, x.input_unsigned, "input_zp")?;
        let output_zp = zp(4, dout, x.output_unsigned, "output_zp")?;
        let attrs = RescaleAttrs {
            output_dtype: ir_dtype(dout).unwrap_or(DType::Int32),
            multiplier: mult.iter().map(|&m| m as i32).collect(),
            shift: shift.iter().map(|&s| s as i8).collect(),
            scale32: x.scale32,
            rounding,
            per_channel: x.per_channel,
            input_zp,
            output_zp,
            input_unsigned: x.input_unsigned,
            output_unsigned: x.output_unsigned,
        };
        self.emit(at, Op::Rescale(attrs), &[i])
    }
}

fn axis(at: &At<'_>, axis: i32) -> Result<usize, LowerError> {
    usize::try_from(axis).map_err(|_| at.err(format!("axis {axis} is negative")))
}
