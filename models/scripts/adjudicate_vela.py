#!/usr/bin/env python3
"""Recomputes the evidence of docs/decisions.md simulator #40, #41 and #43 (issue 16 A.5):
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


def fc_16x8(name):
    """#43: per-channel FC, 15-bit scale (i48, natural) vs TFLite's 31-bit single rounding."""
    import tensorflow as tf
    it = tf.lite.Interpreter(model_path=f"{MODELS}/tflite/{name}.tflite")
    it.allocate_tensors()
    td = {t["index"]: t for t in it.get_tensor_details()}
    op = next(o for o in it._get_ops_details() if o["op_name"] == "FULLY_CONNECTED")
    xi, wi, bi = op["inputs"]
    oi = op["outputs"][0]
    w = it.get_tensor(wi).astype(np.int64)
    bias = it.get_tensor(bi).astype(np.int64)
    xs, os_ = td[xi]["quantization"][0], td[oi]["quantization"][0]
    ws = td[wi]["quantization_parameters"]["scales"]
    vela, tfl = [], []
    for k in range(3):
        acc = w @ golden(name, k, "input0").astype(np.int64).reshape(-1) + bias
        v15, v31 = [], []
        for c, a in enumerate(acc):
            m, e = np.frexp(np.float64(np.float32(xs)) * np.float64(ws[c]) / np.float64(np.float32(os_)))
            m31, s31 = int(round(m * 2**31)), 31 - int(e)
            m15, s15 = int(round(m * 2**15)), 15 - int(e)
            if m15 == 1 << 15:
                m15, s15 = m15 >> 1, s15 - 1
            v31.append(np.clip((int(a) * m31 + (1 << (s31 - 1))) >> s31, -32768, 32767))
            v15.append(np.clip((int(a) * m15 + (1 << (s15 - 1))) >> s15, -32768, 32767))
        vela.append(np.array(v15))
        tfl.append(np.array(v31))
    return vela, tfl


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


if __name__ == "__main__":
    sys.exit(main())
