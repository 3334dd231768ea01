//! A small TFLite flatbuffer builder over the generated object API (`ModelT` + `pack`), for
//! models made of a few operators with quantized tensors.

use npuc_frontend_tflite::schema::{
    finish_model_buffer, BufferT, BuiltinOperator, BuiltinOptionsT, ModelT, OperatorCodeT,
    OperatorT, QuantizationParametersT, SubGraphT, TensorT, TensorType,
};

/// Quantization of one tensor: scales, zero points and the quantized dimension.
#[derive(Debug, Clone)]
pub struct Quant {
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    pub dim: i32,
}

impl Quant {
    pub fn per_tensor(scale: f32, zp: i64) -> Quant {
        Quant {
            scale: vec![scale],
            zero_point: vec![zp],
            dim: 0,
        }
    }
    pub fn per_axis(scale: Vec<f32>, dim: i32) -> Quant {
        let n = scale.len();
        Quant {
            scale,
            zero_point: vec![0; n],
            dim,
        }
    }
}

/// A model under construction (one subgraph).
#[derive(Default)]
pub struct Builder {
    tensors: Vec<TensorT>,
    buffers: Vec<BufferT>,
    ops: Vec<OperatorT>,
    codes: Vec<OperatorCodeT>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            buffers: vec![BufferT::default()],
            ..Builder::default()
        }
    }

    fn tensor(
        &mut self,
        name: &str,
        shape: &[usize],
        ty: TensorType,
        q: Option<Quant>,
        data: Option<Vec<u8>>,
    ) -> i32 {
        let mut t = TensorT::default();
        t.name = Some(name.to_owned());
        t.shape = Some(shape.iter().map(|&d| d as i32).collect());
        t.type_ = ty;
        if let Some(d) = data {
            let mut b = BufferT::default();
            b.data = Some(d);
            self.buffers.push(b);
            t.buffer = (self.buffers.len() - 1) as u32;
        }
        if let Some(q) = q {
            let mut qp = QuantizationParametersT::default();
            qp.scale = Some(q.scale);
            qp.zero_point = Some(q.zero_point);
            qp.quantized_dimension = q.dim;
            t.quantization = Some(Box::new(qp));
        }
        self.tensors.push(t);
        (self.tensors.len() - 1) as i32
    }

    /// A graph input.
    pub fn input(&mut self, name: &str, shape: &[usize], ty: TensorType, q: Quant) -> i32 {
        let t = self.tensor(name, shape, ty, Some(q), None);
        self.inputs.push(t);
        t
    }

    /// An intermediate or output activation tensor (no data).
    pub fn activation(&mut self, name: &str, shape: &[usize], ty: TensorType, q: Quant) -> i32 {
        self.tensor(name, shape, ty, Some(q), None)
    }

    /// Marks a tensor as a graph output.
    pub fn output(&mut self, t: i32) {
        self.outputs.push(t);
    }

    /// A constant int8 tensor.
    pub fn const_i8(&mut self, name: &str, shape: &[usize], v: &[i8], q: Quant) -> i32 {
        let bytes = v.iter().map(|&x| x as u8).collect();
        self.tensor(name, shape, TensorType::INT8, Some(q), Some(bytes))
    }

    /// A constant int16 tensor.
    pub fn const_i16(&mut self, name: &str, shape: &[usize], v: &[i16], q: Quant) -> i32 {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.tensor(name, shape, TensorType::INT16, Some(q), Some(bytes))
    }

    /// A constant int32 tensor (biases, shapes), without quantization.
    pub fn const_i32(&mut self, name: &str, shape: &[usize], v: &[i32]) -> i32 {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.tensor(name, shape, TensorType::INT32, None, Some(bytes))
    }

    /// A constant int64 tensor (16x8 biases).
    pub fn const_i64(&mut self, name: &str, shape: &[usize], v: &[i64]) -> i32 {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.tensor(name, shape, TensorType::INT64, None, Some(bytes))
    }

    /// An operator; `-1` inputs are absent optional inputs.
    pub fn op(
        &mut self,
        code: BuiltinOperator,
        options: BuiltinOptionsT,
        inputs: &[i32],
        outputs: &[i32],
    ) {
        let idx = match self.codes.iter().position(|c| c.builtin_code == code) {
            Some(i) => i,
            None => {
                let mut c = OperatorCodeT::default();
                c.deprecated_builtin_code = code.0.clamp(0, 127) as i8;
                c.builtin_code = code;
                c.version = 1;
                self.codes.push(c);
                self.codes.len() - 1
            }
        };
        let mut op = OperatorT::default();
        op.opcode_index = idx as u32;
        op.inputs = Some(inputs.to_vec());
        op.outputs = Some(outputs.to_vec());
        op.builtin_options = options;
        self.ops.push(op);
    }

    /// The serialised model (`TFL3`).
    pub fn finish(self) -> Vec<u8> {
        let mut sg = SubGraphT::default();
        sg.name = Some("main".to_owned());
        sg.tensors = Some(self.tensors);
        sg.inputs = Some(self.inputs);
        sg.outputs = Some(self.outputs);
        sg.operators = Some(self.ops);
        let mut m = ModelT::default();
        m.version = 3;
        m.description = Some("sweep".to_owned());
        m.operator_codes = Some(self.codes);
        m.buffers = Some(self.buffers);
        m.subgraphs = Some(vec![sg]);
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let root = m.pack(&mut fbb);
        finish_model_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }
}
