#!/usr/bin/env python3
"""Issue 14's "win at equal memory" measurement: for every Dedicated_Sram row of a vs_vela table
(u85_256, u85_2048), compile the network with `--sram-budget` set to Vela's peak SRAM for it, and
compare npuc's cycles and off-chip bytes (`npuc report --json`) with Vela's (the table's columns).

    cargo run --release -p npuc --example vs_vela > /tmp/vs_vela.md
    python3 tools/sram-budget-vs-vela.py /tmp/vs_vela.md [path/to/npuc]
"""
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NPUC = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/npuc")
ACCEL = {"u85_256": "ethos-u85-256", "u85_2048": "ethos-u85-2048"}


def rows(table):
    for line in open(table):
        if not line.startswith("|") or "network" in line or "---" in line:
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c[1] in ACCEL:
            yield dict(net=c[0], cfg=c[1], vc=int(c[3]), vs=int(c[7]), vd=int(c[9]))


def main():
    out = []
    for r in rows(sys.argv[1]):
        model = os.path.join(ROOT, "models/tflite/%s.tflite" % r["net"])
        if not os.path.exists(model):
            model = os.path.join(ROOT, "models/large/tflite/%s.tflite" % r["net"])
        args = [NPUC, "compile", model, "--accel", ACCEL[r["cfg"]], "--sram-budget", str(r["vs"])]
        p = subprocess.run(args + ["-o", "/tmp/sram-budget.bin"], capture_output=True, text=True)
        if p.returncode:
            print("%-32s %-9s refused: %s" % (r["net"], r["cfg"], p.stderr.strip()))
            continue
        rep = subprocess.run([NPUC, "report", "--json", "/tmp/sram-budget.bin"],
                             capture_output=True, text=True, check=True)
        d = json.loads(rep.stdout)
        off = d["dram_read_bytes"] + d["dram_write_bytes"] + d["flash_read_bytes"]
        o = (r["net"], r["cfg"], d["total_cycles"] / r["vc"], off / max(1, r["vd"]),
             d["peak_sram_bytes"], r["vs"])
        out.append(o)
        print("%-32s %-9s cycles %.3f off-chip %.3f of Vela's; peak SRAM %d <= %d" % o)
    g = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    print("geomean cycles %.3f off-chip %.3f; rows above Vela: cycles %d, off-chip %d, of %d" % (
        g([o[2] for o in out]), g([o[3] for o in out]),
        sum(o[2] > 1 for o in out), sum(o[3] > 1 for o in out), len(out)))


if __name__ == "__main__":
    main()
