#!/usr/bin/env python3
"""Vela 5.2 on one set of the TOSA conformance suite (models/scripts/make_conformance.sh),
and npuc's simulator on Vela's streams (issue 16 B).

    python vela_conformance.py SET_DIR OUT_DIR [--npuc PATH] [--vela-out DIR] [--filter S]

Run it with a Python that has ethos-u-vela==5.2.0 and numpy (e.g. the venv of
models/scripts/setup_venv.sh). For every test (a directory with a desc.json) under SET_DIR:

1. Vela compiles `test.tosa` for ethos-u85-256 with its default options (system config,
   memory mode, optimise), in-process: its `main` is imported once and called per test, in a
   worker process that is restarted when Vela aborts it or a test runs longer than
   --vela-timeout. The output `.tflite` is kept as VELA_OUT/<test>.tflite (VELA_OUT defaults
   to OUT_DIR/tflite; an output that simulates exactly is deleted unless --keep-exact, one above 64 MB always);
   when Vela writes none, its error class is recorded (the exception's
   type and first line, numbers and quoted names replaced so that one cause is one class).
2. npu_only: whether every operator of the output is an `ethos-u` custom operator.
3. `npuc run` (--npuc, default the release binary of this checkout) runs the output on the
   simulator with the test's input .npy files (desc.json `ifm_file` order; `run` accepts
   Vela's reshaped graph inputs when dtype and element count match). Every output is
   compared with the TOSA reference model's result (`ofm_file`): byte for byte when the dtypes
   agree, else value for value (the reference writes INT48 as int64 and INT4 as int8) -
   the rule of tests/tests/common/conformance.rs. sim_status is `exact`, `differs` (with what
   differs), `refused` (`run` stopped, with its error) or `-` (no Vela output).

Resumable: OUT_DIR/vela.jsonl and OUT_DIR/sim.jsonl keep every finished step, and a rerun
skips them (delete them, or the test's lines, to redo). The CSV OUT_DIR/results.csv (test,
operator, vela_status, vela_error, npu_only, sim_status, detail) and the summary
OUT_DIR/summary.txt are rewritten at the end of every run.
"""
import argparse
import csv
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCEL = "ethos-u85-256"
MAX_KEPT = 64 << 20  # a Vela output larger than this is not kept even when it is not exact


# ---------------------------------------------------------------------------------------------
# The Vela worker: reads one JSON request per line on stdin, answers one JSON line on the
# protocol fd. Vela's own prints (Python and its C++ core alike) go to a per-test log file.


def worker_main(proto_fd):
    proto = os.fdopen(proto_fd, "w", buffering=1)
    from ethosu.vela import vela  # imported once

    for line in sys.stdin:
        req = json.loads(line)
        tmp = tempfile.mkdtemp(prefix="velaconf-")
        log = os.path.join(tmp, "log.txt")
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        err = None
        try:
            rc = vela.main([req["model"], "--accelerator-config", ACCEL, "--output-dir", tmp])
            if rc:
                err = f"exit status {rc}"
        except SystemExit as e:  # argparse / parser.error
            err = f"SystemExit {e.code}"
        except BaseException as e:  # noqa: BLE001 - every Vela failure is a result here
            err = f"{type(e).__name__}: {e}"
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            os.close(fd)
        base = os.path.splitext(os.path.basename(req["model"]))[0]
        produced = os.path.join(tmp, base + "_vela.tflite")
        ok = os.path.exists(produced)
        if ok:
            os.makedirs(os.path.dirname(req["out"]), exist_ok=True)
            shutil.move(produced, req["out"])
        with open(log, errors="replace") as f:
            text = f.read()
        shutil.rmtree(tmp, ignore_errors=True)
        if not ok and err is None:
            err = "no output written"
        proto.write(json.dumps({"written": ok, "error": err, "log": text[-4000:]}) + "\n")


class Worker:
    """The Vela worker process, restarted after a crash or a timeout."""

    def __init__(self):
        self.proc = None

    def start(self):
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", str(w)],
            stdin=subprocess.PIPE,
            pass_fds=(w,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        os.close(w)
        self.out = os.fdopen(r, "r")

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.out.close()
            self.proc = None

    def compile(self, model, out, timeout):
        if self.proc is None:
            self.start()
        self.proc.stdin.write(json.dumps({"model": model, "out": out}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.out], [], [], timeout)
        if not ready:
            self.stop()
            return {"written": False, "error": f"timeout after {timeout} s", "log": ""}
        line = self.out.readline()
        if not line:
            code = self.proc.wait()
            self.stop()
            return {"written": False, "error": f"Vela aborted the process (status {code})", "log": ""}
        return json.loads(line)


# ---------------------------------------------------------------------------------------------
# Classes, TFLite inspection, comparison.


def error_class(err, log):
    """One line naming the cause: the exception (or Vela's last error line), numbers and
    quoted names replaced."""
    text = err or ""
    if text.startswith("exit status") or text.startswith("SystemExit") or text == "no output written":
        lines = [ln.strip() for ln in log.splitlines() if re.search(r"error|Error|ERROR|assert", ln)]
        if lines:
            text = f"{text}: {lines[-1]}"
    text = text.splitlines()[0] if text else ""
    text = re.sub(r"'[^']*'", "'..'", text)
    text = re.sub(r"\"[^\"]*\"", '".."', text)
    text = re.sub(r"\[[^\]]*\]", "[..]", text)
    text = re.sub(r"\d+", "#", text)
    return text[:160]


def npu_only(path):
    """Whether every operator of the Vela output is an ethos-u custom operator."""
    from ethosu.vela.tflite.Model import Model

    buf = bytearray(open(path, "rb").read())
    m = Model.GetRootAsModel(buf, 0)
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for o in range(sg.OperatorsLength()):
            code = m.OperatorCodes(sg.Operators(o).OpcodeIndex())
            custom = code.CustomCode()
            if custom is None or custom.decode() != "ethos-u":
                return False
    return True


def compare(got, want):
    """None when equal, else what differs (tests/tests/common/conformance.rs::compare)."""
    import numpy as np

    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.size != w.size:
            return f"output {k}: shape {list(g.shape)}, expected {list(w.shape)}"
        if g.dtype == w.dtype:
            gb = np.frombuffer(g.tobytes(), np.uint8)
            wb = np.frombuffer(w.tobytes(), np.uint8)
            bad = np.nonzero(gb != wb)[0]
            if len(bad):
                p = int(bad[0])
                return (
                    f"output {k}: {len(bad)} of {len(wb)} bytes differ, the first at byte {p}: "
                    f"expected {wb[p]:#04x}, got {gb[p]:#04x}"
                )
            continue
        if g.dtype.kind not in "iub" or w.dtype.kind not in "iub":
            return f"output {k}: dtype {g.dtype}, expected {w.dtype}"
        gv = g.astype(np.int64).reshape(-1)
        wv = w.astype(np.int64).reshape(-1)
        bad = np.nonzero(gv != wv)[0]
        if len(bad):
            p = int(bad[0])
            return (
                f"output {k} ({g.dtype} vs expected {w.dtype}): {len(bad)} of {len(wv)} values "
                f"differ, the first at element {p}: expected {wv[p]}, got {gv[p]}"
            )
    return None


def simulate(npuc, tflite, test_dir, desc, timeout):
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="velaconf-run-") as out:
        cmd = [npuc, "run", tflite, "--output-dir", out]
        for f in desc.get("ifm_file", []):
            cmd += ["--input", os.path.join(test_dir, f)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"sim": "refused", "detail": f"npuc run: timeout after {timeout} s", "notes": ""}
        notes = " | ".join(ln for ln in p.stderr.splitlines() if "note:" in ln)
        if p.returncode != 0:
            msg = " | ".join(ln for ln in p.stderr.splitlines() if "note:" not in ln)
            return {"sim": "refused", "detail": msg[:600], "notes": notes[:600]}
        want = [np.load(os.path.join(test_dir, f)) for f in desc.get("ofm_file", [])]
        got = []
        k = 0
        while os.path.exists(os.path.join(out, f"out{k}.npy")):
            got.append(np.load(os.path.join(out, f"out{k}.npy")))
            k += 1
        d = compare(got, want)
        return {"sim": "exact" if d is None else "differs", "detail": d or "", "notes": notes[:600]}


# ---------------------------------------------------------------------------------------------


def test_dirs(root):
    out = []
    for d, _, files in os.walk(root):
        if "desc.json" in files:
            out.append(d)
    return sorted(out)


def test_name(root, d):
    return os.path.relpath(d, root).replace("operators/", "", 1)


def load_jsonl(path):
    done = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    done[r["test"]] = r
    return done


def detail_class(detail):
    t = re.sub(r"'[^']*'", "'..'", detail.split(" | ")[0])
    t = re.sub(r"\[[^\]]*\]", "[..]", t)
    return re.sub(r"\d+", "#", t)[:140]


def summarise(set_dir, tests, vela, sim, title):
    n = len(tests)
    written = [t for t in tests if vela.get(t, {}).get("written")]
    npu = [t for t in written if vela[t].get("npu_only")]
    status = Counter(sim[t]["sim"] for t in written if t in sim)
    lines = [
        f"{title}: {n} tests | Vela writes an output {len(written)} ({100 * len(written) / max(n, 1):.1f} %), "
        f"all operators on the NPU {len(npu)} | npuc run on Vela's output: exact {status['exact']}, "
        f"differs {status['differs']}, refused {status['refused']}, not run {len(written) - sum(status.values())}",
        f"  (set {set_dir}, Vela 5.2 {ACCEL} default options)",
    ]
    errs = defaultdict(list)
    for t in tests:
        v = vela.get(t)
        if v and not v["written"]:
            errs[v["error_class"]].append(t)
    lines.append(f"Vela writes no output: {n - len(written)}")
    for c, ts in sorted(errs.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"  {len(ts):5}  {c}")
        lines.append(f"         e.g. {ts[0]}")
    cpu = [t for t in written if not vela[t].get("npu_only")]
    if cpu:
        lines.append(f"Vela output with operators left on the CPU: {len(cpu)}")
        by_op = Counter(vela[t]["operator"] for t in cpu)
        for op, c in by_op.most_common():
            lines.append(f"  {c:5}  {op}")
    for kind in ("differs", "refused"):
        ts = [t for t in written if sim.get(t, {}).get("sim") == kind]
        if not ts:
            continue
        lines.append(f"Simulator {kind}: {len(ts)}")
        groups = defaultdict(list)
        for t in ts:
            groups[(vela[t]["operator"], detail_class(sim[t]["detail"]) if kind == "refused" else "")].append(t)
        for (op, c), g in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(g):5}  {op}{': ' + c if c else ''}")
        for t in ts:
            lines.append(f"    {t}: {sim[t]['detail'][:300]}")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(int(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--npuc", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "npuc"))
    ap.add_argument("--vela-out", help="where Vela's .tflite files go (default OUT_DIR/tflite)")
    ap.add_argument("--filter", default="", help="only tests whose name contains this")
    ap.add_argument("--keep-exact", action="store_true", help="keep Vela's output of an exact test too")
    ap.add_argument("--vela-timeout", type=float, default=300)
    ap.add_argument(
        "--retry-timeouts",
        action="store_true",
        help="compile again the tests whose earlier Vela run timed out (with this run's --vela-timeout)",
    )
    ap.add_argument("--sim-timeout", type=float, default=600)
    ap.add_argument(
        "--resim",
        default="",
        help="simulate again the tests whose sim_status is one of these (comma-separated: differs,refused), "
        "e.g. after a simulator fix",
    )
    ap.add_argument("--title", help="the summary's title (default the set directory's name)")
    args = ap.parse_args()

    set_dir = os.path.abspath(args.set_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    vela_out = args.vela_out or os.path.join(args.out_dir, "tflite")
    title = args.title or os.path.basename(set_dir.rstrip("/"))
    vela_log = os.path.join(args.out_dir, "vela.jsonl")
    sim_log = os.path.join(args.out_dir, "sim.jsonl")
    vela = load_jsonl(vela_log)  # a later line for a test replaces an earlier one
    sim = load_jsonl(sim_log)  # likewise

    dirs = {test_name(set_dir, d): d for d in test_dirs(set_dir)}
    tests = sorted(t for t in dirs if args.filter in t)
    worker = Worker()
    t0 = time.time()
    if args.retry_timeouts:
        for t in tests:
            if t in vela and not vela[t]["written"] and vela[t].get("error", "").startswith("timeout"):
                del vela[t]
    resim = set(filter(None, args.resim.split(",")))
    for t in tests:
        if t in sim and sim[t]["sim"] in resim:
            del sim[t]
            if not os.path.exists(vela[t]["tflite"]):
                del vela[t]  # deleted (too large): compiled again
    todo = [t for t in tests if t not in vela or (vela[t]["written"] and t not in sim)]
    print(f"{title}: {len(tests)} tests, {len(todo)} to do", flush=True)
    with open(vela_log, "a") as vl, open(sim_log, "a") as sl:
        for i, t in enumerate(todo):
            d = dirs[t]
            desc = json.load(open(os.path.join(d, "desc.json")))
            operator = desc.get("test_details", {}).get("operator") or os.path.basename(os.path.dirname(d)).upper()
            out = os.path.join(vela_out, t.replace("/", "__") + ".tflite")
            if t not in vela:
                r = worker.compile(os.path.join(d, desc.get("tosa_file", "test.tosa")), out, args.vela_timeout)
                rec = {"test": t, "operator": operator, "written": r["written"], "tflite": out if r["written"] else ""}
                if r["written"]:
                    rec["npu_only"] = npu_only(out)
                else:
                    rec["error"] = (r["error"] or "")[:1000]
                    rec["error_class"] = error_class(r["error"], r["log"])
                    rec["log_tail"] = r["log"][-1500:]
                vela[t] = rec
                vl.write(json.dumps(rec) + "\n")
                vl.flush()
            if vela[t]["written"] and t not in sim:
                s = simulate(args.npuc, vela[t]["tflite"], d, desc, args.sim_timeout)
                s["test"] = t
                sim[t] = s
                if s["sim"] == "exact" and not args.keep_exact:
                    os.remove(vela[t]["tflite"])
                elif os.path.getsize(vela[t]["tflite"]) > MAX_KEPT:
                    os.remove(vela[t]["tflite"])  # rerun Vela on the test to see it again
                sl.write(json.dumps(s) + "\n")
                sl.flush()
            if (i + 1) % 50 == 0:
                print(f"  {i + 1}/{len(todo)} ({time.time() - t0:.0f} s)", flush=True)
    worker.stop()

    with open(os.path.join(args.out_dir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "operator", "vela_status", "vela_error", "npu_only", "sim_status", "detail"])
        for t in tests:
            v = vela.get(t)
            if v is None:
                continue
            s = sim.get(t, {})
            w.writerow(
                [
                    t,
                    v["operator"],
                    "written" if v["written"] else "no output",
                    v.get("error_class", ""),
                    ("yes" if v.get("npu_only") else "no") if v["written"] else "-",
                    s.get("sim", "-"),
                    s.get("detail", ""),
                ]
            )
    text = summarise(set_dir, tests, vela, sim, title)
    with open(os.path.join(args.out_dir, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
