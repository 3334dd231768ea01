//! Operator groups of the IR to NPU kernel operations.
//!
//! One directory per operator family (`conv`, `matmul`, `pool`, `elementwise`, `rescale`,
//! `table`, `reduce`, `data_movement`; `resize` is one file), `common` for what several
//! families share, and `rewrite` for the named IR-to-IR passes that run first
//! (`rewrite::PASSES`). This module holds the shared types, the lowering context and the
//! dispatch over the IR operators.

mod common;
mod conv;
mod data_movement;
mod elementwise;
mod error;
mod matmul;
mod npu_op;
mod pool;
mod reduce;
mod rescale;
mod resize;
mod rewrite;
mod row_map;
mod split;
mod table;
mod view;

pub use table::activation_lut::Lut;

pub use data_movement::copy::fold_shallow_rows;
pub use data_movement::scatter::{DmaCopy, DmaIndex};
pub use error::LowerError;
use npuc_backend::isa::{
    AccFormat, ActivationReverse, ActivationTranspose, ElementwiseMode, IfmUpscaleMode,
    PoolingMode, RoundModeIfm, RoundModeOfm,
};
use npuc_codecs::ordering::OhwiWeights;
use npuc_codecs::scale::ChannelScale;
use npuc_ir::{
    DType, Graph, Op, OpId, OpNode, RescaleAttrs, RescaleRounding, TensorData, TensorId,
};
pub use resize::{ResizeAxis, ResizeParams};
pub use row_map::RowMap;
use std::collections::{BTreeMap, BTreeSet};
pub use view::{kernel_name, kind_of};

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
    /// Zero point (0 for i32).
    pub zero_point: i64,
    /// Element type (i8, i16 or i32; bool bytes for comparisons).
    pub dtype: DType,
    /// Broadcast along height, width, depth (elementwise inputs).
    pub broadcast: (bool, bool, bool),
    /// Where the feature map lies inside its buffer (default: all of it, dense NHWC).
    pub view: View,
}

/// A window of a buffer: the feature map starts `offset` bytes into the buffer and steps
/// `strides` bytes per row and per column (NHWC: channels are always contiguous elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Byte offset of element (0, 0, 0) from the start of the buffer.
    pub offset: u64,
    /// Byte strides of y and x; `None`: dense (`W*C*esize`, `C*esize`).
    pub strides: Option<(u64, u64)>,
    /// OFM only: the axis written in reverse order (TRM 3.6.5 write_ofm).
    pub reverse: ActivationReverse,
    /// OFM only: the axis permutation applied on write (TRM 3.6.5 write_ofm); `strides` then
    /// describe the permuted layout.
    pub transpose: ActivationTranspose,
}

impl Default for View {
    fn default() -> View {
        View {
            offset: 0,
            strides: None,
            reverse: ActivationReverse::None,
            transpose: ActivationTranspose::Hwc,
        }
    }
}

impl Fm {
    /// Height, width, depth as written to memory (after the OFM transpose).
    pub fn stored_shape(&self) -> (u32, u32, u32) {
        let (h, w, c) = self.shape;
        match self.view.transpose {
            ActivationTranspose::Hwc => (h, w, c),
            ActivationTranspose::Whc => (w, h, c),
            ActivationTranspose::Hcw => (h, c, w),
            ActivationTranspose::Cwh => (c, w, h),
            ActivationTranspose::Chw => (c, h, w),
            ActivationTranspose::Wch => (w, c, h),
        }
    }

    /// Byte strides of y and x.
    pub fn strides(&self) -> (u64, u64) {
        let (_, w, c) = self.shape;
        let e = self.dtype.byte_size() as u64;
        self.view
            .strides
            .unwrap_or((u64::from(w) * u64::from(c) * e, u64::from(c) * e))
    }
}

impl Fm {
    /// Bytes per element.
    pub fn elem_bytes(&self) -> u32 {
        self.dtype.byte_size() as u32
    }
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
    /// NPU_OP_RESIZE (KERNEL_*_M1 hold the IFM rows/columns read).
    Resize(ResizeParams),
    /// NPU_OP_DMA_START: IFM the source, OFM the destination, IFM2 the indices of the
    /// index mode (windows of whole buffers; no kernel operation).
    Dma(DmaCopy),
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
    /// Accumulator format (ACC_FORMAT.acc_format): `I32` for 8-bit inputs; `I48` for 16x8
    /// convolutions (48-bit bias, 15-bit scales) and 16-bit elementwise operations.
    pub acc: AccFormat,
    /// IFM_UPSCALE mode (`None` except for TRANSPOSE_CONV2D, which reads a zero-inserted IFM).
    pub upscale: IfmUpscaleMode,
}
/// An elementwise operand that is one value for every element: NPU_SET_OP_SCALAR with
/// IFM_BROADCAST or IFM2_BROADCAST `scalar` (TRM 3.10.6). The operation's `ifm` / `ifm2`
/// then only carries the operand's element type and zero point; no memory is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalarOperand {
    /// The scalar is IFM2 (`false`: IFM).
    pub ifm2: bool,
    /// The raw value (the operand's zero point is subtracted from it like from an element).
    pub value: i32,
}

/// The result of lowering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lowered {
    pub ops: Vec<NpuOp>,
    pub buffers: Vec<Buffer>,
    /// Lookup tables applied by the activation unit, by operation index (TABLE, see
    /// `table`); operations not listed have no LUT.
    pub luts: BTreeMap<usize, Lut>,
    /// Scalar operands of elementwise operations, by operation index.
    pub scalars: BTreeMap<usize, ScalarOperand>,
    /// Buffers holding constant data (little-endian bytes); they live in region 0, not in
    /// the arena.
    pub constants: BTreeMap<usize, Vec<u8>>,
    tensor_buffer: BTreeMap<TensorId, usize>,
    /// The IR rewrites that ran before lowering (`rewrite::PASSES` names, in order).
    pub rewrites: Vec<&'static str>,
}

impl Lowered {
    /// The buffer holding a graph input/output or NPU operation output tensor.
    pub fn buffer_of(&self, t: TensorId) -> usize {
        self.tensor_buffer[&t]
    }

    /// The buffer holding a tensor, `None` when no buffer holds it (the schedule framework's
    /// view, `npuc::arch_interface::LoweredView`).
    pub fn buffer_holding(&self, t: TensorId) -> Option<usize> {
        self.tensor_buffer.get(&t).copied()
    }
}

pub(crate) struct Ctx<'g> {
    g: &'g Graph,
    lowered: Lowered,
    fused: BTreeSet<OpId>,
    /// i32 RESCALE / LOGICAL_LEFT_SHIFT / ADD operators whose only consumer may fuse them
    /// (operand rescales, GATHER index offsets); lowered on their own by [`Ctx::materialize`]
    /// when the consumer does not.
    deferred: BTreeSet<OpId>,
    /// The tensors an operator computes from constants alone ([`Ctx::is_constant`]), found
    /// once in graph order.
    computed_constants: BTreeSet<TensorId>,
    /// The graph's operators in [`Graph::topo_order`], found once.
    graph_order: Vec<OpId>,
}

pub(crate) fn unsupported(node: &OpNode, reason: impl Into<String>) -> LowerError {
    LowerError::Unsupported {
        name: node.name.clone(),
        kind: node.op.kind().to_string(),
        reason: reason.into(),
    }
}

pub(crate) fn rescale_round(r: &RescaleAttrs) -> RoundModeOfm {
    if r.scale32 && r.rounding == RescaleRounding::DoubleRound {
        RoundModeOfm::DoubleSymmetric
    } else {
        RoundModeOfm::Natural
    }
}

/// The one operator reading `t`, if `t` is read by exactly one and is not a graph output.
fn sole_consumer(g: &Graph, t: TensorId) -> Option<OpId> {
    if g.outputs().contains(&t) {
        return None;
    }
    let c = g.consumers(t);
    (c.len() == 1).then(|| c[0].0)
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

    /// The data of a constant, also through RESHAPE/IDENTITY chains (row-major data is
    /// unchanged by a reshape).
    fn folded_const(&self, t: TensorId) -> Option<&'g TensorData> {
        let mut t = t;
        loop {
            if let Some(d) = self.const_data(t) {
                return Some(d);
            }
            let p = self.node(self.g.producer(t)?);
            match p.op {
                Op::Reshape(_) | Op::Identity => t = p.inputs()[0],
                _ => return None,
            }
        }
    }

    /// The single consumer of `t` if `t` is an intermediate that can be fused away.
    fn sole_consumer(&self, t: TensorId) -> Option<OpId> {
        sole_consumer(self.g, t)
    }

    /// (An i48 tensor, a graph input or one that data movement writes, is held as one 8-byte
    /// word per element, the b64 form the NPU reads and writes (decision L33): see
    /// [`stored_bytes`].)
    fn new_buffer(&mut self, t: TensorId, producer: Option<usize>) -> usize {
        let tensor = self.g.tensor(t).expect("tensor");
        let n = tensor.ty.shape.num_elements().unwrap_or(0) as u64;
        // An i48 tensor is held as one 8-byte word per element, the b64 form the NPU reads
        // and writes (decision L33), not the IR's 6 bytes.
        let esize = stored_bytes(tensor.ty.dtype) as u64;
        let size = n * esize;
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

    /// A read-only buffer (region 0) for a constant tensor used as a feature map.
    fn constant_buffer(&mut self, t: TensorId) -> Option<usize> {
        if let Some(&b) = self.lowered.tensor_buffer.get(&t) {
            return Some(b);
        }
        let data = self.const_data(t)?;
        if !matches!(self.dtype(t), DType::Int8 | DType::Int16 | DType::Int32) {
            return None;
        }
        let bytes = data.to_le_bytes();
        let idx = self.new_buffer(t, None);
        let b = &mut self.lowered.buffers[idx];
        b.is_input = false;
        b.size = bytes.len() as u64;
        self.lowered.constants.insert(idx, bytes);
        Some(idx)
    }

    /// The buffer of a non-constant tensor read by an NPU operation.
    fn input_buffer(&self, node: &OpNode, t: TensorId) -> Result<usize, LowerError> {
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
    ) -> Result<(u32, u32, u32), LowerError> {
        let d = self.dims(t);
        // Sides above 65536 are split after lowering (`split`); u32 holds any real tensor's.
        let big = |v: usize| v > u32::MAX as usize;
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

    fn fm(&self, node: &OpNode, t: TensorId, spatial: bool, zp: i64) -> Result<Fm, LowerError> {
        let shape = self.hwc(node, t, spatial)?;
        self.fm_shaped(node, t, shape, zp)
    }

    /// The feature map of `t` read as `shape` (H, W, C).
    fn fm_shaped(
        &self,
        node: &OpNode,
        t: TensorId,
        shape: (u32, u32, u32),
        zp: i64,
    ) -> Result<Fm, LowerError> {
        let dtype = self.dtype(t);
        if !matches!(
            dtype,
            DType::Int8 | DType::UInt8 | DType::Int16 | DType::Int32
        ) {
            return Err(unsupported(
                node,
                format!("{dtype} feature maps (only i8, u8, i16 and i32 so far)"),
            ));
        }
        if dtype == DType::Int32 && zp != 0 {
            return Err(unsupported(node, format!("i32 zero point {zp}")));
        }
        // TRM 3.10.29/42: signed 8-bit zero points -128..127, unsigned 8-bit 0..255.
        let zp_range = if dtype == DType::UInt8 {
            0..=255
        } else {
            -128..=127
        };
        if !zp_range.contains(&zp) {
            return Err(unsupported(node, format!("zero point {zp}")));
        }
        Ok(Fm {
            buffer: self.input_buffer(node, t)?,
            shape,
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    /// Follows `t` through an optional CLAMP; returns the final tensor, the bounds and the
    /// fused operator names.
    fn fuse_clamp(&mut self, t: TensorId, names: &mut Vec<String>) -> (TensorId, (i64, i64)) {
        let bounds = self.type_range(t);
        if let Some(c) = self.sole_consumer(t) {
            if let Op::Clamp(a) = &self.node(c).op {
                let bounds = (a.min.max(bounds.0), a.max.min(bounds.1));
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
    ) -> Result<Fm, LowerError> {
        let shape = self.hwc(node, t, spatial)?;
        self.ofm_shaped(node, t, shape, zp)
    }

    /// The output feature map of `t` written as `shape` (H, W, C), in a new buffer.
    fn ofm_shaped(
        &mut self,
        node: &OpNode,
        t: TensorId,
        shape: (u32, u32, u32),
        zp: i64,
    ) -> Result<Fm, LowerError> {
        let idx = self.lowered.ops.len();
        let buf = self.new_buffer(t, Some(idx));
        let r = self.fm_shaped(node, t, shape, zp);
        if r.is_err() {
            self.lowered.buffers.pop();
            self.lowered.tensor_buffer.remove(&t);
        }
        let _ = buf;
        r
    }

    /// The value range of a tensor's element type.
    fn type_range(&self, t: TensorId) -> (i64, i64) {
        let d = self.dtype(t);
        (d.min_value(), d.max_value())
    }

    fn check_rescale_out(&self, node: &OpNode, r: &RescaleAttrs) -> Result<(), LowerError> {
        if !matches!(r.output_dtype, DType::Int8 | DType::Int16)
            || r.input_unsigned
            || r.output_unsigned
        {
            return Err(unsupported(
                node,
                "only accumulator -> i8/i16 signed rescales are fused",
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

    fn push(&mut self, op: NpuOp) {
        let idx = self.lowered.ops.len();
        let scalar = self.lowered.scalars.get(&idx).map(|s| s.ifm2);
        let reads = [(op.ifm, scalar != Some(false))]
            .into_iter()
            .chain(op.ifm2.map(|f| (f, scalar != Some(true))));
        for (fm, read) in reads {
            if read {
                self.lowered.buffers[fm.buffer].last_use = Some(idx);
            }
        }
        self.lowered.ops.push(op);
    }

    /// A buffer the size of tensor `t` for an intermediate result of operation `producer`
    /// that no graph tensor names.
    fn temp_buffer(&mut self, t: TensorId, producer: usize) -> usize {
        let tensor = self.g.tensor(t).expect("tensor");
        let n = tensor.ty.shape.num_elements().unwrap_or(0) as u64;
        self.lowered.buffers.push(Buffer {
            size: n * tensor.ty.dtype.byte_size() as u64,
            producer: Some(producer),
            last_use: None,
            is_input: false,
            is_output: false,
        });
        self.lowered.buffers.len() - 1
    }
}

/// Validated window geometry.
pub(crate) struct Geometry {
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
    ) -> Result<Geometry, LowerError> {
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
pub fn lower(g: &Graph) -> Result<Lowered, LowerError> {
    let (rewritten, rewrites) = rewrite::run(g)?;
    let g = rewritten.as_ref().unwrap_or(g);
    let mut cx = Ctx {
        g,
        lowered: Lowered {
            ops: Vec::new(),
            buffers: Vec::new(),
            luts: BTreeMap::new(),
            scalars: BTreeMap::new(),
            constants: BTreeMap::new(),
            tensor_buffer: BTreeMap::new(),
            rewrites,
        },
        fused: BTreeSet::new(),
        deferred: BTreeSet::new(),
        computed_constants: BTreeSet::new(),
        graph_order: Vec::new(),
    };
    for &t in g.inputs() {
        cx.new_buffer(t, None);
    }
    let mut order = g
        .topo_order()
        .map_err(|e| LowerError::Graph(e.to_string()))?;
    cx.computed_constants = common::constant::computed_constants(g, &order);
    cx.graph_order.clone_from(&order);
    common::float::reject(g, &order)?;
    // A graph whose every output is computed from constants alone folds whole: no operator
    // is lowered, each output is evaluated and copied from a read-only buffer
    // (`constant_output`).
    if !g.outputs().is_empty() && g.outputs().iter().all(|&t| cx.is_constant(t)) {
        order.clear();
    }
    // Constant tensors read as feature maps (elementwise operands, data movement) get a
    // read-only buffer; weights and biases are read by their operators directly.
    for &o in &order {
        let node = cx.node(o);
        let fm_inputs: &[TensorId] = match &node.op {
            Op::Rescale(_) | Op::Reshape(_) | Op::Identity | Op::Concat(_) => node.inputs(),
            Op::Add | Op::Sub | Op::Mul(_) => node.inputs(),
            Op::Maximum | Op::Minimum | Op::Greater | Op::GreaterEqual | Op::Equal => node.inputs(),
            Op::Pad(_) | Op::Slice(_) | Op::Tile(_) | Op::Transpose(_) | Op::Reverse(_) => {
                &node.inputs()[..1]
            }
            Op::Gather => &node.inputs()[..1],
            // A constant IFM of a convolution (its weights and bias are read directly).
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::TransposeConv2d(_) | Op::MatMul(_) => {
                &node.inputs()[..1]
            }
            _ => &[],
        };
        for &t in fm_inputs {
            cx.constant_buffer(t);
        }
    }
    cx.prefuse_lookups(&order);
    cx.prefuse_lrelu(&order);
    for o in order {
        if cx.fused.contains(&o) {
            continue;
        }
        if cx.evaluated_by_consumers(o) {
            continue;
        }
        if cx.defers(o) {
            cx.deferred.insert(o);
            continue;
        }
        let node = cx.node(o);
        // Operators that may fuse the deferred producers of their inputs lower them
        // themselves; for the others they are lowered now.
        let fuses_inputs = matches!(
            node.op,
            Op::Add
                | Op::Sub
                | Op::Mul(_)
                | Op::Maximum
                | Op::Minimum
                | Op::Greater
                | Op::GreaterEqual
                | Op::Equal
                | Op::ReduceSum(_)
                | Op::Rescale(_)
        ) || (matches!(node.op, Op::Gather)
            && cx.const_data(node.inputs()[1]).is_none());
        if !fuses_inputs {
            for &t in node.inputs() {
                cx.materialize(t)?;
            }
        }
        let i32_out = cx.dtype(node.outputs()[0]) == DType::Int32;
        match &node.op {
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) => cx.lower_conv(o)?,
            Op::TransposeConv2d(_) => cx.lower_tconv(o)?,
            Op::MatMul(_) => cx.lower_matmul(o)?,
            Op::Clamp(_) if i32_out => cx.lower_clamp_i32(o)?,
            Op::MaxPool2d(_) | Op::AvgPool2d(_) | Op::Clamp(_) => cx.lower_pool(o)?,
            Op::Gather if cx.lookup(o).is_some() => cx.lower_lookup(o)?,
            Op::Abs if cx.is_narrow_abs(o) => cx.lower_abs(o)?,
            Op::Maximum | Op::Minimum if i32_out => cx.lower_elementwise(o)?,
            Op::BitwiseAnd | Op::BitwiseOr | Op::BitwiseXor | Op::BitwiseNot if i32_out => {
                cx.lower_elementwise(o)?
            }
            Op::Add if cx.dtype(node.outputs()[0]) == DType::Int48 => cx.lower_add48(o)?,
            Op::Add
            | Op::Sub
            | Op::Mul(_)
            | Op::IntDiv
            | Op::ArithmeticRightShift(_)
            | Op::LogicalLeftShift
            | Op::LogicalRightShift
            | Op::Abs
            | Op::Clz => cx.lower_elementwise(o)?,
            Op::Gather if cx.const_data(node.inputs()[1]).is_none() => cx.lower_gather_table(o)?,
            Op::ReduceSum(_)
            | Op::ReduceMax(_)
            | Op::ReduceMin(_)
            | Op::ReduceAny(_)
            | Op::ReduceAll(_) => cx.lower_reduce(o)?,
            Op::ArgMax(_) => cx.lower_argmax(o)?,
            Op::Resize(_) => cx.lower_resize(o)?,
            Op::Table(_) => cx.lower_table(o)?,
            Op::Select if cx.is_lrelu(o) => cx.lower_lrelu(o)?,
            Op::Concat(_)
            | Op::Slice(_)
            | Op::Pad(_)
            | Op::Tile(_)
            | Op::Transpose(_)
            | Op::Reverse(_)
            | Op::Gather => cx.lower_movement(o)?,
            // A reshaped constant (TOSA's convolution weights) is folded by its consumer; a
            // constant read as a feature map keeps its read-only buffer (a computed one is
            // evaluated by its consumer, see `constant`).
            Op::Reshape(_) | Op::Identity if cx.is_constant(node.outputs()[0]) => {
                if let Some(&buf) = cx.lowered.tensor_buffer.get(&node.inputs()[0]) {
                    cx.lowered.tensor_buffer.insert(node.outputs()[0], buf);
                }
            }
            Op::Maximum | Op::Minimum | Op::Greater | Op::GreaterEqual | Op::Equal => {
                cx.lower_compare(o)?
            }
            Op::Reshape(_) | Op::Identity => {
                let x = node.inputs()[0];
                let buf = cx.input_buffer(node, x)?;
                cx.lowered.tensor_buffer.insert(node.outputs()[0], buf);
            }
            Op::Rescale(_) => cx.lower_rescale(o)?,
            Op::LogicalAnd
            | Op::LogicalOr
            | Op::LogicalXor
            | Op::BitwiseAnd
            | Op::BitwiseOr
            | Op::BitwiseXor => cx.lower_bitwise(o)?,
            Op::LogicalNot | Op::BitwiseNot => cx.lower_not(o)?,
            Op::Select => cx.lower_select(o)?,
            Op::Scatter => cx.lower_scatter(o)?,
            Op::Cast(_) if i32_out || cx.dtype(node.inputs()[0]) == DType::Int32 => {
                cx.lower_cast_i32(o)?
            }
            Op::Cast(_) => cx.lower_cast(o)?,
            _ => return Err(unsupported(node, "operator not in the NPU slice yet")),
        }
    }
    // Deferred operators whose consumer neither fused nor read them (it failed first).
    if let Some(&o) = cx.deferred.iter().find(|o| !cx.fused.contains(o)) {
        return Err(unsupported(cx.node(o), "its consumer is not supported"));
    }
    for &t in g.outputs() {
        let buf = match cx.lowered.tensor_buffer.get(&t) {
            Some(&buf) if !cx.lowered.constants.contains_key(&buf) => buf,
            _ if cx.is_constant(t) => cx.constant_output(t)?,
            _ => {
                return Err(LowerError::Graph(format!(
                    "output {} is not produced by an NPU operation",
                    g.tensor(t).map_or("?", |x| x.name.as_str())
                )))
            }
        };
        cx.lowered.buffers[buf].is_output = true;
    }
    split::split_large(g, &mut cx.lowered)?;
    Ok(cx.lowered)
}

/// Bytes one element of `dtype` occupies in an arena buffer: its size, except i48, which
/// lives in memory as 8-byte words (b64, the form NPU operations read and write; decision
/// L33), so that data movement copies whole words.
pub(crate) fn stored_bytes(dtype: DType) -> usize {
    match dtype {
        DType::Int48 => 8,
        d => d.byte_size(),
    }
}
