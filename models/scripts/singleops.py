"""Single-operator models of the npuc model corpus (imported by make_models.py).

One (or, where TFLite needs it, a very small number of) TFLite operator per
model, covering the operators Vela 5.2 supports on the Ethos-U85 and their
options: odd sizes and channel counts, strides, dilation, SAME/VALID,
broadcasting, every fused activation, int8 and 16x8 variants, LUT-based
activations, resize modes, ...  A few models use operators Vela leaves on the
CPU on purpose (see corpus.json).

Every builder is registered with make_models.model(name, kind="single-op",
...); see make_models.py for the registry and the conversion.
"""
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from common import seed_for
from make_models import (  # noqa: F401
    POST_CONVERT,
    INPUT_RANGE,
    init_conv,
    init_depthwise,
    inp,
    model,
    prune_2_4,
    cluster,
    bell,
)

# --------------------------------------------------------------------------
# generic helpers


def lam(fn):
    return layers.Lambda(fn)


def unary(name, shape, fn, quant="int8", rng=None):
    """x -> fn(x)."""
    if rng is not None:
        INPUT_RANGE[name] = rng

    @model(name)
    def _(n, r):
        x = inp(shape)
        return keras.Model(x, lam(fn)(x)), quant


def binary(name, sa, sb, fn, quant="int8", rng=None):
    """(x0, x1) -> fn(x0, x1).  TFLite lists the inputs in reverse order."""
    if rng is not None:
        INPUT_RANGE[name] = rng

    @model(name)
    def _(n, r):
        a = inp(sa, "x0")
        b = inp(sb, "x1")
        return keras.Model([a, b], lam(lambda t: fn(t[0], t[1]))([a, b])), quant


ACTS = {
    "none": None,
    "relu": "relu",
    "relu6": "relu6",
    "relu_n1": lambda t: tf.clip_by_value(t, -1.0, 1.0),
}
ACT_FN = {
    "none": lambda t: t,
    "relu": tf.nn.relu,
    "relu6": tf.nn.relu6,
    "relu_n1": lambda t: tf.clip_by_value(t, -1.0, 1.0),
}


def conv(name, shape, cout, k, s=1, pad="same", dil=1, act="none", quant="int8", wkind="laplace",
         bias=True, gain=1.5, post=None):
    @model(name)
    def _(n, r):
        x = inp(shape)
        c = layers.Conv2D(cout, k, strides=s, padding=pad, dilation_rate=dil, activation=ACTS[act], use_bias=bias)
        m = keras.Model(x, c(x))
        init_conv(c, r, "gauss" if wkind == "gauss" else "laplace", gain=gain, bias_std=0.3)
        if post:
            w = c.get_weights()
            w[0] = post(w[0], r)
            c.set_weights(w)
        return m, quant


def dwconv(name, shape, k, s=1, pad="same", dil=1, mult=1, act="none", quant="int8", gain=1.5):
    @model(name)
    def _(n, r):
        x = inp(shape)
        d = layers.DepthwiseConv2D(k, strides=s, padding=pad, dilation_rate=dil, depth_multiplier=mult,
                                   activation=ACTS[act])
        m = keras.Model(x, d(x))
        init_depthwise(d, r, "laplace", gain=gain, bias_std=0.4)
        return m, quant


def dense(name, shape, units, act="none", quant="int8", bias=True, gain=1.5):
    @model(name)
    def _(n, r):
        x = inp(shape)
        d = layers.Dense(units, activation=ACTS[act], use_bias=bias)
        m = keras.Model(x, d(x))
        init_conv(d, r, "gauss", gain=gain, bias_std=0.3)
        return m, quant


def tconv(name, shape, cout, k, s, pad="same", act="none", quant="int8", bias=True):
    @model(name)
    def _(n, r):
        x = inp(shape)
        c = layers.Conv2DTranspose(cout, k, strides=s, padding=pad, activation=ACTS[act], use_bias=bias)
        m = keras.Model(x, c(x))
        # kernel [kh, kw, cout, cin]
        shp = tuple(c.kernel.shape)
        w = [bell(r, shp, shp[0] * shp[1] * shp[3] / (s * s), "laplace", 1.5)]
        if bias:
            w.append(r.normal(0.0, 0.3, size=(shp[2],)).astype(np.float32))
        c.set_weights(w)
        return m, quant


# --------------------------------------------------------------------------
# CONV_2D

conv("conv2d_1x1", (1, 7, 9, 17), 11, 1)
conv("conv2d_1x1_relu6_wide", (1, 4, 5, 64), 72, 1, act="relu6", wkind="gauss")
conv("conv2d_3x3_valid_relu6", (1, 11, 10, 8), 16, 3, pad="valid", act="relu6")
conv("conv2d_3x3_relu_n1", (1, 9, 8, 6), 10, 3, act="relu_n1", gain=0.8)
conv("conv2d_3x3_nobias", (1, 8, 8, 4), 9, 3, bias=False)
conv("conv2d_5x5_s2_same", (1, 13, 11, 3), 12, 5, s=2)
conv("conv2d_7x7_s2_valid", (1, 20, 19, 3), 8, 7, s=2, pad="valid", act="relu")
conv("conv2d_3x3_s3", (1, 14, 15, 5), 7, 3, s=3, pad="valid")
conv("conv2d_dil2_same", (1, 12, 11, 5), 6, 3, dil=2)
conv("conv2d_dil3_valid", (1, 14, 13, 3), 5, 3, dil=3, pad="valid", act="relu")
conv("conv2d_1x5", (1, 6, 14, 4), 8, (1, 5))
conv("conv2d_5x1_valid", (1, 14, 6, 4), 8, (5, 1), pad="valid")
conv("conv2d_s2x1", (1, 12, 10, 6), 9, 3, s=(2, 1))
conv("conv2d_1ch_in", (1, 16, 12, 1), 24, 3, act="relu")
conv("conv2d_1ch_out", (1, 9, 9, 13), 1, 3)
conv("conv2d_pruned_2_4", (1, 8, 8, 32), 40, 3, act="relu", post=prune_2_4)
conv("conv2d_clustered16", (1, 8, 8, 16), 24, 3, act="relu6", post=lambda w, r: cluster(w, 16))
conv("conv2d_16x8_s2_valid", (1, 11, 12, 7), 10, 3, s=2, pad="valid", quant="16x8")
conv("conv2d_16x8_1x1_relu6", (1, 6, 7, 20), 15, 1, act="relu6", quant="16x8")
conv("conv2d_16x8_dil2", (1, 10, 10, 4), 8, 3, dil=2, quant="16x8")

# --------------------------------------------------------------------------
# DEPTHWISE_CONV_2D

dwconv("dw_3x3_s2_valid", (1, 13, 12, 11), 3, s=2, pad="valid")
dwconv("dw_3x3_s2_same_relu", (1, 12, 12, 16), 3, s=2, act="relu")
dwconv("dw_mult2", (1, 8, 9, 5), 3, mult=2)
dwconv("dw_mult4_1ch", (1, 10, 10, 1), 3, mult=4, act="relu6")
dwconv("dw_5x5_dil2", (1, 14, 13, 7), 5, dil=2)
dwconv("dw_3x3_relu_n1", (1, 9, 9, 24), 3, act="relu_n1", gain=0.8)
dwconv("dw_7x7_valid", (1, 11, 11, 3), 7, pad="valid")
dwconv("dw_1x3", (1, 5, 16, 12), (1, 3))
dwconv("dw_16x8", (1, 9, 10, 13), 3, quant="16x8")
dwconv("dw_16x8_s2_relu6", (1, 12, 11, 8), 3, s=2, act="relu6", quant="16x8")

# --------------------------------------------------------------------------
# FULLY_CONNECTED

dense("fc_relu", (1, 33), 17, act="relu")
dense("fc_relu6", (1, 64), 10, act="relu6")
dense("fc_relu_n1", (1, 24), 30, act="relu_n1", gain=0.7)
dense("fc_nobias", (1, 50), 7, bias=False)
dense("fc_wide", (1, 256), 96)
dense("fc_3d", (1, 6, 20), 9)
dense("fc_batch4", (4, 16), 8)
dense("fc_16x8", (1, 48), 20, quant="16x8")
dense("fc_16x8_relu", (1, 30), 12, act="relu", quant="16x8")

# --------------------------------------------------------------------------
# TRANSPOSE_CONV

tconv("tconv_3x3_s2_same", (1, 5, 6, 8), 6, 3, 2)
tconv("tconv_2x2_s2_valid", (1, 4, 5, 12), 8, 2, 2, pad="valid")
tconv("tconv_3x3_s2_valid", (1, 4, 4, 5), 7, 3, 2, pad="valid")
tconv("tconv_3x3_s1_same", (1, 7, 6, 9), 5, 3, 1)
tconv("tconv_4x4_s2_relu", (1, 5, 5, 4), 6, 4, 2, act="relu")
tconv("tconv_nobias", (1, 6, 6, 3), 4, 3, 2, bias=False)
tconv("tconv_16x8", (1, 5, 4, 6), 5, 3, 2, quant="16x8")

# --------------------------------------------------------------------------
# pooling


def pool(name, shape, kind, k, s, pad, quant="int8"):
    @model(name)
    def _(n, r):
        x = inp(shape)
        P = layers.MaxPooling2D if kind == "max" else layers.AveragePooling2D
        return keras.Model(x, P(pool_size=k, strides=s, padding=pad)(x)), quant


pool("maxpool_3x3_s2_same", (1, 13, 12, 7), "max", 3, 2, "same")
pool("maxpool_3x3_s1_same", (1, 7, 8, 16), "max", 3, 1, "same")
pool("maxpool_2x3_s2x1", (1, 10, 9, 3), "max", (2, 3), (2, 1), "valid")
pool("maxpool_16x8", (1, 9, 9, 6), "max", 2, 2, "valid", quant="16x8")
pool("avgpool_2x2_s2_valid", (1, 10, 11, 9), "avg", 2, 2, "valid")
pool("avgpool_global_7x7", (1, 7, 7, 32), "avg", 7, 1, "valid")
pool("avgpool_3x3_s2_same", (1, 11, 10, 5), "avg", 3, 2, "same")
pool("avgpool_16x8", (1, 8, 9, 10), "avg", 3, 1, "same", quant="16x8")

# --------------------------------------------------------------------------
# elementwise binary

binary("add_same", (1, 6, 5, 7), (1, 6, 5, 7), tf.add)
binary("add_relu", (1, 5, 7, 4), (1, 5, 7, 4), lambda a, b: tf.nn.relu(a + b))
binary("add_relu6", (1, 8, 3), (1, 8, 3), lambda a, b: tf.nn.relu6(3.0 * (a + b)))
binary("add_relu_n1", (1, 20), (1, 20), lambda a, b: tf.clip_by_value(a + b, -1.0, 1.0))
binary("add_bcast_w", (1, 6, 7, 5), (1, 6, 1, 5), tf.add)
binary("add_bcast_hw1c", (1, 4, 6, 1), (1, 4, 6, 9), tf.add)
binary("add_rank5", (1, 2, 3, 4, 5), (1, 2, 3, 4, 5), tf.add)
binary("add_diff_ranges", (1, 7, 7, 3), (1, 7, 7, 3), tf.add, rng=[1.0, 6.0])
binary("add_16x8", (1, 6, 6, 8), (1, 6, 6, 8), tf.add, quant="16x8")
binary("add_16x8_bcast", (1, 5, 4, 6), (1, 1, 1, 6), tf.add, quant="16x8")
binary("sub_same", (1, 7, 5, 6), (1, 7, 5, 6), tf.subtract)
binary("sub_bcast", (1, 1, 5, 3), (1, 4, 5, 3), tf.subtract)
binary("sub_relu", (1, 30), (1, 30), lambda a, b: tf.nn.relu(a - b))
binary("sub_16x8", (1, 4, 7, 5), (1, 4, 7, 5), tf.subtract, quant="16x8")
binary("mul_bcast_c", (1, 6, 6, 10), (1, 1, 1, 10), tf.multiply)
binary("mul_relu", (1, 5, 5, 6), (1, 5, 5, 6), lambda a, b: tf.nn.relu(a * b))
binary("mul_relu_n1", (1, 16), (1, 16), lambda a, b: tf.clip_by_value(a * b, -1.0, 1.0), rng=[2.0, 2.0])
binary("mul_16x8", (1, 6, 5, 4), (1, 6, 5, 4), tf.multiply, quant="16x8")
# the divisor is b + 1.5 in [0.5, 2.5] (ADD first): a quantised divisor that can
# be 0 makes the TFLite kernel fail
binary("div", (1, 4, 5, 3), (1, 4, 5, 3), lambda a, b: tf.divide(a, b + 1.5))
binary("maximum", (1, 6, 7, 5), (1, 6, 7, 5), tf.maximum)
binary("minimum_bcast", (1, 5, 6, 4), (1, 1, 6, 4), tf.minimum)
binary("maximum_16x8", (1, 5, 5, 5), (1, 5, 5, 5), tf.maximum, quant="16x8")
binary("squared_difference", (1, 5, 6, 7), (1, 5, 6, 7), tf.math.squared_difference)
binary("squared_difference_bcast", (1, 4, 4, 9), (1, 1, 1, 9), tf.math.squared_difference)
binary("equal", (1, 5, 6, 3), (1, 5, 6, 3), lambda a, b: tf.equal(a, b), rng=[0.1, 0.1])
binary("not_equal", (1, 4, 5, 6), (1, 4, 5, 6), lambda a, b: tf.not_equal(a, b), rng=[0.1, 0.1])
binary("greater", (1, 6, 5, 4), (1, 6, 5, 4), tf.greater)
binary("greater_equal", (1, 3, 8, 5), (1, 3, 8, 5), tf.greater_equal)
binary("less", (1, 7, 3, 6), (1, 7, 3, 6), tf.less)
binary("less_equal_bcast", (1, 5, 5, 8), (1, 1, 1, 8), tf.less_equal)
binary("logical_and", (1, 6, 6, 4), (1, 6, 6, 4), lambda a, b: tf.logical_and(a > 0, b < 0.2))
binary("logical_or", (1, 6, 6, 4), (1, 6, 6, 4), lambda a, b: tf.logical_or(a > 0.3, b < -0.3))
binary("logical_not", (1, 5, 7, 4), (1, 5, 7, 4), lambda a, b: tf.logical_not(tf.logical_and(a > 0, b < 0.2)))
binary("select_v2", (1, 5, 6, 4), (1, 5, 6, 4), lambda a, b: tf.where(a > b, a, b * 0.5))
binary("batch_matmul", (1, 2, 5, 6), (1, 2, 6, 7), tf.matmul)
binary("batch_matmul_bcast", (1, 1, 4, 8), (1, 3, 8, 5), tf.matmul)
binary("batch_matmul_adj_y", (1, 6, 8), (1, 5, 8), lambda a, b: tf.matmul(a, b, transpose_b=True))
binary("batch_matmul_adj_x", (1, 8, 6), (1, 8, 5), lambda a, b: tf.matmul(a, b, transpose_a=True))
binary("batch_matmul_3d", (3, 4, 9), (3, 9, 6), tf.matmul)
binary("batch_matmul_16x8", (1, 2, 4, 6), (1, 2, 6, 5), tf.matmul, quant="16x8")
binary("concat_c_two_scales", (1, 5, 6, 3), (1, 5, 6, 7), lambda a, b: tf.concat([a, 3.0 * b], -1))
binary("concat_h", (1, 3, 6, 4), (1, 5, 6, 4), lambda a, b: tf.concat([a, b], 1))
binary("concat_w", (1, 4, 2, 5), (1, 4, 7, 5), lambda a, b: tf.concat([a, b], 2))
binary("concat_16x8", (1, 4, 4, 3), (1, 4, 4, 5), lambda a, b: tf.concat([a, b], -1), quant="16x8")
binary("pack_axis0", (1, 4, 6), (1, 4, 6), lambda a, b: tf.stack([a, b], axis=0))
binary("pack_axis3", (1, 5, 6), (1, 5, 6), lambda a, b: tf.stack([a, b], axis=3))

# binary with a constant operand


def with_const(name, shape, cshape, fn, quant="int8", rng=None):
    if rng is not None:
        INPUT_RANGE[name] = rng

    @model(name)
    def _(n, r):
        x = inp(shape)
        c = tf.constant(r.uniform(-1.0, 1.0, size=cshape).astype(np.float32))
        return keras.Model(x, lam(lambda t: fn(t, c))(x)), quant


with_const("add_const", (1, 5, 6, 7), (1, 5, 6, 7), tf.add)
with_const("add_const_bcast_c", (1, 6, 6, 9), (9,), tf.add)
with_const("mul_const_c", (1, 6, 5, 8), (1, 1, 1, 8), tf.multiply)
with_const("sub_const_scalar", (1, 4, 7, 3), (), lambda t, c: t - c)
with_const("maximum_const", (1, 6, 6, 4), (1, 1, 1, 4), tf.maximum)
with_const("prelu_like_mul_max", (1, 5, 5, 4), (), lambda t, c: tf.maximum(t, 0.25 * t))

# --------------------------------------------------------------------------
# elementwise unary and activations

unary("abs", (1, 6, 7, 5), tf.abs)
unary("abs_16x8", (1, 5, 5, 6), tf.abs, quant="16x8")
unary("neg", (1, 5, 6, 7), tf.negative)
unary("relu", (1, 7, 6, 5), tf.nn.relu)
unary("relu6", (1, 6, 6, 3), tf.nn.relu6, rng=8.0)
unary("relu_n1_to_1", (1, 8, 5, 4), lambda t: tf.clip_by_value(t, -1.0, 1.0), rng=2.0)
unary("relu_0_to_1", (1, 5, 8, 4), lambda t: tf.clip_by_value(t, 0.0, 1.0), rng=2.0)
unary("relu_16x8", (1, 5, 6, 4), tf.nn.relu, quant="16x8")
unary("leaky_relu", (1, 7, 7, 6), lambda t: tf.nn.leaky_relu(t, 0.2))
unary("leaky_relu_alpha1p5", (1, 5, 6, 3), lambda t: tf.nn.leaky_relu(t, 1.5))
unary("leaky_relu_16x8", (1, 6, 5, 4), lambda t: tf.nn.leaky_relu(t, 0.1), quant="16x8")
unary("hard_swish", (1, 8, 7, 5), lambda t: t * tf.nn.relu6(t + 3.0) / 6.0, rng=5.0)
unary("logistic", (1, 6, 6, 8), tf.sigmoid, rng=6.0)
unary("logistic_16x8", (1, 5, 7, 4), tf.sigmoid, quant="16x8", rng=6.0)
unary("tanh", (1, 7, 5, 6), tf.tanh, rng=3.0)
unary("tanh_16x8", (1, 6, 4, 5), tf.tanh, quant="16x8", rng=3.0)
unary("gelu", (1, 6, 7, 5), lambda t: tf.nn.gelu(t, approximate=False), rng=4.0)
unary("gelu_approx", (1, 5, 6, 6), lambda t: tf.nn.gelu(t, approximate=True), rng=4.0)
unary("exp", (1, 6, 5, 7), tf.exp, rng=(-4.0, 1.5))
unary("exp_16x8", (1, 4, 6, 5), tf.exp, quant="16x8", rng=(-4.0, 1.5))
unary("log", (1, 5, 6, 6), tf.math.log, rng=(0.05, 6.0))
unary("log_16x8", (1, 4, 5, 6), tf.math.log, quant="16x8", rng=(0.05, 6.0))
unary("rsqrt", (1, 6, 6, 5), tf.math.rsqrt, rng=(0.02, 4.0))
unary("rsqrt_16x8", (1, 5, 4, 7), tf.math.rsqrt, quant="16x8", rng=(0.02, 4.0))
unary("elu", (1, 5, 5, 6), tf.nn.elu, rng=3.0)
unary("softmax_4d", (1, 4, 5, 8), tf.nn.softmax, rng=5.0)
unary("softmax_1x100", (1, 100), tf.nn.softmax, rng=8.0)
unary("softmax_beta2", (1, 3, 16), lambda t: tf.nn.softmax(2.0 * t), rng=3.0)
unary("softmax_16x8", (1, 24), tf.nn.softmax, quant="16x8", rng=6.0)
unary("log_softmax", (1, 12), tf.nn.log_softmax, rng=5.0)
unary("cast_bool_to_int8", (1, 5, 6, 3), lambda t: tf.cast(t > 0.1, tf.int8))


@model("prelu")
def _(n, r):
    x = inp((1, 6, 7, 5))
    p = layers.PReLU(shared_axes=[1, 2])
    m = keras.Model(x, p(x))
    p.set_weights([r.uniform(-0.5, 0.8, size=(1, 1, 5)).astype(np.float32)])
    return m, "int8"


# --------------------------------------------------------------------------
# reductions

unary("mean_hw_keep", (1, 7, 9, 12), lambda t: tf.reduce_mean(t, axis=[1, 2], keepdims=True))
unary("mean_hw", (1, 6, 5, 20), lambda t: tf.reduce_mean(t, axis=[1, 2]))
unary("mean_w", (1, 4, 10, 6), lambda t: tf.reduce_mean(t, axis=2, keepdims=True))
unary("mean_c_w1", (1, 8, 1, 16), lambda t: tf.reduce_mean(t, axis=3, keepdims=True))
unary("mean_last_2d", (1, 6, 32), lambda t: tf.reduce_mean(t, axis=-1, keepdims=True))
unary("mean_16x8", (1, 6, 6, 10), lambda t: tf.reduce_mean(t, axis=[1, 2], keepdims=True), quant="16x8")
unary("reduce_max_hw", (1, 6, 7, 9), lambda t: tf.reduce_max(t, axis=[1, 2], keepdims=True))
unary("reduce_max_c", (1, 5, 6, 11), lambda t: tf.reduce_max(t, axis=3, keepdims=True))
unary("reduce_min_w", (1, 5, 8, 6), lambda t: tf.reduce_min(t, axis=2, keepdims=True))
unary("sum_hw", (1, 5, 6, 7), lambda t: tf.reduce_sum(t, axis=[1, 2], keepdims=True))
unary("sum_16x8", (1, 4, 5, 6), lambda t: tf.reduce_sum(t, axis=[1, 2], keepdims=True), quant="16x8")
unary("argmax_c", (1, 5, 6, 10), lambda t: tf.argmax(t, axis=-1, output_type=tf.int32))
unary("argmax_1d", (1, 37), lambda t: tf.argmax(t, axis=-1, output_type=tf.int32))
unary("reduce_any", (1, 4, 5, 6), lambda t: tf.reduce_any(t > 0.5, axis=-1))
unary("reduce_all", (1, 4, 5, 6), lambda t: tf.reduce_all(t > -0.5, axis=[1, 2]))
# issue 16 A.5: cases where Vela's stream and the simulator were found to disagree with TFLite
unary("argmax_c_i64", (1, 5, 6, 10), lambda t: tf.argmax(t, axis=-1, output_type=tf.int64))
unary("reduce_any_c", (1, 6, 7, 9), lambda t: tf.reduce_any(t > 0.3, axis=-1))
unary("reduce_all_c", (1, 6, 7, 9), lambda t: tf.reduce_all(t > -0.6, axis=-1))
binary("greater_const_and_not", (1, 9, 11, 33), (1, 9, 11, 33),
       lambda a, b: tf.logical_not(tf.logical_and(a > 0.37, b > a)))
dense("fc_16x8_256_33", (1, 256), 33, quant="16x8")

# --------------------------------------------------------------------------
# data movement

unary("reshape_4d_3d", (1, 4, 6, 8), lambda t: tf.reshape(t, (1, 24, 8)))
unary("reshape_flatten", (1, 3, 5, 7), lambda t: tf.reshape(t, (1, 105)))
unary("reshape_2d_4d", (1, 60), lambda t: tf.reshape(t, (1, 3, 4, 5)))
unary("squeeze", (1, 1, 7, 9), lambda t: tf.squeeze(t, axis=1))
unary("expand_dims", (1, 6, 10), lambda t: tf.expand_dims(t, axis=2))
unary("transpose_nhwc_nwhc", (1, 5, 7, 6), lambda t: tf.transpose(t, (0, 2, 1, 3)))
unary("transpose_nhwc_nchw", (1, 4, 6, 9), lambda t: tf.transpose(t, (0, 3, 1, 2)))
unary("transpose_2d", (7, 12), lambda t: tf.transpose(t))
unary("transpose_3d", (3, 5, 8), lambda t: tf.transpose(t, (2, 0, 1)))
unary("transpose_16x8", (1, 5, 6, 7), lambda t: tf.transpose(t, (0, 3, 2, 1)), quant="16x8")
unary("split_c3", (1, 5, 6, 12), lambda t: tf.split(t, 3, axis=-1))
unary("split_h2", (1, 8, 5, 3), lambda t: tf.split(t, 2, axis=1))
unary("split_v", (1, 4, 5, 11), lambda t: tf.split(t, [2, 6, 3], axis=-1))
unary("unpack_axis1", (1, 3, 6, 5), lambda t: tf.unstack(t, axis=1))
unary("slice_hw", (1, 9, 10, 6), lambda t: tf.slice(t, [0, 2, 3, 0], [1, 5, 4, 6]))
unary("slice_c", (1, 5, 5, 16), lambda t: tf.slice(t, [0, 0, 0, 5], [1, 5, 5, 7]))
unary("strided_slice_s2", (1, 12, 11, 5), lambda t: t[:, 1:11:2, ::2, :])
unary("strided_slice_neg", (1, 8, 9, 6), lambda t: t[:, -5:, 2:-1, 1:5])
unary("strided_slice_shrink", (1, 5, 6, 7), lambda t: t[:, 2, :, :])
unary("pad_hw", (1, 5, 6, 4), lambda t: tf.pad(t, [[0, 0], [1, 2], [2, 1], [0, 0]]))
unary("pad_c", (1, 4, 4, 5), lambda t: tf.pad(t, [[0, 0], [0, 0], [0, 0], [2, 3]]))
unary("padv2_const", (1, 5, 5, 3), lambda t: tf.pad(t, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=0.5))
unary("pad_16x8", (1, 4, 5, 6), lambda t: tf.pad(t, [[0, 0], [2, 0], [0, 3], [0, 0]]), quant="16x8")
unary("mirror_pad_reflect", (1, 6, 7, 4), lambda t: tf.pad(t, [[0, 0], [2, 2], [1, 3], [0, 0]], mode="REFLECT"))
unary("mirror_pad_symmetric", (1, 5, 6, 3), lambda t: tf.pad(t, [[0, 0], [1, 2], [2, 2], [0, 0]], mode="SYMMETRIC"))
unary("tile_hw", (1, 3, 4, 5), lambda t: tf.tile(t, [1, 2, 3, 1]))
unary("tile_c", (1, 4, 4, 3), lambda t: tf.tile(t, [1, 1, 1, 4]))
unary("reverse_w", (1, 5, 7, 6), lambda t: tf.reverse(t, axis=[2]))
unary("reverse_h", (1, 6, 5, 4), lambda t: tf.reverse(t, axis=[1]))
unary("gather_axis0", (6, 8), lambda t: tf.gather(t, [4, 0, 2, 2, 5], axis=0))
unary("gather_batch_dims1", (1, 7, 5), lambda t: tf.gather(t, [[6, 1, 3, 3]], axis=1, batch_dims=1))
unary("scatter_nd", (3, 8), lambda t: tf.scatter_nd([[1], [4], [0]], t, [5, 8]))
unary("space_to_depth", (1, 6, 8, 3), lambda t: tf.nn.space_to_depth(t, 2))
unary("depth_to_space", (1, 3, 4, 12), lambda t: tf.nn.depth_to_space(t, 2))
unary("space_to_batch", (1, 6, 6, 3), lambda t: tf.space_to_batch(t, [2, 2], [[0, 0], [0, 0]]))

# --------------------------------------------------------------------------
# resize


def resize(name, shape, size, method, align=False, half=False, quant="int8"):
    @model(name)
    def _(n, r):
        x = inp(shape)
        if method == "bilinear":
            f = lambda t: tf.compat.v1.image.resize_bilinear(t, size, align_corners=align, half_pixel_centers=half)  # noqa: E731
        else:
            f = lambda t: tf.compat.v1.image.resize_nearest_neighbor(t, size, align_corners=align, half_pixel_centers=half)  # noqa: E731
        return keras.Model(x, lam(f)(x)), quant


resize("resize_bilinear_align", (1, 4, 5, 3), (7, 9), "bilinear", align=True)
resize("resize_bilinear_legacy", (1, 4, 5, 6), (8, 10), "bilinear")
resize("resize_bilinear_x4_half", (1, 3, 4, 5), (12, 16), "bilinear", half=True)
resize("resize_bilinear_x3", (1, 4, 4, 3), (12, 12), "bilinear", half=True)
resize("resize_bilinear_16x8", (1, 4, 5, 4), (8, 10), "bilinear", half=True, quant="16x8")
resize("resize_nearest_legacy", (1, 5, 4, 6), (10, 8), "nearest")
resize("resize_nearest_align", (1, 4, 5, 3), (7, 9), "nearest", align=True)
resize("resize_nearest_half", (1, 3, 5, 4), (6, 10), "nearest", half=True)
resize("resize_nearest_x4", (1, 3, 3, 7), (12, 12), "nearest", half=True)
resize("resize_nearest_16x8", (1, 4, 4, 5), (8, 8), "nearest", quant="16x8")

# --------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_LSTM.  Keras 3's LSTM becomes a WHILE loop that the TF 2.21
# converter cannot quantise (the process dies); tf_keras (Keras 2, `tf-keras`, installed
# with --no-deps by setup_venv.sh) marks its LSTM so that the converter fuses it into one
# UNIDIRECTIONAL_SEQUENCE_LSTM, which it quantises with the integer (8x8_16) LSTM kernel:
# int8 input/output and weights, int32 gate biases, int16 cell state with a power-of-two
# scale, cell_clip 10.


def lstm(name, shape, units, gate_bias=(0.0, 1.0, 0.0, 0.0), gain=1.0, bias_std=0.3):
    """x [1, T, F] -> LSTM(units, return_sequences=True); Gaussian biases plus a constant
    per gate (i, f, c, o; Keras' default is 1 for the forget gate)."""

    @model(name)
    def _(n, r):
        import tf_keras

        tf_keras.backend.clear_session()  # layer names do not depend on earlier models
        tf_keras.utils.set_random_seed(seed_for(n, "tf_keras") & 0x7FFFFFFF)
        x = tf_keras.Input(shape=shape[1:], batch_size=shape[0], name="x")
        layer = tf_keras.layers.LSTM(units, return_sequences=True)
        m = tf_keras.Model(x, layer(x))
        f = shape[-1]
        kernel = bell(r, (f, 4 * units), f, "laplace", gain)
        recurrent = bell(r, (units, 4 * units), units, "gauss", gain)
        bias = r.normal(0.0, bias_std, size=(4 * units,)).astype(np.float32)
        bias += np.repeat(np.asarray(gate_bias, np.float32), units)
        layer.set_weights([kernel, recurrent, bias])
        return m, "int8"


def add_lstm_projection(flat, rng, n_output, proj_clip, scale, zero_point):
    """The converted LSTM with a projection (TFLite inputs 16 and 17): the hidden state (the
    calibrated intermediate 4) is projected to `n_output` values, which are the output and
    the output state (new recurrent weights [units, n_output]). The converter does not make
    projection LSTMs from Keras, so the projection's weights (Laplacian int8, scale 1/127),
    bias, and the output/state quantization (`scale`, `zero_point`) are chosen here; TFLite's
    kernel takes them as they are."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as s

    m = s.ModelT.InitFromPackedBuf(flat, 0)
    sg = m.subgraphs[0]
    (op,) = sg.operators
    op.inputs = np.array(op.inputs, np.int32).copy()
    n_cell = int(sg.tensors[op.inputs[4]].shape[0])

    def quant(sc, zp):
        q = s.QuantizationParametersT()
        q.scale = [np.float32(sc)]
        q.zeroPoint = [int(zp)]
        return q

    def tensor(name, shape, ttype, data, sc, zp, variable=False):
        t = s.TensorT()
        t.name = name.encode()
        t.shape = np.array(shape, np.int32)
        t.type = ttype
        t.buffer = 0
        if data is not None:
            b = s.BufferT()
            b.data = np.frombuffer(data.tobytes(), np.uint8).copy()
            m.buffers.append(b)
            t.buffer = len(m.buffers) - 1
        t.quantization = quant(sc, zp)
        t.isVariable = variable
        sg.tensors.append(t)
        return len(sg.tensors) - 1

    def weights(shape):
        return np.clip(np.round(rng.laplace(0.0, 30.0, size=shape)), -127, 127).astype(np.int8)

    for i in (5, 6, 7, 8):  # recurrent weights: to input, forget, cell, output gates
        old = sg.tensors[op.inputs[i]]
        op.inputs[i] = tensor(old.name.decode() + "_projected", [n_cell, n_output], s.TensorType.INT8,
                              weights((n_cell, n_output)), old.quantization.scale[0], 0)
    hidden_scale = sg.tensors[op.intermediates[4]].quantization.scale[0]
    op.inputs[16] = tensor("projection_weights", [n_output, n_cell], s.TensorType.INT8,
                           weights((n_output, n_cell)), 1.0 / 127, 0)
    op.inputs[17] = tensor("projection_bias", [n_output], s.TensorType.INT32,
                           rng.integers(-3000, 3000, size=n_output).astype(np.int32), hidden_scale / 127, 0)
    op.inputs[18] = tensor("output_state", [1, n_output], s.TensorType.INT8, None, scale, zero_point, True)
    out = sg.tensors[op.outputs[0]]
    out.shape = np.array([out.shape[0], out.shape[1], n_output], np.int32)
    out.shapeSignature = None
    out.quantization = quant(scale, zero_point)
    op.builtinOptions.projClip = float(proj_clip)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# cell state within [-1, 1] (scale 2^-15): the clip (10) only removes -32768
lstm("lstm", (1, 5, 7), 9)
# input and forget gates near 1, cell gate mostly positive: the cell state grows up to the
# clip of 10 (scale 2^-11, clip 20480 raw); its tanh uses 4 integer bits
lstm("lstm_cell_clip", (1, 12, 4), 6, gate_bias=(4.0, 6.0, 4.0, 0.0), gain=1.5)
# 9 units projected to 5 outputs (scale 1/128, zero point 3), projection clip 0.4 (51 raw)
lstm("lstm_projection", (1, 5, 7), 9)
POST_CONVERT["lstm_projection"] = lambda flat, rng: add_lstm_projection(flat, rng, 5, 0.4, 1.0 / 128, 3)
