#!/usr/bin/env python3
"""Models with float (f32) operators, their goldens and their Vela compilations.

Real int8 models keep small float islands the converter cannot quantize (a Keras
LayerNormalization becomes ... DEQUANTIZE -> NEG -> QUANTIZE ...), and a model
with float inputs/outputs starts with QUANTIZE and ends with DEQUANTIZE.  These
operators run on the CPU; `npuc run` executes them on the IR's reference
interpreter.  This script writes, under models/float/:

    tflite/<name>.tflite                     the model
    golden/<name>/input<i>_<k>.npy           graph input i, sample k (0..2)
    golden/<name>/output<j>_<k>.npy          outputs of TFLite's reference kernels
                                             (OpResolverType.BUILTIN_REF)
    vela/u85_256/<name>_vela.tflite          Vela 5.2, ethos-u85-256, default system

Models:
    layernorm        int8: CONV_2D, LayerNormalization (its NEG stays in float)
    float_io         float32 in/out around an int8 CONV_2D: QUANTIZE, CONV_2D,
                     DEQUANTIZE; the inputs include values on and next to the
                     rounding ties of the input scale
    float_io_16x8    the same with int16 activations (int16 QUANTIZE/DEQUANTIZE)
                     (a 16x8 LayerNormalization does not convert: no int16 NEG)
    float_ops        an all-float graph: every float operator npuc runs (unary,
                     binary with broadcasting and fused activations, overflow to
                     inf, MEAN, SUM, SOFTMAX, FULLY_CONNECTED, layout operators)
    float_elu        float ELU (goldens from BUILTIN_WITHOUT_DEFAULT_DELEGATES: the reference
                     resolver has no ELU, the builtin one has TFLite's only ELU kernel;
                     XNNPACK, which would take over, is left out)

    python make_float_islands.py          (in the fixture venv, scripts/setup_venv.sh)
"""
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python.interpreter import OpResolverType  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "float")
L = tf.keras.layers
N_SAMPLES = 3
VELA_FLAGS = ["--accelerator-config", "ethos-u85-256", "--config", "Arm/vela.ini",
              "--system-config", "Ethos_U85_SYS_DRAM_Mid", "--memory-mode", "Dedicated_Sram_384KB"]


def inp(shape):
    return tf.keras.Input(shape, batch_size=1)


def seeded_weights(model, seed):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        ws = layer.get_weights()
        if ws:
            layer.set_weights([rng.uniform(-0.8, 0.8, w.shape).astype(np.float32) for w in ws])


def layernorm():
    i = inp((6, 16))
    x = L.Conv1D(16, 3, padding="same")(i)
    x = L.LayerNormalization()(x)
    return tf.keras.Model(i, x), (6, 16)


def float_io():
    i = inp((6, 6, 3))
    x = L.Conv2D(4, 3, activation="relu")(i)
    return tf.keras.Model(i, x), (6, 6, 3)


def float_ops():
    def body(t):
        x, dense = t
        a = tf.math.abs(x)
        units = [
            tf.exp(x), tf.math.log(a + 0.25), tf.sqrt(a), tf.math.rsqrt(a + 0.1), tf.tanh(x),
            tf.sigmoid(x * 12.0), tf.nn.relu(x), tf.nn.relu6(x * 4.0), -x,
            x + tf.exp(x * 60.0),  # e^120 is inf; ADD's activation range makes it FLT_MAX
            x - tf.reduce_mean(x, axis=-1, keepdims=True),
            x * tf.reduce_sum(x, axis=1, keepdims=True),
            x / (a + 0.5), tf.math.squared_difference(x, tf.tanh(x)),
            tf.maximum(x, 0.3), tf.minimum(x, -0.2),
            tf.nn.softmax(x * 3.0), dense,
            tf.transpose(tf.reshape(x, (1, 6, 4)), (0, 2, 1)),
        ]
        y = tf.concat([tf.reshape(u, (1, 4, 6)) for u in units], axis=-1)
        return [y, tf.reduce_mean(x, axis=[1, 2])]

    i = inp((4, 6))
    x = L.Lambda(lambda t: t * 2.0)(i)
    d = L.Dense(6, activation="relu")(x)
    y, m = L.Lambda(body)([x, d])
    return tf.keras.Model(i, [y, m]), (4, 6)


def float_elu():
    i = inp((4, 6))
    x = L.Lambda(lambda t: tf.nn.elu(t * 3.0) + t)(i)
    return tf.keras.Model(i, x), (4, 6)


def convert(name, build, mode):
    tf.keras.backend.clear_session()
    tf.random.set_seed(1)
    np.random.seed(1)
    model, shape = build()
    seeded_weights(model, 7)
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float":
        rng = np.random.default_rng(3)
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = lambda: (
            [rng.uniform(-1, 1, (1,) + shape).astype(np.float32)] for _ in range(30))
        if mode == "float_io_16x8":
            c.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        elif mode == "int8":
            c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            c.inference_input_type = c.inference_output_type = tf.int8
        else:  # float in/out, int8 inside
            c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    path = os.path.join(OUT, "tflite", name + ".tflite")
    with open(path, "wb") as f:
        f.write(c.convert())
    return path


def sample(d, k, name):
    rng = np.random.default_rng([k, sum(map(ord, name))])
    shape, dt = d["shape"], d["dtype"]
    if dt != np.float32:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max + 1, shape)
        x.flat[0], x.flat[-1] = info.min, info.max
        return x.astype(dt)
    x = rng.uniform(-1.2, 1.2, shape).astype(np.float32)
    scale = d["quantization_parameters"]["scales"]
    if name.startswith("float_io"):
        # Values on the rounding ties of the QUANTIZE after the input, and one ulp on either
        # side of them.
        s = np.float32(scale[0]) if len(scale) else None
        if s is None:
            raise SystemExit(f"{name}: no input scale found")
        flat = x.reshape(-1)
        ties = (np.arange(flat.size) % 40 - 20 + 0.5).astype(np.float32) * s
        step = np.array([0, 1, -1], dtype=np.int32)[np.arange(flat.size) % 3]
        flat[:] = np.nextafter(ties, np.where(step > 0, np.inf, -np.inf).astype(np.float32))
        flat[step == 0] = ties[step == 0]
        x = flat.reshape(shape)
    return x


def goldens(name, path):
    gdir = os.path.join(OUT, "golden", name)
    shutil.rmtree(gdir, ignore_errors=True)
    os.makedirs(gdir)
    # The reference resolver has no ELU; TFLite's one ELU kernel is in the builtin one.
    resolver = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if name in BUILTIN_GOLDEN else OpResolverType.BUILTIN_REF
    it = tf.lite.Interpreter(model_path=path, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    ins = it.get_input_details()
    if name.startswith("float_io"):
        # The scale of the QUANTIZE right after the input.
        q = next(o for o in it._get_ops_details() if o["op_name"] == "QUANTIZE")
        tq = it._get_tensor_details(q["outputs"][0], 0)
        ins = [dict(ins[0], quantization_parameters=tq["quantization_parameters"])]
    for k in range(N_SAMPLES):
        for i, d in enumerate(ins):
            x = sample(d, k, name)
            it.set_tensor(d["index"], x)
            np.save(os.path.join(gdir, f"input{i}_{k}.npy"), x)
        it.invoke()
        for j, d in enumerate(it.get_output_details()):
            np.save(os.path.join(gdir, f"output{j}_{k}.npy"), it.get_tensor(d["index"]))


def vela(name, path):
    vela_bin = os.path.join(os.path.dirname(sys.executable), "vela")
    dst = os.path.join(OUT, "vela", "u85_256")
    os.makedirs(dst, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([vela_bin, *VELA_FLAGS, "--output-dir", tmp, path], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.copy(os.path.join(tmp, name + "_vela.tflite"), dst)


BUILTIN_GOLDEN = ["float_elu"]

MODELS = [
    ("layernorm", layernorm, "int8"),
    ("float_io", float_io, "float_io"),
    ("float_io_16x8", float_io, "float_io_16x8"),
    ("float_ops", float_ops, "float"),
    ("float_elu", float_elu, "float"),
]


def main():
    os.makedirs(os.path.join(OUT, "tflite"), exist_ok=True)
    want = sys.argv[1:]
    for name, build, mode in MODELS:
        if want and name not in want:
            continue
        path = convert(name, build, mode)
        goldens(name, path)
        vela(name, path)
        ops = [o["op_name"] for o in tf.lite.Interpreter(model_path=path)._get_ops_details()]
        print(name, " ".join(ops), flush=True)


if __name__ == "__main__":
    main()
