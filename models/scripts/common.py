"""Helpers shared by the npuc fixture scripts (make_models.py, make_goldens.py).

Everything here is seeded: the same name always gives the same numbers.
"""
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.dirname(HERE)
TFLITE_DIR = os.path.join(MODELS_DIR, "tflite")
VELA_DIR = os.path.join(MODELS_DIR, "vela")
GOLDEN_DIR = os.path.join(MODELS_DIR, "golden")

# Large networks live under models/large/{tflite,golden,vela/<cfg>} so that the
# per-model test sweeps over models/tflite and models/vela (which run every model
# on the simulator) stay fast; they are compiled by Vela for LARGE_VELA_CONFIGS only.
LARGE_DIR = os.path.join(MODELS_DIR, "large")
LARGE_NETWORKS = ["mobilenet_v2_100_224"]
LARGE_VELA_CONFIGS = ["u85_256"]


def root_of(name):
    """models/ or models/large/ for a model name."""
    return LARGE_DIR if name in LARGE_NETWORKS else MODELS_DIR


def tflite_path(name):
    return os.path.join(root_of(name), "tflite", name + ".tflite")


def golden_dir(name):
    return os.path.join(root_of(name), "golden", name)


def vela_root(name):
    return os.path.join(root_of(name), "vela")


def seed_for(*parts):
    """A stable 32-bit seed from strings (crc32, not Python's salted hash)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode("utf-8"))


def rng_for(*parts):
    return np.random.default_rng(seed_for(*parts))


def structured_sample(rng, shape):
    """One float sample in [-1, 1] that contains exactly -1 and +1.

    Plain i.i.d. noise makes globally pooled networks give the same answer for
    every input, so 4-D (NHWC) samples get a per-channel offset and a per-channel
    linear gradient in addition to the noise.  The sample is min-max normalised,
    so that after quantisation it spans the whole integer range.
    """
    shape = tuple(shape)
    noise = rng.uniform(-1.0, 1.0, size=shape) * rng.uniform(0.3, 1.0)
    x = noise
    if len(shape) == 4:
        _, h, w, c = shape
        off = rng.uniform(-0.6, 0.6, size=(1, 1, 1, c))
        gy = rng.uniform(-1.0, 1.0, size=(1, 1, 1, c))
        gx = rng.uniform(-1.0, 1.0, size=(1, 1, 1, c))
        yy = np.linspace(-1.0, 1.0, h).reshape(1, h, 1, 1)
        xx = np.linspace(-1.0, 1.0, w).reshape(1, 1, w, 1)
        x = x + off + gy * yy + gx * xx
    else:
        x = x + rng.uniform(-0.5, 0.5)
    lo, hi = x.min(), x.max()
    x = (x - lo) / (hi - lo) * 2.0 - 1.0
    # exact extremes, whatever rounding did
    flat = x.reshape(-1)
    flat[np.argmin(flat)] = -1.0
    flat[np.argmax(flat)] = 1.0
    return x.astype(np.float32)


def quantize_full_range(x, dtype):
    """Map a float sample in [-1, 1] onto the full range of an integer dtype."""
    info = np.iinfo(dtype)
    q = np.round((x.astype(np.float64) + 1.0) / 2.0 * (info.max - info.min) + info.min)
    return np.clip(q, info.min, info.max).astype(dtype)


# The first fixtures (compiled for every Vela configuration, incl. Sram_Only).
ORIGINAL = [
    "conv2d_3x3_relu", "conv2d_s2_valid", "depthwise3x3", "dense", "add_broadcast", "mul",
    "maxpool", "avgpool", "concat", "resize_bilinear", "softmax", "conv2d_16x8",
    "mobilenet_tiny", "two_npu_subgraphs",
]

# Whole networks (networks.py); also compiled with Sram_Only.
NETWORKS = [
    "mobilenet_v1_025_96", "mobilenet_v1_050_128_clustered", "mobilenet_v2_035_96",
    "mobilenet_v2_050_128_pruned", "resnet8", "resnet8_16x8", "ds_cnn", "ds_cnn_16x8", "dense_autoencoder",
    "transformer_encoder", "efficientnet_se", "unet_small",
]

# Edge cases of the convolution family (edgecases.py, names "edge_*"): TFLite goldens only,
# not compiled by Vela (the corpus is near its size budget).
EDGE_PREFIX = "edge_"


def no_vela(name):
    """Models compile_vela.py leaves out."""
    return name.startswith(EDGE_PREFIX)


# Models without a TFLite golden, and why (oracles.md).
NO_GOLDEN = {
    "depth_to_space": "int8 DEPTH_TO_SPACE has no TFLite reference kernel",
}

# Models the TF 2.21 converter leaves float around one operator (DEQUANTIZE -> float op
# -> QUANTIZE, with both the MLIR and the legacy quantizer): make_models.strip_qdq removes the
# DEQUANTIZE/QUANTIZE so the operator runs on the int8 tensors with the calibrated
# quantisation (TFLite has int8 kernels for all three).
STRIP_QDQ = {"elu", "neg", "not_equal"}

# Models whose golden comes from the optimised TFLite kernels (no XNNPACK),
# because TF 2.21's reference op resolver has no kernel for that op version.
# Data movement (exact in every kernel), or float.
OPTIMISED_GOLDEN = {
    "reverse_w": "REVERSE_V2 version 3 has no reference kernel",
    "reverse_h": "REVERSE_V2 version 3 has no reference kernel",
    "tile_hw": "TILE version 3 has no reference kernel",
    "tile_c": "TILE version 3 has no reference kernel",
    "elu": "int8 ELU version 1 has no reference kernel (the optimised one is the same LUT)",
    "sum_hw": "the int8 SUM reference kernel gives wrong results (oracles.md); the "
    "optimised kernel rescales the integer sum in float",
    "sum_16x8": "the int16 SUM reference kernel is broken (returns the same -1/0 for every "
    "input); the optimised kernel saturates the integer sum",
}

# Raw input values replaced in the golden inputs: {model: {input index: {bad: replacement}}}.
# div: the int8 DIV kernel refuses a divisor whose raw int8 value is 0 (not the zero point);
# the divisor is ADD(x1, 1.5) and x1 = -32 is the one input value giving it the raw value 0.
GOLDEN_INPUT_REPLACE = {"div": {0: {-32: -31}}, "legacy_u8_div": {1: {0: 1}}}

# Models whose golden inputs are positive: k -> max(1, (k + 32768) // 2), so
# 1..32767 (int16 RSQRT fails on inputs <= 0; int16 has zero point 0).
POSITIVE_GOLDEN_INPUT = {"rsqrt_16x8"}
