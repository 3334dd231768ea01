//! The operator set.
//!
//! One [`Op`] variant per operator; attributes are typed structs ([`attrs`]). The set is
//! TOSA 1.0 PRO-INT + EXT-INT16 + EXT-DOUBLEROUND (integer operators only), plus
//! FULLY_CONNECTED and a TFLite rounding mode for AVG_POOL2D. Operand order follows TOSA with
//! constant operands moved to attributes; see each variant.
//!
//! Quantized convolution-like operators produce raw accumulators (`i32` for `i8` inputs, `i48`
//! for `i16` inputs); requantization is always an explicit [`Op::Rescale`] whose
//! [`crate::RescaleRounding`] says how it rounds.

pub mod attrs;
pub mod float;

pub use attrs::*;
pub use float::{F32Bits, FloatBinary, FloatOp, FloatUnary};

/// An operator with its attributes. Inputs are listed as `[..]` in each variant's doc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    // ---- tensor operators ----
    /// `[input]` → index of the first maximum along `axis` (`i32`); the axis is removed.
    ArgMax(AxisAttrs),
    /// `[input NHWC]` → same type.
    AvgPool2d(AvgPool2dAttrs),
    /// `[input NHWC, weight OHWI, bias [OC] or [1]]` → accumulator NHWC.
    Conv2d(ConvAttrs),
    /// `[input NHWC, weight [KH,KW,C,M], bias [C*M] or [1]]` → accumulator `[N,OH,OW,C*M]`.
    DepthwiseConv2d(ConvAttrs),
    /// `[input NDHWC, weight [OC,KD,KH,KW,IC], bias [OC] or [1]]` → accumulator NDHWC.
    Conv3d(Conv3dAttrs),
    /// `[input NHWC, weight OHWI, bias [OC] or [1]]` → accumulator NHWC.
    TransposeConv2d(TransposeConvAttrs),
    /// `[input [N,IC], weight [OC,IC], bias [OC] or [1]]` → accumulator `[N,OC]`.
    FullyConnected(FullyConnectedAttrs),
    /// `[a [...,H,C], b [...,C,W]]` → `[...,H,W]`; leading (batch) dimensions broadcast.
    MatMul(MatMulAttrs),
    /// `[input NHWC]` → same type.
    MaxPool2d(PoolAttrs),
    // ---- activation ----
    /// `[input]` → same type.
    Clamp(ClampAttrs),
    // ---- elementwise binary (inputs of equal rank; size-1 dimensions broadcast) ----
    Add,
    Sub,
    /// `i8`/`i16`/`i32` inputs → `i32`.
    Mul(MulAttrs),
    Maximum,
    Minimum,
    IntDiv,
    ArithmeticRightShift(ArithmeticRightShiftAttrs),
    LogicalLeftShift,
    LogicalRightShift,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    /// `[input]` → `i8` (256-entry table) or `i32` (513-entry interpolated table).
    Table(TableAttrs),
    // ---- elementwise unary ----
    Abs,
    BitwiseNot,
    Clz,
    LogicalNot,
    Negate(NegateAttrs),
    // ---- elementwise ternary ----
    /// `[condition bool, on_true, on_false]`.
    Select,
    // ---- comparison (→ bool) ----
    Equal,
    Greater,
    GreaterEqual,
    // ---- reduction (the axis is kept with extent 1) ----
    ReduceAll(AxisAttrs),
    ReduceAny(AxisAttrs),
    ReduceMax(AxisAttrs),
    ReduceMin(AxisAttrs),
    ReduceSum(AxisAttrs),
    // ---- data layout ----
    /// `[input0, input1, ...]` (at least one).
    Concat(AxisAttrs),
    Pad(PadAttrs),
    Reshape(ReshapeAttrs),
    Reverse(AxisAttrs),
    Slice(SliceAttrs),
    Tile(TileAttrs),
    Transpose(TransposeAttrs),
    // ---- scatter / gather ----
    /// `[values [N,K,C], indices i32 [N,W]]` → `[N,W,C]`.
    Gather,
    /// `[values_in [N,K,C], indices i32 [N,W], input [N,W,C]]` → `[N,K,C]`.
    Scatter,
    // ---- image ----
    /// `[input NHWC]` → NHWC; bilinear produces unnormalised `i32`/`i48` sums.
    Resize(ResizeAttrs),
    // ---- type conversion ----
    Cast(CastAttrs),
    Rescale(RescaleAttrs),
    // ---- data nodes ----
    Identity,
    // ---- float (CPU only) ----
    /// An `f32` operator ([`FloatOp`]); no NPU runs these.
    Float(FloatOp),
}

impl Op {
    /// The operator's name in TOSA style (`CONV2D`, `RESCALE`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Op::ArgMax(_) => "ARGMAX",
            Op::AvgPool2d(_) => "AVG_POOL2D",
            Op::Conv2d(_) => "CONV2D",
            Op::DepthwiseConv2d(_) => "DEPTHWISE_CONV2D",
            Op::Conv3d(_) => "CONV3D",
            Op::TransposeConv2d(_) => "TRANSPOSE_CONV2D",
            Op::FullyConnected(_) => "FULLY_CONNECTED",
            Op::MatMul(_) => "MATMUL",
            Op::MaxPool2d(_) => "MAX_POOL2D",
            Op::Clamp(_) => "CLAMP",
            Op::Add => "ADD",
            Op::Sub => "SUB",
            Op::Mul(_) => "MUL",
            Op::Maximum => "MAXIMUM",
            Op::Minimum => "MINIMUM",
            Op::IntDiv => "INTDIV",
            Op::ArithmeticRightShift(_) => "ARITHMETIC_RIGHT_SHIFT",
            Op::LogicalLeftShift => "LOGICAL_LEFT_SHIFT",
            Op::LogicalRightShift => "LOGICAL_RIGHT_SHIFT",
            Op::BitwiseAnd => "BITWISE_AND",
            Op::BitwiseOr => "BITWISE_OR",
            Op::BitwiseXor => "BITWISE_XOR",
            Op::LogicalAnd => "LOGICAL_AND",
            Op::LogicalOr => "LOGICAL_OR",
            Op::LogicalXor => "LOGICAL_XOR",
            Op::Table(_) => "TABLE",
            Op::Abs => "ABS",
            Op::BitwiseNot => "BITWISE_NOT",
            Op::Clz => "CLZ",
            Op::LogicalNot => "LOGICAL_NOT",
            Op::Negate(_) => "NEGATE",
            Op::Select => "SELECT",
            Op::Equal => "EQUAL",
            Op::Greater => "GREATER",
            Op::GreaterEqual => "GREATER_EQUAL",
            Op::ReduceAll(_) => "REDUCE_ALL",
            Op::ReduceAny(_) => "REDUCE_ANY",
            Op::ReduceMax(_) => "REDUCE_MAX",
            Op::ReduceMin(_) => "REDUCE_MIN",
            Op::ReduceSum(_) => "REDUCE_SUM",
            Op::Concat(_) => "CONCAT",
            Op::Pad(_) => "PAD",
            Op::Reshape(_) => "RESHAPE",
            Op::Reverse(_) => "REVERSE",
            Op::Slice(_) => "SLICE",
            Op::Tile(_) => "TILE",
            Op::Transpose(_) => "TRANSPOSE",
            Op::Gather => "GATHER",
            Op::Scatter => "SCATTER",
            Op::Resize(_) => "RESIZE",
            Op::Cast(_) => "CAST",
            Op::Rescale(_) => "RESCALE",
            Op::Identity => "IDENTITY",
            Op::Float(f) => f.kind(),
        }
    }

    /// Number of inputs the operator takes, or `None` for variadic (CONCAT: at least one).
    pub fn arity(&self) -> Option<usize> {
        Some(match self {
            Op::Concat(_) => return None,
            Op::Float(f) => f.arity(),
            Op::Conv2d(_)
            | Op::DepthwiseConv2d(_)
            | Op::Conv3d(_)
            | Op::TransposeConv2d(_)
            | Op::FullyConnected(_)
            | Op::Select
            | Op::Scatter => 3,
            Op::MatMul(_)
            | Op::Add
            | Op::Sub
            | Op::Mul(_)
            | Op::Maximum
            | Op::Minimum
            | Op::IntDiv
            | Op::ArithmeticRightShift(_)
            | Op::LogicalLeftShift
            | Op::LogicalRightShift
            | Op::BitwiseAnd
            | Op::BitwiseOr
            | Op::BitwiseXor
            | Op::LogicalAnd
            | Op::LogicalOr
            | Op::LogicalXor
            | Op::Equal
            | Op::Greater
            | Op::GreaterEqual
            | Op::Gather => 2,
            _ => 1,
        })
    }

    /// True for the elementwise binary operators (broadcasting, two inputs of equal rank).
    pub fn is_elementwise_binary(&self) -> bool {
        matches!(
            self,
            Op::Add
                | Op::Sub
                | Op::Mul(_)
                | Op::Maximum
                | Op::Minimum
                | Op::IntDiv
                | Op::ArithmeticRightShift(_)
                | Op::LogicalLeftShift
                | Op::LogicalRightShift
                | Op::BitwiseAnd
                | Op::BitwiseOr
                | Op::BitwiseXor
                | Op::LogicalAnd
                | Op::LogicalOr
                | Op::LogicalXor
                | Op::Equal
                | Op::Greater
                | Op::GreaterEqual
        )
    }
}
