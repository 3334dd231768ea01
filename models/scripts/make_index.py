#!/usr/bin/env python3
"""Write models/corpus.json: one record per model of models/tflite/.

    {"name", "kind" (single-op | multi-op | network), "quant" (int8 | 16x8 | uint8: some uint8 input or output),
     "source_ops": TFLite operators of the source model in execution order,
     "inputs" / "outputs": shapes and dtypes,
     "vela": {cfg: {"ethos_u_ops": n, "cpu_ops": [TFLite ops Vela left on the CPU]}},
     "golden": true, or false with "golden_note" saying why there is none,
     "tosa": true if models/tosa/<name>.tosa exists (converted from this model)}

plus "large": the same records for the networks under models/large/ (common.LARGE_NETWORKS,
kept out of the per-model sweeps), and "tosa_only": the hand-built TOSA graphs (models/tosa/<name>.tosa without a
TFLite source).  Reads files only; run it after the other scripts.
"""
import glob
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    EDGE_PREFIX,
    LARGE_DIR,
    LARGE_NETWORKS,
    MODELS_DIR,
    NETWORKS,
    NO_GOLDEN,
    TFLITE_DIR,
    tflite_path,
)

from tensorflow.lite.python import schema_py_generated as s  # noqa: E402

OP_NAMES = {v: k for k, v in s.BuiltinOperator.__dict__.items() if not k.startswith("_")}
TYPE_NAMES = {v: k.lower() for k, v in s.TensorType.__dict__.items() if not k.startswith("_")}


def read_model(path):
    with open(path, "rb") as f:
        flat = f.read()
    m = s.Model.GetRootAsModel(flat, 0)
    sg = m.Subgraphs(0)
    ops = []
    for i in range(sg.OperatorsLength()):
        oc = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        if code == s.BuiltinOperator.CUSTOM:
            ops.append(oc.CustomCode().decode())
        else:
            ops.append(OP_NAMES.get(code, str(code)))

    def tens(idx):
        t = sg.Tensors(idx)
        return {"shape": [int(x) for x in t.ShapeAsNumpy()] if t.ShapeLength() else [],
                "dtype": TYPE_NAMES.get(t.Type(), str(t.Type()))}

    ins = [tens(sg.Inputs(i)) for i in range(sg.InputsLength())]
    outs = [tens(sg.Outputs(i)) for i in range(sg.OutputsLength())]
    return ops, ins, outs


def kind_of(name, ops):
    if name in NETWORKS or name in LARGE_NETWORKS or name == "mobilenet_tiny":
        return "network"
    if name in ("two_npu_subgraphs", "legacy_u8_net", "legacy_u8_ops", "legacy_u8_act", "legacy_u8_mean", "legacy_u8_resize_bilinear", "legacy_u8_layout", "legacy_u8_prelu_relu", "legacy_u8_copy", "legacy_u8_cast"):
        return "multi-op"
    if name.startswith(EDGE_PREFIX):
        return "edge-case"
    return "single-op"


def record(n, root):
    """The corpus.json record of model n stored under root (models/ or models/large/)."""
    vela_dir = os.path.join(root, "vela")
    ops, ins, outs = read_model(os.path.join(root, "tflite", n + ".tflite"))
    rec = {
        "name": n,
        "kind": kind_of(n, ops),
        "quant": (
            "16x8"
            if ins and ins[0]["dtype"] == "int16"
            else "uint8"
            if any(t["dtype"] == "uint8" for t in ins + outs)
            else "int8"
        ),
        "source_ops": ops,
        "inputs": ins,
        "outputs": outs,
        "vela": {},
    }
    cfgs = sorted(os.path.basename(d) for d in glob.glob(os.path.join(vela_dir, "*")) if os.path.isdir(d))
    for cfg in cfgs:
        p = os.path.join(vela_dir, cfg, n + "_vela.tflite")
        if os.path.exists(p):
            vops, _, _ = read_model(p)
            rec["vela"][cfg] = {
                "ethos_u_ops": sum(1 for o in vops if o == "ethos-u"),
                "cpu_ops": [o for o in vops if o != "ethos-u"],
            }
        elif os.path.exists(os.path.join(vela_dir, cfg, n + "_vela.npz")):
            rec["vela"][cfg] = {"ethos_u_ops": 1, "cpu_ops": [], "format": "raw"}
    has_golden = os.path.exists(os.path.join(root, "golden", n, "meta.json"))
    rec["golden"] = has_golden
    if not has_golden:
        rec["golden_note"] = NO_GOLDEN.get(n, "missing")
    rec["tosa"] = os.path.exists(os.path.join(root, "tosa", n + ".tosa"))
    return rec


def main():
    names = sorted(os.path.basename(p)[: -len(".tflite")] for p in glob.glob(os.path.join(TFLITE_DIR, "*.tflite")))
    records = [record(n, MODELS_DIR) for n in names]
    large = [record(n, LARGE_DIR) for n in LARGE_NETWORKS if os.path.exists(tflite_path(n))]
    tosa_only = sorted(
        os.path.basename(p)[: -len(".tosa")]
        for p in glob.glob(os.path.join(MODELS_DIR, "tosa", "*.tosa"))
        if os.path.basename(p)[: -len(".tosa")] not in names
    )
    lines = ["{", ' "models": [']
    for i, r in enumerate(records):
        lines.append("  " + json.dumps(r) + ("," if i + 1 < len(records) else ""))
    lines.append(" ],")
    # models/large/: same records, for the networks kept out of the per-model sweeps
    lines.append(' "large": [')
    for i, r in enumerate(large):
        lines.append("  " + json.dumps(r) + ("," if i + 1 < len(large) else ""))
    lines.append(" ],")
    lines.append(' "tosa_only": ' + json.dumps(tosa_only))
    lines.append("}")
    with open(os.path.join(MODELS_DIR, "corpus.json"), "w") as f:
        f.write("\n".join(lines) + "\n")
    kinds = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    cpu = sorted({o for r in records for c in r["vela"].values() for o in c["cpu_ops"]})
    print(f"corpus.json: {len(records)} models {kinds}, {len(large)} large, {len(tosa_only)} TOSA-only; "
          f"CPU ops left by Vela: {cpu}")


if __name__ == "__main__":
    main()
