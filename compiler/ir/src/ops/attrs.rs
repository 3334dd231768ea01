//! Typed operator attributes.
//!
//! Conventions (shared by all operators):
//! * Spatial tensors are NHWC. Padding arrays are `[top, bottom, left, right]`; strides,
//!   dilations and kernels are `[y, x]`.
//! * Zero points are plain integers interpreted in the type of the tensor they apply to.
//! * Everything TOSA 1.0 passes as a compile-time-constant *input* (zero points, RESCALE
//!   multipliers and shifts, MUL shift, TABLE contents, PAD/RESHAPE/SLICE/TILE/RESIZE
//!   parameters) is an attribute here. Weights and biases stay tensor inputs.

use crate::quant::RescaleRounding;
use crate::types::{DType, Shape};

/// CONV2D and DEPTHWISE_CONV2D attributes (TOSA §2.3.4, §2.3.7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConvAttrs {
    /// `[top, bottom, left, right]`.
    pub pad: [usize; 4],
    /// `[y, x]`, each ≥ 1.
    pub stride: [usize; 2],
    /// `[y, x]`, each ≥ 1.
    pub dilation: [usize; 2],
    pub input_zp: i64,
    pub weight_zp: i64,
}

impl Default for ConvAttrs {
    fn default() -> ConvAttrs {
        ConvAttrs {
            pad: [0; 4],
            stride: [1, 1],
            dilation: [1, 1],
            input_zp: 0,
            weight_zp: 0,
        }
    }
}

/// CONV3D attributes (TOSA §2.3.5): input NDHWC, weight `[OC, KD, KH, KW, IC]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conv3dAttrs {
    /// `[front, back, top, bottom, left, right]` (depth, height, width).
    pub pad: [usize; 6],
    /// `[d, y, x]`, each ≥ 1.
    pub stride: [usize; 3],
    /// `[d, y, x]`, each ≥ 1.
    pub dilation: [usize; 3],
    pub input_zp: i64,
    pub weight_zp: i64,
}

/// TRANSPOSE_CONV2D attributes (TOSA §2.3.15).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransposeConvAttrs {
    /// `[top, bottom, left, right]`; may be negative (crops), each `> -kernel extent`.
    pub out_pad: [i64; 4],
    /// `[y, x]`, each ≥ 1.
    pub stride: [usize; 2],
    pub input_zp: i64,
    pub weight_zp: i64,
}

impl Default for TransposeConvAttrs {
    fn default() -> TransposeConvAttrs {
        TransposeConvAttrs {
            out_pad: [0; 4],
            stride: [1, 1],
            input_zp: 0,
            weight_zp: 0,
        }
    }
}

/// FULLY_CONNECTED attributes (TFLite; TOSA 0.x). Input `[N, IC]`, weight `[OC, IC]`,
/// bias `[OC]` or `[1]`, accumulator output `[N, OC]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FullyConnectedAttrs {
    pub input_zp: i64,
    pub weight_zp: i64,
}

/// MATMUL attributes (TOSA §2.3.9, generalised to batch broadcast).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MatMulAttrs {
    pub a_zp: i64,
    pub b_zp: i64,
}

/// MAX_POOL2D attributes (TOSA §2.3.12).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolAttrs {
    /// `[y, x]`, each ≥ 1.
    pub kernel: [usize; 2],
    /// `[y, x]`, each ≥ 1.
    pub stride: [usize; 2],
    /// `[top, bottom, left, right]`; each must be smaller than the kernel extent.
    pub pad: [usize; 4],
}

/// How AVG_POOL2D divides the window sum by the number of valid (non-padding) taps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AvgPoolRounding {
    /// TOSA §2.3.2: `(multiplier, shift) = reciprocal_scale(count)`, then
    /// `apply_scale_32(sum, multiplier, shift, single round)`. An approximation of
    /// `sum / count` rounded half up (it can differ from exact rounding).
    Tosa,
    /// TFLite reference kernels: exact `sum / count` rounded half away from zero, i.e.
    /// `(sum + sign(sum) * (count / 2)) / count` with truncating division. TFLite does not
    /// subtract zero points (it requires equal input and output quantization), so a TFLite
    /// frontend sets `input_zp = output_zp = 0` to reproduce it.
    Tflite,
}

/// AVG_POOL2D attributes (TOSA §2.3.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AvgPool2dAttrs {
    /// `[y, x]`, each ≥ 1.
    pub kernel: [usize; 2],
    /// `[y, x]`, each ≥ 1.
    pub stride: [usize; 2],
    /// `[top, bottom, left, right]`; each must be smaller than the kernel extent.
    pub pad: [usize; 4],
    pub input_zp: i64,
    pub output_zp: i64,
    pub rounding: AvgPoolRounding,
}

/// CLAMP attributes (TOSA §2.4.1): bounds in the tensor's element type, `min <= max`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClampAttrs {
    pub min: i64,
    pub max: i64,
}

/// MUL attributes (TOSA §2.5.14). `shift` must be 0 unless the inputs are `i32`; it is at
/// most 63.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MulAttrs {
    pub shift: u8,
}

/// ARITHMETIC_RIGHT_SHIFT attributes (TOSA §2.5.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ArithmeticRightShiftAttrs {
    /// Round to nearest (add the last bit shifted out).
    pub round: bool,
}

/// NEGATE attributes (TOSA §2.6.10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NegateAttrs {
    pub input_zp: i64,
    pub output_zp: i64,
}

/// TABLE contents (TOSA §2.5.17, §1.12.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TableData {
    /// 256 entries for `i8` input (`i8` output): `out = table[in + 128]`.
    I8(Vec<i8>),
    /// 513 entries for `i16` input (`i32` output): the interpolating `apply_lookup_s`.
    I16(Vec<i16>),
}

impl TableData {
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            TableData::I8(t) => t.len(),
            TableData::I16(t) => t.len(),
        }
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// TABLE attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableAttrs {
    pub table: TableData,
}

/// A single-axis attribute (ARGMAX, REDUCE_*, CONCAT, REVERSE).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AxisAttrs {
    pub axis: usize,
}

/// PAD attributes (TOSA §2.10.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PadAttrs {
    /// `[before, after]` per dimension.
    pub padding: Vec<[usize; 2]>,
    /// Value written into the padding, in the tensor's element type (0/1 for `bool`).
    pub pad_const: i64,
}

/// RESHAPE attributes (TOSA §2.10.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReshapeAttrs {
    pub shape: Shape,
}

/// SLICE attributes (TOSA §2.10.6).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SliceAttrs {
    pub start: Vec<usize>,
    pub size: Vec<usize>,
}

/// TILE attributes (TOSA §2.10.7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TileAttrs {
    pub multiples: Vec<usize>,
}

/// TRANSPOSE attributes (TOSA §2.10.8): output dimension `i` is input dimension `perms[i]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransposeAttrs {
    pub perms: Vec<usize>,
}

/// RESIZE interpolation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResizeMode {
    NearestNeighbor,
    Bilinear,
}

/// RESIZE attributes (TOSA §2.12.1), integer form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResizeAttrs {
    pub mode: ResizeMode,
    /// `[scale_y_n, scale_y_d, scale_x_n, scale_x_d]`.
    pub scale: [i64; 4],
    /// `[offset_y, offset_x]`.
    pub offset: [i64; 2],
    /// `[border_y, border_x]`.
    pub border: [i64; 2],
}

/// CAST attributes (TOSA §2.13.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CastAttrs {
    /// Output element type.
    pub to: DType,
}

/// RESCALE attributes (TOSA §2.13.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RescaleAttrs {
    /// Output element type.
    pub output_dtype: DType,
    /// One multiplier per channel (`per_channel`) or exactly one. Each is ≥ 0; with
    /// `scale32 == false` it must fit `i16`.
    pub multiplier: Vec<i32>,
    /// Right shifts, same length as `multiplier`, each in `2..=62`.
    pub shift: Vec<i8>,
    /// 32-bit multipliers (`apply_scale_32`) or 16-bit (`apply_scale_16`).
    pub scale32: bool,
    pub rounding: RescaleRounding,
    /// Channel = last dimension of the input.
    pub per_channel: bool,
    pub input_zp: i64,
    pub output_zp: i64,
    /// Read the input as unsigned (implied by a `u8`/`u16` input type).
    pub input_unsigned: bool,
    /// Write the output as unsigned (implied by a `u8`/`u16` output type).
    pub output_unsigned: bool,
}

impl RescaleAttrs {
    /// A per-tensor 32-bit rescale with zero points 0 and signed input and output.
    pub fn per_tensor(
        output_dtype: DType,
        multiplier: i32,
        shift: i8,
        rounding: RescaleRounding,
    ) -> RescaleAttrs {
        RescaleAttrs {
            output_dtype,
            multiplier: vec![multiplier],
            shift: vec![shift],
            scale32: true,
            rounding,
            per_channel: false,
            input_zp: 0,
            output_zp: 0,
            input_unsigned: false,
            output_unsigned: false,
        }
    }
}
