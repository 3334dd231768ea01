#!/usr/bin/env python3
"""TOSA 1.0 models of the npuc corpus and their goldens from the TOSA reference model.

Runs in its own venv (tosa-tools pins numpy<2.2 and flatbuffers 25.2.10, which
clash with tensorflow-cpu 2.21; see setup_venv.sh --tosa):

    python make_tosa.py [NAME ...]

* converted: models/tflite/<name>.tflite -> tosa-converter-for-tflite (MLIR text)
  -> tosa-opt --tosa-attach-target="specification_version=1.0 profiles=pro_int
  extensions=int16,int4,doubleround" --tosa-validate=strict-op-spec-alignment
  --tosa-serialize -> models/tosa/<name>.tosa
* hand-built with the tosa-tools Python serializer (version 1.0.0): RESCALE with
  both rounding modes, TABLE int8/int16, MATMUL, a graph of CONST_SHAPE-driven
  PAD / SLICE / RESHAPE / TILE, CONV2D + per-channel RESCALE + CLAMP ->
  models/tosa/<name>.tosa
* goldens: models/golden-tosa/<name>/input<i>_<k>.npy, output<j>_<k>.npy (k = 0..2)
  from tosa_reference_model.run; the inputs are made exactly as make_goldens.py
  makes them (same seeds), so a converted model gets the same inputs as its
  TFLite golden.  models/golden-tosa/index.json lists every model with its TOSA
  operators and, for conversions that failed, the error.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

os.environ["TOSA_MODEL_NO_BACKTRACE"] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MODELS_DIR, TFLITE_DIR, quantize_full_range, rng_for, structured_sample  # noqa: E402
from tosa_ops import OPS  # noqa: E402

TOSA_DIR = os.path.join(MODELS_DIR, "tosa")
GOLDEN_TOSA_DIR = os.path.join(MODELS_DIR, "golden-tosa")
BIN = os.path.dirname(sys.executable)
N_SAMPLES = 3

TARGET = "specification_version=1.0 profiles=pro_int extensions=int16,int4,doubleround"

# TFLite models converted to TOSA (a representative subset)
CONVERTED = [
    # first fixtures
    "conv2d_3x3_relu", "conv2d_s2_valid", "depthwise3x3", "dense", "add_broadcast", "mul", "maxpool",
    "avgpool", "concat", "resize_bilinear", "softmax", "conv2d_16x8",
    # conv family
    "conv2d_1x1", "conv2d_dil2_same", "conv2d_5x5_s2_same", "conv2d_3x3_relu_n1", "conv2d_16x8_s2_valid",
    "dw_mult2", "dw_3x3_s2_valid", "dw_16x8", "fc_relu", "fc_16x8", "tconv_3x3_s2_same", "tconv_2x2_s2_valid",
    # elementwise
    "add_relu", "sub_bcast", "mul_bcast_c", "add_16x8", "maximum", "minimum_bcast", "squared_difference",
    "greater", "select_v2", "abs", "neg", "relu6", "leaky_relu", "prelu",
    # LUT activations
    "hard_swish", "logistic", "tanh", "tanh_16x8", "gelu", "exp", "log", "rsqrt",
    # reductions / data movement
    "mean_hw_keep", "reduce_max_hw", "argmax_c", "reshape_flatten", "transpose_nhwc_nchw", "split_c3",
    "slice_hw", "strided_slice_s2", "pad_hw", "padv2_const", "tile_hw", "reverse_w", "concat_h",
    "resize_nearest_legacy", "batch_matmul", "softmax_4d",
    # networks
    "mobilenet_tiny", "resnet8", "ds_cnn", "transformer_encoder", "unet_small", "efficientnet_se",
    # 16x8: the converter's softmax truncates (CAST i32 -> i16) before its 16-bit TABLE
    "softmax_16x8", "ds_cnn_16x8", "logistic_16x8", "mul_16x8", "mean_16x8", "fc_16x8_relu",
    # 16x8 SUM: REDUCE_SUMs of a RESCALE that is not an exact widening (not a MEAN chain)
    "sum_16x8",
    # bilinear RESIZE rescaled by other than a power-of-two division (x3), align_corners
    "resize_bilinear_x3", "resize_bilinear_align",
]

# --------------------------------------------------------------------------
# reading TOSA flatbuffers


def graph_info(buf):
    import tosa.Op as O
    import tosa.TosaGraph as G

    inv = {v: k for k, v in O.Op.__dict__.items() if not k.startswith("_")}
    dt = {3: "int8", 4: "int16", 5: "int32", 1: "bool", 6: "int48", 17: "int64", 2: "int4"}
    g = G.TosaGraph.GetRootAs(buf, 0)
    v = g.Version()
    bl = g.Regions(0).Blocks(0)
    tens = {}
    for i in range(bl.TensorsLength()):
        t = bl.Tensors(i)
        tens[t.Name().decode()] = ([int(x) for x in t.ShapeAsNumpy()] if t.ShapeLength() else [], dt.get(t.Type(), str(t.Type())))
    ins = [bl.Inputs(i).decode() for i in range(bl.InputsLength())]
    outs = [bl.Outputs(i).decode() for i in range(bl.OutputsLength())]
    ops = [inv.get(bl.Operators(i).Op(), "?") for i in range(bl.OperatorsLength())]
    return {
        "version": f"{v._Major()}.{v._Minor()}.{v._Patch()}{'-draft' if v._Draft() else ''}",
        "inputs": [{"name": n, "shape": tens[n][0], "dtype": tens[n][1]} for n in ins],
        "outputs": [{"name": n, "shape": tens[n][0], "dtype": tens[n][1]} for n in outs],
        "ops": [o for o in ops if o not in ("CONST", "CONST_SHAPE")],
        "n_const": sum(1 for o in ops if o == "CONST"),
        "n_const_shape": sum(1 for o in ops if o == "CONST_SHAPE"),
    }


# --------------------------------------------------------------------------
# conversion


def convert(name, workdir):
    # relative names in workdir: tosa-opt writes the .mlir path into every
    # operator's location string, which ends up in the .tosa file
    shutil.copyfile(os.path.join(TFLITE_DIR, name + ".tflite"), os.path.join(workdir, name + ".tflite"))
    src, mlir, out = name + ".tflite", name + ".mlir", name + ".tosa"
    p = subprocess.run([os.path.join(BIN, "tosa-converter-for-tflite"), src, "--text", "-o", mlir],
                       capture_output=True, text=True, cwd=workdir)
    if p.returncode != 0:
        return None, "tosa-converter-for-tflite: " + (p.stderr.strip() or p.stdout.strip()).splitlines()[-1][:300]
    with open(os.path.join(workdir, mlir)) as f:
        text = f.read()
    left = sorted({w.split('"')[0] for w in text.split('"tfl.')[1:]})
    p = subprocess.run([os.path.join(BIN, "tosa-opt"), mlir, f"--tosa-attach-target={TARGET}",
                        "--tosa-validate=strict-op-spec-alignment", "--tosa-serialize",
                        f"--tosa-flatbuffer-filename={out}", "-o", os.devnull], capture_output=True, text=True,
                       cwd=workdir)
    out = os.path.join(workdir, out)
    if p.returncode != 0 or not os.path.exists(out):
        err = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()
        msg = next((l for l in err if "error" in l), err[0])
        return None, "tosa-opt: " + msg[:300] + (f" (tfl ops left: {', '.join(left)})" if left else "")
    with open(out, "rb") as f:
        return f.read(), None


# --------------------------------------------------------------------------
# hand-built graphs (tosa-tools' Python serializer)


def serializer():
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from serializer import tosa_serializer as ts

    return ts, ts.TosaSerializer("", tosa_version_major=1, tosa_version_minor=0, tosa_version_patch=0,
                                 tosa_version_draft=False)


def hand_rescale(rounding):
    """int8 [1,5,6,7] -> RESCALE per channel (scale32) -> int8 with the given rounding mode."""
    ts, s = serializer()
    D = ts.DType
    from tosa.RoundingMode import RoundingMode as RM

    rng = rng_for("tosa_rescale", rounding)
    x = s.addPlaceholder([1, 5, 6, 7], D.INT8, None)
    mult = rng.integers(1 << 30, (1 << 31) - 1, size=7).astype(np.int32)
    shift = rng.integers(32, 36, size=7).astype(np.int8)
    m = s.addConst([7], D.INT32, mult)
    sh = s.addConst([7], D.INT8, shift)
    izp = s.addConst([1], D.INT8, np.array([-3], np.int8))
    ozp = s.addConst([1], D.INT8, np.array([5], np.int8))
    y = s.addOutput([1, 5, 6, 7], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.RescaleAttribute(True, getattr(RM, rounding), True, False, False)
    s.addOperator(ts.TosaOp.Op().RESCALE, [x.name, m.name, sh.name, izp.name, ozp.name], [y.name], a)
    return s.serialize()


def hand_rescale_i16_i8():
    """int16 [1,4,9] -> RESCALE per tensor, scale16 (so SINGLE_ROUND: TOSA forbids
    DOUBLE_ROUND without scale32) -> int8."""
    ts, s = serializer()
    D = ts.DType
    from tosa.RoundingMode import RoundingMode as RM

    x = s.addPlaceholder([1, 4, 9], D.INT16, None)
    m = s.addConst([1], D.INT16, np.array([23171], np.int16))
    sh = s.addConst([1], D.INT8, np.array([22], np.int8))
    izp = s.addConst([1], D.INT16, np.array([0], np.int16))
    ozp = s.addConst([1], D.INT8, np.array([-7], np.int8))
    y = s.addOutput([1, 4, 9], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.RescaleAttribute(False, RM.SINGLE_ROUND, False, False, False)
    s.addOperator(ts.TosaOp.Op().RESCALE, [x.name, m.name, sh.name, izp.name, ozp.name], [y.name], a)
    return s.serialize()


def hand_table_i8():
    """int8 TABLE (256 entries: a quantised tanh)."""
    ts, s = serializer()
    D = ts.DType
    x = s.addPlaceholder([1, 6, 7, 5], D.INT8, None)
    xs = np.arange(-128, 128) * (4.0 / 128)
    tab = np.clip(np.round(np.tanh(xs) * 127), -128, 127).astype(np.int8)
    t = s.addConst([256], D.INT8, tab)
    y = s.addOutput([1, 6, 7, 5], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.TableAttribute()
    s.addOperator(ts.TosaOp.Op().TABLE, [x.name, t.name], [y.name], a)
    return s.serialize()


def hand_table_i16():
    """int16 TABLE (513 entries, interpolated, int32 output: a sigmoid)."""
    ts, s = serializer()
    D = ts.DType
    x = s.addPlaceholder([1, 4, 5, 6], D.INT16, None)
    xs = np.linspace(-8.0, 8.0, 513)
    tab = np.clip(np.round((1.0 / (1.0 + np.exp(-xs))) * 65535 - 32768), -32768, 32767).astype(np.int16)
    t = s.addConst([513], D.INT16, tab)
    y = s.addOutput([1, 4, 5, 6], D.INT32)
    a = ts.TosaSerializerAttribute()
    a.TableAttribute()
    s.addOperator(ts.TosaOp.Op().TABLE, [x.name, t.name], [y.name], a)
    return s.serialize()


def hand_matmul():
    """MATMUL int8 [1,5,8] x int8 [1,8,6] (nonzero A zero point) -> int32 -> RESCALE -> int8."""
    ts, s = serializer()
    D = ts.DType
    from tosa.RoundingMode import RoundingMode as RM

    a_ = s.addPlaceholder([1, 5, 8], D.INT8, None)
    b_ = s.addPlaceholder([1, 8, 6], D.INT8, None)
    azp = s.addConst([1], D.INT8, np.array([12], np.int8))
    bzp = s.addConst([1], D.INT8, np.array([0], np.int8))
    acc = s.addIntermediate([1, 5, 6], D.INT32)
    at = ts.TosaSerializerAttribute()
    at.MatMulAttribute()
    s.addOperator(ts.TosaOp.Op().MATMUL, [a_.name, b_.name, azp.name, bzp.name], [acc.name], at)
    m = s.addConst([1], D.INT32, np.array([1518500250], np.int32))
    sh = s.addConst([1], D.INT8, np.array([41], np.int8))
    izp = s.addConst([1], D.INT32, np.array([0], np.int32))
    ozp = s.addConst([1], D.INT8, np.array([3], np.int8))
    y = s.addOutput([1, 5, 6], D.INT8)
    ar = ts.TosaSerializerAttribute()
    ar.RescaleAttribute(True, RM.DOUBLE_ROUND, False, False, False)
    s.addOperator(ts.TosaOp.Op().RESCALE, [acc.name, m.name, sh.name, izp.name, ozp.name], [y.name], ar)
    return s.serialize()


def hand_const_shape():
    """PAD -> SLICE -> RESHAPE -> TILE, all parameters CONST_SHAPE values."""
    ts, s = serializer()
    D = ts.DType
    x = s.addPlaceholder([1, 4, 6, 3], D.INT8, None)
    pads = s.addConst([8], D.SHAPE, np.array([0, 0, 1, 2, 2, 1, 0, 0], np.int64))
    pval = s.addConst([1], D.INT8, np.array([-17], np.int8))
    p = s.addIntermediate([1, 7, 9, 3], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.PadAttribute()
    s.addOperator(ts.TosaOp.Op().PAD, [x.name, pads.name, pval.name], [p.name], a)
    start = s.addConst([4], D.SHAPE, np.array([0, 1, 2, 0], np.int64))
    size = s.addConst([4], D.SHAPE, np.array([1, 5, 6, 2], np.int64))
    sl = s.addIntermediate([1, 5, 6, 2], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.SliceAttribute()
    s.addOperator(ts.TosaOp.Op().SLICE, [p.name, start.name, size.name], [sl.name], a)
    shp = s.addConst([3], D.SHAPE, np.array([5, 3, 4], np.int64))
    r = s.addIntermediate([5, 3, 4], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.ReshapeAttribute()
    s.addOperator(ts.TosaOp.Op().RESHAPE, [sl.name, shp.name], [r.name], a)
    mul = s.addConst([3], D.SHAPE, np.array([1, 2, 3], np.int64))
    y = s.addOutput([5, 6, 12], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.TileAttribute()
    s.addOperator(ts.TosaOp.Op().TILE, [r.name, mul.name], [y.name], a)
    return s.serialize()


def hand_conv_rescale_clamp():
    """CONV2D int8 (input zero point -9, stride 2, pad [1,1,1,0]) -> int32 ->
    per-channel RESCALE (DOUBLE_ROUND) -> CLAMP [-100, 90]."""
    ts, s = serializer()
    D = ts.DType
    from tosa.RoundingMode import RoundingMode as RM

    rng = rng_for("tosa_conv_rescale_clamp", "weights")
    oc, kh, kw, ic = 6, 3, 3, 5
    x = s.addPlaceholder([1, 9, 8, ic], D.INT8, None)
    w = s.addConst([oc, kh, kw, ic], D.INT8, np.clip(np.round(rng.laplace(0, 30, size=(oc, kh, kw, ic))), -127, 127).astype(np.int8))
    b = s.addConst([oc], D.INT32, rng.integers(-2000, 2000, size=oc).astype(np.int32))
    izp = s.addConst([1], D.INT8, np.array([-9], np.int8))
    wzp = s.addConst([1], D.INT8, np.array([0], np.int8))
    acc = s.addIntermediate([1, 5, 4, oc], D.INT32)
    a = ts.TosaSerializerAttribute()
    a.Conv2dAttribute([1, 1, 1, 0], [2, 2], [1, 1], False, D.INT32)
    s.addOperator(ts.TosaOp.Op().CONV2D, [x.name, w.name, b.name, izp.name, wzp.name], [acc.name], a)
    m = s.addConst([oc], D.INT32, rng.integers(1 << 30, (1 << 31) - 1, size=oc).astype(np.int32))
    sh = s.addConst([oc], D.INT8, rng.integers(38, 41, size=oc).astype(np.int8))
    azp = s.addConst([1], D.INT32, np.array([0], np.int32))
    ozp = s.addConst([1], D.INT8, np.array([-4], np.int8))
    r = s.addIntermediate([1, 5, 4, oc], D.INT8)
    a = ts.TosaSerializerAttribute()
    a.RescaleAttribute(True, RM.DOUBLE_ROUND, True, False, False)
    s.addOperator(ts.TosaOp.Op().RESCALE, [acc.name, m.name, sh.name, azp.name, ozp.name], [r.name], a)
    y = s.addOutput([1, 5, 4, oc], D.INT8)
    a = ts.TosaSerializerAttribute()
    # min / max as bytes of the operand type; nan_mode 1 = PROPAGATE
    a.ClampAttribute(s.builder, np.array([-100], np.int8).tobytes(), np.array([90], np.int8).tobytes(), 1)
    s.addOperator(ts.TosaOp.Op().CLAMP, [r.name], [y.name], a)
    return s.serialize()


HAND = {
    "tosa_rescale_single_round": lambda: hand_rescale("SINGLE_ROUND"),
    "tosa_rescale_double_round": lambda: hand_rescale("DOUBLE_ROUND"),
    "tosa_rescale_i16_to_i8": hand_rescale_i16_i8,
    "tosa_table_i8": hand_table_i8,
    "tosa_table_i16": hand_table_i16,
    "tosa_matmul": hand_matmul,
    "tosa_const_shape": hand_const_shape,
    "tosa_conv_rescale_clamp": hand_conv_rescale_clamp,
}

# --------------------------------------------------------------------------
# goldens

NP = {"int8": np.int8, "int16": np.int16, "int32": np.int32}
# the operator-mode graphs of tosa_ops.py have one sample each (the corpus is near its size
# budget, and files count in 4 KB blocks); their inputs are chosen per operator to reach the
# extreme values, and every output must take more than one value
N_SAMPLES_OPS = 1


def golden(name, buf, info):
    import tosa_reference_model as ref

    out_dir = os.path.join(GOLDEN_TOSA_DIR, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    rng = rng_for(name, "golden")
    results = []
    gens = OPS[name][1] if name in OPS else None
    n_samples = N_SAMPLES_OPS if gens else N_SAMPLES
    for k in range(n_samples):
        xs = []
        for i, t in enumerate(info["inputs"]):
            if gens:
                x = gens[i](rng, t["shape"])
            else:
                x = quantize_full_range(structured_sample(rng, t["shape"]), NP[t["dtype"]])
            np.save(os.path.join(out_dir, f"input{i}_{k}.npy"), x, allow_pickle=False)
            xs.append(x)
        outs, status = ref.run(buf, xs)
        if str(status) != "GraphStatus.TOSA_VALID":
            raise RuntimeError(f"reference model: {status}")
        for j, y in enumerate(outs):
            y = np.ascontiguousarray(y)
            np.save(os.path.join(out_dir, f"output{j}_{k}.npy"), y, allow_pickle=False)
        results.append([y.tobytes() for y in outs])
    for j in range(len(results[0])):
        if n_samples > 1 and len({results[k][j] for k in range(n_samples)}) != n_samples:
            raise RuntimeError(f"output {j} is the same for some samples")
        y = np.load(os.path.join(out_dir, f"output{j}_0.npy"))
        if len(np.unique(y)) < 2:
            raise RuntimeError(f"output {j} is constant")


def check_inputs_match_tflite(name, info):
    """The golden inputs are those of the TFLite golden (same seeds)."""
    d = os.path.join(MODELS_DIR, "golden", name)
    for i in range(len(info["inputs"])):
        for k in range(N_SAMPLES):
            a = os.path.join(d, f"input{i}_{k}.npy")
            if os.path.exists(a):
                b = os.path.join(GOLDEN_TOSA_DIR, name, f"input{i}_{k}.npy")
                if not np.array_equal(np.load(a), np.load(b)):
                    return False
    return True


def main(argv):
    names = argv or (CONVERTED + list(HAND) + list(OPS))
    os.makedirs(TOSA_DIR, exist_ok=True)
    os.makedirs(GOLDEN_TOSA_DIR, exist_ok=True)
    index_path = os.path.join(GOLDEN_TOSA_DIR, "index.json")
    index = {}
    if argv and os.path.exists(index_path):
        with open(index_path) as f:
            index = {r["name"]: r for r in json.load(f)["models"]}
    else:
        for p in glob.glob(os.path.join(TOSA_DIR, "*.tosa")):
            os.remove(p)
    with tempfile.TemporaryDirectory(prefix="npuc-tosa-") as work:
        for n in names:
            rec = {"name": n, "source": f"tflite/{n}.tflite" if n in CONVERTED else
                   "hand-built (tosa_ops.py)" if n in OPS else "hand-built (make_tosa.py)"}
            path = os.path.join(TOSA_DIR, n + ".tosa")
            if os.path.exists(path):
                os.remove(path)
            if n in CONVERTED:
                buf, err = convert(n, work)
            elif n in OPS:
                buf, err = OPS[n][0](), None
            else:
                buf, err = bytes(HAND[n]()), None
            if buf is None:
                rec["error"] = err
                shutil.rmtree(os.path.join(GOLDEN_TOSA_DIR, n), ignore_errors=True)
                print(f"{n:28s} FAILED {err}", flush=True)
                index[n] = rec
                continue
            with open(path, "wb") as f:
                f.write(buf)
            info = graph_info(buf)
            rec.update(info)
            try:
                golden(n, buf, info)
                rec["golden"] = True
                if n in CONVERTED:
                    rec["inputs_match_tflite_golden"] = check_inputs_match_tflite(n, info)
            except Exception as e:  # noqa: BLE001
                rec["golden"] = False
                rec["golden_error"] = str(e)[:300]
                shutil.rmtree(os.path.join(GOLDEN_TOSA_DIR, n), ignore_errors=True)
            index[n] = rec
            print(f"{n:28s} {len(buf):7d} bytes  golden={rec['golden']}  ops: {' '.join(info['ops'])}", flush=True)
    order = [n for n in CONVERTED + list(HAND) + list(OPS) if n in index]
    lines = ["{", ' "models": [']
    for i, n in enumerate(order):
        lines.append("  " + json.dumps(index[n]) + ("," if i + 1 < len(order) else ""))
    lines += [" ]", "}"]
    with open(index_path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
