//! Lowering state: the IR graph under construction, the TFLite → IR tensor map, and the
//! per-operator helper [`OpCx`] that the operator lowerings use.

use super::LowerError;
use crate::schema::{ActivationFunctionType, BuiltinOptionsT};
use crate::{Operator, Subgraph, Tensor, TensorId, TensorType, TfliteModel};
use npuc_ir::{
    ClampAttrs, DType, Graph, Op, Quantization, RescaleAttrs, RescaleRounding, ReshapeAttrs, Shape,
    TensorData,
};

pub(crate) type IrT = npuc_ir::TensorId;
pub(crate) type R<T> = Result<T, String>;

pub(crate) struct Lowerer<'m> {
    pub model: &'m TfliteModel,
    pub sg: &'m Subgraph,
    pub g: Graph,
    pub map: Vec<Option<IrT>>,
    /// The int8 view of each IR tensor held as uint8 ([`super::uint8::int8_view`]).
    pub views: std::collections::HashMap<IrT, IrT>,
}

/// Maps a TFLite element type to the IR's.
pub(crate) fn ir_dtype(t: TensorType) -> Option<DType> {
    Some(match t {
        TensorType::Int8 => DType::Int8,
        TensorType::Uint8 => DType::UInt8,
        TensorType::Int16 => DType::Int16,
        TensorType::Uint16 => DType::UInt16,
        TensorType::Int32 => DType::Int32,
        TensorType::Int64 => DType::Int64,
        TensorType::Bool => DType::Bool,
        TensorType::Float32 => DType::Float32,
        _ => return None,
    })
}

/// Descriptive IR quantization record of a TFLite tensor (as stored: a uint8 tensor keeps its
/// own zero point; see [`ir_quant_as`] for its int8 view).
fn ir_quant(t: &Tensor) -> Option<Quantization> {
    let q = t.quantization.as_ref()?;
    match q.scale.len() {
        0 => None,
        1 => Some(Quantization::per_tensor(
            f64::from(q.scale[0]),
            q.zero_point.first().copied().unwrap_or(0),
        )),
        _ => Some(Quantization::per_axis(
            q.quantized_dimension,
            q.scale.iter().map(|&s| f64::from(s)).collect(),
            q.zero_point.clone(),
        )),
    }
}

/// The quantization record of `t` for an IR tensor of type `dt`: a uint8 TFLite tensor held
/// as its int8 view ([`super::uint8`]) has its zero point moved by -128.
fn ir_quant_as(t: &Tensor, dt: DType) -> Option<Quantization> {
    let q = ir_quant(t)?;
    if super::uint8::is_u8(t) && dt == DType::Int8 {
        return Some(super::uint8::shift_quant(q));
    }
    Some(q)
}

impl<'m> Lowerer<'m> {
    pub fn new(model: &'m TfliteModel, sg: &'m Subgraph, name: &str) -> Self {
        Lowerer {
            model,
            sg,
            g: Graph::new(name),
            map: vec![None; sg.tensors.len()],
            views: std::collections::HashMap::new(),
        }
    }

    fn tensor_err(t: &Tensor, reason: impl Into<String>) -> LowerError {
        LowerError::Tensor {
            tensor: t.id.index(),
            name: t.name.clone(),
            reason: reason.into(),
        }
    }

    pub fn add_graph_input(&mut self, id: TensorId) -> Result<(), LowerError> {
        let t = &self.sg.tensors[id.index()];
        let dt = ir_dtype(t.dtype)
            .ok_or_else(|| Self::tensor_err(t, format!("input type {:?}", t.dtype)))?;
        let shape = t
            .static_shape()
            .map_err(|e| Self::tensor_err(t, e.to_string()))?;
        let ir = self
            .g
            .add_input(t.name.clone(), npuc_ir::TensorType::new(dt, shape));
        if let Some(q) = ir_quant(t) {
            let _ = self.g.set_quant(ir, q);
        }
        self.map[id.index()] = Some(ir);
        Ok(())
    }

    pub fn add_graph_output(&mut self, id: TensorId) -> Result<(), LowerError> {
        let t = &self.sg.tensors[id.index()];
        let ir = match self.map[id.index()] {
            Some(ir) => ir,
            None => {
                return Err(Self::tensor_err(
                    t,
                    "graph output is not produced by any operator",
                ))
            }
        };
        let ir = super::uint8::graph_output(self, t, ir).map_err(|e| Self::tensor_err(t, e))?;
        self.map[id.index()] = Some(ir);
        self.g
            .add_output(ir)
            .map_err(|e| Self::tensor_err(t, e.to_string()))
    }

    pub fn finish(self) -> (Graph, Vec<Option<IrT>>) {
        (self.g, self.map)
    }
}

/// Per-operator helper.
pub(crate) struct OpCx<'a, 'm> {
    pub l: &'a mut Lowerer<'m>,
    pub op: &'m Operator,
    n: usize,
}

impl<'a, 'm> OpCx<'a, 'm> {
    pub fn new(l: &'a mut Lowerer<'m>, op: &'m Operator) -> Self {
        OpCx { l, op, n: 0 }
    }

    pub fn opts(&self) -> &'m BuiltinOptionsT {
        &self.op.builtin_options
    }

    /// The TFLite tensor of input `i`.
    pub fn tin(&self, i: usize) -> R<&'m Tensor> {
        let id = self
            .op
            .inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| format!("input {i} is missing"))?;
        Ok(&self.l.sg.tensors[id.index()])
    }

    /// True if input `i` is present (not -1 and not beyond the list).
    pub fn has_input(&self, i: usize) -> bool {
        self.op.inputs.get(i).copied().flatten().is_some()
    }

    /// The TFLite tensor of output `j`.
    pub fn tout(&self, j: usize) -> R<&'m Tensor> {
        let id = self
            .op
            .outputs
            .get(j)
            .copied()
            .ok_or_else(|| format!("output {j} is missing"))?;
        Ok(&self.l.sg.tensors[id.index()])
    }

    pub fn shape(t: &Tensor) -> R<Vec<usize>> {
        t.static_shape().map_err(|e| e.to_string())
    }

    /// The element type operator lowerings work in: a uint8 tensor is seen as its int8 view
    /// (zero point - 128, [`super::uint8`]); [`Self::raw_dtype`] is the stored type.
    pub fn dtype(t: &Tensor) -> R<DType> {
        match Self::raw_dtype(t)? {
            DType::UInt8 => Ok(DType::Int8),
            dt => Ok(dt),
        }
    }

    /// The element type as stored in the TFLite file.
    pub fn raw_dtype(t: &Tensor) -> R<DType> {
        ir_dtype(t.dtype)
            .ok_or_else(|| format!("tensor {:?} has unsupported type {:?}", t.name, t.dtype))
    }

    /// Constant data of `t` as stored, converted to its working type ([`Self::dtype`]).
    fn const_data(&self, t: &Tensor, bytes: &[u8]) -> R<TensorData> {
        let d = TensorData::from_le_bytes(Self::raw_dtype(t)?, bytes)
            .map_err(|e| format!("tensor {:?}: {e}", t.name))?;
        Ok(super::uint8::view_data(d))
    }

    /// Constant data of a TFLite tensor as `i64`s.
    pub fn const_values(&self, t: &Tensor) -> R<Option<Vec<i64>>> {
        let Some(bytes) = self.l.model.tensor_data(t) else {
            return Ok(None);
        };
        Ok(Some(self.const_data(t, bytes)?.to_i64_vec()))
    }

    /// Constant data of input `i`, which must be constant.
    pub fn const_input(&self, i: usize) -> R<Vec<i64>> {
        let t = self.tin(i)?;
        self.const_values(t)?
            .ok_or_else(|| format!("input {i} {:?} must be a constant", t.name))
    }

    /// The IR tensor of input `i` in its working type (constants are materialised on first
    /// use; a uint8 tensor held as uint8 is read through its int8 view, [`super::uint8`]).
    pub fn input(&mut self, i: usize) -> R<IrT> {
        let ir = self.input_raw(i)?;
        super::uint8::int8_view(self, ir)
    }

    /// The IR tensor of input `i` as it is held (uint8 for a uint8 graph input).
    pub fn input_raw(&mut self, i: usize) -> R<IrT> {
        let t = self.tin(i)?;
        if let Some(ir) = self.l.map[t.id.index()] {
            return Ok(ir);
        }
        let Some(bytes) = self.l.model.tensor_data(t) else {
            return Err(format!(
                "input {i} {:?} is neither a constant nor produced earlier",
                t.name
            ));
        };
        let d = self.const_data(t, bytes)?;
        let dt = d.dtype();
        let shape = Self::shape(t)?;
        let ir = self
            .l
            .g
            .add_const(t.name.clone(), shape, d)
            .map_err(|e| e.to_string())?;
        if let Some(q) = ir_quant_as(t, dt) {
            let _ = self.l.g.set_quant(ir, q);
        }
        self.l.map[t.id.index()] = Some(ir);
        Ok(ir)
    }

    /// Adds an IR constant.
    pub fn constant(&mut self, what: &str, shape: Vec<usize>, data: TensorData) -> R<IrT> {
        let name = format!("op{}/{what}", self.op.id.index());
        self.l
            .g
            .add_const(name, shape, data)
            .map_err(|e| e.to_string())
    }

    /// Adds an IR operator with an inferred output.
    pub fn emit(&mut self, what: &str, op: Op, inputs: &[IrT]) -> R<IrT> {
        self.n += 1;
        let name = format!("op{}/{}{}", self.op.id.index(), self.n, what);
        self.l
            .g
            .add_op_inferred(name, op, inputs)
            .map(|(_, t)| t)
            .map_err(|e| e.to_string())
    }

    pub fn ty(&self, t: IrT) -> npuc_ir::TensorType {
        self.l
            .g
            .tensor(t)
            .map(|x| x.ty.clone())
            .unwrap_or_else(|| npuc_ir::TensorType::new(DType::Int32, [1]))
    }

    /// Binds TFLite output `j` to IR tensor `ir`, checking type and shape, and names it.
    pub fn bind_output(&mut self, j: usize, ir: IrT) -> R<()> {
        let t = self.tout(j)?;
        let want = npuc_ir::TensorType::new(Self::dtype(t)?, Self::shape(t)?);
        let got = self.ty(ir);
        let raw = npuc_ir::TensorType::new(Self::raw_dtype(t)?, Self::shape(t)?);
        if got != want && got != raw {
            return Err(format!(
                "internal: lowered output {j} is {got}, TFLite says {want}"
            ));
        }
        if self.l.map[t.id.index()].is_some() {
            return Err(format!("output {j} {:?} is written twice", t.name));
        }
        if let Some(x) = self.l.g.tensor_mut(ir) {
            x.name = t.name.clone();
            x.quant = ir_quant_as(t, got.dtype);
        }
        self.l.map[t.id.index()] = Some(ir);
        Ok(())
    }

    /// Per-tensor `(scale, zero_point)` of a TFLite tensor in its working type: a uint8
    /// tensor's zero point is that of its int8 view (- 128, [`super::uint8`]).
    pub fn qparams(t: &Tensor) -> R<(f32, i64)> {
        let (s, z) = Self::raw_qparams(t)?;
        Ok((s, z - super::uint8::offset(t)))
    }

    /// Per-tensor `(scale, zero_point)` as stored.
    pub fn raw_qparams(t: &Tensor) -> R<(f32, i64)> {
        let q = t
            .quantization
            .as_ref()
            .filter(|q| !q.scale.is_empty())
            .ok_or_else(|| format!("tensor {:?} is not quantized", t.name))?;
        if q.scale.len() != 1 {
            return Err(format!("tensor {:?} must be quantized per tensor", t.name));
        }
        Ok((q.scale[0], q.zero_point.first().copied().unwrap_or(0)))
    }

    /// Reshape helper (no-op if the shape already matches).
    pub fn reshape(&mut self, x: IrT, shape: Vec<usize>) -> R<IrT> {
        if self.ty(x).shape.0 == shape {
            return Ok(x);
        }
        self.emit(
            "reshape",
            Op::Reshape(ReshapeAttrs {
                shape: Shape(shape),
            }),
            &[x],
        )
    }

    /// Clamp for a fused activation on an output with the given quantization and type.
    pub fn activation(
        &mut self,
        x: IrT,
        act: ActivationFunctionType,
        scale: f32,
        zp: i64,
    ) -> R<IrT> {
        let dt = self.ty(x).dtype;
        let (lo, hi) =
            super::arith::activation_range(act, scale, zp, dt.min_value(), dt.max_value())?;
        if act == ActivationFunctionType::NONE {
            return Ok(x);
        }
        self.emit("act", Op::Clamp(ClampAttrs { min: lo, max: hi }), &[x])
    }

    /// Always-emitted clamp (also used as a copy so that every TFLite output has its own
    /// IR tensor).
    pub fn clamp(&mut self, x: IrT, lo: i64, hi: i64) -> R<IrT> {
        self.emit("clamp", Op::Clamp(ClampAttrs { min: lo, max: hi }), &[x])
    }

    /// A RESCALE with explicit parameters.
    #[allow(clippy::too_many_arguments)]
    pub fn rescale(
        &mut self,
        x: IrT,
        out: DType,
        multiplier: Vec<i32>,
        shift: Vec<i32>,
        scale32: bool,
        rounding: RescaleRounding,
        input_zp: i64,
        output_zp: i64,
    ) -> R<IrT> {
        let per_channel = multiplier.len() > 1;
        let shift = shift
            .into_iter()
            .map(|s| {
                i8::try_from(s)
                    .ok()
                    .filter(|s| (2..=62).contains(s))
                    .ok_or_else(|| format!("rescale shift {s} outside 2..=62"))
            })
            .collect::<R<Vec<i8>>>()?;
        self.emit(
            "rescale",
            Op::Rescale(RescaleAttrs {
                output_dtype: out,
                multiplier,
                shift,
                scale32,
                rounding,
                per_channel,
                input_zp,
                output_zp,
                input_unsigned: false,
                output_unsigned: false,
            }),
            &[x],
        )
    }

    /// `(x - input_zp)` exactly as `i32` (identity rescale).
    pub fn widen_i32(&mut self, x: IrT, input_zp: i64) -> R<IrT> {
        self.rescale(
            x,
            DType::Int32,
            vec![1 << 30],
            vec![30],
            true,
            RescaleRounding::SingleRound,
            input_zp,
            0,
        )
    }

    /// TFLite `MultiplyByQuantizedMultiplier(x, real)` on an `i32` tensor (gemmlowp double
    /// rounding), then `+ output_zp` and saturation to `out`.
    pub fn requant_double(&mut self, x: IrT, out: DType, reals: &[f64], output_zp: i64) -> R<IrT> {
        let mut ms = Vec::with_capacity(reals.len());
        let mut ss = Vec::with_capacity(reals.len());
        for &r in reals {
            let (m, s) = super::arith::quantize_multiplier(r)
                .ok_or_else(|| format!("scale {r} cannot be expressed as a multiplier"))?;
            ms.push(m);
            ss.push(31 - s);
        }
        self.rescale(
            x,
            out,
            ms,
            ss,
            true,
            RescaleRounding::DoubleRound,
            0,
            output_zp,
        )
    }
}
