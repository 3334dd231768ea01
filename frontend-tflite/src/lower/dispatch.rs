//! Which lowering each TFLite operator gets: the table [`lower_op`] dispatches on, with the
//! constraints each lowering checks (its refusals, stated positively). `npuc supported-ops`
//! prints this table, so the list of supported operators is the list the compiler runs.
//!
//! Before the table, every operator passes the generic checks of [`GENERIC`], in this order.

use super::ctx::OpCx;
use super::{
    ops_conv, ops_div, ops_elementwise, ops_float, ops_layout, ops_lstm, ops_mean_sum, ops_misc,
    ops_prelu_scatter, ops_softmax, uint8, uint8_concat,
};
use crate::BuiltinOperator as B;

type LowerFn = fn(&mut OpCx<'_, '_>, B) -> Result<(), String>;

/// The lowering of one or more TFLite operators.
pub struct OperatorLowering {
    /// The operators (builtin codes) this lowering handles.
    pub operators: &'static [B],
    /// What the lowering requires of the operator (anything else is refused, naming it).
    pub constraints: &'static [&'static str],
    lower: LowerFn,
}

/// A check every operator passes before its lowering.
pub struct GenericCheck {
    /// What it requires.
    pub constraint: &'static str,
}

/// The generic checks of [`lower_op`], in order.
pub const GENERIC: &[GenericCheck] = &[
    GenericCheck {
        constraint: "custom operators are not supported (an `ethos-u` operator means the model \
                     is already compiled)",
    },
    GenericCheck {
        constraint: "an operator with a float32 operand is lowered with TFLite's reference \
                     float kernel and runs on the CPU (DEQUANTIZE, float QUANTIZE and the float \
                     islands between them)",
    },
    GenericCheck {
        constraint: "uint8 operands only where TFLite's uint8 kernel computes the same integers \
                     on the int8 view (the operators marked uint8 below; docs/decisions.md F6)",
    },
];

macro_rules! entry {
    ([$($op:ident),+ $(,)?], [$($c:expr),* $(,)?], $f:expr $(,)?) => {
        OperatorLowering { operators: &[$(B::$op),+], constraints: &[$($c),*], lower: $f }
    };
}

/// The table, in the order of the TFLite schema's families.
pub static OPERATORS: &[OperatorLowering] = &[
    entry!(
        [CONV_2D],
        [
            "4-D input and weights",
            "weights with zero point 0",
            "int16 input and output with zero point 0",
            "positive stride, dilation and kernel; SAME or VALID padding",
        ],
        |cx, _| ops_conv::conv2d(cx)
    ),
    entry!(
        [DEPTHWISE_CONV_2D],
        [
            "4-D input and [1,KH,KW,C*M] weights",
            "output channels a multiple of the input channels",
            "positive stride and dilation; SAME or VALID padding",
        ],
        |cx, _| ops_conv::depthwise(cx)
    ),
    entry!(
        [FULLY_CONNECTED],
        [
            "2-D weights in the default (unshuffled) format",
            "input size a multiple of the weights' input depth",
        ],
        |cx, _| ops_conv::fully_connected(cx)
    ),
    entry!(
        [TRANSPOSE_CONV],
        ["4-D input, OHWI weights and output"],
        |cx, _| ops_conv::transpose_conv(cx)
    ),
    entry!(
        [AVERAGE_POOL_2D, MAX_POOL_2D],
        ["4-D input of int8, int16 or uint8"],
        |cx, c| ops_conv::pool(cx, c == B::MAX_POOL_2D)
    ),
    entry!(
        [ADD, SUB],
        ["inputs and output of one type: int8, int16 (or uint8), or int32 (raw values)"],
        |cx, c| ops_elementwise::add_sub(cx, c == B::SUB)
    ),
    entry!(
        [MUL],
        ["inputs and output of one type: int8, int16 (or uint8), or int32 (raw values)"],
        |cx, _| ops_elementwise::mul(cx)
    ),
    entry!([DIV], ["int8 (and uint8) only"], |cx, _| ops_div::div(cx)),
    entry!(
        [MAXIMUM, MINIMUM],
        ["inputs and output share their quantization"],
        |cx, c| ops_elementwise::min_max(cx, c == B::MAXIMUM)
    ),
    entry!([RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1], [], |cx, c| ops_elementwise::relu(cx, c)),
    entry!(
        [LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, EXP, RSQRT, LOG, GELU, ELU, ABS, NEG],
        [
            "int8: a 256-entry table computed with TFLite's arithmetic",
            "int16: int16 output, zero points 0 (output scale 2^-15 where TFLite's kernel fixes it)"
        ],
        |cx, c| ops_elementwise::unary(cx, c)
    ),
    entry!(
        [QUANTIZE],
        ["between integer types (TFLite's requantization)"],
        |cx, c| ops_elementwise::unary(cx, c)
    ),
    entry!(
        [SOFTMAX],
        [
            "int8: output scale 1/256, zero point -128",
            "int16: zero points 0, output scale 2^-15, rank 1 to 4",
            "not a scalar",
        ],
        |cx, _| ops_softmax::softmax(cx, false)
    ),
    entry!(
        [LOG_SOFTMAX],
        ["int8: output scale 1/16, zero point 127", "at most 4096 elements along the axis"],
        |cx, _| ops_softmax::softmax(cx, true)
    ),
    entry!(
        [CONCATENATION],
        ["inputs quantized unlike the output: uint8 only (one table per input)"],
        |cx, _| concatenation(cx)
    ),
    entry!([RESHAPE, SQUEEZE, EXPAND_DIMS], [], |cx, _| ops_layout::reshape(cx)),
    entry!(
        [PAD, PADV2],
        ["constant paddings, one pair per dimension"],
        |cx, _| ops_layout::pad(cx)
    ),
    entry!([TRANSPOSE], ["a constant permutation"], |cx, _| ops_layout::transpose(cx)),
    entry!(
        [SLICE, STRIDED_SLICE],
        [
            "constant begin, end (size) and strides; non-zero strides",
            "non-empty slices inside the input",
        ],
        |cx, c| ops_layout::slice(cx, c == B::STRIDED_SLICE)
    ),
    entry!(
        [SPLIT, SPLIT_V],
        ["outputs share the input's quantization"],
        |cx, c| ops_layout::split(cx, c == B::SPLIT_V)
    ),
    entry!(
        [SPACE_TO_DEPTH, DEPTH_TO_SPACE],
        ["4-D tensors"],
        |cx, c| ops_layout::space_depth(cx, c == B::SPACE_TO_DEPTH)
    ),
    entry!([RESIZE_NEAREST_NEIGHBOR], ["4-D tensors"], |cx, _| ops_layout::resize_nearest(cx)),
    entry!(
        [RESIZE_BILINEAR],
        [
            "4-D tensors of one batch and depth",
            "sampling positions RESIZE can express",
            "int16: weighted sums within 32 bits",
            "uint8: only where TFLite's float arithmetic is exact",
        ],
        |cx, _| ops_layout::resize_bilinear(cx)
    ),
    entry!(
        [GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, EQUAL, NOT_EQUAL],
        [
            "int8 and uint8 operands rescaled as TFLite does; int16 (rescaled for EQUAL and NOT_EQUAL only), int32 and bool compared raw",
        ],
        |cx, c| ops_misc::compare(cx, c)
    ),
    entry!([LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT], [], |cx, c| ops_misc::logical(cx, c)),
    entry!(
        [SELECT, SELECT_V2],
        ["inputs and output share their quantization"],
        |cx, _| ops_misc::select(cx)
    ),
    entry!([CAST], [], |cx, _| ops_misc::cast(cx)),
    entry!(
        [REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL],
        ["input and output share their quantization"],
        |cx, c| ops_misc::reduce(cx, c)
    ),
    entry!([ARG_MAX], [], |cx, _| ops_misc::arg_max(cx)),
    entry!([REVERSE_V2], [], |cx, _| ops_misc::reverse(cx)),
    entry!([TILE], [], |cx, _| ops_misc::tile(cx)),
    entry!([PACK], ["inputs share the output's quantization"], |cx, _| ops_misc::pack(cx)),
    entry!([UNPACK], [], |cx, _| ops_misc::unpack(cx)),
    entry!([MIRROR_PAD], ["paddings match the rank"], |cx, _| ops_misc::mirror_pad(cx)),
    entry!(
        [GATHER],
        ["constant indices in range; batch_dims at most the axis"],
        |cx, _| ops_misc::gather(cx)
    ),
    entry!([SPACE_TO_BATCH_ND], ["4-D input"], |cx, _| ops_misc::space_to_batch(cx)),
    entry!(
        [BATCH_MATMUL],
        ["both operands of one type", "int16 operands with zero point 0"],
        |cx, _| ops_misc::batch_matmul(cx)
    ),
    entry!([SQUARED_DIFFERENCE], ["int8 only"], |cx, _| ops_misc::squared_difference(cx)),
    entry!(
        [PRELU],
        ["int8 (or uint8) input, alpha and output", "alpha broadcasts to the input"],
        |cx, _| ops_prelu_scatter::prelu(cx)
    ),
    entry!(
        [SCATTER_ND],
        ["constant indices in range, without duplicates", "updates of the output's type"],
        |cx, _| ops_prelu_scatter::scatter_nd(cx)
    ),
    entry!(
        [MEAN, SUM],
        ["input and output of one type", "int16 SUM: equal input and output quantization"],
        |cx, c| ops_mean_sum::mean_sum(cx, c == B::SUM)
    ),
    entry!(
        [UNIDIRECTIONAL_SEQUENCE_LSTM],
        [
            "the integer kernel: int8 input and output, int16 cell state with a power-of-two scale in 2^-15..2^-9, int32 gate biases",
            "no CIFG, no diagonal (peephole) weights",
            "5 intermediate tensors; 3-D input; variable state tensors",
        ],
        |cx, _| ops_lstm::unidirectional_sequence_lstm(cx)
    ),
];

/// CONCATENATION: uint8 inputs quantized unlike the output have a lowering of their own.
fn concatenation(cx: &mut OpCx<'_, '_>) -> Result<(), String> {
    if uint8_concat::applies(cx)? {
        uint8_concat::concat(cx)
    } else {
        ops_layout::concat(cx)
    }
}

/// The lowering of a builtin operator, if the table has one.
pub fn lowering(code: B) -> Option<&'static OperatorLowering> {
    OPERATORS.iter().find(|l| l.operators.contains(&code))
}

/// True if an operator with uint8 operands is lowered on their int8 view (the list
/// `uint8::check` reads).
pub fn uint8_supported(code: B) -> bool {
    uint8::UINT8_EXACT.contains(&code)
}

/// Lowers one operator: the generic checks, then its table entry.
pub(super) fn lower_op(cx: &mut OpCx<'_, '_>) -> Result<(), String> {
    let code = cx.op.opcode.builtin;
    if cx.op.opcode.is_custom() {
        return Err("custom operators are not supported".into());
    }
    if ops_float::touches_float(cx) {
        return ops_float::lower(cx);
    }
    uint8::check(cx)?;
    match lowering(code) {
        Some(l) => (l.lower)(cx, code),
        None => Err(format!(
            "operator {} is not supported yet",
            cx.op.opcode.name()
        )),
    }
}
