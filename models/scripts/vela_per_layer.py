#!/usr/bin/env python3
"""Vela 5.2's own per-operation performance estimate for every corpus network.

For every network of corpus.json ("kind": "network") and every configuration with
Vela fixtures (u85_256, u85_2048: Ethos_U85_SYS_DRAM_Mid + Dedicated_Sram_384KB;
u85_256_sram_only: Ethos_U85_SYS_Flash_High + Sram_Only, the options of
compile_vela.py), Vela runs with --verbose-performance --enable-debug-db and its
<model>_debug.xml is read:
  queue            command-stream byte offset where each scheduled operation's
                   commands start (several rows per operation when its commands
                   are interleaved with others);
  perf             op_cycles, npu_cycles, mac_count and access cycles per memory;
  perf_debug_main  mac_cycles, ao_cycles, cmd_cycles (the MAC/AO/command-issue
                   components of npu_cycles);
  perf_debug_wd    weight decoder cycles.
The compiled model must be byte-identical to the committed fixture
models/vela/<cfg>/<net>_vela.tflite, so the offsets refer to the committed stream.

Writes models/vela/per_layer.csv, one row per (config, network, queue offset):
  config,network,stream,offset,op_id,operator,op_cycles,npu_cycles,mac_count,
  sram_ac,dram_ac,flash_ac,scale_ac,scale_bytes,mac_cycles,ao_cycles,cmd_cycles,wd_cycles,
  traversal,ifm_block,ofm_block,ofm_ublock
(op_id: the operation an operation chained into it belongs to, table group; the
cycle columns only on the first row of an operation, empty on its further
queue rows), and a line per network with its summary total:
  config,network,,total,,,<cycles_total>,...

    python vela_per_layer.py [--vela PATH] [NETWORK ...]
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MODELS_DIR, TFLITE_DIR, VELA_DIR  # noqa: E402
from compile_vela import SRAM_ONLY, U85_2048, U85_256  # noqa: E402

CONFIGS = [
    ("u85_256", U85_256),
    ("u85_2048", U85_2048),
    ("u85_256_sram_only", ["--accelerator-config", "ethos-u85-256"] + SRAM_ONLY),
]
OUT = os.path.join(VELA_DIR, "per_layer.csv")
COLUMNS = ["config", "network", "stream", "offset", "op_id", "operator", "op_cycles", "npu_cycles",
           "mac_count", "sram_ac", "dram_ac", "flash_ac", "scale_ac", "scale_bytes", "mac_cycles", "ao_cycles", "cmd_cycles",
           "wd_cycles", "traversal", "ifm_block", "ofm_block", "ofm_ublock"]


def tables(xml_text):
    out = {}
    for m in re.finditer(r'<table name="(\w+)">\s*<!\[CDATA\[(.*?)\]\]>', xml_text, re.S):
        rows = list(csv.reader(io.StringIO(m.group(2).strip())))
        out[m.group(1)] = [dict(zip(rows[0], r)) for r in rows[1:]] if rows else []
    return out


def shape(row, prefix):
    """A block shape of perf_debug_main as HxWxC (empty when not recorded)."""
    dims = [row.get(f"{prefix}_{a}", "") for a in "hwc"]
    return "x".join(dims) if all(dims) else ""


def access(row, kinds):
    """Sum of the access-cycle columns of the memories whose name contains one of `kinds`."""
    total = 0
    for k, v in row.items():
        if k.endswith("_ac") and any(s in k.lower() for s in kinds):
            total += int(v or 0)
    return total


def run(vela, name, cfg, flags, workdir):
    shutil.copyfile(os.path.join(TFLITE_DIR, name + ".tflite"), os.path.join(workdir, name + ".tflite"))
    out = os.path.join(workdir, "out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [vela, *flags, "--verbose-performance", "--enable-debug-db", "--output-dir", "out", name + ".tflite"]
    p = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"vela failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    with open(os.path.join(out, f"{name}_vela.tflite"), "rb") as f:
        produced = f.read()
    with open(os.path.join(VELA_DIR, cfg, f"{name}_vela.tflite"), "rb") as f:
        committed = f.read()
    if produced != committed:
        raise SystemExit(f"{cfg}/{name}: Vela's output differs from the committed fixture")
    with open(os.path.join(out, f"{name}_debug.xml")) as f:
        t = tables(f.read())
    total = None
    summary = [s for s in os.listdir(out) if s.startswith(f"{name}_summary_")]
    if summary:
        with open(os.path.join(out, summary[0])) as f:
            rows = list(csv.DictReader(f))
        total = int(float(rows[0]["cycles_total"]))
    return t, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vela", default=os.path.join(os.path.dirname(sys.executable), "vela"))
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    vela = a.vela if os.path.exists(a.vela) else shutil.which("vela")
    if not vela:
        raise SystemExit("vela not found")
    with open(os.path.join(MODELS_DIR, "corpus.json")) as f:
        corpus = json.load(f)
    nets = [m["name"] for m in corpus["models"] if m["kind"] == "network"]
    nets = [n for n in nets if not a.names or n in a.names]
    rows = []
    with tempfile.TemporaryDirectory(prefix="npuc-vela-perf-") as workdir:
        for cfg, flags in CONFIGS:
            for name in nets:
                if not os.path.exists(os.path.join(VELA_DIR, cfg, f"{name}_vela.tflite")):
                    continue
                t, total = run(vela, name, cfg, flags, workdir)
                perf = {r["id"]: r for r in t["perf"]}
                main_t = {r["id"]: r for r in t.get("perf_debug_main", [])}
                wd = {r["id"]: r for r in t.get("perf_debug_wd", [])}
                dbg = {r["id"]: r for r in t.get("perf_debug", [])}
                streams = [r["id"] for r in t.get("cmdstream", [])]
                # Operations chained into another (an activation, an elementwise operation
                # reading the chaining buffer) have their cycles in the group's first one.
                group = {r["id"]: r["group_id"] for r in t.get("group", [])}
                seen = set()
                for q in t["queue"]:
                    sid = group.get(q["scheduled_id"], q["scheduled_id"])
                    p = perf.get(sid, {})
                    row = {"config": cfg, "network": name,
                           "stream": streams.index(q["cmdstream_id"]) if q["cmdstream_id"] in streams else 0,
                           "offset": q["offset"], "op_id": sid, "operator": p.get("operator", "")}
                    if sid not in seen:
                        seen.add(sid)
                        m = main_t.get(sid, {})
                        row.update({
                            "op_cycles": p.get("op_cycles", ""), "npu_cycles": p.get("npu_cycles", ""),
                            "mac_count": p.get("mac_count", ""),
                            "sram_ac": access(p, ["sram"]), "dram_ac": access(p, ["dram"]),
                            "flash_ac": access(p, ["flash"]),
                            "scale_ac": sum(int(v or 0) for k, v in dbg.get(sid, {}).items()
                                            if k.endswith("Scales_ac")),
                            "scale_bytes": sum(int(v or 0) for k, v in dbg.get(sid, {}).items()
                                               if k.endswith("Scales_read")),
                            "mac_cycles": m.get("mac_cycles", ""), "ao_cycles": m.get("ao_cycles", ""),
                            "cmd_cycles": m.get("cmd_cycles", ""), "wd_cycles": wd.get(sid, {}).get("wd_cycles", ""),
                            "traversal": m.get("traversal", ""),
                            "ifm_block": shape(m, "ifm_block"), "ofm_block": shape(m, "ofm_block"),
                            "ofm_ublock": shape(m, "ofm_ublock"),
                        })
                    rows.append(row)
                ops = sum(int(perf[s]["op_cycles"]) for s in seen if s in perf)
                rows.append({"config": cfg, "network": name, "offset": "total", "op_cycles": total})
                print(f"{cfg:18s} {name:32s} {len(seen):3d} ops  {ops:9d} op cycles  total {total}", flush=True)
    with open(OUT, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    print(f"wrote {os.path.relpath(OUT, MODELS_DIR)}: {len(rows)} rows")


if __name__ == "__main__":
    main()
