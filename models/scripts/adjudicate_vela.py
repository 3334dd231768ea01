#!/usr/bin/env python3
"""Recomputes the evidence of docs/decisions.md simulator #40, #41, #43 and #44 (issue 16 A.5):
Vela 5.2 streams whose simulation differs from the TFLite goldens, emulated from the TRM
pseudocode with the register values of Vela's listing (models/vela/<cfg>/<name>.cmd.txt).

For each case it prints how many values the emulation of Vela's stream gets off the golden,
and, with --npuc BIN, whether the emulation equals `npuc run` on Vela's .tflite (the
simulator) value for value.

    python adjudicate_vela.py [--npuc PATH/TO/npuc]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rounded_shift_right(acc, shift, dbl_rnd, symmetric=True):
    """TRM 3.6.6 rounded_shift_right for double_symmetric (or natural)."""
    if shift == 0:
        return acc
    r = 1 << (shift - 1)
    d = (1 << (30 - dbl_rnd)) if shift > 31 - dbl_rnd else 0
    if symmetric:
        r = r + d if acc >= 0 else r - d
    return (acc + r) >> shift


def golden(name, k, what="output0"):
    return np.load(f"{MODELS}/golden/{name}/{what}_{k}.npy")


def simulate(npuc, cfg, name, k):
    ins = sorted(glob.glob(f"{MODELS}/golden/{name}/input*_{k}.npy"))
    with tempfile.TemporaryDirectory() as out:
        cmd = [npuc, "run", f"{MODELS}/vela/{cfg}/{name}_vela.tflite", "--output-dir", out]
        for i in ins:
            cmd += ["--input", i]
        subprocess.run(cmd, check=True, capture_output=True)
        return np.load(f"{out}/out0.npy")


def reduce_over_channels(name, mode):
    """#40: GREATER(x, scalar) then a POOL MIN (any) / MAX (all) over the window Vela programs:
    IFM_SCALE 1077952640 >> 29 (zp -1), IFM2 OP_SCALAR with IFM2_SCALE 1293543168 >> 32 (any,
    scalar 127, zp -128) or >> 31 (all, scalar -128, zp 127), dbl_rnd 0; the POOL reads rows of
    9 bytes (IFM_STRIDE_Y 9, STRIDE_X 1), kernel 1x9, pad_right 6, OFM 6x7."""
    sh2, scalar, zp2 = (32, 127, -128) if mode == "min" else (31, -128, 127)
    s2 = 1293543168
    b = rounded_shift_right((scalar - zp2) * s2, sh2, 0)
    outs = []
    for k in range(3):
        x = golden(name, k, "input0").astype(np.int64).reshape(-1)
        gt = np.array([-1 if rounded_shift_right((v + 1) * 1077952640, 29, 0) > b else 0 for v in x])
        red = min if mode == "min" else max
        win = np.array([[red(gt[9 * y + ox: 9 * y + 9]) for ox in range(7)] for y in range(6)])
        outs.append((win != 0).reshape(-1))
    return outs


def not_equal(dbl_rnd=0):
    """#41: both operands through IFM_SCALE = IFM2_SCALE = 1724724096 >> 33, double_symmetric."""
    outs = []
    for k in range(3):
        a = golden("not_equal", k, "input0").astype(np.int64).reshape(-1)
        b = golden("not_equal", k, "input1").astype(np.int64).reshape(-1)
        outs.append(np.array([rounded_shift_right(int(p) * 1724724096, 33, dbl_rnd)
                              != rounded_shift_right(int(q) * 1724724096, 33, dbl_rnd)
                              for p, q in zip(a, b)]))
    return outs


def reference_interpreter(path, **kw):
    """TFLite's reference kernels (as make_goldens.py), all tensors kept."""
    import tensorflow as tf
    it = tf.lite.Interpreter(
        model_path=path, experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF, **kw)
    it.allocate_tensors()
    return it


def fc_16x8_values(it, x):
    """One int16x8 per-channel FULLY_CONNECTED of interpreter `it` on the int16 vector x: the
    values of Vela's stream (i48 accumulator, so a 15-bit scale, natural rounding) and of
    TFLite's kernel (31-bit multiplier, single rounding)."""
    td = {t["index"]: t for t in it.get_tensor_details()}
    op = next(o for o in it._get_ops_details() if o["op_name"] == "FULLY_CONNECTED")
    xi, wi, bi = op["inputs"]
    oi = op["outputs"][0]
    w = it.get_tensor(wi).astype(np.int64)
    bias = it.get_tensor(bi).astype(np.int64)
    xs, os_ = td[xi]["quantization"][0], td[oi]["quantization"][0]
    ws = td[wi]["quantization_parameters"]["scales"]
    acc = w @ np.asarray(x).astype(np.int64).reshape(-1) + bias
    v15, v31 = [], []
    for c, a in enumerate(acc):
        m, e = np.frexp(np.float64(np.float32(xs)) * np.float64(ws[c]) / np.float64(np.float32(os_)))
        m31, s31 = int(round(m * 2**31)), 31 - int(e)
        m15, s15 = int(round(m * 2**15)), 15 - int(e)
        if m15 == 1 << 15:
            m15, s15 = m15 >> 1, s15 - 1
        v31.append(np.clip((int(a) * m31 + (1 << (s31 - 1))) >> s31, -32768, 32767))
        v15.append(np.clip((int(a) * m15 + (1 << (s15 - 1))) >> s15, -32768, 32767))
    return np.array(v15), np.array(v31), op


def fc_16x8(name):
    """#43: per-channel FC, 15-bit scale (i48, natural) vs TFLite's 31-bit single rounding."""
    it = reference_interpreter(f"{MODELS}/tflite/{name}.tflite")
    vela, tfl = [], []
    for k in range(3):
        v15, v31, _ = fc_16x8_values(it, golden(name, k, "input0"))
        vela.append(v15)
        tfl.append(v31)
    return vela, tfl


def tail_model(path, first_op):
    """The .tflite at `path` cut to its operators from `first_op` on, whose graph input is
    that operator's first input (for running TFLite's kernels on a value the stream computed)."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as s
    with open(path, "rb") as f:
        m = s.ModelT.InitFromPackedBuf(f.read(), 0)
    sg = m.subgraphs[0]
    sg.inputs = [sg.operators[first_op].inputs[0]]
    sg.operators = sg.operators[first_op:]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    out = tempfile.NamedTemporaryFile(suffix=".tflite", delete=False)
    out.write(bytes(b.Output()))
    out.close()
    return out.name


def resnet8_16x8():
    """#44: ResNet-8 16x8. Its classifier is a 16x8 per-channel FULLY_CONNECTED (64 -> 10)
    followed by SOFTMAX. Vela's FC values (15-bit scale) are computed from TFLite's own FC
    input (the average pool's output), then TFLite's SOFTMAX kernel runs on them (the model
    cut after the FC): returns those outputs, and TFLite's FC values through the same SOFTMAX
    (which must equal the goldens), with the FC values that differ per sample."""
    name = "resnet8_16x8"
    path = f"{MODELS}/tflite/{name}.tflite"
    it = reference_interpreter(path)
    inp = it.get_input_details()[0]["index"]
    tail = tail_model(path, next(i for i, o in enumerate(it._get_ops_details())
                                 if o["op_name"] == "SOFTMAX"))
    try:
        soft = reference_interpreter(tail)
        sin = soft.get_input_details()[0]
        sout = soft.get_output_details()[0]["index"]

        def softmax(v):
            soft.set_tensor(sin["index"], v.astype(sin["dtype"]).reshape(sin["shape"]))
            soft.invoke()
            return soft.get_tensor(sout).reshape(-1)

        vela, tfl, fc_diffs = [], [], []
        for k in range(3):
            it.set_tensor(inp, golden(name, k, "input0"))
            it.invoke()
            op = next(o for o in it._get_ops_details() if o["op_name"] == "FULLY_CONNECTED")
            v15, v31, _ = fc_16x8_values(it, it.get_tensor(op["inputs"][0]))
            assert np.array_equal(v31, it.get_tensor(op["outputs"][0]).reshape(-1)), \
                "the 31-bit emulation must be TFLite's FC"
            fc_diffs.append([(int(c), int(v31[c]), int(v15[c])) for c in np.nonzero(v15 != v31)[0]])
            vela.append(softmax(v15))
            tfl.append(softmax(v31))
    finally:
        os.unlink(tail)
    return vela, tfl, fc_diffs


def report(label, name, emulated, npuc, cfgs=("u85_256", "u85_2048"), reference=None):
    for k, e in enumerate(emulated):
        g = golden(name, k).reshape(-1).astype(np.int64)
        line = f"{label} sample {k}: Vela emulation off the golden on {int((e.astype(np.int64) != g).sum())} of {g.size}"
        if reference is not None:
            line += f"; TFLite's arithmetic off the golden on {int((reference[k] != g).sum())}"
        if npuc:
            same = all(np.array_equal(simulate(npuc, c, name, k).reshape(-1).astype(np.int64), e.astype(np.int64))
                       for c in cfgs)
            line += f"; equals the simulator ({'/'.join(cfgs)}): {same}"
        print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npuc", default=os.environ.get("NPUC"))
    a = ap.parse_args()
    report("#40 reduce_any_c", "reduce_any_c", reduce_over_channels("reduce_any_c", "min"), a.npuc)
    report("#40 reduce_all_c", "reduce_all_c", reduce_over_channels("reduce_all_c", "max"), a.npuc)
    report("#41 not_equal (dbl_rnd 0, as programmed)", "not_equal", not_equal(0), a.npuc)
    report("#41 not_equal (dbl_rnd 8)", "not_equal", not_equal(8), None)
    vela, tfl = fc_16x8("fc_16x8_256_33")
    report("#43 fc_16x8_256_33", "fc_16x8_256_33", vela, a.npuc, reference=tfl)
    vela, tfl, fc_diffs = resnet8_16x8()
    for k, d in enumerate(fc_diffs):
        print(f"#44 resnet8_16x8 sample {k}: FC channels (TFLite, Vela's 15-bit scale) that differ: {d}")
    report("#44 resnet8_16x8", "resnet8_16x8", vela, a.npuc, cfgs=("u85_256", "u85_2048", "u85_256_sram_only"),
           reference=tfl)


if __name__ == "__main__":
    sys.exit(main())
