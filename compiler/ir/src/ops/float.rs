//! Float operators: the `f32` islands a TFLite converter leaves between quantized operators
//! (e.g. DEQUANTIZE -> NEG -> QUANTIZE in a Keras LayerNormalization).
//!
//! They exist so that the reference interpreter can run such models end to end; they run on
//! the CPU only and no NPU lowering accepts them. Each operator computes what TFLite's
//! *reference* kernel computes, in the same order and precision (the formula is in each
//! variant's doc): IEEE-754 arithmetic is exact, and the transcendental functions are the
//! platform's `f32` functions (`expf`, `logf`, `tanhf`, `expm1f`), as TFLite calls them
//! through `std::exp` and friends.

use crate::types::DType;
use std::fmt;

/// An `f32` attribute held as its bit pattern (so that attributes compare and hash bitwise).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct F32Bits(pub u32);

impl F32Bits {
    /// The bits of `v`.
    pub fn new(v: f32) -> F32Bits {
        F32Bits(v.to_bits())
    }

    /// The value.
    pub fn get(self) -> f32 {
        f32::from_bits(self.0)
    }
}

impl fmt::Debug for F32Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.get())
    }
}

impl fmt::Display for F32Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.get())
    }
}

/// Elementwise unary `f32 -> f32` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatUnary {
    /// `-x`.
    Neg,
    /// `|x|` (`std::abs`).
    Abs,
    /// `std::sqrt(x)` (correctly rounded).
    Sqrt,
    /// `1.f / std::sqrt(x)`.
    Rsqrt,
    /// `std::exp(x)`.
    Exp,
    /// `std::log(x)`.
    Log,
    /// `std::tanh(x)`.
    Tanh,
    /// TFLite's reference logistic: `1` above 16.619047164916992188, `std::exp(x)` below -9,
    /// else `1.f / (1.f + std::exp(-x))`.
    Logistic,
    /// `x < 0 ? std::expm1(x) : x`.
    Elu,
    /// `x * x`.
    Square,
}

impl FloatUnary {
    /// Upper-case name (`NEG`, `RSQRT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FloatUnary::Neg => "NEG",
            FloatUnary::Abs => "ABS",
            FloatUnary::Sqrt => "SQRT",
            FloatUnary::Rsqrt => "RSQRT",
            FloatUnary::Exp => "EXP",
            FloatUnary::Log => "LOG",
            FloatUnary::Tanh => "TANH",
            FloatUnary::Logistic => "LOGISTIC",
            FloatUnary::Elu => "ELU",
            FloatUnary::Square => "SQUARE",
        }
    }

    /// The function.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            FloatUnary::Neg => -x,
            FloatUnary::Abs => x.abs(),
            FloatUnary::Sqrt => x.sqrt(),
            FloatUnary::Rsqrt => 1.0 / x.sqrt(),
            FloatUnary::Exp => x.exp(),
            FloatUnary::Log => x.ln(),
            FloatUnary::Tanh => x.tanh(),
            FloatUnary::Logistic => {
                // TFLite's literal, 16.619047164916992188f.
                #[allow(clippy::excessive_precision)]
                const CUTOFF_UPPER: f32 = 16.619_047_164_916_992;
                const CUTOFF_LOWER: f32 = -9.0;
                if x > CUTOFF_UPPER {
                    1.0
                } else if x < CUTOFF_LOWER {
                    x.exp()
                } else {
                    1.0 / (1.0 + (-x).exp())
                }
            }
            FloatUnary::Elu => {
                if x < 0.0 {
                    x.exp_m1()
                } else {
                    x
                }
            }
            FloatUnary::Square => x * x,
        }
    }
}

/// Elementwise binary `f32` functions (inputs of equal rank, size-1 dimensions broadcast).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatBinary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `(a - b) * (a - b)`.
    SquaredDifference,
    /// `a > b ? a : b` (TFLite's MaximumOp).
    Maximum,
    /// `a < b ? a : b` (TFLite's MinimumOp).
    Minimum,
}

impl FloatBinary {
    /// Upper-case name (`ADD`, `SQUARED_DIFFERENCE`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FloatBinary::Add => "ADD",
            FloatBinary::Sub => "SUB",
            FloatBinary::Mul => "MUL",
            FloatBinary::Div => "DIV",
            FloatBinary::SquaredDifference => "SQUARED_DIFFERENCE",
            FloatBinary::Maximum => "MAXIMUM",
            FloatBinary::Minimum => "MINIMUM",
        }
    }

    /// The function.
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            FloatBinary::Add => a + b,
            FloatBinary::Sub => a - b,
            FloatBinary::Mul => a * b,
            FloatBinary::Div => a / b,
            FloatBinary::SquaredDifference => {
                let d = a - b;
                d * d
            }
            FloatBinary::Maximum => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            FloatBinary::Minimum => {
                if a < b {
                    a
                } else {
                    b
                }
            }
        }
    }
}

/// A float operator ([`crate::Op::Float`]). Inputs as in each variant's doc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FloatOp {
    /// `[x i8/u8/i16]` -> `f32`: `(float)(scale * (double)(x - zero_point))` (TFLite's
    /// reference Dequantize: the product in double, one rounding to `f32`).
    Dequantize { scale: F32Bits, zero_point: i64 },
    /// `[x f32]` -> `output` (`i8`/`u8`/`i16`): `clamp((int32)round(x / scale) + zero_point)`,
    /// the division in `f32`, rounding half away from zero (TFLite's reference
    /// AffineQuantize). A quotient that is NaN or outside `i32` converts to `i32::MIN`, as
    /// x86's `cvttss2si` does for C++'s (undefined) `static_cast<int32_t>`.
    Quantize {
        scale: F32Bits,
        zero_point: i64,
        output: DType,
    },
    /// `[x f32]` -> `f32`, elementwise.
    Unary(FloatUnary),
    /// `[a f32, b f32]` -> `f32`, elementwise with broadcasting.
    Binary(FloatBinary),
    /// `[x f32]` -> `f32`: `std::min(std::max(x, min), max)` (TFLite's
    /// ActivationFunctionWithMinMax: a NaN input stays NaN).
    Clamp { min: F32Bits, max: F32Bits },
    /// `[x f32]` -> `f32` with every axis in `axes` kept with extent 1: the sum over those axes,
    /// accumulated from 0 in the input's row-major order (TFLite's reference Reduce/Mean),
    /// divided by the number of summed elements (as `f32`) when `mean`.
    Reduce { axes: Vec<usize>, mean: bool },
    /// `[x f32]` -> `f32`, over the last axis: TFLite's reference Softmax (max, then
    /// `exp((x - max) * beta)` summed in order, then each divided by the sum).
    Softmax { beta: F32Bits },
    /// `[input f32 [N, IC], weight f32 [OC, IC], bias f32 [OC]]` -> `f32 [N, OC]`: each output
    /// is the dot product accumulated from `0.f` in input-channel order, plus the bias
    /// (TFLite's reference FullyConnected, before its activation).
    FullyConnected,
}

impl FloatOp {
    /// The operator's name (`FLOAT_DEQUANTIZE`, `FLOAT_ADD`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            FloatOp::Dequantize { .. } => "FLOAT_DEQUANTIZE",
            FloatOp::Quantize { .. } => "FLOAT_QUANTIZE",
            FloatOp::Unary(u) => match u {
                FloatUnary::Neg => "FLOAT_NEG",
                FloatUnary::Abs => "FLOAT_ABS",
                FloatUnary::Sqrt => "FLOAT_SQRT",
                FloatUnary::Rsqrt => "FLOAT_RSQRT",
                FloatUnary::Exp => "FLOAT_EXP",
                FloatUnary::Log => "FLOAT_LOG",
                FloatUnary::Tanh => "FLOAT_TANH",
                FloatUnary::Logistic => "FLOAT_LOGISTIC",
                FloatUnary::Elu => "FLOAT_ELU",
                FloatUnary::Square => "FLOAT_SQUARE",
            },
            FloatOp::Binary(b) => match b {
                FloatBinary::Add => "FLOAT_ADD",
                FloatBinary::Sub => "FLOAT_SUB",
                FloatBinary::Mul => "FLOAT_MUL",
                FloatBinary::Div => "FLOAT_DIV",
                FloatBinary::SquaredDifference => "FLOAT_SQUARED_DIFFERENCE",
                FloatBinary::Maximum => "FLOAT_MAXIMUM",
                FloatBinary::Minimum => "FLOAT_MINIMUM",
            },
            FloatOp::Clamp { .. } => "FLOAT_CLAMP",
            FloatOp::Reduce { mean: true, .. } => "FLOAT_MEAN",
            FloatOp::Reduce { mean: false, .. } => "FLOAT_SUM",
            FloatOp::Softmax { .. } => "FLOAT_SOFTMAX",
            FloatOp::FullyConnected => "FLOAT_FULLY_CONNECTED",
        }
    }

    /// Number of inputs.
    pub fn arity(&self) -> usize {
        match self {
            FloatOp::Binary(_) => 2,
            FloatOp::FullyConnected => 3,
            _ => 1,
        }
    }
}

/// The attributes of `op` for the text dump (`key=value`).
pub(crate) fn dump_attrs(op: &FloatOp) -> Vec<String> {
    match op {
        FloatOp::Dequantize { scale, zero_point } => {
            vec![format!("scale={scale}"), format!("zp={zero_point}")]
        }
        FloatOp::Quantize {
            scale,
            zero_point,
            output,
        } => vec![
            format!("scale={scale}"),
            format!("zp={zero_point}"),
            format!("out={output}"),
        ],
        FloatOp::Clamp { min, max } => vec![format!("min={min}"), format!("max={max}")],
        FloatOp::Reduce { axes, .. } => vec![format!("axes={axes:?}")],
        FloatOp::Softmax { beta } => vec![format!("beta={beta}")],
        FloatOp::Unary(_) | FloatOp::Binary(_) | FloatOp::FullyConnected => vec![],
    }
}

/// `static_cast<int32_t>(std::round(q))` as x86 evaluates it: round half away from zero,
/// then truncation, with NaN and out-of-range values giving `i32::MIN` (`cvttss2si`'s
/// "integer indefinite").
pub fn round_to_i32(q: f32) -> i32 {
    let r = q.round();
    if !(-2_147_483_648.0..2_147_483_648.0).contains(&r) {
        i32::MIN
    } else {
        r as i32
    }
}

/// TFLite's reference AffineQuantize of one value.
pub fn quantize(x: f32, scale: f32, zero_point: i64, output: DType) -> i64 {
    let q = i64::from(round_to_i32(x / scale));
    // int32 addition in C++; it wraps on x86 (only reachable from the i32::MIN case).
    let unclamped = i64::from((q as i32).wrapping_add(zero_point as i32));
    unclamped.clamp(output.min_value(), output.max_value())
}

/// TFLite's reference Dequantize of one value.
pub fn dequantize(x: i64, scale: f32, zero_point: i64) -> f32 {
    (f64::from(scale) * (x - zero_point) as f64) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_divides_in_f32_and_rounds_half_away_from_zero() {
        assert_eq!(quantize(0.5, 1.0, 0, DType::Int8), 1);
        assert_eq!(quantize(-0.5, 1.0, 0, DType::Int8), -1);
        assert_eq!(quantize(2.5, 1.0, 0, DType::Int8), 3);
        assert_eq!(quantize(1000.0, 1.0, 0, DType::Int8), 127);
        assert_eq!(quantize(f32::NAN, 1.0, 3, DType::Int8), -128);
        assert_eq!(quantize(1.0, 0.1, -3, DType::Int16), 7);
        // 0.15f / 0.1f rounds to 1.5f, which rounds away from zero.
        assert_eq!(quantize(0.15, 0.1, 0, DType::UInt8), 2);
    }

    #[test]
    fn dequantize_is_one_rounding_of_the_exact_product() {
        assert_eq!(dequantize(-128, 0.5, 5), -66.5);
        assert_eq!(dequantize(3, 0.1, 0), (0.1f32 as f64 * 3.0) as f32);
    }

    #[test]
    fn max_min_follow_tflite_comparisons() {
        assert!(FloatBinary::Maximum.apply(f32::NAN, 1.0) == 1.0);
        assert!(FloatBinary::Maximum.apply(1.0, f32::NAN).is_nan());
        assert_eq!(
            FloatBinary::Minimum.apply(-0.0, 0.0).to_bits(),
            0.0f32.to_bits()
        );
    }
}
