#!/usr/bin/env python3
"""Golden inputs and outputs for every models/tflite/*.tflite.

For each model, N_SAMPLES seeded inputs spanning the whole integer range of
the input type (each input contains its minimum and maximum; a one-element
input is the minimum, the maximum, then -1), and the outputs
of the TFLite *reference* kernels (OpResolverType.BUILTIN_REF; the optimised
kernels differ by +-1 LSB on some ops):

    models/golden/<name>/input<i>_<k>.npy    graph input i (subgraph input order), sample k
    models/golden/<name>/output<j>_<k>.npy   graph output j (subgraph output order), sample k
    models/golden/<name>/meta.json           names, shapes, dtypes, quantisation

    python make_goldens.py [NAME ...]

Fails if some output is identical for all samples.
"""
import glob
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    LARGE_NETWORKS,
    NO_GOLDEN,
    GOLDEN_INPUT_REPLACE,
    OPTIMISED_GOLDEN,
    POSITIVE_GOLDEN_INPUT,
    MODELS_DIR,
    TFLITE_DIR,
    golden_dir,
    quantize_full_range,
    tflite_path,
    rng_for,
    structured_sample,
)

N_SAMPLES = 3


def tensor_meta(d):
    q = d["quantization_parameters"]
    return {
        "name": d["name"],
        "tensor_index": int(d["index"]),
        "shape": [int(x) for x in d["shape"]],
        "dtype": np.dtype(d["dtype"]).name,
        "scale": [float(x) for x in q["scales"]],
        "zero_point": [int(x) for x in q["zero_points"]],
        "quantized_dimension": int(q["quantized_dimension"]),
    }


def dump_meta(meta):
    """JSON with one line per tensor."""
    lines = ["{"]
    keys = list(meta)
    for n, key in enumerate(keys):
        comma = "," if n + 1 < len(keys) else ""
        v = meta[key]
        if isinstance(v, list):
            lines.append(f' "{key}": [')
            for m, t in enumerate(v):
                lines.append("  " + json.dumps(t) + ("," if m + 1 < len(v) else ""))
            lines.append(" ]" + comma)
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(v)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_npy(path, arr):
    # np.save is deterministic (header + raw little-endian data)
    np.save(path, np.ascontiguousarray(arr), allow_pickle=False)


def golden(name):
    if name in NO_GOLDEN:  # known-bad reference kernels (oracles.md)
        import shutil

        shutil.rmtree(golden_dir(name), ignore_errors=True)
        print(f"{name:20s} no golden: {NO_GOLDEN[name]}", flush=True)
        return
    path = tflite_path(name)
    resolver = "BUILTIN_WITHOUT_DEFAULT_DELEGATES" if name in OPTIMISED_GOLDEN else "BUILTIN_REF"
    interp = tf.lite.Interpreter(
        model_path=path,
        experimental_op_resolver_type=getattr(tf.lite.experimental.OpResolverType, resolver),
    )
    interp.allocate_tensors()
    ins = interp.get_input_details()
    outs = interp.get_output_details()
    out_dir = golden_dir(name)
    os.makedirs(out_dir, exist_ok=True)
    for f in glob.glob(os.path.join(out_dir, "*.npy")):
        os.remove(f)

    rng = rng_for(name, "golden")
    results = []  # [sample][output]
    for k in range(N_SAMPLES):
        # every sample starts from the initial state: variable tensors (the LSTM's output and
        # cell state) back to their reset value (the zero point for int8, 0 otherwise)
        interp.reset_all_variables()
        for i, d in enumerate(ins):
            dtype = np.dtype(d["dtype"])
            info = np.iinfo(dtype)
            if int(np.prod(d["shape"])) == 1:
                # a single element cannot hold both extremes: minimum, maximum, then -1
                x = np.full(d["shape"], [info.min, info.max, -1][k % 3], dtype=dtype)
            else:
                x = quantize_full_range(structured_sample(rng, d["shape"]), dtype)
                assert x.min() == info.min and x.max() == info.max
            if name in POSITIVE_GOLDEN_INPUT:
                x = np.maximum((x.astype(np.int32) + 32768) // 2, 1).astype(dtype)
            for bad, good in GOLDEN_INPUT_REPLACE.get(name, {}).get(i, {}).items():
                x[x == bad] = good
            interp.set_tensor(d["index"], x)
            save_npy(os.path.join(out_dir, f"input{i}_{k}.npy"), x)
        interp.invoke()
        res = []
        for j, d in enumerate(outs):
            y = interp.get_tensor(d["index"]).copy()
            save_npy(os.path.join(out_dir, f"output{j}_{k}.npy"), y)
            res.append(y)
        results.append(res)

    notes = []
    for j in range(len(outs)):
        ys = [results[k][j] for k in range(N_SAMPLES)]
        distinct = len({y.tobytes() for y in ys})
        if distinct != N_SAMPLES:
            raise SystemExit(f"{name}: output {j} is the same for some samples")
        lo = min(int(y.min()) for y in ys)
        hi = max(int(y.max()) for y in ys)
        nuniq = len(np.unique(np.concatenate([y.reshape(-1) for y in ys])))
        notes.append(f"out{j} {list(ys[0].shape)} {ys[0].dtype} range [{lo},{hi}] {nuniq} distinct values")

    if name in OPTIMISED_GOLDEN:
        notes.append(f"optimised kernels: {OPTIMISED_GOLDEN[name]}")
    if name in GOLDEN_INPUT_REPLACE:
        notes.append(f"input values replaced: {GOLDEN_INPUT_REPLACE[name]}")
    meta = {
        "model": os.path.relpath(path, MODELS_DIR),
        "op_resolver": resolver,
        "tensorflow": tf.__version__,
        "samples": N_SAMPLES,
        "inputs": [tensor_meta(d) for d in ins],
        "outputs": [tensor_meta(d) for d in outs],
    }
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        f.write(dump_meta(meta))
    print(f"{name:20s} {len(ins)} input(s)  " + "; ".join(notes), flush=True)


def main(argv):
    names = argv or sorted(
        os.path.basename(p)[: -len(".tflite")] for p in glob.glob(os.path.join(TFLITE_DIR, "*.tflite"))
    ) + [n for n in LARGE_NETWORKS if os.path.exists(tflite_path(n))]
    failed = []
    for n in names:
        try:
            golden(n)
        except (Exception, SystemExit) as e:  # noqa: BLE001
            failed.append(n)
            print(f"{n:20s} FAILED: {e}", flush=True)
    if failed:
        raise SystemExit(f"no golden for {failed}")


if __name__ == "__main__":
    main(sys.argv[1:])
