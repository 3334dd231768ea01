#!/usr/bin/env python3
"""Recomputes the evidence of docs/decisions.md simulator #46 on every ARGMAX test that
models/scripts/vela_conformance.py found differing: Vela 5.2's stream run on the simulator
gives -32768 (the PC's initial accumulator -2^31 >> 16) exactly on the windows whose
maximum is <= 0, and the reference model's index everywhere else.

    python adjudicate_vela_conformance.py SET_DIR OUT_DIR [--npuc PATH]

OUT_DIR is vela_conformance.py's (its sim.jsonl, vela.jsonl and kept .tflite files). A test
whose input is a constant (no ifm_file) is checked on the differing elements only (each must
be -32768). Prints one line per test and a total.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("set_dir")
    ap.add_argument("out_dir")
    default = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "npuc")
    ap.add_argument("--npuc", default=default)
    args = ap.parse_args()
    vela = {}
    for line in open(os.path.join(args.out_dir, "vela.jsonl")):
        r = json.loads(line)
        vela[r["test"]] = r
    sim = {}
    for line in open(os.path.join(args.out_dir, "sim.jsonl")):
        r = json.loads(line)
        sim[r["test"]] = r
    total = agree = 0
    for t, s in sorted(sim.items()):
        if s["sim"] != "differs" or vela[t]["operator"] != "ARGMAX":
            continue
        d = os.path.join(args.set_dir, "operators", t)
        desc = json.load(open(os.path.join(d, "desc.json")))
        axis = int(t.rsplit("axis", 1)[1][0])
        with tempfile.TemporaryDirectory() as out:
            cmd = [args.npuc, "run", vela[t]["tflite"], "--output-dir", out]
            for f in desc["ifm_file"]:
                cmd += ["--input", os.path.join(d, f)]
            subprocess.run(cmd, check=True, capture_output=True)
            got = np.load(os.path.join(out, "out0.npy")).astype(np.int64).reshape(-1)
        want = np.load(os.path.join(d, desc["ofm_file"][0])).astype(np.int64).reshape(-1)
        off = got != want
        if desc["ifm_file"]:
            x = np.load(os.path.join(d, desc["ifm_file"][0])).astype(np.int64)
            nonpos = (x.max(axis=axis) <= 0).reshape(-1)
            pc = np.where(nonpos, -32768, want)
            ok = bool((got == pc).all())
            how = f"{int(nonpos.sum())} windows with maximum <= 0"
        else:
            ok = bool((got[off] == -32768).all())
            how = "constant input: differing elements checked"
        total += 1
        agree += ok
        print(f"{'OK ' if ok else 'BAD'} {t}: {int(off.sum())} of {len(want)} results differ; {how}")
    print(f"{agree} of {total} differing ARGMAX tests follow the rule of simulator #46")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
