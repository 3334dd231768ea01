#!/usr/bin/env python3
"""Consistency checks of the fixture corpus (no tool is run, only files read).

For every models/vela/<cfg>/<name>_vela.tflite (or .npz), and models/vela-tosa/<cfg>/:
  * find the ethos-u custom operators in operator order, decode their COP1 /
    COP2 payloads (CONFIG and ID words, command stream words);
  * parse <name>.cmd.txt and check that the k-th "Register command stream"
    block has exactly the words of the k-th ethos-u operator's stream;
  * check that every line of the listing has one of the known shapes.
Prints a summary, including the CONFIG / ID words per configuration.

    python check_fixtures.py
"""
import glob
import os
import re
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MODELS_DIR, VELA_DIR  # noqa: E402

# "0x000004: 54d1352d 0027 4024 - NPU_SET_OFM_SCALE                 39, shift = 39, ..."
# "0x00000c:          0001 0105 - NPU_SET_IFM_PRECISION              1, activation_type = ..."
CMD_RE = re.compile(
    r"^0x(?P<off>[0-9a-f]{6}): (?:(?P<payload>[0-9a-f]{8})|        ) (?P<param>[0-9a-f]{4}) (?P<code>[0-9a-f]{4})"
    r" - (?P<name>NPU_\w+)\s+(?P<pdec>\d+)(?:, (?P<fields>.*))?$"
)
HEAD_RE = re.compile(r"^Register command stream: (\d+) words$")
COLS = "  Offset: Payload Param Code - Command                        Param, Fields"


def parse_listing(text):
    """-> list of streams, each a list of u32 words; raises on unknown lines."""
    streams = []
    cur = None
    for ln, line in enumerate(text.splitlines(), 1):
        m = HEAD_RE.match(line)
        if m:
            cur = {"n": int(m.group(1)), "words": []}
            streams.append(cur)
            continue
        if line == COLS or line.startswith("//"):
            continue
        m = CMD_RE.match(line)
        if not m or cur is None:
            raise ValueError(f"line {ln}: unrecognised: {line!r}")
        off = int(m.group("off"), 16)
        if off != 4 * len(cur["words"]):
            raise ValueError(f"line {ln}: offset {off:#x} but {len(cur['words'])} words so far")
        param, code = int(m.group("param"), 16), int(m.group("code"), 16)
        if int(m.group("pdec")) != param:
            raise ValueError(f"line {ln}: decimal param {m.group('pdec')} != {param}")
        cur["words"].append(param << 16 | code)
        is_cmd1 = bool(code & 0x4000)
        if is_cmd1 != (m.group("payload") is not None):
            raise ValueError(f"line {ln}: cmd0/cmd1 mismatch")
        if is_cmd1:
            cur["words"].append(int(m.group("payload"), 16))
    for s in streams:
        if len(s["words"]) != s["n"]:
            raise ValueError(f"stream header says {s['n']} words, listing has {len(s['words'])}")
    return [s["words"] for s in streams]


def decode_payload(buf):
    """COP1 / COP2 payload -> dict(format, config, id, words)."""
    magic = buf[:4]
    if magic == b"COP1":
        w = np.frombuffer(buf[: len(buf) // 4 * 4], dtype="<u4")
        assert w[1] == 0x00100001, hex(w[1])
        config, ident = int(w[2]), int(w[3])
        i = 4
        while w[i] == 0x5:  # NOP padding
            i += 1
        tag = int(w[i])
        assert tag & 0xFF == 2, hex(tag)
        n = ((tag >> 8) & 0xFF) << 16 | (tag >> 16)
        words = w[i + 1 : i + 1 + n]
        assert len(words) == n and len(buf) == 4 * (i + 1 + n), "COP1 payload has trailing bytes"
        return {"format": "COP1", "config": config, "id": ident, "words": [int(x) for x in words], "start": 4 * (i + 1)}
    if magic == b"COP2":
        # "COP2", u16 major, u16 minor, u64 bytes after this field;
        # entry: u32 type (1 = command stream), u32 bytes after this field =
        # u32 metadata length (36) + metadata + stream;
        # metadata: "VEUM", u16 1, u16 0, u32 20, CONFIG, ID, u32 features,
        # u64 staging bytes, 0xFF padding; the stream starts at byte 64.
        major, minor, total = struct.unpack_from("<HHQ", buf, 4)
        assert (major, minor) == (1, 0) and total == len(buf) - 16, (major, minor, total)
        etype, elen = struct.unpack_from("<II", buf, 16)
        assert etype == 1 and elen == len(buf) - 24, (etype, elen)
        mlen, veum = struct.unpack_from("<I4s", buf, 24)
        assert veum == b"VEUM", veum
        config, ident = struct.unpack_from("<II", buf, 40)
        start = 28 + mlen
        assert start == 64, start
        words = np.frombuffer(buf[start : 24 + elen], dtype="<u4")
        return {"format": "COP2", "config": config, "id": ident, "words": [int(x) for x in words], "start": start}
    raise ValueError(f"unknown payload magic {magic!r}")


def ethos_u_payloads(path):
    from tensorflow.lite.python import schema_py_generated as s

    with open(path, "rb") as f:
        flat = f.read()
    m = s.Model.GetRootAsModel(flat, 0)
    out = []
    for g in range(m.SubgraphsLength()):
        sg = m.Subgraphs(g)
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            oc = m.OperatorCodes(op.OpcodeIndex())
            if oc.CustomCode() == b"ethos-u":
                t = sg.Tensors(op.Inputs(0))
                out.append(m.Buffers(t.Buffer()).DataAsNumpy().tobytes())
    return out


def decode_config(c):
    return (
        f"macs_per_cc=2^{c & 0xF}={1 << (c & 0xF)} cmd_stream_version={(c >> 4) & 0xF} "
        f"num_axi_sram=2^{(c >> 8) & 3} num_axi_ext=2^{(c >> 10) & 1} num_wd=2^{(c >> 12) & 3} "
        f"custom_dma={(c >> 27) & 1} product={(c >> 28) & 0xF}"
    )


def decode_id(i):
    return (
        f"version_status={i & 0xF} version_minor={(i >> 4) & 0xF} version_major={(i >> 8) & 0xF} "
        f"product_major={(i >> 12) & 0xF} arch={(i >> 28) & 0xF}.{(i >> 20) & 0xFF}.{(i >> 16) & 0xF}"
    )


def main():
    errors = 0
    configs = {}
    n_checked = 0
    cfg_dirs = (
        sorted(glob.glob(os.path.join(VELA_DIR, "*")))
        + sorted(glob.glob(os.path.join(MODELS_DIR, "vela-tosa", "*")))
        + sorted(glob.glob(os.path.join(MODELS_DIR, "large", "vela", "*")))
    )
    for cfg_dir in cfg_dirs:
        cfg = os.path.relpath(cfg_dir, MODELS_DIR).replace("vela/", "", 1).replace("large/", "large:", 1)
        for listing_path in sorted(glob.glob(os.path.join(cfg_dir, "*.cmd.txt"))):
            name = os.path.basename(listing_path)[: -len(".cmd.txt")]
            try:
                with open(listing_path) as f:
                    streams = parse_listing(f.read())
                tfl = os.path.join(cfg_dir, name + "_vela.tflite")
                npz = os.path.join(cfg_dir, name + "_vela.npz")
                if os.path.exists(tfl):
                    payloads = ethos_u_payloads(tfl)
                else:
                    payloads = [np.load(npz)["cmd_data"].tobytes()]
                decoded = [decode_payload(p) for p in payloads]
                if len(decoded) != len(streams):
                    raise ValueError(f"{len(decoded)} ethos-u ops but {len(streams)} listed streams")
                for k, (d, s) in enumerate(zip(decoded, streams)):
                    if d["words"] != s:
                        first = next(i for i, (a, b) in enumerate(zip(d["words"] + [None], s + [None])) if a != b)
                        raise ValueError(f"stream {k}: words differ from word {first}")
                    configs.setdefault((cfg, d["format"]), set()).add((d["config"], d["id"]))
                n_checked += 1
                if len(streams) > 1:
                    print(f"{cfg}/{name}: {len(streams)} streams ({', '.join(str(len(s)) for s in streams)} words), "
                          "listing order == ethos-u operator order")
            except Exception as e:  # noqa: BLE001
                errors += 1
                print(f"FAIL {cfg}/{name}: {e}")
    for (cfg, fmt), vals in sorted(configs.items()):
        for c, i in sorted(vals):
            print(f"{cfg:18s} {fmt}  CONFIG {c:#010x} ({decode_config(c)})  ID {i:#010x} ({decode_id(i)})")
    print(f"{n_checked} listings match their payloads, {errors} failures")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
