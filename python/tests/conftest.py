"""Shared helpers: the repository's models and their goldens."""

import glob
import os
import pathlib

import numpy as np

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"


def goldens(directory):
    """[(inputs, outputs)] per sample of a golden directory (input<i>_<k>.npy, output<j>_<k>.npy)."""
    d = MODELS / directory
    samples = sorted({int(p.rsplit("_", 1)[1][:-4]) for p in glob.glob(str(d / "input*_*.npy"))})
    assert samples, f"no goldens in {d}"

    def arrays(kind, k):
        n = len(glob.glob(str(d / f"{kind}*_{k}.npy")))
        return [np.load(d / f"{kind}{i}_{k}.npy") for i in range(n)]

    return [(arrays("input", k), arrays("output", k)) for k in samples]


def npuc_cli():
    """The npuc executable the CI built (NPUC_BIN), for comparing messages; None if unset."""
    p = os.environ.get("NPUC_BIN")
    return p if p else None
