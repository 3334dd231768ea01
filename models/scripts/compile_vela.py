#!/usr/bin/env python3
"""Compile every models/tflite/*.tflite with Arm's Vela for the Ethos-U85.

For each configuration directory models/vela/<cfg>/ it writes
  <name>_vela.tflite  (or <name>_vela.npz for --output-format raw)
  <name>.cmd.txt      Vela's --verbose-register-command-stream listing, taken
                      verbatim from its stdout (only the trailing "Network
                      summary" block, which every run prints, is cut off)
  <name>.perf.txt     Vela's whole stdout with --verbose-performance

    python compile_vela.py [--vela PATH] [--subprocess] [NAME ...]
    python compile_vela.py --tosa [NAME ...]

Vela runs twice per model and configuration (once per verbose flag); the two
compiled models are checked to be identical.  Vela's stderr (the warnings about
default system configuration / memory mode) is not kept.
"""
import argparse
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    LARGE_NETWORKS,
    LARGE_VELA_CONFIGS,
    MODELS_DIR,
    NETWORKS,
    ORIGINAL,
    TFLITE_DIR,
    VELA_DIR,
    no_vela,
    tflite_path,
    vela_root,
)

TOSA_DIR = os.path.join(MODELS_DIR, "tosa")
VELA_TOSA_DIR = os.path.join(MODELS_DIR, "vela-tosa")

# Vela's own defaults for the U85 spelt out: without --config Vela prints the
# absolute path of its vela.ini into its stdout (and so into the .perf.txt
# files), and it refuses --config without --system-config.  Checked: the
# compiled models are byte-identical to a run without these options.
DEFAULT_SYSTEM = ["--config", "Arm/vela.ini", "--system-config", "Ethos_U85_SYS_DRAM_Mid",
                  "--memory-mode", "Dedicated_Sram_384KB"]
SRAM_ONLY = ["--config", "Arm/vela.ini", "--system-config", "Ethos_U85_SYS_Flash_High",
             "--memory-mode", "Sram_Only"]
U85_256 = ["--accelerator-config", "ethos-u85-256"] + DEFAULT_SYSTEM
U85_2048 = ["--accelerator-config", "ethos-u85-2048"] + DEFAULT_SYSTEM

# (config dir, vela flags, models (None = all), output format).  Sram_Only only
# for the first fixtures and the whole networks.
CONFIGS = [
    ("u85_256", U85_256, None, "tflite"),
    ("u85_2048", U85_2048, None, "tflite"),
    (
        "u85_256_sram_only",
        ["--accelerator-config", "ethos-u85-256"] + SRAM_ONLY,
        ORIGINAL + NETWORKS,
        "tflite",
    ),
    ("u85_256_cop2", U85_256 + ["--cop-format", "COP2"], ["conv2d_3x3_relu", "mobilenet_tiny"], "tflite"),
    ("u85_256_raw", U85_256 + ["--output-format", "raw"], ["conv2d_3x3_relu"], "raw"),
]

SUMMARY_MARK = "Network summary for "


def register_listing(stdout):
    """The register command stream part of Vela's stdout: everything from the
    first 'Register command stream:' line up to (not including) the 'Network
    summary for' block that Vela prints at the end of every run."""
    lines = stdout.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.startswith("Register command stream:")), None)
    if start is None:
        return ""
    end = len(lines)
    for i in range(start, len(lines)):
        if lines[i].startswith(SUMMARY_MARK):
            end = i
            break
    out = lines[start:end]
    while out and not out[-1].strip():  # the blank line before the summary
        out.pop()
    return "".join(out)


def run_vela_in_process(argv, workdir):
    """Vela's main() in this process, with file descriptors 1 and 2 sent to
    temporary files (the C++ backend writes to them directly): the same stdout
    and output files as a `vela` process (checked on every fixture), ~20x faster
    than starting Python and importing Vela for each of ~1000 runs."""
    import ctypes

    from ethosu.vela.vela import main as vela_main

    libc = ctypes.CDLL(None)
    so, se = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    libc.fflush(None)
    saved = (os.dup(1), os.dup(2))
    cwd = os.getcwd()
    os.dup2(so.fileno(), 1)
    os.dup2(se.fileno(), 2)
    os.chdir(workdir)
    try:
        rc = vela_main(argv) or 0
    except SystemExit as e:
        rc = e.code or 0
    except Exception as e:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        rc = repr(e)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        libc.fflush(None)
        os.chdir(cwd)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    so.seek(0)
    se.seek(0)
    return rc, so.read().decode("utf-8", "replace"), se.read().decode("utf-8", "replace")


IN_PROCESS = True


def run_vela(vela, model_path, flags, verbose_flag, workdir, check=True):
    """Run vela in workdir with --output-dir out; return (stdout, stderr, output dir)."""
    out = os.path.join(workdir, "out")
    shutil.rmtree(out, ignore_errors=True)
    # relative paths, so that what Vela prints does not depend on where we are
    name = os.path.basename(model_path)
    shutil.copyfile(model_path, os.path.join(workdir, name))
    cmd = [vela, *flags, verbose_flag, "--output-dir", "out", name]
    if IN_PROCESS:
        rc, stdout, stderr = run_vela_in_process(cmd[1:], workdir)
    if not IN_PROCESS or re.search(r"#\d+", stdout):
        # (In-process: Vela names some tensors it creates "#<n>" from a
        # process-wide counter, seen in --verbose-performance of dw_mult2; only a
        # fresh process prints the same numbers every time.)
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    if rc != 0 and not check:
        return None, stdout + stderr, out
    if rc != 0:
        sys.stderr.write(stdout[-5000:] + stderr[-5000:])
        raise SystemExit(f"vela failed ({rc}): {' '.join(cmd)}")
    return stdout, stderr, out


def normalise_npz(src, dst):
    """numpy.savez stamps the zip entries with the current time; rewrite the
    archive with a fixed timestamp (same entries, same bytes, same order) so
    reruns give identical files."""
    with zipfile.ZipFile(src) as zin:
        entries = [(i, zin.read(i.filename)) for i in zin.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zout:
        for info, data in entries:
            zi = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = info.compress_type
            zi.external_attr = info.external_attr
            zout.writestr(zi, data)
    with open(dst, "wb") as f:
        f.write(buf.getvalue())


def compile_one(vela, name, cfg, flags, fmt, workdir, src_dir=TFLITE_DIR, src_ext="tflite", dst_root=VELA_DIR):
    model_path = os.path.join(src_dir, name + "." + src_ext)
    dst_dir = os.path.join(dst_root, cfg)
    os.makedirs(dst_dir, exist_ok=True)
    ext = "npz" if fmt == "raw" else "tflite"
    produced = f"{name}_vela.{ext}"

    so_cmd, se_cmd, out = run_vela(vela, model_path, flags, "--verbose-register-command-stream", workdir)
    with open(os.path.join(out, produced), "rb") as f:
        blob_a = f.read()
    if fmt == "raw":
        normalise_npz(os.path.join(out, produced), os.path.join(dst_dir, produced))
    else:
        shutil.copyfile(os.path.join(out, produced), os.path.join(dst_dir, produced))
    listing = register_listing(so_cmd)
    with open(os.path.join(dst_dir, name + ".cmd.txt"), "w") as f:
        f.write(listing)

    so_perf, _, out = run_vela(vela, model_path, flags, "--verbose-performance", workdir)
    with open(os.path.join(out, produced), "rb") as f:
        blob_b = f.read()
    with open(os.path.join(dst_dir, name + ".perf.txt"), "w") as f:
        f.write(so_perf)
    if fmt != "raw" and blob_a != blob_b:
        print(f"  WARNING: {cfg}/{produced} differs between the two vela runs", flush=True)

    n_streams = listing.count("Register command stream:")
    cpu = next((l.strip() for l in so_cmd.splitlines() if l.startswith("CPU operators")), "")
    print(f"  {cfg:18s} {name:20s} {len(blob_a):7d} bytes  {n_streams} stream(s)  {cpu}", flush=True)
    return n_streams


def compile_tosa(vela, names, workdir):
    """models/tosa/*.tosa -> vela-tosa/u85_256/.  Vela rejects what it cannot
    place (no CPU fallback for TOSA); failures are listed in FAILED.txt."""
    cfg, flags = "u85_256", U85_256
    dst = os.path.join(VELA_TOSA_DIR, cfg)
    names = names or sorted(os.path.basename(p)[: -len(".tosa")] for p in glob.glob(os.path.join(TOSA_DIR, "*.tosa")))
    if not os.path.isdir(dst):
        os.makedirs(dst)
    failed = {}
    fail_path = os.path.join(dst, "FAILED.txt")
    if os.path.exists(fail_path):
        with open(fail_path) as f:
            for line in f:
                n, _, why = line.rstrip("\n").partition(": ")
                failed[n] = why
    for name in names:
        for f in glob.glob(os.path.join(dst, name + "[._]*")):
            os.remove(f)
        failed.pop(name, None)
        so, err, _ = run_vela(vela, os.path.join(TOSA_DIR, name + ".tosa"), flags, "--verbose-performance", workdir, check=False)
        if so is None:
            lines = [l.strip() for l in err.splitlines() if l.strip()]
            first = next((i for i, l in enumerate(lines) if l.startswith(("RuntimeError", "Error", "ValueError"))), max(0, len(lines) - 1))
            why = " | ".join(lines[first:first + 4]) if lines else "?"
            failed[name] = why[:300]
            print(f"  {cfg:18s} {name:28s} FAILED: {why[:150]}", flush=True)
            continue
        compile_one(vela, name, cfg, flags, "tflite", workdir, src_dir=TOSA_DIR, src_ext="tosa", dst_root=VELA_TOSA_DIR)
    with open(fail_path, "w") as f:
        for n in sorted(failed):
            f.write(f"{n}: {failed[n]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vela", default=os.path.join(os.path.dirname(sys.executable), "vela"))
    ap.add_argument("--tosa", action="store_true", help="compile models/tosa/*.tosa (u85_256) instead")
    ap.add_argument("--subprocess", action="store_true", help="run a vela process per compilation")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    global IN_PROCESS
    IN_PROCESS = not a.subprocess
    if IN_PROCESS:
        import ethosu.vela  # noqa: F401  (this venv's Vela)
    vela = a.vela if os.path.exists(a.vela) else shutil.which("vela")
    if not vela:
        raise SystemExit("vela not found; run setup_venv.sh")
    ver = subprocess.run([vela, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"vela {ver}")

    if a.tosa:
        with tempfile.TemporaryDirectory(prefix="npuc-vela-") as workdir:
            compile_tosa(vela, a.names, workdir)
        return

    all_names = sorted(os.path.basename(p)[: -len(".tflite")] for p in glob.glob(os.path.join(TFLITE_DIR, "*.tflite")))
    all_names += [n for n in LARGE_NETWORKS if os.path.exists(tflite_path(n))]
    names = [n for n in (a.names or all_names) if not no_vela(n)]
    with tempfile.TemporaryDirectory(prefix="npuc-vela-") as workdir:
        for cfg, flags, only, fmt in CONFIGS:
            for name in names:
                if only is not None and name not in only:
                    continue
                if name in LARGE_NETWORKS:
                    if cfg in LARGE_VELA_CONFIGS:
                        compile_one(vela, name, cfg, flags, fmt, workdir,
                                    src_dir=os.path.dirname(tflite_path(name)), dst_root=vela_root(name))
                    continue
                compile_one(vela, name, cfg, flags, fmt, workdir)


if __name__ == "__main__":
    main()
