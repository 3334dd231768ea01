#!/usr/bin/env python3
"""Build the small int8 / int16x8 TFLite models of the npuc fixture corpus.

Every model is a tiny Keras model with seeded weights (mostly bell-shaped:
Laplacian or Gaussian, not Keras' default uniform init), fully integer
quantised with a seeded representative dataset, and written to
models/tflite/<name>.tflite.

    python make_models.py            # all models
    python make_models.py NAME ...   # only these
    python make_models.py --list

Deterministic: the same TensorFlow version gives byte-identical files.
"""
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import STRIP_QDQ, rng_for, seed_for, structured_sample, tflite_path  # noqa: E402

N_CALIB = 32

# --------------------------------------------------------------------------
# weight helpers


def bell(rng, shape, fan_in, kind="laplace", gain=1.0):
    """Bell-shaped weights with std gain/sqrt(fan_in)."""
    std = gain / np.sqrt(fan_in)
    if kind == "laplace":
        w = rng.laplace(0.0, std / np.sqrt(2.0), size=shape)
    elif kind == "gauss":
        w = rng.normal(0.0, std, size=shape)
    else:
        raise ValueError(kind)
    return w.astype(np.float32)


def init_conv(layer, rng, kind="laplace", gain=1.5, bias_std=0.2):
    """Conv2D / Dense: kernel [..., cin, cout]."""
    k = layer.kernel
    shape = tuple(k.shape)
    fan_in = int(np.prod(shape[:-1]))
    w = [bell(rng, shape, fan_in, kind, gain)]
    if layer.use_bias:
        w.append(rng.normal(0.0, bias_std, size=(shape[-1],)).astype(np.float32))
    layer.set_weights(w)


def init_depthwise(layer, rng, kind="laplace", gain=1.5, bias_std=0.2):
    """DepthwiseConv2D: kernel [kh, kw, c, m]."""
    shape = tuple(layer.kernel.shape)
    fan_in = shape[0] * shape[1]
    w = [bell(rng, shape, fan_in, kind, gain)]
    if layer.use_bias:
        w.append(rng.normal(0.0, bias_std, size=(shape[2] * shape[3],)).astype(np.float32))
    layer.set_weights(w)


# float range of the calibration data (default [-1, 1]); the golden inputs span
# the whole integer range, i.e. this float range
INPUT_RANGE = {"softmax": 4.0}


def input_range(name, i):
    """Float range (lo, hi) of model input i: INPUT_RANGE[name] is r (meaning
    [-r, r]), (lo, hi), or a list of those, one per input (Keras input order)."""
    r = INPUT_RANGE.get(name, 1.0)
    if isinstance(r, list):
        r = r[i]
    if isinstance(r, tuple):
        return r
    return (-r, r)


def calib_data(name, model):
    """N_CALIB seeded samples per model input, float32 spanning input_range()."""
    rng = rng_for(name, "calibration")
    data = []
    for i, inp in enumerate(model.inputs):
        shape = tuple(inp.shape)
        lo, hi = input_range(name, i)
        s = np.concatenate([structured_sample(rng, shape) for _ in range(N_CALIB)], axis=0)
        if lo == -hi:  # (the first fixtures were made with exactly this expression)
            data.append(hi * s)
        else:
            data.append((lo + (s + 1.0) * 0.5 * (hi - lo)).astype(np.float32))
    return data


def prune_2_4(w, rng=None):
    """2:4 structured sparsity along the input-channel axis (axis -2 of a
    [.., cin, cout] kernel): in every group of 4 consecutive input channels
    keep the 2 weights of largest magnitude."""
    w = np.array(w, dtype=np.float32)
    cin = w.shape[-2]
    assert cin % 4 == 0, cin
    g = np.moveaxis(w, -2, -1).reshape(-1, cin // 4, 4)
    order = np.argsort(-np.abs(g), axis=-1, kind="stable")
    mask = np.zeros_like(g, dtype=bool)
    np.put_along_axis(mask, order[..., :2], True, axis=-1)
    g = np.where(mask, g, 0.0)
    w = np.moveaxis(g.reshape(np.moveaxis(w, -2, -1).shape), -1, -2)
    return np.ascontiguousarray(w, dtype=np.float32)


def cluster(w, k=16):
    """Replace weights by the nearest of k centroids (1-D k-means, quantile
    initialised, 20 iterations): at most k distinct values per tensor."""
    w = np.array(w, dtype=np.float64)
    flat = w.reshape(-1)
    c = np.quantile(flat, (np.arange(k) + 0.5) / k)
    for _ in range(20):
        idx = np.argmin(np.abs(flat[:, None] - c[None, :]), axis=1)
        for j in range(k):
            sel = flat[idx == j]
            if sel.size:
                c[j] = sel.mean()
    idx = np.argmin(np.abs(flat[:, None] - c[None, :]), axis=1)
    return c[idx].reshape(w.shape).astype(np.float32)


def fit_batchnorms(model, data, rng):
    """Set every BatchNormalization's moving statistics from the calibration data
    (so activations stay in range) and randomise gamma/beta (so channels differ)."""
    for bn in [l for l in model.layers if isinstance(l, layers.BatchNormalization)]:
        sub = keras.Model(model.inputs, bn.input)
        a = np.asarray(sub(data if len(data) > 1 else data[0], training=False))
        axes = tuple(range(a.ndim - 1))
        mean, var = a.mean(axis=axes), a.var(axis=axes) + 1e-3
        c = mean.shape[0]
        gamma = rng.uniform(0.6, 1.4, size=c).astype(np.float32)
        beta = rng.uniform(-0.3, 1.5, size=c).astype(np.float32)
        bn.set_weights([gamma, beta, mean.astype(np.float32), var.astype(np.float32)])


def fit_classifier(model, dense, data, rng, logit_std=2.5):
    """Scale a Dense classifier so that its logits depend on the input: centre
    the features and scale the weights so that logits vary by ~logit_std."""
    sub = keras.Model(model.inputs, dense.input)
    f = np.asarray(sub(data if len(data) > 1 else data[0], training=False))
    fmean, fstd = f.mean(axis=0), f.std(axis=0) + 1e-6
    k = tuple(dense.kernel.shape)
    w = rng.normal(0.0, 1.0, size=k) / fstd[:, None] / np.sqrt(k[0])
    z = (f - fmean) @ w
    w *= logit_std / (z.std() + 1e-9)
    b = -(fmean @ w) + rng.normal(0.0, 0.3, size=k[1])
    dense.set_weights([w.astype(np.float32), b.astype(np.float32)])


# --------------------------------------------------------------------------
# models.  Each builder returns (keras.Model, quant) with quant "int8" or "16x8".

MODELS = {}
# name -> fn(flatbuffer bytes, rng) -> bytes: an edit of the converted model for operator
# options the converter never writes (singleops.py: the LSTM projection)
POST_CONVERT = {}
# "single-op" (one TFLite operator, or a few where TFLite needs them),
# "multi-op" (a small graph made for one purpose) or "network"
KIND = {}


def model(name, kind="single-op"):
    def reg(fn):
        assert name not in MODELS, name
        MODELS[name] = fn
        KIND[name] = kind
        return fn

    return reg


def inp(shape, name="x"):
    return keras.Input(shape=shape[1:], batch_size=shape[0], name=name)


@model("conv2d_3x3_relu")
def _(name, rng):
    x = inp((1, 12, 12, 3))
    conv = layers.Conv2D(20, 3, padding="same", activation="relu")
    m = keras.Model(x, conv(x))
    init_conv(conv, rng, "laplace", bias_std=0.3)
    return m, "int8"


@model("conv2d_s2_valid")
def _(name, rng):
    x = inp((1, 15, 13, 5))
    conv = layers.Conv2D(24, 3, strides=2, padding="valid")
    m = keras.Model(x, conv(x))
    init_conv(conv, rng, "gauss")
    return m, "int8"


@model("depthwise3x3")
def _(name, rng):
    x = inp((1, 10, 9, 20))
    dw = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=1, activation="relu6")
    m = keras.Model(x, dw(x))
    init_depthwise(dw, rng, "laplace", gain=2.0, bias_std=0.5)
    return m, "int8"


@model("dense")
def _(name, rng):
    x = inp((1, 40))
    fc = layers.Dense(13)
    m = keras.Model(x, fc(x))
    init_conv(fc, rng, "gauss", gain=1.5)
    return m, "int8"


@model("add_broadcast")
def _(name, rng):
    a = inp((1, 6, 7, 5), "x0")
    b = inp((1, 1, 1, 5), "x1")
    # tf.add, not keras' Add layer: that one squeezes b with a RESHAPE first
    add = layers.Lambda(lambda t: tf.add(t[0], t[1]), output_shape=(6, 7, 5))
    m = keras.Model([a, b], add([a, b]))
    return m, "int8"


@model("mul")
def _(name, rng):
    a = inp((1, 7, 6, 3), "x0")
    b = inp((1, 7, 6, 3), "x1")
    m = keras.Model([a, b], layers.Multiply()([a, b]))
    return m, "int8"


@model("maxpool")
def _(name, rng):
    x = inp((1, 9, 11, 5))
    m = keras.Model(x, layers.MaxPooling2D(pool_size=2, strides=2, padding="valid")(x))
    return m, "int8"


@model("avgpool")
def _(name, rng):
    x = inp((1, 8, 8, 20))
    m = keras.Model(x, layers.AveragePooling2D(pool_size=3, strides=1, padding="same")(x))
    return m, "int8"


@model("concat")
def _(name, rng):
    a = inp((1, 5, 6, 3), "x0")
    b = inp((1, 5, 6, 5), "x1")
    # a conv on one branch gives the two concatenated tensors different scales
    conv = layers.Conv2D(5, 1)
    m = keras.Model([a, b], layers.Concatenate(axis=-1)([a, conv(b)]))
    init_conv(conv, rng, "gauss", gain=2.0)
    return m, "int8"


@model("resize_bilinear")
def _(name, rng):
    x = inp((1, 5, 6, 3))
    m = keras.Model(x, layers.UpSampling2D(size=2, interpolation="bilinear")(x))
    return m, "int8"


@model("softmax")
def _(name, rng):
    x = inp((1, 10))
    m = keras.Model(x, layers.Softmax()(x))
    return m, "int8"


@model("conv2d_16x8")
def _(name, rng):
    x = inp((1, 9, 9, 5))
    conv = layers.Conv2D(24, 3, padding="same", activation="relu")
    m = keras.Model(x, conv(x))
    init_conv(conv, rng, "gauss", bias_std=0.3)
    return m, "16x8"


@model("mobilenet_tiny", kind="network")
def _(name, rng):
    x = inp((1, 32, 32, 3))
    convs, dws = [], []

    def conv_bn(t, c, k, s):
        conv = layers.Conv2D(c, k, strides=s, padding="same", use_bias=False)
        convs.append(conv)
        return layers.ReLU(6.0)(layers.BatchNormalization()(conv(t)))

    def dw_bn(t, s):
        dw = layers.DepthwiseConv2D(3, strides=s, padding="same", use_bias=False)
        dws.append(dw)
        return layers.ReLU(6.0)(layers.BatchNormalization()(dw(t)))

    t = conv_bn(x, 8, 3, 2)  # 16x16x8
    t = conv_bn(dw_bn(t, 1), 16, 1, 1)  # 16x16x16
    t = conv_bn(dw_bn(t, 2), 24, 1, 1)  # 8x8x24
    t = conv_bn(dw_bn(t, 1), 32, 1, 1)  # 8x8x32
    t = conv_bn(dw_bn(t, 2), 40, 1, 1)  # 4x4x40
    t = layers.GlobalAveragePooling2D()(t)
    fc = layers.Dense(10)
    y = layers.Softmax()(fc(t))
    m = keras.Model(x, y)
    for i, c in enumerate(convs):
        init_conv(c, rng, "laplace" if i % 2 else "gauss", gain=1.0)
    for d in dws:
        init_depthwise(d, rng, "laplace", gain=1.0)
    data = calib_data(name, m)
    fit_batchnorms(m, data, rng)
    fit_classifier(m, fc, data, rng)
    return m, "int8"


@model("two_npu_subgraphs", kind="multi-op")
def _(name, rng):
    # CONV -> SPACE_TO_DEPTH (not supported on the U85 by Vela 5.2, stays on the
    # CPU) -> CONV: Vela emits two ethos-u custom operators around it.
    x = inp((1, 8, 10, 3))
    c1 = layers.Conv2D(6, 3, padding="same", activation="relu")
    s2d = layers.Lambda(lambda t: tf.nn.space_to_depth(t, 2), output_shape=(4, 5, 24))
    c2 = layers.Conv2D(7, 1)
    m = keras.Model(x, c2(s2d(c1(x))))
    init_conv(c1, rng, "laplace", bias_std=0.3)
    init_conv(c2, rng, "gauss")
    return m, "int8"


# --------------------------------------------------------------------------
# the rest of the corpus: single-operator models and whole networks.  They
# import this module by name, so make sure a run as a script is that module.
sys.modules.setdefault("make_models", sys.modules[__name__])
import singleops  # noqa: E402,F401
import networks  # noqa: E402,F401
import edgecases  # noqa: E402,F401
import uint8models  # noqa: E402,F401

# --------------------------------------------------------------------------


def convert(name, m, quant):
    data = calib_data(name, m)
    input_names = [t.name for t in m.inputs]

    batch = [int(t.shape[0]) for t in m.inputs]  # calib_data stacks samples along axis 0

    def rep():
        for i in range(N_CALIB):
            if len(data) == 1:
                yield [data[0][i * batch[0] : (i + 1) * batch[0]]]
            else:
                yield {n: d[i * b : (i + 1) * b] for n, d, b in zip(input_names, data, batch)}

    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    if quant in ("int8", "uint8_io", "legacy_uint8"):
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io = tf.uint8 if quant == "uint8_io" else tf.int8
        if quant == "legacy_uint8":
            # per-tensor weights, as TF1's uint8 models (uint8models.to_legacy_uint8)
            conv._experimental_disable_per_channel = True
    elif quant == "16x8":
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
        io = tf.int16
    else:
        raise ValueError(quant)
    conv.inference_input_type = io
    conv.inference_output_type = io
    with quiet_fds():
        return conv.convert()


class quiet_fds:
    """Send the converter's chatter (stdout and stderr, also from C++) to a
    temporary file; print it only if the conversion fails."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.log.fileno(), 1)
        os.dup2(self.log.fileno(), 2)
        return self

    def __exit__(self, exc_type, exc, tb):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        if exc_type is not None:
            self.log.seek(0)
            sys.stderr.write(self.log.read().decode("utf-8", "replace")[-20000:])
        self.log.close()
        return False


def strip_qdq(flat):
    """The model with its DEQUANTIZE / QUANTIZE operators removed: each float operator
    between them reads the int8 tensor the DEQUANTIZE read and writes the int8 tensor the
    QUANTIZE wrote (with the quantisation the converter calibrated), i.e. the fully int8
    model the converter would write if its quantizer supported the operator."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as s

    m = s.ModelT.InitFromPackedBuf(flat, 0)
    sg = m.subgraphs[0]

    def code(op):
        c = m.operatorCodes[op.opcodeIndex]
        return max(c.builtinCode, c.deprecatedBuiltinCode)

    src, dst, keep = {}, {}, []
    for op in sg.operators:
        if code(op) == s.BuiltinOperator.DEQUANTIZE:
            src[op.outputs[0]] = op.inputs[0]
        elif code(op) == s.BuiltinOperator.QUANTIZE:
            dst[op.inputs[0]] = op.outputs[0]
        else:
            keep.append(op)
    for op in keep:
        op.inputs = [src.get(i, i) for i in op.inputs]
        op.outputs = [dst.get(o, o) for o in op.outputs]
    sg.operators = keep
    used = {i for op in keep for i in list(op.inputs) + list(op.outputs)}
    assert set(sg.inputs) | set(sg.outputs) <= used
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def build(name):
    keras.utils.set_random_seed(seed_for(name, "keras") & 0x7FFFFFFF)
    rng = rng_for(name, "weights")
    m, quant = MODELS[name](name, rng)
    flat = m if quant == "flatbuffer" else convert(name, m, quant)
    if quant == "legacy_uint8":
        flat = uint8models.to_legacy_uint8(flat)
    if name in STRIP_QDQ:
        flat = strip_qdq(flat)
    if name in POST_CONVERT:
        flat = POST_CONVERT[name](flat, rng_for(name, "post_convert"))
    path = tflite_path(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(flat)
    ops = op_names(flat)
    print(f"{name:20s} {quant:5s} {len(flat):7d} bytes  ops: {' '.join(ops)}", flush=True)
    keras.backend.clear_session()


def op_names(flat):
    """Operator names of subgraph 0, in execution order (for the log)."""
    try:
        from tensorflow.lite.python import schema_py_generated as s
    except ImportError:  # pragma: no cover
        return []
    m = s.Model.GetRootAsModel(flat, 0)
    codes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        codes.append(code)
    inv = {v: k for k, v in s.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    sg = m.Subgraphs(0)
    return [inv.get(codes[sg.Operators(i).OpcodeIndex()], "?") for i in range(sg.OperatorsLength())]


def main(argv):
    if "--list" in argv:
        print("\n".join(MODELS))
        return
    names = argv or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n}; try --list")
    for n in names:
        build(n)


if __name__ == "__main__":
    main(sys.argv[1:])
