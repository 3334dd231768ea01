#!/usr/bin/env python3
"""Models in forms the TFLite converter gives for everyday Keras / tf.function code that the
other generators do not make, with goldens from TFLite's reference kernels:

* dynamic_batch_expand_dims: a batch of None (shape_signature -1, stored shape 1). TFLite's
  interpreter allocates the stored shape until an input is resized; Vela compiles them so;
  npuc does the same (docs/decisions.md F10).
* argmax_add_i32: int32 arithmetic on ARG_MAX's output (ADD, SUB, MUL of raw int32 values).

    python make_converter_forms.py [NAME ...]   # in the fixture venv (setup_venv.sh)

Writes models/tflite/<name>.tflite and models/golden/<name>/ (make_goldens.golden).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

from common import rng_for, structured_sample, tflite_path  # noqa: E402
from make_goldens import golden  # noqa: E402
from make_models import N_CALIB, init_conv, quiet_fds  # noqa: E402


def dynamic_batch_expand_dims(rng):
    """[?, 12, 16] -> EXPAND_DIMS (axis 1) -> Conv2D 1x3 -> ReLU -> Conv2D 1x1."""
    x = keras.Input(shape=(12, 16), name="x")
    t = layers.Lambda(lambda a: tf.expand_dims(a, 1))(x)
    t = layers.Conv2D(24, (1, 3), padding="same", activation="relu")(t)
    t = layers.Conv2D(8, (1, 1))(t)
    m = keras.Model(x, t)
    for l in m.layers:
        if isinstance(l, layers.Conv2D):
            init_conv(l, rng)
    return m, [(12, 16)]


def argmax_add_i32(rng):
    """ARG_MAX (int32) -> SUB 4 -> MUL 3 -> ADD 7: TFLite's int32 kernels, no quantization."""
    x = keras.Input(shape=(6, 10), batch_size=1, name="x")
    t = layers.Lambda(
        lambda a: (tf.math.argmax(a, axis=-1, output_type=tf.int32) - 4) * 3 + 7
    )(x)
    return keras.Model(x, t), [(6, 10)]


MODELS = {
    "dynamic_batch_expand_dims": dynamic_batch_expand_dims,
    "argmax_add_i32": argmax_add_i32,
}


def convert(name, m, shapes):
    rng = rng_for(name, "calibration")

    def rep():
        for _ in range(N_CALIB):
            yield [structured_sample(rng, (1,) + s).astype(np.float32) for s in shapes]

    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    with quiet_fds():
        return conv.convert()


def main(argv):
    for name in argv or list(MODELS):
        m, shapes = MODELS[name](rng_for(name, "weights"))
        flat = convert(name, m, shapes)
        interp = tf.lite.Interpreter(model_content=flat)
        sig = [list(d["shape_signature"]) for d in interp.get_input_details()]
        if name.startswith("dynamic_batch"):
            assert all(s[0] == -1 for s in sig), f"{name}: batch is not dynamic: {sig}"
        with open(tflite_path(name), "wb") as f:
            f.write(flat)
        golden(name)


if __name__ == "__main__":
    main(sys.argv[1:])
