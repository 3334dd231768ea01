#!/usr/bin/env python3
"""Copy a small, varied subset of the TOSA conformance suite (made by make_conformance.sh)
into models/tosa-conformance/, the fixtures of tests/tests/tosa_conformance_subset.rs.

    python3 models/scripts/pick_conformance_subset.py [--sets=SET,...] [--extras-only] SUITE_DIR [OUT_DIR]

An extension set (make_conformance.sh) holds only the tests the extension adds.

For each set (pro-int, ext-int16, ext-int4, ext-doubleround) and each operator the smallest
test with results is a candidate; the subset takes, per set, the candidates in operator order
spread over the set (every k-th, so each set contributes up to its quota), plus the smallest
rank-0 test, the smallest test of rank 5 or more, the smallest RESHAPE to rank 0 and the smallest
RESCALE of a non-scalar INT48 input of each set,
plus, per convolution-family operator (CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, CONV3D), the
smallest PRO-INT test with runtime weights and the smallest with a runtime bias (decisions
L36-L38) and the smallest EXT-INT16 ones with a runtime bias, runtime weights, and both
(decisions L50, L51), plus the PRO-INT tests of CLASS_TESTS (one per refusal class of issue 16 B that
now compiles: decisions L39-L45), plus, per operator family that splits feature maps above 65536
(decision L46), the smallest PRO-INT test with an input side above 65536 (up to 512 KB).
`--extras-only` copies just those, keeping the subset already there;
`--sets=ext-int16,ext-int4` re-picks only the sets named, keeping the others' tests.  Each test directory is
copied as <set>__<test>/ with desc.json, test.tosa, inputs and the reference results.
Deterministic: the same suite gives the same subset.  Standard library only.
"""

import json
import re
import shutil
import sys
from pathlib import Path

QUOTA = {"pro-int": 40, "ext-int16": 15, "ext-int4": 5, "ext-doubleround": 5}
MAX_TEST_BYTES = 96 * 1024


def tests(set_dir):
    for desc in sorted(set_dir.glob("operators/*/*/*/desc.json")):
        d = desc.parent
        meta = json.loads(desc.read_text())
        files = [meta.get("tosa_file", "test.tosa")] + meta["ifm_file"] + meta["ofm_file"]
        if not all((d / f).exists() for f in files):
            continue
        size = sum((d / f).stat().st_size for f in files)
        op = meta.get("test_details", {}).get("operator", d.parent.name.upper())
        ranks = [len(s) for s in meta.get("test_details", {}).get("output_shapes", [])]
        gen = meta.get("meta", {}).get("data_gen", {}).get("tensors", {})
        variable = {v.get("input_pos") for v in gen.values() if v.get("input_type") == "VARIABLE"}
        yield {"dir": d, "files": files, "size": size, "op": op, "rank": max(ranks, default=1),
               "variable": variable}


# One small PRO-INT test per refusal class of issue 16 B that now compiles (decisions L39-L45).
CLASS_TESTS = (
    "tensor/avg_pool2d/avg_pool2d_1x11x44x3_i8_acci32_st11_kern99_pad8888",
    "tensor/avg_pool2d/avg_pool2d_1x5x6x3_i8_acci32_st8192x4_kern8192x3_pad8191x8188x0x1",
    "data_layout/concat/concat_58_b_axis0",
    "data_layout/concat/concat_3x10x11x1_b_axis2",
    "tensor/conv2d_8192x2/conv2d_8192x2_1x3x3x2_i8xi8_acci32_st8192x8192_pad8189x8192x8189x4097_dilat1x4096_lclbnd0",
    "tensor/depthwise_conv2d_1x8192/depthwise_conv2d_1x8192_1x4x4x4_i8xi8_acci32_st8192x8192_pad8188x1x8188x8192_dilat8192x1_lclbnd0",
)


def class_tests(all_tests):
    """The tests of CLASS_TESTS, in that order (any size)."""
    by_dir = {str(t["dir"].relative_to(t["dir"].parents[2])): t for t in all_tests}
    return [by_dir[name] for name in CLASS_TESTS if name in by_dir]


CONV_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "CONV3D")


def runtime_operand_tests(all_tests):
    """The smallest test per convolution-family operator with runtime weights (input 1), and
    with a runtime bias but constant weights (input 2 only)."""
    chosen = []
    for op in CONV_OPS:
        for pred in (lambda t: 1 in t["variable"], lambda t: 2 in t["variable"] and 1 not in t["variable"]):
            c = sorted((t for t in all_tests if t["op"] == op and pred(t)), key=lambda t: (t["size"], str(t["dir"])))
            if c:
                chosen.append(c[0])
    return chosen


def int16_runtime_tests(all_tests):
    """The smallest EXT-INT16 convolution-family test with a runtime bias only, with runtime
    weights only, and with both (decisions L50, L51)."""
    chosen = []
    for pred in (lambda v: 2 in v and 1 not in v, lambda v: 1 in v and 2 not in v, lambda v: {1, 2} <= v):
        c = sorted((t for t in all_tests if t["op"] in CONV_OPS and pred(t["variable"])),
                   key=lambda t: (t["size"], str(t["dir"])))
        if c:
            chosen.append(c[0])
    return chosen


LARGE_DIM_OPS = ("LOGICAL_XOR", "RESCALE", "REDUCE_MAX", "MAX_POOL2D", "AVG_POOL2D", "DEPTHWISE_CONV2D")
LARGE_DIM_MAX_BYTES = 512 * 1024


def input_shapes(t):
    """The shapes in the .npy headers of a test's input files."""
    shapes = []
    for f in t["files"]:
        if not f.endswith(".npy") or not f.startswith("input"):
            continue
        head = (t["dir"] / f).read_bytes()[:512].decode("latin-1")
        m = re.search(r"'shape': \(([^)]*)\)", head)
        if m:
            shapes.append([int(v) for v in m.group(1).replace(" ", "").split(",") if v])
    return shapes


def large_dim_tests(all_tests):
    """The smallest test per LARGE_DIM_OPS operator with an input side above 65536."""
    chosen = []
    for op in LARGE_DIM_OPS:
        c = sorted((t for t in all_tests if t["op"] == op and t["size"] <= LARGE_DIM_MAX_BYTES
                    and any(v > 65536 for s in input_shapes(t) for v in s)),
                   key=lambda t: (t["size"], str(t["dir"])))
        if c:
            chosen.append(c[0])
    return chosen


def main():
    only_sets = None
    args = []
    for a in sys.argv[1:]:
        if a.startswith("--sets="):
            only_sets = a[len("--sets="):].split(",")
        elif a != "--extras-only":
            args.append(a)
    extras_only = "--extras-only" in sys.argv[1:]
    suite = Path(args[0])
    out = Path(args[1]) if len(args) > 1 else Path(__file__).resolve().parents[1] / "tosa-conformance"
    picked = []
    for set_name, quota in QUOTA.items():
        if only_sets is not None and set_name not in only_sets:
            continue
        every_test = list(tests(suite / set_name))
        all_tests = [t for t in every_test if t["size"] <= MAX_TEST_BYTES]
        if set_name == "pro-int":
            extras = runtime_operand_tests(all_tests) + large_dim_tests(every_test)
            extras += [t for t in class_tests(all_tests) if t not in extras]
            if extras_only:
                picked += [(set_name, t) for t in extras]
                continue
        elif set_name == "ext-int16":
            extras = int16_runtime_tests(all_tests)
            if extras_only:
                picked += [(set_name, t) for t in extras]
                continue
        else:
            extras = []
        if extras_only:
            continue
        smallest = {}
        for t in all_tests:
            key = t["op"]
            if key not in smallest or (t["size"], str(t["dir"])) < (smallest[key]["size"], str(smallest[key]["dir"])):
                smallest[key] = t
        cands = [smallest[k] for k in sorted(smallest)]
        step = max(1, -(-len(cands) // quota))
        chosen = cands[::step][:quota]
        for pred in (
            lambda t: t["rank"] == 0,
            lambda t: t["rank"] >= 5,
            lambda t: "_rank0_" in t["dir"].name,  # RESHAPE to a scalar
            # an INT48 graph input of several elements (8-byte words in memory, decision L33)
            lambda t: t["op"] == "RESCALE" and "_i48_" in t["dir"].name and t["rank"] >= 1
            and 0 in t["variable"],
        ):
            extra = sorted((t for t in all_tests if pred(t)), key=lambda t: (t["size"], str(t["dir"])))
            if extra and extra[0] not in chosen:
                chosen.append(extra[0])
        chosen += [t for t in extras if t not in chosen]
        picked += [(set_name, t) for t in chosen]
    if only_sets is not None:
        for d in out.glob("*__*"):
            if d.name.split("__")[0] in only_sets:
                shutil.rmtree(d)
    elif out.exists() and not extras_only:
        shutil.rmtree(out)
    total = 0
    for set_name, t in picked:
        dest = out / f"{set_name}__{t['dir'].name}"
        if dest.exists():
            continue
        dest.mkdir(parents=True)
        for f in ["desc.json"] + t["files"]:
            shutil.copyfile(t["dir"] / f, dest / f)
        total += t["size"]
    print(f"{len(picked)} tests, {total} bytes of models and data, in {out}")


if __name__ == "__main__":
    main()
