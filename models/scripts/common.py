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
