#!/usr/bin/env python3
"""CPU seconds (user + system, from the child's rusage) and wall seconds of `npuc compile` for
two or more binaries, run alternately RUNS times per network so that a machine whose speed
drifts affects them alike; prints the minimum and median CPU and the median wall time of each.
u85-256, Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram_384KB, as tools/compile_cpu_time.py, unless
$NPUC_SYSTEM_CONFIG and $NPUC_MEMORY_MODE say otherwise (e.g. Ethos_U85_SYS_Flash_High and
Sram_Only, vs_vela's `u85_256_sram_only`). The output is an npuc container unless OUTPUT is
`tflite`: a Vela-format .tflite (the partitioning path, whose time `vs_vela`'s compile column
measures).

    [NPUC_SYSTEM_CONFIG=.. NPUC_MEMORY_MODE=..] tools/compile_cpu_ab.py NPUC_A,NPUC_B NET[,NET...] RUNS [tflite]

NET is a corpus network name (models/tflite/NET.tflite; mobilenet_v2_100_224 from models/large).
"""
import os
import statistics
import sys
import time

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
bins = sys.argv[1].split(",")
nets = sys.argv[2].split(",")
runs = int(sys.argv[3])
output = "/tmp/compile_cpu_ab.tflite" if sys.argv[4:] == ["tflite"] else os.devnull
system_config = os.environ.get("NPUC_SYSTEM_CONFIG", "Ethos_U85_SYS_DRAM_Mid")
memory_mode = os.environ.get("NPUC_MEMORY_MODE", "Dedicated_Sram_384KB")


def path(net):
    if net == "mobilenet_v2_100_224":
        return f"models/large/tflite/{net}.tflite"
    return f"models/tflite/{net}.tflite"


def cpu(binary, net):
    """User + system seconds and wall seconds of one compile."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execv(binary, ["npuc", "compile", path(net), "--accel", "ethos-u85-256",
                          "--system-config", system_config,
                          "--memory-mode", memory_mode, "-o", output])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{binary} failed on {net}")
    return usage.ru_utime + usage.ru_stime, wall


for net in nets:
    times = {b: [] for b in bins}
    for _ in range(runs):
        for b in bins:
            times[b].append(cpu(b, net))
    cells = []
    for t in times.values():
        cpus = [c for c, _ in t]
        walls = [w for _, w in t]
        cells.append(f"min {min(cpus):.3f} med {statistics.median(cpus):.3f}"
                     f" wall {statistics.median(walls):.3f}")
    print(f"{net:32s} " + "   ".join(cells), flush=True)
