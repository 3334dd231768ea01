//! A small TFLite flatbuffer builder over the generated object API: tensors, constants,
//! operators, graph inputs and outputs of one subgraph.

use npuc_frontend_tflite::schema::{
    finish_model_buffer, BufferT, BuiltinOperator, BuiltinOptionsT, ModelT, OperatorCodeT,
    OperatorT, QuantizationParametersT, SubGraphT, TensorT, TensorType,
};

/// Element type of a tensor in a sweep model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    I8,
    I16,
    I32,
    I64,
    Bool,
}

impl Ty {
    fn tflite(self) -> TensorType {
        match self {
            Ty::I8 => TensorType::INT8,
            Ty::I16 => TensorType::INT16,
            Ty::I32 => TensorType::INT32,
            Ty::I64 => TensorType::INT64,
            Ty::Bool => TensorType::BOOL,
        }
    }
    pub fn min(self) -> i64 {
        match self {
            Ty::I8 => -128,
            Ty::I16 => -32768,
            Ty::I32 => i32::MIN as i64,
            Ty::I64 => i64::MIN,
            Ty::Bool => 0,
        }
    }
    pub fn max(self) -> i64 {
        match self {
            Ty::I8 => 127,
            Ty::I16 => 32767,
            Ty::I32 => i32::MAX as i64,
            Ty::I64 => i64::MAX,
            Ty::Bool => 1,
        }
    }
    fn bytes(self, v: &[i64]) -> Vec<u8> {
        v.iter()
            .flat_map(|&x| match self {
                Ty::I8 | Ty::Bool => vec![x as u8],
                Ty::I16 => (x as i16).to_le_bytes().to_vec(),
                Ty::I32 => (x as i32).to_le_bytes().to_vec(),
                Ty::I64 => x.to_le_bytes().to_vec(),
            })
            .collect()
    }
}

/// Quantization of a tensor: `None` for index/bool tensors.
pub type Q = Option<(f32, i64)>;

/// One subgraph under construction.
#[derive(Default)]
pub struct Tfl {
    tensors: Vec<TensorT>,
    buffers: Vec<BufferT>,
    ops: Vec<OperatorT>,
    codes: Vec<BuiltinOperator>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
}

impl Tfl {
    pub fn new() -> Tfl {
        Tfl {
            buffers: vec![BufferT::default()],
            ..Tfl::default()
        }
    }

    fn add(&mut self, shape: &[usize], ty: Ty, q: Q, data: Option<Vec<u8>>) -> i32 {
        let mut t = TensorT::default();
        t.name = Some(format!("t{}", self.tensors.len()));
        t.shape = Some(shape.iter().map(|&d| d as i32).collect());
        t.type_ = ty.tflite();
        if let Some(d) = data {
            let mut b = BufferT::default();
            b.data = Some(d);
            self.buffers.push(b);
            t.buffer = (self.buffers.len() - 1) as u32;
        }
        if let Some((scale, zp)) = q {
            let mut qp = QuantizationParametersT::default();
            qp.scale = Some(vec![scale]);
            qp.zero_point = Some(vec![zp]);
            t.quantization = Some(Box::new(qp));
        }
        self.tensors.push(t);
        (self.tensors.len() - 1) as i32
    }

    /// A graph input.
    pub fn input(&mut self, shape: &[usize], ty: Ty, q: Q) -> i32 {
        let t = self.add(shape, ty, q, None);
        self.inputs.push(t);
        t
    }

    /// A tensor computed by an operator (intermediate or output).
    pub fn act(&mut self, shape: &[usize], ty: Ty, q: Q) -> i32 {
        self.add(shape, ty, q, None)
    }

    /// A constant tensor.
    pub fn constant(&mut self, shape: &[usize], ty: Ty, q: Q, values: &[i64]) -> i32 {
        self.add(shape, ty, q, Some(ty.bytes(values)))
    }

    /// An int32 parameter tensor (axes, sizes, paddings ...).
    pub fn param(&mut self, shape: &[usize], values: &[i64]) -> i32 {
        self.constant(shape, Ty::I32, None, values)
    }

    /// A rank-1 int32 parameter tensor.
    pub fn param1(&mut self, values: &[i64]) -> i32 {
        self.param(&[values.len()], values)
    }

    pub fn op(&mut self, code: BuiltinOperator, ins: &[i32], outs: &[i32], opts: BuiltinOptionsT) {
        let idx = match self.codes.iter().position(|&c| c == code) {
            Some(i) => i,
            None => {
                self.codes.push(code);
                self.codes.len() - 1
            }
        };
        let mut op = OperatorT::default();
        op.opcode_index = idx as u32;
        op.inputs = Some(ins.to_vec());
        op.outputs = Some(outs.to_vec());
        op.builtin_options = opts;
        self.ops.push(op);
    }

    pub fn output(&mut self, t: i32) {
        self.outputs.push(t);
    }

    /// The shape of a tensor.
    pub fn shape(&self, t: i32) -> Vec<usize> {
        self.tensors[t as usize]
            .shape
            .as_ref()
            .unwrap()
            .iter()
            .map(|&d| d as usize)
            .collect()
    }

    /// Serialises the model (`TFL3`).
    pub fn finish(self) -> Vec<u8> {
        let mut sg = SubGraphT::default();
        sg.name = Some("main".into());
        sg.tensors = Some(self.tensors);
        sg.inputs = Some(self.inputs);
        sg.outputs = Some(self.outputs);
        sg.operators = Some(self.ops);
        let mut m = ModelT::default();
        m.version = 3;
        m.operator_codes = Some(
            self.codes
                .iter()
                .map(|&c| {
                    let mut oc = OperatorCodeT::default();
                    oc.deprecated_builtin_code = c.0.clamp(0, 127) as i8;
                    oc.builtin_code = c;
                    oc.version = 1;
                    oc
                })
                .collect(),
        );
        m.buffers = Some(self.buffers);
        m.subgraphs = Some(vec![sg]);
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let root = m.pack(&mut fbb);
        finish_model_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }
}
