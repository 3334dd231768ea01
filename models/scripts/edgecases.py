"""Edge cases of the convolution family (imported by make_models.py).

Tiny models at the corners of Vela 5.2's U85 constraint space that the single-op
corpus does not reach: strides above 3 (CONV_2D, DEPTHWISE_CONV_2D, pooling),
kernels beyond the hardware's 64x64, patchifying convolutions, dilation 4,
batches above 1, 1x1x1 tensors, 1000+ channels, TRANSPOSE_CONV with strides
other than 1x1 and 2x2 (and kernels smaller than the stride), large average
pooling windows with strides, 4-D FULLY_CONNECTED inputs and BATCH_MATMUL with
a constant right-hand side, int8 and 16x8.

Every name starts with "edge_": these models get TFLite reference-kernel
goldens (make_goldens.py) but no Vela outputs (common.no_vela; the corpus is
near its size budget).
"""
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from make_models import bell, inp, model
from singleops import ACTS, binary, conv, dense, dwconv, pool, with_const

# --------------------------------------------------------------------------
# CONV_2D

conv("edge_conv_s4_same", (1, 13, 11, 3), 5, 3, s=4)
conv("edge_conv_s5_valid_relu", (1, 17, 16, 4), 6, 5, s=5, pad="valid", act="relu")
conv("edge_conv_11x11_s4_valid", (1, 27, 27, 3), 8, 11, s=4, pad="valid")
conv("edge_conv_1x1_s4", (1, 9, 10, 6), 5, 1, s=4)
conv("edge_conv_s1x5", (1, 6, 21, 4), 7, (3, 5), s=(1, 5))
conv("edge_conv_s6x2_valid_relu6", (1, 20, 9, 3), 4, (4, 3), s=(6, 2), pad="valid", act="relu6")
conv("edge_conv_patchify_8", (1, 16, 24, 3), 12, 8, s=8, pad="valid")
conv("edge_conv_66x66_valid", (1, 68, 67, 1), 2, 66, pad="valid")
conv("edge_conv_1x80_valid", (1, 1, 90, 2), 4, (1, 80), pad="valid")
conv("edge_conv_dil4", (1, 14, 15, 3), 4, 3, dil=4)
conv("edge_conv_batch2", (2, 7, 8, 3), 5, 3, s=2, act="relu")
conv("edge_conv_1x1x1", (1, 1, 1, 1), 1, 1)
conv("edge_conv_3x3_on_1x1", (1, 1, 1, 4), 3, 3)
conv("edge_conv_1100_channels", (1, 3, 2, 8), 1100, 1, act="relu", wkind="gauss")
conv("edge_conv_relu_n1_s4", (1, 12, 12, 5), 4, 4, s=4, act="relu_n1", gain=0.8)
conv("edge_conv_16x8_s4", (1, 13, 12, 3), 6, 3, s=4, quant="16x8")
conv("edge_conv_16x8_batch2_s5", (2, 11, 11, 2), 4, 5, s=5, pad="valid", quant="16x8")

# --------------------------------------------------------------------------
# DEPTHWISE_CONV_2D

dwconv("edge_dw_s4_same", (1, 13, 14, 6), 3, s=4)
dwconv("edge_dw_s5_valid_relu6", (1, 16, 17, 4), 5, s=5, pad="valid", act="relu6")
dwconv("edge_dw_mult8_1ch", (1, 8, 9, 1), 3, mult=8)
dwconv("edge_dw_mult3_s4", (1, 12, 12, 3), 3, s=4, mult=3)
dwconv("edge_dw_dil3", (1, 13, 12, 5), 3, dil=3)
dwconv("edge_dw_batch3", (3, 6, 7, 4), 3, s=2, act="relu")
dwconv("edge_dw_10x10_valid", (1, 12, 12, 3), 10, pad="valid")
dwconv("edge_dw_16x8_s4", (1, 12, 13, 5), 3, s=4, quant="16x8")

# --------------------------------------------------------------------------
# FULLY_CONNECTED

dense("edge_fc_1100", (1, 24), 1100, act="relu")
dense("edge_fc_4d_input", (1, 2, 3, 8), 5)
dense("edge_fc_16x8_nobias_batch3", (3, 20), 7, bias=False, quant="16x8")
dense("edge_fc_1_to_1", (1, 1), 1)

# --------------------------------------------------------------------------
# TRANSPOSE_CONV (any stride; the output is IFM * stride for SAME)


def tconv(name, shape, cout, k, s, pad="same", act="none", quant="int8"):
    @model(name)
    def _(n, r):
        x = inp(shape)
        c = layers.Conv2DTranspose(cout, k, strides=s, padding=pad, activation=ACTS[act])
        m = keras.Model(x, c(x))
        shp = tuple(c.kernel.shape)  # [kh, kw, cout, cin]
        sy, sx = (s, s) if isinstance(s, int) else s
        w = bell(r, shp, shp[0] * shp[1] * shp[3] / (sy * sx), "laplace", 1.5)
        c.set_weights([w, r.normal(0.0, 0.3, size=(shp[2],)).astype(np.float32)])
        return m, quant


tconv("edge_tconv_s3_same", (1, 4, 5, 6), 5, 3, 3)
tconv("edge_tconv_s4_valid", (1, 3, 4, 4), 3, 5, 4, pad="valid")
tconv("edge_tconv_s2x1", (1, 5, 6, 4), 6, 3, (2, 1))
tconv("edge_tconv_s1x3_relu", (1, 6, 3, 3), 4, (2, 4), (1, 3), act="relu")
tconv("edge_tconv_k2_s4", (1, 3, 3, 5), 4, 2, 4)
tconv("edge_tconv_16x8_s3", (1, 4, 4, 3), 4, 3, 3, quant="16x8")
tconv("edge_tconv_batch2", (2, 4, 3, 4), 3, 3, 2)

# --------------------------------------------------------------------------
# pooling

pool("edge_maxpool_s4_same", (1, 13, 14, 5), "max", 3, 4, "same")
pool("edge_maxpool_4x4_s4", (1, 16, 12, 4), "max", 4, 4, "valid")
pool("edge_maxpool_global_20", (1, 20, 20, 3), "max", 20, 1, "valid")
pool("edge_maxpool_batch3", (3, 8, 8, 2), "max", 2, 2, "valid")
pool("edge_avgpool_s4_same", (1, 14, 13, 6), "avg", 3, 4, "same")
pool("edge_avgpool_5x5_s5_valid", (1, 15, 16, 4), "avg", 5, 5, "valid")
pool("edge_avgpool_12x12_s4_valid", (1, 20, 20, 3), "avg", 12, 4, "valid")
pool("edge_avgpool_16x8_s4_same", (1, 13, 12, 4), "avg", 3, 4, "same", quant="16x8")
pool("edge_avgpool_batch2", (2, 8, 9, 3), "avg", 3, 2, "same")

# --------------------------------------------------------------------------
# BATCH_MATMUL

# a 2-D constant right-hand side: the converter writes a FULLY_CONNECTED (keep_num_dims)
with_const("edge_matmul_const_b_fc", (1, 5, 8), (8, 6), tf.matmul)
with_const("edge_matmul_const_b_batched", (2, 4, 8), (2, 8, 5), tf.matmul)
with_const("edge_matmul_16x8_const_b", (2, 4, 6), (2, 6, 3), tf.matmul, quant="16x8")
binary("edge_matmul_adj_both", (1, 7, 4), (1, 5, 7),
       lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True))
