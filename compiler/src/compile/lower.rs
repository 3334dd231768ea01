//! Operator groups of the IR to NPU kernel operations.

use super::CompileError;
use npuc_backend::isa::{ElementwiseMode, PoolingMode, RoundModeIfm, RoundModeOfm};
use npuc_codecs::ordering::{OhwiWeights, WeightShape};
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{
    DType, Graph, Op, OpId, OpNode, RescaleAttrs, RescaleRounding, TensorData, TensorId,
};
use std::collections::{BTreeMap, BTreeSet};

/// A feature-map buffer: one per graph input and per NPU operation output (RESHAPE aliases).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// Size in bytes.
    pub size: u64,
    /// Index of the NPU operation writing it (`None` for graph inputs).
    pub producer: Option<usize>,
    /// Index of the last NPU operation reading it.
    pub last_use: Option<usize>,
    /// Graph input or output (live for the whole run on that side).
    pub is_input: bool,
    /// Graph output.
    pub is_output: bool,
}

/// A feature map as one NPU operation sees it (NHWC, batch 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fm {
    /// Buffer index.
    pub buffer: usize,
    /// Height, width, depth of the tensor.
    pub shape: (u32, u32, u32),
    /// Zero point.
    pub zero_point: i64,
    /// Element type (int8 in this slice).
    pub dtype: DType,
    /// Broadcast along height, width, depth (elementwise inputs).
    pub broadcast: (bool, bool, bool),
}

/// NPU kernel of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// NPU_OP_CONV.
    Conv,
    /// NPU_OP_DEPTHWISE.
    Depthwise,
    /// NPU_OP_POOL.
    Pool(PoolingMode),
    /// NPU_OP_ELEMENTWISE.
    Elementwise(ElementwiseMode),
}

/// How the accumulator is requantized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requant {
    /// Per-channel records (scale stream), with bias.
    PerChannel(Vec<ChannelScale>),
    /// OFM_SCALE (global), no bias.
    Global { scale: u32, shift: u8 },
}

/// An IFM/IFM2 input scale (elementwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputScale {
    pub scale: u32,
    pub shift: u8,
    /// Double-rounding position offset (a left shift folded into the scale).
    pub dbl_rnd: u8,
    pub round: RoundModeIfm,
}

/// One NPU kernel operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpuOp {
    /// Name of the last IR operator of the group.
    pub name: String,
    /// Names of all IR operators of the group.
    pub fused: Vec<String>,
    pub kernel: Kernel,
    pub ifm: Fm,
    pub ifm2: Option<Fm>,
    pub ofm: Fm,
    /// Undilated kernel height, width.
    pub kernel_size: (u32, u32),
    /// Stride y, x.
    pub stride: (u32, u32),
    /// Dilation y, x (1 or 2).
    pub dilation: (u32, u32),
    /// Padding top, bottom, left, right (bottom/right as the hardware derives the IFM extent).
    pub pad: [u32; 4],
    /// OHWI weights with the weight zero point subtracted.
    pub weights: Option<OhwiWeights>,
    pub requant: Requant,
    pub round: RoundModeOfm,
    pub ifm_scale: Option<InputScale>,
    pub ifm2_scale: Option<InputScale>,
    /// Activation clamp bounds (after the zero point).
    pub act: (i64, i64),
}

/// The result of lowering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lowered {
    pub ops: Vec<NpuOp>,
    pub buffers: Vec<Buffer>,
    tensor_buffer: BTreeMap<TensorId, usize>,
}

impl Lowered {
    /// The buffer holding a graph input/output or NPU operation output tensor.
    pub fn buffer_of(&self, t: TensorId) -> usize {
        self.tensor_buffer[&t]
    }
}

struct Ctx<'g> {
    g: &'g Graph,
    lowered: Lowered,
    fused: BTreeSet<OpId>,
}

fn unsupported(node: &OpNode, reason: impl Into<String>) -> CompileError {
    CompileError::Unsupported {
        name: node.name.clone(),
        kind: node.op.kind().to_string(),
        reason: reason.into(),
    }
}

fn rescale_round(r: &RescaleAttrs) -> RoundModeOfm {
    if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
        RoundModeOfm::DoubleSymmetric
    } else {
        RoundModeOfm::Natural
    }
}

impl<'g> Ctx<'g> {
    fn node(&self, o: OpId) -> &'g OpNode {
        self.g.op(o).expect("op id from the graph")
    }

    fn dtype(&self, t: TensorId) -> DType {
        self.g.tensor(t).expect("tensor").ty.dtype
    }

    fn dims(&self, t: TensorId) -> &'g [usize] {
        self.g.tensor(t).expect("tensor").ty.shape.dims()
    }

    fn const_data(&self, t: TensorId) -> Option<&'g TensorData> {
        self.g.tensor(t).and_then(|x| x.data.as_ref())
    }

    /// The single consumer of `t` if `t` is an intermediate that can be fused away.
    fn sole_consumer(&self, t: TensorId) -> Option<OpId> {
        if self.g.outputs().contains(&t) {
            return None;
        }
        let c = self.g.consumers(t);
        (c.len() == 1).then(|| c[0].0)
    }

    fn new_buffer(&mut self, t: TensorId, producer: Option<usize>) -> usize {
        let tensor = self.g.tensor(t).expect("tensor");
        let n = tensor.ty.shape.num_elements().unwrap_or(0) as u64;
        let size = n * tensor.ty.dtype.byte_size() as u64;
        let idx = self.lowered.buffers.len();
        self.lowered.buffers.push(Buffer {
            size,
            producer,
            last_use: None,
            is_input: producer.is_none(),
            is_output: false,
        });
        self.lowered.tensor_buffer.insert(t, idx);
        idx
    }

    /// The buffer of a non-constant tensor read by an NPU operation.
    fn input_buffer(&self, node: &OpNode, t: TensorId) -> Result<usize, CompileError> {
        self.lowered.tensor_buffer.get(&t).copied().ok_or_else(|| {
            unsupported(
                node,
                "an input is a constant or comes from an unsupported operator",
            )
        })
    }

    fn hwc(
        &self,
        node: &OpNode,
        t: TensorId,
        spatial: bool,
    ) -> Result<(u32, u32, u32), CompileError> {
        let d = self.dims(t);
        let big = |v: usize| v > 65536;
        let (h, w, c) = match d.len() {
            4 if d[0] == 1 => (d[1], d[2], d[3]),
            4 => return Err(unsupported(node, "batch sizes other than 1")),
            3 if !spatial => (d[0], d[1], d[2]),
            2 if !spatial => (1, d[0], d[1]),
            1 if !spatial => (1, 1, d[0]),
            0 if !spatial => (1, 1, 1),
            _ => return Err(unsupported(node, format!("tensor rank {}", d.len()))),
        };
        if big(h) || big(w) || big(c) {
            return Err(unsupported(node, "a dimension above 65536"));
        }
        Ok((h as u32, w as u32, c as u32))
    }

    fn fm(&self, node: &OpNode, t: TensorId, spatial: bool, zp: i64) -> Result<Fm, CompileError> {
        let dtype = self.dtype(t);
        if dtype != DType::Int8 {
            return Err(unsupported(
                node,
                format!("{dtype} feature maps (only i8 so far)"),
            ));
        }
        if !(-128..=127).contains(&zp) {
            return Err(unsupported(node, format!("zero point {zp}")));
        }
        Ok(Fm {
            buffer: self.input_buffer(node, t)?,
            shape: self.hwc(node, t, spatial)?,
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
        })
    }

    /// Follows `t` through an optional CLAMP; returns the final tensor, the bounds and the
    /// fused operator names.
    fn fuse_clamp(&mut self, t: TensorId, names: &mut Vec<String>) -> (TensorId, (i64, i64)) {
        let mut bounds = (-128, 127);
        if let Some(c) = self.sole_consumer(t) {
            if let Op::Clamp(a) = &self.node(c).op {
                bounds = (a.min.max(-128), a.max.min(127));
                self.fused.insert(c);
                names.push(self.node(c).name.clone());
                return (self.node(c).outputs()[0], bounds);
            }
        }
        (t, bounds)
    }

    fn ofm(
        &mut self,
        node: &OpNode,
        t: TensorId,
        spatial: bool,
        zp: i64,
    ) -> Result<Fm, CompileError> {
        let idx = self.lowered.ops.len();
        let buf = self.new_buffer(t, Some(idx));
        let r = self.fm(node, t, spatial, zp);
        if r.is_err() {
            self.lowered.buffers.pop();
            self.lowered.tensor_buffer.remove(&t);
        }
        let _ = buf;
        r
    }

    fn check_rescale_out(&self, node: &OpNode, r: &RescaleAttrs) -> Result<(), CompileError> {
        if r.output_dtype != DType::Int8 || r.input_unsigned || r.output_unsigned {
            return Err(unsupported(
                node,
                "only i32 -> i8 signed rescales are fused",
            ));
        }
        if r.input_zp != 0 {
            return Err(unsupported(
                node,
                "nonzero input zero point on an accumulator",
            ));
        }
        if !(-128..=127).contains(&r.output_zp) {
            return Err(unsupported(node, "output zero point out of range"));
        }
        if r.shift.iter().any(|&s| !(0..=63).contains(&s)) || r.multiplier.iter().any(|&m| m < 0) {
            return Err(unsupported(node, "multiplier/shift out of range"));
        }
        Ok(())
    }

    fn lower_conv(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let ins = node.inputs();
        let acc_t = node.outputs()[0];
        let (x, w, b) = (ins[0], ins[1], ins[2]);
        let (input_zp, weight_zp, stride, dilation, pad) = match &node.op {
            Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
                (a.input_zp, a.weight_zp, a.stride, a.dilation, a.pad)
            }
            Op::FullyConnected(a) => (a.input_zp, a.weight_zp, [1, 1], [1, 1], [0; 4]),
            _ => unreachable!("lower_conv on a non-conv op"),
        };
        if self.dtype(x) != DType::Int8 {
            return Err(unsupported(node, "only i8 inputs so far"));
        }
        let (Some(wd), Some(bd)) = (self.const_data(w), self.const_data(b)) else {
            return Err(unsupported(node, "weights and bias must be constants"));
        };
        let rescale_op = self
            .sole_consumer(acc_t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "the accumulator must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale_op);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        self.fused.insert(rescale_op);
        let mut names = vec![node.name.clone(), rnode.name.clone()];
        let (out_t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);

        let wdims = self.dims(w).to_vec();
        let wvals: Vec<i64> = wd.to_i64_vec();
        let to_w = |v: i64| -> Result<i16, CompileError> {
            let d = v - weight_zp;
            if (-255..=255).contains(&d) {
                Ok(d as i16)
            } else {
                Err(unsupported(
                    node,
                    "weight minus zero point outside -255..=255",
                ))
            }
        };
        let (kernel, weights, ifm, ofm_spatial) = match &node.op {
            Op::Conv2d(_) => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: wdims[1],
                    kernel_width: wdims[2],
                    ifm_depth: wdims[3],
                };
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi =
                    OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))?;
                (Kernel::Conv, ohwi, self.fm(node, x, true, input_zp)?, true)
            }
            Op::DepthwiseConv2d(_) => {
                if wdims[3] != 1 {
                    return Err(unsupported(node, "depth multiplier other than 1"));
                }
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi = OhwiWeights::from_depthwise_hwc(wdims[0], wdims[1], wdims[2], &vals)
                    .map_err(|e| unsupported(node, e.to_string()))?;
                (
                    Kernel::Depthwise,
                    ohwi,
                    self.fm(node, x, true, input_zp)?,
                    true,
                )
            }
            _ => {
                let shape = WeightShape {
                    ofm_depth: wdims[0],
                    kernel_height: 1,
                    kernel_width: 1,
                    ifm_depth: wdims[1],
                };
                let vals = wvals
                    .iter()
                    .map(|&v| to_w(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ohwi =
                    OhwiWeights::new(shape, vals).map_err(|e| unsupported(node, e.to_string()))?;
                (
                    Kernel::Conv,
                    ohwi,
                    self.fm(node, x, false, input_zp)?,
                    false,
                )
            }
        };
        let ofm = self.ofm(node, out_t, ofm_spatial, r.output_zp)?;
        let oc = ofm.shape.2 as usize;
        let biases = bd.to_i64_vec();
        let mut channels = Vec::with_capacity(oc);
        for c in 0..oc {
            let bias = if biases.len() == 1 {
                biases[0]
            } else {
                biases[c]
            };
            let k = if r.multiplier.len() == 1 { 0 } else { c };
            channels.push(ChannelScale {
                bias,
                scale: r.multiplier[k] as u32,
                shift: r.shift[k] as u8,
            });
        }
        let ws = weights.shape();
        let (kh, kw) = (ws.kernel_height as u32, ws.kernel_width as u32);
        let geometry = Geometry::new(node, &ifm, &ofm, (kh, kw), stride, dilation, pad)?;
        self.push(NpuOp {
            name: self.node(o).name.clone(),
            fused: names,
            kernel,
            ifm,
            ifm2: None,
            ofm,
            kernel_size: (kh, kw),
            stride: geometry.stride,
            dilation: geometry.dilation,
            pad: geometry.pad,
            weights: Some(weights),
            requant: Requant::PerChannel(channels),
            round: rescale_round(r),
            ifm_scale: None,
            ifm2_scale: None,
            act,
        });
        Ok(())
    }

    fn push(&mut self, op: NpuOp) {
        let idx = self.lowered.ops.len();
        for fm in std::iter::once(op.ifm).chain(op.ifm2) {
            self.lowered.buffers[fm.buffer].last_use = Some(idx);
        }
        self.lowered.ops.push(op);
    }

    fn lower_pool(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let x = node.inputs()[0];
        let mut names = vec![node.name.clone()];
        let (mode, kernel, stride, pad, izp, ozp, shift) = match &node.op {
            Op::MaxPool2d(a) => (PoolingMode::Max, a.kernel, a.stride, a.pad, 0, 0, 0),
            Op::AvgPool2d(a) => {
                if a.kernel[0] > 8 || a.kernel[1] > 8 {
                    return Err(unsupported(node, "average pool kernels above 8x8"));
                }
                (
                    PoolingMode::Average,
                    a.kernel,
                    a.stride,
                    a.pad,
                    a.input_zp,
                    a.output_zp,
                    0,
                )
            }
            // CLAMP on its own: a 1x1 max pool with the clamp as activation.
            Op::Clamp(_) => (PoolingMode::Max, [1, 1], [1, 1], [0; 4], 0, 0, 0),
            _ => unreachable!("lower_pool on a non-pool op"),
        };
        let (out_t, mut act) = self.fuse_clamp(node.outputs()[0], &mut names);
        if let Op::Clamp(a) = &node.op {
            act = (a.min.max(-128), a.max.min(127));
        }
        let spatial = !matches!(node.op, Op::Clamp(_));
        let ifm = self.fm(node, x, spatial, izp)?;
        let ofm = self.ofm(node, out_t, spatial, ozp)?;
        let k = (kernel[0] as u32, kernel[1] as u32);
        let geometry = Geometry::new(node, &ifm, &ofm, k, stride, [1, 1], pad)?;
        let (scale, round) = match mode {
            PoolingMode::Average => (1, RoundModeOfm::Natural),
            _ => (1, RoundModeOfm::Natural),
        };
        self.push(NpuOp {
            name: node.name.clone(),
            fused: names,
            kernel: Kernel::Pool(mode),
            ifm,
            ifm2: None,
            ofm,
            kernel_size: k,
            stride: geometry.stride,
            dilation: (1, 1),
            pad: geometry.pad,
            weights: None,
            requant: Requant::Global { scale, shift },
            round,
            ifm_scale: None,
            ifm2_scale: None,
            act,
        });
        Ok(())
    }

    /// The producer of `t` if `t` only feeds one operator and is not a graph output.
    fn fusable_producer(&self, t: TensorId) -> Option<(OpId, &'g OpNode)> {
        self.sole_consumer(t)?;
        let p = self.g.producer(t)?;
        Some((p, self.node(p)))
    }

    /// An exact per-tensor RESCALE of an i8 tensor to i32 (multiplier `2^shift`): returns the
    /// i8 input and the zero point.
    fn widen(&self, t: TensorId) -> Option<(OpId, TensorId, i64)> {
        let (p, pnode) = self.fusable_producer(t)?;
        let Op::Rescale(r) = &pnode.op else {
            return None;
        };
        let x = pnode.inputs()[0];
        let exact = r.multiplier.len() == 1
            && r.shift[0] < 31
            && i64::from(r.multiplier[0]) == 1i64 << r.shift[0];
        (exact
            && r.output_dtype == DType::Int32
            && self.dtype(x) == DType::Int8
            && !r.input_unsigned
            && r.output_zp == 0)
            .then_some((p, x, r.input_zp))
    }

    /// An elementwise operand; the forms accepted are
    /// * i8 -> RESCALE(i32, multiplier M, shift S) (any rounding),
    /// * i8 -> exact RESCALE(i32, zero point) -> LOGICAL_LEFT_SHIFT(k) -> RESCALE(M, S) (the
    ///   TFLite ADD/SUB scheme; the left shift becomes the IFM_SCALE dbl_rnd field),
    /// * (MUL only) i8 -> exact RESCALE(i32, zero point), or an i8 tensor directly.
    fn operand(
        &mut self,
        node: &OpNode,
        t: TensorId,
        names: &mut Vec<String>,
    ) -> Result<(TensorId, i64, Option<InputScale>), CompileError> {
        let is_mul = matches!(node.op, Op::Mul(_));
        if is_mul {
            if let Some((p, x, zp)) = self.widen(t) {
                self.fused.insert(p);
                names.push(self.node(p).name.clone());
                return Ok((x, zp, None));
            }
            if self.dtype(t) == DType::Int8 {
                return Ok((t, 0, None));
            }
        } else if let Some((p, pnode)) = self.fusable_producer(t) {
            if let Op::Rescale(r) = &pnode.op {
                let u = pnode.inputs()[0];
                let simple = r.output_dtype == DType::Int32
                    && r.multiplier.len() == 1
                    && !r.input_unsigned
                    && r.output_zp == 0
                    && (0..=63).contains(&r.shift[0])
                    && r.multiplier[0] >= 0;
                // Optional LOGICAL_LEFT_SHIFT by a constant after an exact widening.
                let mut chain = None;
                if simple && r.input_zp == 0 && self.dtype(u) == DType::Int32 {
                    if let Some((lp, lnode)) = self.fusable_producer(u) {
                        if matches!(lnode.op, Op::LogicalLeftShift) {
                            let k = self
                                .const_data(lnode.inputs()[1])
                                .map(|d| d.to_i64_vec())
                                .filter(|v| !v.is_empty() && v.iter().all(|&k| k == v[0]))
                                .map(|v| v[0]);
                            if let (Some(k), Some((wp, x, zp))) = (k, self.widen(lnode.inputs()[0]))
                            {
                                if (0..=30).contains(&k) && k <= i64::from(r.shift[0]) {
                                    chain = Some((vec![wp, lp], x, zp, k as u8));
                                }
                            }
                        }
                    }
                }
                let direct =
                    (simple && self.dtype(u) == DType::Int8).then(|| (vec![], u, r.input_zp, 0u8));
                if let Some((extra, x, zp, k)) = chain.or(direct) {
                    let shift = r.shift[0] as u8 - k;
                    // The NPU does not saturate the scaled input; make sure the IR would not.
                    let m = i128::from(r.multiplier[0]);
                    if (256 * m) >> shift >= 1 << 31 {
                        return Err(unsupported(pnode, "input rescale could saturate"));
                    }
                    let round = if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
                        RoundModeIfm::DoubleSymmetric
                    } else {
                        RoundModeIfm::Natural
                    };
                    for e in extra {
                        self.fused.insert(e);
                        names.push(self.node(e).name.clone());
                    }
                    self.fused.insert(p);
                    names.push(pnode.name.clone());
                    let s = InputScale {
                        scale: r.multiplier[0] as u32,
                        shift,
                        dbl_rnd: k,
                        round,
                    };
                    return Ok((x, zp, Some(s)));
                }
            }
        }
        Err(unsupported(
            node,
            "operands must be i8 tensors rescaled to i32 by a per-tensor RESCALE",
        ))
    }

    fn lower_elementwise(&mut self, o: OpId) -> Result<(), CompileError> {
        let node = self.node(o);
        let mode = match &node.op {
            Op::Add => ElementwiseMode::Add,
            Op::Sub => ElementwiseMode::Sub,
            Op::Mul(m) if m.shift == 0 => ElementwiseMode::Mul,
            Op::Mul(_) => return Err(unsupported(node, "MUL with a shift")),
            _ => unreachable!("lower_elementwise on another op"),
        };
        if self.dtype(node.outputs()[0]) != DType::Int32 {
            return Err(unsupported(
                node,
                "only the i32 form between RESCALEs is supported",
            ));
        }
        let mut names = Vec::new();
        let (a, azp, ascale) = self.operand(node, node.inputs()[0], &mut names)?;
        let (b, bzp, bscale) = self.operand(node, node.inputs()[1], &mut names)?;
        names.push(node.name.clone());
        let (ascale, bscale) = if mode == ElementwiseMode::Mul {
            let exact = |s: Option<InputScale>| {
                s.is_none_or(|s| s.shift < 32 && u64::from(s.scale) == 1u64 << s.shift)
            };
            if !exact(ascale) || !exact(bscale) {
                return Err(unsupported(
                    node,
                    "MUL operands with a non-identity input rescale",
                ));
            }
            let one = InputScale {
                dbl_rnd: 0,
                scale: 1,
                shift: 0,
                round: RoundModeIfm::DoubleSymmetric,
            };
            (Some(one), Some(one))
        } else {
            (ascale, bscale)
        };
        let acc_t = node.outputs()[0];
        let rescale_op = self
            .sole_consumer(acc_t)
            .filter(|&c| matches!(self.node(c).op, Op::Rescale(_)))
            .ok_or_else(|| unsupported(node, "the i32 result must feed exactly one RESCALE"))?;
        let rnode = self.node(rescale_op);
        let Op::Rescale(r) = &rnode.op else {
            unreachable!()
        };
        self.check_rescale_out(rnode, r)?;
        if r.multiplier.len() != 1 {
            return Err(unsupported(
                rnode,
                "per-channel rescale after an elementwise op",
            ));
        }
        self.fused.insert(rescale_op);
        names.push(rnode.name.clone());
        let (out_t, act) = self.fuse_clamp(rnode.outputs()[0], &mut names);
        let mut ifm = self.fm(node, a, false, azp)?;
        let mut ifm2 = self.fm(node, b, false, bzp)?;
        let ofm = self.ofm(node, out_t, false, r.output_zp)?;
        if self.dims(a).len() != self.dims(out_t).len() {
            return Err(unsupported(
                node,
                "operand rank differs from the output rank",
            ));
        }
        for fm in [&mut ifm, &mut ifm2] {
            let (h, w, c) = fm.shape;
            let (oh, ow, oc) = ofm.shape;
            fm.broadcast = (h != oh, w != ow, c != oc);
            if (fm.broadcast.0 && h != 1)
                || (fm.broadcast.1 && w != 1)
                || (fm.broadcast.2 && c != 1)
            {
                return Err(unsupported(node, "operand shape does not broadcast"));
            }
        }
        self.push(NpuOp {
            name: rnode.name.clone(),
            fused: names,
            kernel: Kernel::Elementwise(mode),
            ifm,
            ifm2: Some(ifm2),
            ofm,
            kernel_size: (1, 1),
            stride: (1, 1),
            dilation: (1, 1),
            pad: [0; 4],
            weights: None,
            requant: Requant::Global {
                scale: r.multiplier[0] as u32,
                shift: r.shift[0] as u8,
            },
            round: rescale_round(r),
            ifm_scale: ascale,
            ifm2_scale: bscale,
            act,
        });
        Ok(())
    }
}

/// Validated window geometry.
struct Geometry {
    stride: (u32, u32),
    dilation: (u32, u32),
    pad: [u32; 4],
}

impl Geometry {
    fn new(
        node: &OpNode,
        ifm: &Fm,
        ofm: &Fm,
        kernel: (u32, u32),
        stride: [usize; 2],
        dilation: [usize; 2],
        pad: [usize; 4],
    ) -> Result<Geometry, CompileError> {
        if stride.iter().any(|&s| !(1..=3).contains(&s)) {
            return Err(unsupported(node, "strides above 3"));
        }
        if dilation.iter().any(|&d| !(1..=2).contains(&d)) {
            return Err(unsupported(node, "dilations above 2"));
        }
        let kd = (
            (kernel.0 - 1) * dilation[0] as u32 + 1,
            (kernel.1 - 1) * dilation[1] as u32 + 1,
        );
        if kd.0 * kd.1 > 4096 || (kd.0 > 64 && kd.1 > 64) {
            return Err(unsupported(node, "kernel too large"));
        }
        if pad[0] > 127 || pad[2] > 127 {
            return Err(unsupported(node, "padding above 127"));
        }
        // The hardware derives the IFM extent from the OFM size, kernel, stride and padding;
        // bottom/right padding is chosen so that the derived extent covers the real one.
        let eff = |o: u32, s: usize, k: u32, before: usize, i: u32| -> i64 {
            i64::from(o - 1) * s as i64 + i64::from(k) - before as i64 - i64::from(i)
        };
        let bottom = eff(ofm.shape.0, stride[0], kd.0, pad[0], ifm.shape.0).max(0);
        let right = eff(ofm.shape.1, stride[1], kd.1, pad[2], ifm.shape.1).max(0);
        if bottom > 255 || right > 255 {
            return Err(unsupported(node, "padding above 255"));
        }
        Ok(Geometry {
            stride: (stride[0] as u32, stride[1] as u32),
            dilation: (dilation[0] as u32, dilation[1] as u32),
            pad: [pad[0] as u32, bottom as u32, pad[2] as u32, right as u32],
        })
    }
}

/// Lowers a validated graph into NPU operations.
pub fn lower(g: &Graph) -> Result<Lowered, CompileError> {
    let mut cx = Ctx {
        g,
        lowered: Lowered {
            ops: Vec::new(),
            buffers: Vec::new(),
            tensor_buffer: BTreeMap::new(),
        },
        fused: BTreeSet::new(),
    };
    for &t in g.inputs() {
        cx.new_buffer(t, None);
    }
    let order = g
        .topo_order()
        .map_err(|e| CompileError::Graph(e.to_string()))?;
    let mut deferred = Vec::new();
    for o in order {
        if cx.fused.contains(&o) {
            continue;
        }
        let node = cx.node(o);
        match &node.op {
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) => cx.lower_conv(o)?,
            Op::MaxPool2d(_) | Op::AvgPool2d(_) | Op::Clamp(_) => cx.lower_pool(o)?,
            Op::Add | Op::Sub | Op::Mul(_) => cx.lower_elementwise(o)?,
            Op::Reshape(_) | Op::Identity => {
                let x = node.inputs()[0];
                let buf = cx.input_buffer(node, x)?;
                cx.lowered.tensor_buffer.insert(node.outputs()[0], buf);
            }
            Op::Rescale(_) | Op::LogicalLeftShift
                if cx.dtype(node.outputs()[0]) == DType::Int32 =>
            {
                // Possibly part of an elementwise operand; the elementwise operation fuses it,
                // and anything left unfused is reported below.
                deferred.push(o);
            }
            _ => return Err(unsupported(node, "operator not in the NPU slice yet")),
        }
    }
    if let Some(&o) = deferred.iter().find(|o| !cx.fused.contains(o)) {
        return Err(unsupported(
            cx.node(o),
            "only RESCALEs after a convolution or around an elementwise operation are supported",
        ));
    }
    for &t in g.outputs() {
        let Some(&buf) = cx.lowered.tensor_buffer.get(&t) else {
            return Err(CompileError::Graph(format!(
                "output {} is not produced by an NPU operation",
                g.tensor(t).map_or("?", |x| x.name.as_str())
            )));
        };
        cx.lowered.buffers[buf].is_output = true;
    }
    Ok(cx.lowered)
}
