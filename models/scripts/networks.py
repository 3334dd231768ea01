"""Whole networks of the npuc model corpus (imported by make_models.py).

Small versions of what embedded users run, with random (seeded) weights:
bell-shaped (Laplacian / Gaussian), 2:4-pruned or clustered; batch-norm
statistics fitted to the calibration data with random gamma/beta, and the
classifier scaled so that the outputs depend on the input (oracles.md).
The list of names is common.NETWORKS (compile_vela.py needs it without
importing TensorFlow).
"""
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from common import LARGE_NETWORKS, NETWORKS
from make_models import (
    bell,
    calib_data,
    cluster,
    fit_batchnorms,
    init_conv,
    init_depthwise,
    inp,
    model,
    prune_2_4,
)


def net(name):
    assert name in NETWORKS or name in LARGE_NETWORKS, name
    return model(name, kind="network")


def init_all(m, rng, kind="laplace", post=None, gain=1.0):
    """Bell-shaped weights for every conv / depthwise / dense layer; post(w)
    (pruning, clustering) is applied to conv and dense kernels where it fits."""
    for l in m.layers:
        if isinstance(l, layers.DepthwiseConv2D):
            init_depthwise(l, rng, kind, gain=gain)
        elif isinstance(l, (layers.Conv2D, layers.Dense)):
            init_conv(l, rng, kind, gain=gain)
            if post is not None:
                w = l.get_weights()
                try:
                    w[0] = post(w[0])
                except AssertionError:  # e.g. 2:4 pruning needs cin % 4 == 0
                    continue
                l.set_weights(w)


def fit_classifier_any(m, layer, data, rng, logit_std=2.5, std_floor=False):
    """make_models.fit_classifier for a Dense or a 1x1 Conv2D classifier.
    std_floor: do not boost features that hardly vary (their int8 rounding
    noise would dominate the logits) beyond the mean feature spread."""
    sub = keras.Model(m.inputs, layer.input)
    f = np.asarray(sub(data if len(data) > 1 else data[0], training=False))
    f = f.reshape(-1, f.shape[-1])
    fmean, fstd = f.mean(axis=0), f.std(axis=0) + 1e-6
    if std_floor:
        fstd = np.maximum(fstd, fstd.mean())
    kshape = tuple(layer.kernel.shape)
    k, n = kshape[-2], kshape[-1]
    w = rng.normal(0.0, 1.0, size=(k, n)) / fstd[:, None] / np.sqrt(k)
    z = (f - fmean) @ w
    w *= logit_std / (z.std() + 1e-9)
    b = -(fmean @ w) + rng.normal(0.0, 0.3, size=n)
    layer.set_weights([w.reshape(kshape).astype(np.float32), b.astype(np.float32)])


def finish(name, m, rng, classifier=None, std_floor=False):
    data = calib_data(name, m)
    fit_batchnorms(m, data, rng)
    if classifier is not None:
        fit_classifier_any(m, classifier, data, rng, std_floor=std_floor)
    return m


# --------------------------------------------------------------------------
# MobileNet V1 / V2 from keras.applications (weights=None), batch 1


def mobilenet(name, rng, version, alpha, res, kind="laplace", post=None):
    x = keras.Input(shape=(res, res, 3), batch_size=1, name="x")
    if version == 1:
        m = keras.applications.MobileNet(input_tensor=x, alpha=alpha, weights=None, classes=10,
                                         include_top=True, dropout=0.0)
        cls = m.get_layer("conv_preds")
    else:
        m = keras.applications.MobileNetV2(input_tensor=x, alpha=alpha, weights=None, classes=10,
                                           include_top=True)
        cls = m.get_layer("predictions")
    init_all(m, rng, kind, post=post)
    return finish(name, m, rng, cls)


@net("mobilenet_v1_025_96")
def _(name, rng):
    return mobilenet(name, rng, 1, 0.25, 96), "int8"


@net("mobilenet_v1_050_128_clustered")
def _(name, rng):
    return mobilenet(name, rng, 1, 0.5, 128, post=lambda w: cluster(w, 16)), "int8"


@net("mobilenet_v2_035_96")
def _(name, rng):
    return mobilenet(name, rng, 2, 0.35, 96, kind="gauss"), "int8"


@net("mobilenet_v2_100_224")
def _(name, rng):
    # The full-size reference network (models/large/; parse+lower benchmark).
    return mobilenet(name, rng, 2, 1.0, 224), "int8"


@net("mobilenet_v2_050_128_pruned")
def _(name, rng):
    return mobilenet(name, rng, 2, 0.5, 128, post=prune_2_4), "int8"


# --------------------------------------------------------------------------
# MLPerf Tiny


def resnet8_model(name, rng):
    """MLPerf Tiny image classification ResNet-8 (CIFAR-10, 32x32x3), Laplacian weights."""
    x = inp((1, 32, 32, 3))

    def cbr(t, c, s, relu=True):
        t = layers.Conv2D(c, 3, strides=s, padding="same")(t)
        t = layers.BatchNormalization()(t)
        return layers.Activation("relu")(t) if relu else t

    t = cbr(x, 16, 1)
    for c, s in ((16, 1), (32, 2), (64, 2)):
        y = cbr(t, c, s)
        y = layers.Conv2D(c, 3, padding="same")(y)
        y = layers.BatchNormalization()(y)
        if s != 1:
            t = layers.Conv2D(c, 1, strides=s)(t)
        t = layers.Activation("relu")(layers.Add()([t, y]))
    t = layers.AveragePooling2D(pool_size=8)(t)
    t = layers.Flatten()(t)
    fc = layers.Dense(10)
    y = layers.Softmax()(fc(t))
    m = keras.Model(x, y)
    init_all(m, rng, "laplace", gain=1.2)
    return finish(name, m, rng, fc, std_floor=True)


@net("resnet8")
def _(name, rng):
    return resnet8_model(name, rng), "int8"


@net("resnet8_16x8")
def _(name, rng):
    # issue 16 A.5: the 16x8 ResNet-8 whose Vela stream differed from TFLite in one byte
    return resnet8_model(name, rng), "16x8"


def ds_cnn_model(name, rng):
    """MLPerf Tiny keyword spotting DS-CNN (49x10 MFCC input, 12 classes)."""
    x = inp((1, 49, 10, 1))
    t = layers.Conv2D(64, (10, 4), strides=2, padding="same")(x)
    t = layers.Activation("relu")(layers.BatchNormalization()(t))
    for _ in range(4):
        t = layers.DepthwiseConv2D(3, padding="same")(t)
        t = layers.Activation("relu")(layers.BatchNormalization()(t))
        t = layers.Conv2D(64, 1)(t)
        t = layers.Activation("relu")(layers.BatchNormalization()(t))
    t = layers.AveragePooling2D(pool_size=(25, 5))(t)
    t = layers.Flatten()(t)
    fc = layers.Dense(12)
    y = layers.Softmax()(fc(t))
    m = keras.Model(x, y)
    init_all(m, rng, "laplace", post=lambda w: cluster(w, 16))
    return finish(name, m, rng, fc)


@net("ds_cnn")
def _(name, rng):
    return ds_cnn_model(name, rng), "int8"


@net("ds_cnn_16x8")
def _(name, rng):
    return ds_cnn_model(name, rng), "16x8"


@net("dense_autoencoder")
def _(name, rng):
    """MLPerf Tiny anomaly detection autoencoder (640 -> 8 -> 640)."""
    x = inp((1, 640))
    t = x
    for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        t = layers.Dense(units)(t)
        t = layers.Activation("relu")(layers.BatchNormalization()(t))
    y = layers.Dense(640)(t)
    m = keras.Model(x, y)
    init_all(m, rng, "laplace", gain=1.2)
    return finish(name, m, rng), "int8"


# --------------------------------------------------------------------------
# transformer encoder


def layer_norm(t, dim, rng, eps=1e-3):
    """mean / squared difference / rsqrt (Keras' LayerNormalization leaves a float NEG)."""
    gamma = tf.constant(rng.uniform(0.7, 1.3, size=(dim,)).astype(np.float32))
    beta = tf.constant(rng.normal(0.0, 0.2, size=(dim,)).astype(np.float32))

    def f(x):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        var = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + eps) * gamma + beta

    return layers.Lambda(f)(t)


@net("transformer_encoder")
def _(name, rng):
    """2 pre-norm encoder layers, 16 tokens of width 32, 2 heads, FFN 64 with
    GELU; attention with BATCH_MATMUL + SOFTMAX; mean over tokens, classifier."""
    seq, dim, heads, ffn = 16, 32, 2, 64
    hd = dim // heads
    x = inp((1, seq, dim))
    t = x
    for _ in range(2):
        h = layer_norm(t, dim, rng)
        q, k, v = (layers.Dense(dim)(h) for _ in range(3))

        def split(a):
            return tf.transpose(tf.reshape(a, (-1, seq, heads, hd)), (0, 2, 1, 3))

        def attn(a):
            qh, kh, vh = split(a[0]), split(a[1]), split(a[2])
            s = tf.matmul(qh, kh, transpose_b=True) * (1.0 / np.sqrt(hd))
            p = tf.nn.softmax(s, axis=-1)
            o = tf.matmul(p, vh)
            return tf.reshape(tf.transpose(o, (0, 2, 1, 3)), (-1, seq, dim))

        o = layers.Lambda(attn)([q, k, v])
        t = layers.Add()([t, layers.Dense(dim)(o)])
        h = layer_norm(t, dim, rng)
        h = layers.Dense(ffn)(h)
        h = layers.Lambda(lambda a: tf.nn.gelu(a, approximate=True))(h)
        t = layers.Add()([t, layers.Dense(dim)(h)])
    t = layer_norm(t, dim, rng)
    t = layers.Lambda(lambda a: tf.reduce_mean(a, axis=1))(t)
    fc = layers.Dense(8)
    y = layers.Softmax()(fc(t))
    m = keras.Model(x, y)
    init_all(m, rng, "gauss", gain=1.0)
    return finish(name, m, rng, fc), "int8"


@model("transformer_post_ln_relu", kind="multi-op")
def _(name, rng):
    """Issue 16 A.2: one post-LN encoder block, 32 tokens of width 64, 2 heads,
    explicit LayerNorm (MEAN, SQUARED_DIFFERENCE, RSQRT), ReLU MLP 128."""
    seq, dim, heads, ffn = 32, 64, 2, 128
    hd = dim // heads
    x = inp((1, seq, dim))
    q, k, v = (layers.Dense(dim)(x) for _ in range(3))

    def split(a):
        return tf.transpose(tf.reshape(a, (-1, seq, heads, hd)), (0, 2, 1, 3))

    def attn(a):
        qh, kh, vh = split(a[0]), split(a[1]), split(a[2])
        s = tf.matmul(qh, kh, transpose_b=True) * (1.0 / np.sqrt(hd))
        p = tf.nn.softmax(s, axis=-1)
        o = tf.matmul(p, vh)
        return tf.reshape(tf.transpose(o, (0, 2, 1, 3)), (-1, seq, dim))

    o = layers.Lambda(attn)([q, k, v])
    t = layer_norm(layers.Add()([x, layers.Dense(dim)(o)]), dim, rng)
    h = layers.Dense(ffn, activation="relu")(t)
    t = layer_norm(layers.Add()([t, layers.Dense(dim)(h)]), dim, rng)
    m = keras.Model(x, t)
    init_all(m, rng, "gauss", gain=1.0)
    return finish(name, m, rng), "int8"


@model("transformer_post_ln_mha", kind="multi-op")
def _(name, rng):
    """Issue 16 A.2 (Keras MultiHeadAttention form): one post-LN encoder block, 32 tokens of
    width 64, 2 heads, explicit LayerNorm, ReLU MLP 128."""
    seq, dim, heads, ffn = 32, 64, 2, 128
    x = inp((1, seq, dim))
    o = layers.MultiHeadAttention(num_heads=heads, key_dim=dim // heads)(x, x)
    t = layer_norm(layers.Add()([x, o]), dim, rng)
    h = layers.Dense(ffn, activation="relu")(t)
    t = layer_norm(layers.Add()([t, layers.Dense(dim)(h)]), dim, rng)
    m = keras.Model(x, t)
    init_all(m, rng, "gauss", gain=1.0)
    for l in m.layers:
        if isinstance(l, layers.MultiHeadAttention):
            l.set_weights([rng.normal(0.0, 1.0 / np.sqrt(w.shape[0]), size=w.shape).astype(np.float32)
                           if w.ndim > 1 else rng.normal(0.0, 0.1, size=w.shape).astype(np.float32)
                           for w in l.get_weights()])
    return finish(name, m, rng), "int8"


# --------------------------------------------------------------------------
# EfficientNet-style MBConv blocks with squeeze-excite


@net("efficientnet_se")
def _(name, rng):
    x = inp((1, 64, 64, 3))

    def bn_act(t, act="swish"):
        t = layers.BatchNormalization()(t)
        return layers.Activation(act)(t) if act else t

    def mbconv(t, cin, cout, expand, k, s):
        h = t
        c = cin * expand
        if expand != 1:
            h = bn_act(layers.Conv2D(c, 1, use_bias=False)(h))
        h = bn_act(layers.DepthwiseConv2D(k, strides=s, padding="same", use_bias=False)(h))
        se = layers.GlobalAveragePooling2D(keepdims=True)(h)
        se = layers.Conv2D(max(1, cin // 4), 1, activation="swish")(se)
        se = layers.Conv2D(c, 1, activation="sigmoid")(se)
        h = layers.Multiply()([h, se])
        h = bn_act(layers.Conv2D(cout, 1, use_bias=False)(h), act=None)
        if s == 1 and cin == cout:
            h = layers.Add()([t, h])
        return h

    t = bn_act(layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(x))  # 32x32
    t = mbconv(t, 16, 16, 1, 3, 1)
    t = mbconv(t, 16, 24, 4, 3, 2)  # 16x16
    t = mbconv(t, 24, 24, 4, 3, 1)
    t = mbconv(t, 24, 40, 4, 5, 2)  # 8x8
    t = mbconv(t, 40, 40, 4, 5, 1)
    t = bn_act(layers.Conv2D(128, 1, use_bias=False)(t))
    t = layers.GlobalAveragePooling2D()(t)
    fc = layers.Dense(10)
    y = layers.Softmax()(fc(t))
    m = keras.Model(x, y)
    init_all(m, rng, "laplace", gain=1.0)
    return finish(name, m, rng, fc), "int8"


# --------------------------------------------------------------------------
# U-Net-style segmenter


@net("unet_small")
def _(name, rng):
    x = inp((1, 32, 32, 3))

    def block(t, c):
        for _ in range(2):
            t = layers.Conv2D(c, 3, padding="same", use_bias=False)(t)
            t = layers.Activation("relu")(layers.BatchNormalization()(t))
        return t

    e1 = block(x, 8)  # 32x32
    e2 = block(layers.MaxPooling2D(2)(e1), 16)  # 16x16
    b = block(layers.MaxPooling2D(2)(e2), 32)  # 8x8
    u2 = layers.Conv2DTranspose(16, 2, strides=2)(b)
    d2 = block(layers.Concatenate()([u2, e2]), 16)
    u1 = layers.Conv2DTranspose(8, 2, strides=2)(d2)
    d1 = block(layers.Concatenate()([u1, e1]), 8)
    y = layers.Softmax()(layers.Conv2D(4, 1)(d1))
    m = keras.Model(x, y)
    init_all(m, rng, "laplace", gain=1.2)
    return finish(name, m, rng), "int8"
