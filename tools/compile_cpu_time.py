#!/usr/bin/env python3
"""CPU seconds (user + system) of `npuc compile` (two binaries, e.g. before and after a change)
and of Vela's whole process, for every network of models/corpus.json, on u85-256 in
Ethos_U85_SYS_DRAM_Mid / Dedicated_Sram_384KB; fastest of 3 runs each, from the child's
rusage (os.wait4). Prints the Markdown table of docs/compile_time.md.

    tools/compile_cpu_time.py NPUC_BEFORE NPUC_AFTER [VELA]

VELA defaults to `vela` on PATH (ethos-u-vela 5.2.0).
"""
import json
import os
import shutil
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)
before, after = sys.argv[1], sys.argv[2]
vela = sys.argv[3] if len(sys.argv) > 3 else shutil.which("vela")
corpus = json.load(open("models/corpus.json"))
nets = [
    f"{d}/tflite/{m['name']}.tflite"
    for key, d in (("models", "models"), ("large", "models/large"))
    for m in corpus[key]
    if m.get("kind") == "network"
]
opts = ["--system-config", "Ethos_U85_SYS_DRAM_Mid", "--memory-mode", "Dedicated_Sram_384KB"]
tmp = tempfile.mkdtemp(prefix="npuc-cpu-time-")


def cpu(cmd):
    """Fastest user + system seconds of 3 runs of `cmd`, None if a run fails."""
    best = float("inf")
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.execv(cmd[0], cmd)
        _, status, usage = os.wait4(pid, 0)
        if status != 0:
            return None
        best = min(best, usage.ru_utime + usage.ru_stime)
    return best


def cell(v):
    return "-" if v is None else f"{v:.3f}"


print("| network | npuc before CPU s | npuc after CPU s | Vela CPU s | after / Vela |")
print("|---|---:|---:|---:|---:|")
for net in nets:
    if not os.path.exists(net):
        continue
    name = os.path.basename(net)[: -len(".tflite")]
    out = os.path.join(tmp, "x.bin")
    npuc = lambda exe: cpu([exe, "compile", net, "-o", out, "--accel", "ethos-u85-256"] + opts)
    a, b = npuc(before), npuc(after)
    v = None
    if vela:
        v = cpu([vela, "--accelerator-config", "ethos-u85-256", "--config", "Arm/vela.ini"]
                + opts + ["--output-dir", os.path.join(tmp, "vela"), net])
    ratio = f"{b / v:.3f}" if b is not None and v else "-"
    print(f"| {name} | {cell(a)} | {cell(b)} | {cell(v)} | {ratio} |", flush=True)
shutil.rmtree(tmp, ignore_errors=True)
