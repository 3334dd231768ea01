#!/usr/bin/env python3
"""TFLite reference-kernel outputs for the models of npuc's randomized operator sweep.

The Rust sweep (compiler/tests/sweep_tflite.rs, test `dump_cases`) writes one directory per
generated model: `DIR/<k>/model.tflite` and `DIR/<k>/case.json` (name, value_range,
index_range). This script runs each model on seeded inputs with the TFLite *reference*
kernels (OpResolverType.BUILTIN_REF) and writes `input<i>.npy` / `output<j>.npy`, or
`error.txt` with TFLite's refusal. The test `tflite_reference` then compares npuc's
reference interpreter and compiled containers with these outputs. Nothing here is committed
output: it is a local differential check (see docs/decisions.md, lowering section).

    python sweep_reference.py DIR
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

REF = tf.lite.experimental.OpResolverType.BUILTIN_REF
# TF 2.21's reference SUM kernel is wrong (models/README.md): SUM runs on the optimised one.
OPTIMISED = tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES


def inputs_for(details, case, seed):
    rng = np.random.default_rng(seed)
    out = []
    for d in details:
        dt = np.dtype(d["dtype"])
        shape = tuple(int(x) for x in d["shape"])
        if dt == np.bool_:
            v = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif dt in (np.int32, np.int64):
            lo, hi = case["index_range"]
            v = rng.integers(lo, hi + 1, size=shape).astype(dt)
        else:
            info = np.iinfo(dt)
            lo, hi = case.get("value_range") or (info.min, info.max)
            v = rng.integers(lo, hi + 1, size=shape).astype(dt)
            flat = v.reshape(-1)
            if flat.size >= 2 and case.get("value_range") is None:
                flat[0], flat[1] = info.min, info.max
        out.append(v)
    return out


def run_one(path):
    case = json.load(open(os.path.join(path, "case.json")))
    for f in os.listdir(path):
        if f.endswith(".npy") or f == "error.txt":
            os.remove(os.path.join(path, f))
    try:
        it = tf.lite.Interpreter(
            model_path=os.path.join(path, "model.tflite"),
            experimental_op_resolver_type=OPTIMISED if case["name"].startswith("SUM") else REF,
        )
        it.allocate_tensors()
        ins = inputs_for(it.get_input_details(), case, case["seed"])
        for d, v in zip(it.get_input_details(), ins):
            it.set_tensor(d["index"], v)
        it.invoke()
        outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    except Exception as e:  # TFLite refuses the model: record why
        msg = str(e).strip().splitlines()
        open(os.path.join(path, "error.txt"), "w").write("\n".join(msg[-3:]) + "\n")
        return False
    for i, v in enumerate(ins):
        np.save(os.path.join(path, f"input{i}.npy"), v)
    for j, v in enumerate(outs):
        np.save(os.path.join(path, f"output{j}.npy"), v)
    return True


def run_isolated(path):
    """run_one in a forked child: TFLite aborts the process on some invalid models."""
    pid = os.fork()
    if pid == 0:
        code = 0 if run_one(path) else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        open(os.path.join(path, "error.txt"), "w").write(f"TFLite crashed (signal {sig})\n")
        return False
    return os.WEXITSTATUS(status) == 0


def main():
    root = sys.argv[1]
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    ok = sum(run_isolated(os.path.join(root, d)) for d in dirs)
    print(f"{ok} of {len(dirs)} models ran on the TFLite reference kernels")


if __name__ == "__main__":
    main()
