"""uint8 models of the npuc model corpus (imported by make_models.py).

Three kinds:

* ``u8io_*``: TF2 full-integer quantization with ``inference_input_type =
  inference_output_type = tf.uint8`` (quant kind "uint8_io" in make_models.convert): int8
  inside, a QUANTIZE uint8 -> int8 after the input and int8 -> uint8 before the output.
* ``quantize_u8_*``: one hand-built QUANTIZE between uint8 and int8/uint8 (flatbuffers
  written with TFLite's object API; quant kind "flatbuffer": the builder returns the bytes).
* ``legacy_u8_*``: fully uint8 models as TF1's quantization-aware training wrote them
  (uint8 activations, uint8 weights with a weight zero point, per-tensor). The TF2
  converter no longer writes them, so the model is converted to int8 with per-tensor
  weights (quant kind "legacy_uint8") and then rewritten (``to_legacy_uint8``): every int8
  activation tensor becomes uint8 with its values and zero point moved by +128 (the same
  real values); the weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED / TRANSPOSE_CONV are
  requantized to uint8 over [min(w, 0), max(w, 0)] (an asymmetric weight zero point, as TF1
  wrote) and their int32 bias to the new input x weight scale.
"""
import flatbuffers
import numpy as np
import keras
from keras import layers
from tensorflow.lite.python import schema_py_generated as s

from make_models import INPUT_RANGE, POST_CONVERT, bell, init_conv, init_depthwise, inp, model  # noqa: F401

# --------------------------------------------------------------------------
# uint8 I/O around an int8 model


@model("u8io_conv")
def _(name, rng):
    """The unseen-model shape that exposed the gap: conv, depthwise, global average pool,
    dense, softmax, with uint8 input and output."""
    x = inp((1, 12, 12, 3))
    conv = layers.Conv2D(8, 3, padding="same", activation="relu")
    dw = layers.DepthwiseConv2D(3, strides=2, padding="same")
    dense = layers.Dense(5)
    y = layers.Softmax()(dense(layers.GlobalAveragePooling2D()(dw(conv(x)))))
    m = keras.Model(x, y)
    init_conv(conv, rng, "laplace", bias_std=0.3)
    init_depthwise(dw, rng)
    init_conv(dense, rng, "gauss", gain=4.0)
    return m, "uint8_io"


# --------------------------------------------------------------------------
# hand-built QUANTIZE


def _tensor(t, shape, buffer, name, scale, zp):
    x = s.TensorT()
    x.shape = list(shape)
    x.type = t
    x.buffer = buffer
    x.name = name
    q = s.QuantizationParametersT()
    q.scale = [float(scale)]
    q.zeroPoint = [int(zp)]
    x.quantization = q
    return x


def single_quantize(shape, tin, qin, tout, qout):
    """A model whose only operator is QUANTIZE (tin, (scale, zp)) -> (tout, (scale, zp))."""
    m = s.ModelT()
    m.version = 3
    code = s.OperatorCodeT()
    code.builtinCode = s.BuiltinOperator.QUANTIZE
    code.deprecatedBuiltinCode = s.BuiltinOperator.QUANTIZE
    code.version = 2
    m.operatorCodes = [code]
    m.buffers = [s.BufferT(), s.BufferT(), s.BufferT()]
    sg = s.SubGraphT()
    sg.tensors = [
        _tensor(tin, shape, 1, "x", *qin),
        _tensor(tout, shape, 2, "y", *qout),
    ]
    op = s.OperatorT()
    op.opcodeIndex = 0
    op.inputs = [0]
    op.outputs = [1]
    op.builtinOptionsType = s.BuiltinOptions.QuantizeOptions
    op.builtinOptions = s.QuantizeOptionsT()
    sg.operators = [op]
    sg.inputs = [0]
    sg.outputs = [1]
    sg.name = "main"
    m.subgraphs = [sg]
    m.description = "npuc uint8 QUANTIZE fixture"
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


U8, I8, I16 = s.TensorType.UINT8, s.TensorType.INT8, s.TensorType.INT16
QUANTIZE_MODELS = {
    # the boundary conversion of uint8 I/O models: same scale, zero points 128 apart
    "quantize_u8_i8_shift": ((1, 7, 5, 6), U8, (0.02, 128), I8, (0.02, 0)),
    # requantizations
    "quantize_u8_i8": ((1, 6, 9, 5), U8, (0.0173, 37), I8, (0.0291, -11)),
    "quantize_i8_u8": ((1, 9, 4, 7), I8, (0.0411, 5), U8, (0.0237, 141)),
    "quantize_u8_u8": ((1, 5, 7, 3), U8, (0.0312, 201), U8, (0.0175, 64)),
}


def _register_quantize(name, args):
    @model(name)
    def _(n, rng):
        return single_quantize(*args), "flatbuffer"


for _name, _args in QUANTIZE_MODELS.items():
    _register_quantize(_name, _args)


# --------------------------------------------------------------------------
# legacy fully-uint8 models


def _buffer_array(m, t, dtype):
    data = m.buffers[t.buffer].data
    return np.frombuffer(bytes(bytearray(data)), dtype=dtype).copy()


def _set_buffer(m, t, arr):
    m.buffers[t.buffer].data = np.frombuffer(np.ascontiguousarray(arr).tobytes(), np.uint8)


def to_legacy_uint8(flat, rng=None):
    """The int8 model `flat` (per-tensor weights) as TF1 would have written it in uint8."""
    m = s.ModelT.InitFromPackedBuf(flat, 0)
    sg = m.subgraphs[0]

    def code(op):
        c = m.operatorCodes[op.opcodeIndex]
        return max(c.builtinCode, c.deprecatedBuiltinCode)

    # operator -> (input, weights, bias) operand slots
    weighted = {
        s.BuiltinOperator.CONV_2D: (0, 1, 2),
        s.BuiltinOperator.DEPTHWISE_CONV_2D: (0, 1, 2),
        s.BuiltinOperator.FULLY_CONNECTED: (0, 1, 2),
        s.BuiltinOperator.TRANSPOSE_CONV: (2, 1, 3),
    }
    done = set()
    for op in sg.operators:
        if code(op) not in weighted:
            continue
        xi, wi, bi = weighted[code(op)]
        x, w = sg.tensors[op.inputs[xi]], sg.tensors[op.inputs[wi]]
        assert len(w.quantization.scale) == 1, "per-tensor weights expected"
        wf = _buffer_array(m, w, np.int8).astype(np.float64) * w.quantization.scale[0]
        lo, hi = min(wf.min(), 0.0), max(wf.max(), 0.0)
        scale = np.float32((hi - lo) / 255.0)
        zp = int(np.clip(np.round(-lo / scale), 0, 255))
        wq = np.clip(np.round(wf / scale) + zp, 0, 255).astype(np.uint8)
        _set_buffer(m, w, wq)
        w.type = s.TensorType.UINT8
        w.quantization.scale = [float(scale)]
        w.quantization.zeroPoint = [zp]
        done.add(op.inputs[wi])
        if len(op.inputs) > bi and op.inputs[bi] >= 0:
            b = sg.tensors[op.inputs[bi]]
            old = np.float64(b.quantization.scale[0])
            new = np.float32(np.float32(x.quantization.scale[0]) * scale)
            bq = _buffer_array(m, b, np.int32).astype(np.float64) * old
            _set_buffer(m, b, np.round(bq / np.float64(new)).astype(np.int32))
            b.quantization.scale = [float(new)]
            b.quantization.zeroPoint = [0]
            done.add(op.inputs[bi])
    for i, t in enumerate(sg.tensors):
        if i in done or t.type != s.TensorType.INT8:
            continue
        t.type = s.TensorType.UINT8
        if t.quantization is not None and t.quantization.zeroPoint is not None:
            t.quantization.zeroPoint = [int(z) + 128 for z in t.quantization.zeroPoint]
        if t.buffer and m.buffers[t.buffer].data is not None and len(m.buffers[t.buffer].data):
            _set_buffer(m, t, (_buffer_array(m, t, np.int8).view(np.uint8) ^ 0x80))
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@model("legacy_u8_net", kind="network")
def _(name, rng):
    """conv 3x3 ReLU6, depthwise stride 2, conv 1x1 + residual ADD, max pool, average
    pool, fully connected, softmax: the layer types of TF1's *_quant.tflite models."""
    x = inp((1, 12, 12, 3))
    c1 = layers.Conv2D(8, 3, padding="same", activation="relu6")
    dw = layers.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6")
    c2 = layers.Conv2D(8, 1)
    dense = layers.Dense(6)
    a = dw(c1(x))
    y = layers.Add()([a, c2(a)])
    y = layers.MaxPooling2D(2)(y)
    y = layers.AveragePooling2D(3)(y)
    y = layers.Reshape((8,))(y)
    y = layers.Softmax()(dense(y))
    m = keras.Model(x, y)
    init_conv(c1, rng, "laplace", bias_std=0.3)
    init_depthwise(dw, rng)
    init_conv(c2, rng, "gauss")
    init_conv(dense, rng, "gauss", gain=4.0)
    return m, "legacy_uint8"


@model("legacy_u8_ops", kind="multi-op")
def _(name, rng):
    """The elementwise and data-movement operators on uint8: MUL, SUB, MAXIMUM, MINIMUM,
    CONCATENATION, PAD, logistic, tanh, RESHAPE."""
    import tensorflow as tf

    x0 = inp((1, 6, 5, 4), "x0")
    x1 = inp((1, 6, 5, 4), "x1")
    p = layers.Lambda(lambda t: t[0] * t[1])([x0, x1])
    d = layers.Lambda(lambda t: t[0] - t[1])([x0, x1])
    mx = layers.Lambda(lambda t: tf.maximum(t[0], t[1]))([p, d])
    mn = layers.Lambda(lambda t: tf.minimum(t[0], t[1]))([p, d])
    sg = layers.Activation("sigmoid")(mx)
    th = layers.Activation("tanh")(mn)
    y = layers.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 0], [0, 2], [0, 0]]))(mx)
    m = keras.Model([x0, x1], [sg, th, y])
    return m, "legacy_uint8"



INPUT_RANGE["legacy_u8_act"] = [1.0, (-2.0, 3.0)]


@model("legacy_u8_act", kind="multi-op")
def _(name, rng):
    """The activations and comparisons whose uint8 kernels share the int8 template:
    LEAKY_RELU, HARD_SWISH, RELU, RELU6, LESS, GREATER_EQUAL (inputs of different
    quantizations), GELU, ARG_MAX."""
    import tensorflow as tf

    x0 = inp((1, 4, 5, 3), "x0")
    x1 = inp((1, 4, 5, 3), "x1")
    lk = layers.LeakyReLU(negative_slope=0.2)(x0)
    hs = layers.Activation(keras.activations.hard_swish)(x1)
    r = layers.ReLU()(x0)
    r6 = layers.ReLU(6.0)(x1)
    lt = layers.Lambda(lambda t: tf.math.less(t[0], t[1]))([x0, x1])
    ge = layers.Lambda(lambda t: tf.math.greater_equal(t[0], t[1]))([x0, x1])
    gl = layers.Activation("gelu")(x1)
    am = layers.Lambda(lambda t: tf.math.argmax(t, axis=3, output_type=tf.int32))(x1)
    m = keras.Model([x0, x1], [lk, hs, r, r6, lt, ge, gl, am])
    return m, "legacy_uint8"


# --------------------------------------------------------------------------
# hand-built uint8 operators the converter cannot write


def single_op(opcode, options_type, options, ins, outs):
    """A model whose only operator is `opcode`; ins/outs: (shape, type, (scale, zp))."""
    m = s.ModelT()
    m.version = 3
    code = s.OperatorCodeT()
    code.builtinCode = opcode
    code.deprecatedBuiltinCode = opcode
    code.version = 1
    m.operatorCodes = [code]
    tensors = ins + outs
    m.buffers = [s.BufferT() for _ in range(len(tensors) + 1)]
    sg = s.SubGraphT()
    sg.tensors = [
        _tensor(t, shape, i + 1, f"x{i}" if i < len(ins) else f"y{i - len(ins)}", *q)
        for i, (shape, t, q) in enumerate(tensors)
    ]
    op = s.OperatorT()
    op.opcodeIndex = 0
    op.inputs = list(range(len(ins)))
    op.outputs = list(range(len(ins), len(tensors)))
    op.builtinOptionsType = options_type
    op.builtinOptions = options
    sg.operators = [op]
    sg.inputs = op.inputs
    sg.outputs = op.outputs
    sg.name = "main"
    m.subgraphs = [sg]
    m.description = "npuc uint8 single-operator fixture"
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@model("legacy_u8_concat_rescale")
def _(name, rng):
    """uint8 CONCATENATION of inputs with other scales and zero points than the output
    (TFLite's uint8 kernel rescales them in float; one input equals the output's)."""
    o = s.ConcatenationOptionsT()
    o.axis = 3
    ins = [
        ((1, 3, 4, 5), U8, (0.0173, 37)),
        ((1, 3, 4, 2), U8, (0.0291, 128)),
        ((1, 3, 4, 3), U8, (0.0041, 250)),
    ]
    out = [((1, 3, 4, 10), U8, (0.0291, 128))]
    return single_op(s.BuiltinOperator.CONCATENATION, s.BuiltinOptions.ConcatenationOptions, o, ins, out), "flatbuffer"


@model("legacy_u8_tconv")
def _(name, rng):
    """uint8 TRANSPOSE_CONV 3x3 stride 2 with uint8 weights and a weight zero point, bias."""
    x = inp((1, 5, 5, 3))
    tc = layers.Conv2DTranspose(4, 3, strides=2, padding="same")
    m = keras.Model(x, tc(x))
    k = tc.kernel  # [kh, kw, out, in]
    w = bell(rng, tuple(k.shape), int(k.shape[0] * k.shape[1] * k.shape[3]), "laplace", 1.5)
    tc.set_weights([w, rng.normal(0.0, 0.3, size=(int(k.shape[2]),)).astype(np.float32)])
    return m, "legacy_uint8"


@model("legacy_u8_mean", kind="multi-op")
def _(name, rng):
    """uint8 MEAN over height and width (keep dims) and over channels, SUM over width."""
    import tensorflow as tf

    x = inp((1, 5, 6, 4))
    m1 = layers.Lambda(lambda t: tf.reduce_mean(t, axis=[1, 2], keepdims=True))(x)
    m2 = layers.Lambda(lambda t: tf.reduce_mean(t, axis=3))(x)
    s2 = layers.Lambda(lambda t: tf.reduce_sum(t, axis=2))(x)
    return keras.Model(x, [m1, m2, s2]), "legacy_uint8"


@model("legacy_u8_resize_bilinear", kind="multi-op")
def _(name, rng):
    """uint8 bilinear RESIZE: 2x with half-pixel centres, align_corners 3 -> 5 (the float
    kernel is exact there; it rounds halves up)."""
    import tensorflow as tf

    x = inp((1, 4, 5, 3))
    a = layers.Resizing(8, 10, interpolation="bilinear")(x)
    b = layers.Lambda(
        lambda t: tf.compat.v1.image.resize_bilinear(t[:, :3, :3, :], [5, 5], align_corners=True)
    )(x)
    return keras.Model(x, [a, b]), "legacy_uint8"




@model("legacy_u8_layout", kind="multi-op")
def _(name, rng):
    """uint8 operators that move, select or compare bytes: GATHER, SELECT,
    REDUCE_MAX, REDUCE_MIN, MIRROR_PAD."""
    import tensorflow as tf

    x0 = inp((1, 4, 5, 4), "x0")
    x1 = inp((1, 4, 5, 4), "x1")
    x2 = inp((1, 4, 6, 4), "x2")
    x3 = inp((1, 4, 5, 4), "x3")
    ga = layers.Lambda(lambda t: tf.gather(t, [3, 0, 2], axis=2))(x1)
    se = layers.Lambda(lambda t: tf.where(t[0] > t[1], t[0], t[1]))([x0, x1])
    rmax = layers.Lambda(lambda t: tf.reduce_max(t, axis=3))(x2)
    rmin = layers.Lambda(lambda t: tf.reduce_min(t, axis=[1, 2]))(x2)
    mp = layers.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 1], [2, 0], [0, 0]], mode="REFLECT"))(x3)
    return keras.Model([x0, x1, x2, x3], [ga, se, rmax, rmin, mp]), "legacy_uint8"


def _graph(ops, tensors, inputs, outputs, data=None):
    """A one-subgraph model: ops = [(builtin, options_type, options, ins, outs)], tensors =
    [(name, shape, type, (scale, zp))], data = {tensor index: bytes} for constants."""
    data = data or {}
    m = s.ModelT()
    m.version = 3
    codes = []
    for op in ops:
        if op[0] not in codes:
            codes.append(op[0])
    m.operatorCodes = []
    for c in codes:
        code = s.OperatorCodeT()
        code.builtinCode = c
        code.deprecatedBuiltinCode = min(c, 127)  # 127: PLACEHOLDER_FOR_GREATER_OP_CODES
        code.version = 1
        m.operatorCodes.append(code)
    m.buffers = [s.BufferT()]
    sg = s.SubGraphT()
    sg.tensors = []
    for i, (name, shape, t, q) in enumerate(tensors):
        buf = s.BufferT()
        if i in data:
            buf.data = np.frombuffer(data[i], np.uint8)
        m.buffers.append(buf)
        if q is None:
            x = s.TensorT()
            x.shape, x.type, x.buffer, x.name = list(shape), t, len(m.buffers) - 1, name
            sg.tensors.append(x)
        else:
            sg.tensors.append(_tensor(t, shape, len(m.buffers) - 1, name, *q))
    sg.operators = []
    for code, otype, opts, ins, outs in ops:
        op = s.OperatorT()
        op.opcodeIndex = codes.index(code)
        op.inputs = list(ins)
        op.outputs = list(outs)
        op.builtinOptionsType = otype
        op.builtinOptions = opts
        sg.operators.append(op)
    sg.inputs = list(inputs)
    sg.outputs = list(outputs)
    sg.name = "main"
    m.subgraphs = [sg]
    m.description = "npuc uint8 hand-built fixture"
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@model("legacy_u8_prelu_relu", kind="multi-op")
def _(name, rng):
    """uint8 PRELU (per-channel uint8 alpha with its own zero point), RELU_N1_TO_1 and
    RELU_0_TO_1, which no converter writes in uint8."""
    B = s.BuiltinOperator
    shape = (1, 4, 5, 3)
    alpha = np.array([40, 128, 230], np.uint8)  # zero point 128, scale 0.004: -0.35, 0, 0.4
    tensors = [
        ("x", shape, U8, (0.0231, 119)),
        ("alpha", (1, 1, 3), U8, (0.004, 128)),
        ("prelu", shape, U8, (0.0157, 100)),
        ("relu_n1_to_1", shape, U8, (0.0091, 131)),
        ("relu_0_to_1", shape, U8, (0.0042, 3)),
    ]
    ops = [
        (B.PRELU, s.BuiltinOptions.NONE, None, [0, 1], [2]),
        (B.RELU_N1_TO_1, s.BuiltinOptions.NONE, None, [0], [3]),
        (B.RELU_0_TO_1, s.BuiltinOptions.NONE, None, [0], [4]),
    ]
    return _graph(ops, tensors, [0], [2, 3, 4], {1: alpha.tobytes()}), "flatbuffer"


@model("legacy_u8_div")
def _(name, rng):
    """uint8 DIV (the divisor's zero point 0; its value 0 replaced by 1 in the goldens)."""
    B = s.BuiltinOperator
    shape = (1, 4, 5, 3)
    tensors = [
        ("x0", shape, U8, (0.02, 128)),
        ("x1", shape, U8, (0.05, 0)),
        ("y", shape, U8, (0.013, 120)),
    ]
    o = s.DivOptionsT()
    return _graph([(B.DIV, s.BuiltinOptions.DivOptions, o, [0, 1], [2])], tensors, [0, 1], [2]), "flatbuffer"


@model("legacy_u8_copy", kind="multi-op")
def _(name, rng):
    """uint8 TILE, DEPTH_TO_SPACE, SPACE_TO_DEPTH and REVERSE_V2 (byte copies), hand-built
    with the version-1 operators TF 2.21's reference resolver registers for uint8."""
    B, O = s.BuiltinOperator, s.BuiltinOptions
    q = (0.0173, 91)
    tensors = [
        ("x", (1, 4, 6, 8), U8, q),
        ("multiples", (4,), s.TensorType.INT32, None),
        ("tile", (1, 8, 6, 16), U8, q),
        ("depth_to_space", (1, 8, 12, 2), U8, q),
        ("space_to_depth", (1, 2, 3, 32), U8, q),
        ("axis", (1,), s.TensorType.INT32, None),
        ("reverse", (1, 4, 6, 8), U8, q),
    ]
    d2s, s2d = s.DepthToSpaceOptionsT(), s.SpaceToDepthOptionsT()
    d2s.blockSize = 2
    s2d.blockSize = 2
    ops = [
        (B.TILE, O.TileOptions, s.TileOptionsT(), [0, 1], [2]),
        (B.DEPTH_TO_SPACE, O.DepthToSpaceOptions, d2s, [0], [3]),
        (B.SPACE_TO_DEPTH, O.SpaceToDepthOptions, s2d, [0], [4]),
        (B.REVERSE_V2, O.ReverseV2Options, s.ReverseV2OptionsT(), [0, 5], [6]),
    ]
    data = {
        1: np.array([1, 2, 1, 2], np.int32).tobytes(),
        5: np.array([2], np.int32).tobytes(),
    }
    return _graph(ops, tensors, [0], [2, 3, 4, 6], data), "flatbuffer"


@model("legacy_u8_scatter_nd")
def _(name, rng):
    """uint8 SCATTER_ND: positions no update writes hold byte 0 (not the zero point)."""
    B, O = s.BuiltinOperator, s.BuiltinOptions
    tensors = [
        ("indices", (3, 1), s.TensorType.INT32, None),
        ("updates", (3, 5, 4), U8, (0.0173, 91)),
        ("shape", (3,), s.TensorType.INT32, None),
        ("y", (6, 5, 4), U8, (0.0173, 91)),
    ]
    ops = [(B.SCATTER_ND, O.ScatterNdOptions, s.ScatterNdOptionsT(), [0, 1, 2], [3])]
    data = {
        0: np.array([[4], [0], [2]], np.int32).tobytes(),
        2: np.array([6, 5, 4], np.int32).tobytes(),
    }
    return _graph(ops, tensors, [1], [3], data), "flatbuffer"


@model("legacy_u8_cast", kind="multi-op")
def _(name, rng):
    """CAST of uint8 bytes to int32 and int16 (TFLite converts the raw byte)."""
    B, O = s.BuiltinOperator, s.BuiltinOptions
    tensors = [
        ("x", (1, 4, 5, 3), U8, (0.0173, 91)),
        ("i32", (1, 4, 5, 3), s.TensorType.INT32, None),
        ("i16", (1, 4, 5, 3), s.TensorType.INT16, None),
    ]
    ops = [
        (B.CAST, O.CastOptions, s.CastOptionsT(), [0], [1]),
        (B.CAST, O.CastOptions, s.CastOptionsT(), [0], [2]),
    ]
    return _graph(ops, tensors, [0], [1, 2]), "flatbuffer"


@model("legacy_u8_space_to_batch")
def _(name, rng):
    """uint8 SPACE_TO_BATCH_ND with padding (TFLite pads with the output zero point)."""
    B, O = s.BuiltinOperator, s.BuiltinOptions
    tensors = [
        ("x", (1, 5, 6, 3), U8, (0.0173, 91)),
        ("block", (2,), s.TensorType.INT32, None),
        ("paddings", (2, 2), s.TensorType.INT32, None),
        ("y", (4, 3, 4, 3), U8, (0.0173, 91)),
    ]
    ops = [(B.SPACE_TO_BATCH_ND, O.SpaceToBatchNDOptions, s.SpaceToBatchNDOptionsT(), [0, 1, 2], [3])]
    data = {
        1: np.array([2, 2], np.int32).tobytes(),
        2: np.array([[1, 0], [1, 1]], np.int32).tobytes(),
    }
    return _graph(ops, tensors, [0], [3], data), "flatbuffer"


@model("legacy_u8_log_softmax")
def _(name, rng):
    """uint8 LOG_SOFTMAX (output scale 16/256, zero point 255, as TFLite requires)."""
    B, O = s.BuiltinOperator, s.BuiltinOptions
    tensors = [
        ("x", (2, 3, 10), U8, (0.047, 131)),
        ("y", (2, 3, 10), U8, (16.0 / 256.0, 255)),
    ]
    ops = [(B.LOG_SOFTMAX, O.LogSoftmaxOptions, s.LogSoftmaxOptionsT(), [0], [1])]
    return _graph(ops, tensors, [0], [1]), "flatbuffer"
