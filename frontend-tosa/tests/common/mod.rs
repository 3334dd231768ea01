//! A small builder for TOSA flatbuffers in tests (object API of the generated schema).
//! The object-API types are `#[non_exhaustive]`, hence the field-by-field assignments.
#![allow(dead_code, clippy::field_reassign_with_default)]

use npuc_frontend_tosa::schema::*;

pub struct B {
    tensors: Vec<TosaTensorT>,
    shapes: Vec<TosaShapeT>,
    ops: Vec<TosaOperatorT>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    pub version: (i32, i32),
}

pub fn i8s(v: &[i8]) -> Vec<u8> {
    v.iter().map(|&x| x as u8).collect()
}
pub fn i16s(v: &[i16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn strs(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| s.to_string()).collect())
}

impl Default for B {
    fn default() -> Self {
        Self::new()
    }
}

impl B {
    pub fn new() -> B {
        B {
            tensors: vec![],
            shapes: vec![],
            ops: vec![],
            inputs: vec![],
            outputs: vec![],
            version: (1, 0),
        }
    }

    /// An activation tensor (no data).
    pub fn tensor(&mut self, name: &str, shape: &[i32], dt: DType) -> &mut Self {
        let mut t = TosaTensorT::default();
        t.name = Some(name.into());
        t.shape = Some(shape.to_vec());
        t.type_ = dt;
        self.tensors.push(t);
        self
    }

    pub fn input(&mut self, name: &str, shape: &[i32], dt: DType) -> &mut Self {
        self.inputs.push(name.into());
        self.tensor(name, shape, dt)
    }

    pub fn output(&mut self, name: &str, shape: &[i32], dt: DType) -> &mut Self {
        self.outputs.push(name.into());
        self.tensor(name, shape, dt)
    }

    /// A constant tensor and the CONST operator producing it.
    pub fn konst(&mut self, name: &str, shape: &[i32], dt: DType, data: Vec<u8>) -> &mut Self {
        let mut t = TosaTensorT::default();
        t.name = Some(name.into());
        t.shape = Some(shape.to_vec());
        t.type_ = dt;
        t.data = Some(data);
        self.tensors.push(t);
        self.op(
            Op::CONST,
            AttributeT::ConstAttribute(Box::default()),
            &[],
            &[name],
        )
    }

    /// A single-element zero point / shift constant.
    pub fn scalar(&mut self, name: &str, dt: DType, v: i64) -> &mut Self {
        let data = match dt {
            DType::INT8 => i8s(&[v as i8]),
            DType::INT16 => i16s(&[v as i16]),
            DType::INT32 => i32s(&[v as i32]),
            _ => panic!("scalar type"),
        };
        self.konst(name, &[1], dt, data)
    }

    /// A constant shape and the CONST_SHAPE operator producing it.
    pub fn shape(&mut self, name: &str, v: &[i64]) -> &mut Self {
        let mut t = TosaShapeT::default();
        t.name = Some(name.into());
        t.rank = v.len() as u32;
        t.data = Some(v.iter().flat_map(|x| x.to_le_bytes()).collect());
        self.shapes.push(t);
        self.op(
            Op::CONST_SHAPE,
            AttributeT::ConstShapeAttribute(Box::default()),
            &[],
            &[name],
        )
    }

    pub fn op(&mut self, op: Op, attr: AttributeT, ins: &[&str], outs: &[&str]) -> &mut Self {
        let mut o = TosaOperatorT::default();
        o.op = op;
        o.attribute = attr;
        o.inputs = strs(ins);
        o.outputs = strs(outs);
        self.ops.push(o);
        self
    }

    pub fn finish(&self) -> Vec<u8> {
        let mut v = VersionT::default();
        v._major = self.version.0;
        v._minor = self.version.1;
        v._patch = 0;
        v._draft = false;
        let mut blk = TosaBasicBlockT::default();
        blk.name = Some("main".into());
        blk.operators = Some(self.ops.clone());
        blk.tensors = Some(self.tensors.clone());
        blk.inputs = Some(self.inputs.clone());
        blk.outputs = Some(self.outputs.clone());
        blk.shapes = Some(self.shapes.clone());
        let mut r = TosaRegionT::default();
        r.name = Some("main".into());
        r.blocks = Some(vec![blk]);
        let mut g = TosaGraphT::default();
        *g.version = v;
        g.regions = Some(vec![r]);
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let root = g.pack(&mut fbb);
        finish_tosa_graph_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }
}

pub fn rescale_attr(scale32: bool, mode: RoundingMode, per_channel: bool) -> AttributeT {
    let mut a = RescaleAttributeT::default();
    a.scale32 = scale32;
    a.rounding_mode = mode;
    a.per_channel = per_channel;
    AttributeT::RescaleAttribute(Box::new(a))
}

pub fn conv_attr(pad: [i32; 4], stride: [i32; 2], acc: DType) -> AttributeT {
    let mut a = Conv2dAttributeT::default();
    a.pad = Some(pad.to_vec());
    a.stride = Some(stride.to_vec());
    a.dilation = Some(vec![1, 1]);
    a.acc_type = acc;
    AttributeT::Conv2dAttribute(Box::new(a))
}

pub fn empty(op: Op) -> AttributeT {
    match op {
        Op::ADD => AttributeT::AddAttribute(Box::default()),
        Op::SUB => AttributeT::SubAttribute(Box::default()),
        Op::MUL => AttributeT::MulAttribute(Box::default()),
        Op::PAD => AttributeT::PadAttribute(Box::default()),
        Op::RESHAPE => AttributeT::ReshapeAttribute(Box::default()),
        Op::SLICE => AttributeT::SliceAttribute(Box::default()),
        Op::TILE => AttributeT::TileAttribute(Box::default()),
        Op::TABLE => AttributeT::TableAttribute(Box::default()),
        Op::MATMUL => AttributeT::MatMulAttribute(Box::default()),
        Op::IDENTITY => AttributeT::IdentityAttribute(Box::default()),
        _ => AttributeT::NONE,
    }
}

/// Parses, lowers and runs a model on `inputs` (as i64 values with shapes), returning the
/// graph outputs as i64 vectors.
pub fn run(bytes: &[u8], inputs: &[(&[usize], npuc_ir::DType, &[i64])]) -> Vec<Vec<i64>> {
    let m = npuc_frontend_tosa::TosaModel::parse(bytes).expect("parse");
    let g = npuc_frontend_tosa::lower(&m).expect("lower");
    let vals = inputs
        .iter()
        .map(|(s, dt, v)| npuc_ir::TensorValue::from_i64(*dt, s.to_vec(), v).unwrap())
        .collect();
    npuc_ir::run_outputs(&g, vals)
        .expect("run")
        .iter()
        .map(|v| v.to_i64_vec())
        .collect()
}

pub fn lower_err(bytes: &[u8]) -> String {
    let m = npuc_frontend_tosa::TosaModel::parse(bytes).expect("parse");
    match npuc_frontend_tosa::lower(&m) {
        Ok(_) => panic!("lowering succeeded"),
        Err(e) => e.to_string(),
    }
}

impl B {
    /// Forgets the declared graph outputs (to extend a model).
    pub fn outputs_clear(&mut self) -> &mut Self {
        self.outputs.clear();
        self
    }
}

pub fn clamp_attr(min: i8, max: i8) -> AttributeT {
    let mut a = ClampAttributeT::default();
    a.min_val = Some(i8s(&[min]));
    a.max_val = Some(i8s(&[max]));
    AttributeT::ClampAttribute(Box::new(a))
}

pub fn transpose_attr(perms: &[i32]) -> AttributeT {
    let mut a = TransposeAttributeT::default();
    a.perms = Some(perms.to_vec());
    AttributeT::TransposeAttribute(Box::new(a))
}

impl B {
    /// A copy of this builder that declares `name` as a graph output (without a tensor).
    pub fn clone_with_output(&self, name: &str) -> B {
        B {
            tensors: self.tensors.clone(),
            shapes: self.shapes.clone(),
            ops: self.ops.clone(),
            inputs: self.inputs.clone(),
            outputs: vec![name.to_string()],
            version: self.version,
        }
    }
}
