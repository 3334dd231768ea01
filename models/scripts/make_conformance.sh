#!/usr/bin/env bash
# Generate the official TOSA 1.0.2 conformance suite (positive tests of the PRO-INT profile
# and of its EXT-INT16, EXT-INT4 and EXT-DOUBLEROUND extensions) with the pinned tosa-tools
# (requirements-tosa.txt), then run the TOSA reference model on every test to write its
# expected results (result-*.npy, named by each desc.json: the generator writes only inputs).
#
#   models/scripts/make_conformance.sh [OUT_DIR [TOSA_VENV_DIR]]
#
# Each extension set holds only the tests the extension adds (EXT-INT16 and EXT-INT4: the
# cts-config generation groups that name the extension; EXT-DOUBLEROUND: RESCALE with
# DOUBLE_ROUND), not the PRO-INT tests the generator repeats for every extension;
# EXT_WITH_PRO_INT=1 keeps those too.
# OUT_DIR defaults to $NPUC_CONFORMANCE; it receives one directory per set:
#   pro-int/ ext-int16/ ext-int4/ ext-doubleround/   each operators/<family>/<op>/<test>/
#     desc.json test.tosa input-*.npy result-*.npy
# The suite is about 170 MB per set and is never committed: the #[ignore]d sweep
# tests/tests/tosa_conformance.rs runs it (NPUC_CONFORMANCE=OUT_DIR cargo test -p npuc-tests
# --test tosa_conformance -- --ignored --nocapture), the committed subset
# models/tosa-conformance/ (tests/tests/tosa_conformance_subset.rs) is picked from it with
# models/scripts/pick_conformance_subset.py.
# TOSA_VENV_DIR: as for setup_venv.sh --tosa ($NPUC_TOSA_VENV, else ../.venv-npuc-tosa);
# created when missing.  JOBS (default 2) parallel jobs; runs under `nice`.
# Idempotent: a set already generated and a test that already has its results are skipped.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-${NPUC_CONFORMANCE:-}}"
if [ -z "$out" ]; then
    echo "usage: $0 OUT_DIR [TOSA_VENV_DIR] (or set NPUC_CONFORMANCE)" >&2
    exit 2
fi
tvenv="${2:-${NPUC_TOSA_VENV:-$repo/../.venv-npuc-tosa}}"
jobs="${JOBS:-2}"
if [ ! -x "$tvenv/bin/tosa_verif_conformance_generator" ]; then
    "$here/setup_venv.sh" --tosa "$tvenv"
fi
# The generator finds tosa_verif_build_tests and the reference model on PATH.
export PATH="$tvenv/bin:$PATH"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

sets="${SETS:-pro-int ext-int16 ext-int4 ext-doubleround}"
for ext in none tosa-ext-int16 tosa-ext-int4 tosa-ext-doubleround; do
    if [ $ext = none ]; then set_name=pro-int; else set_name="${ext#tosa-}"; fi
    case " $sets " in *" $set_name "*) ;; *) continue ;; esac
    if [ -d "$out/$set_name/operators" ]; then
        echo "$set_name: already generated"
        continue
    fi
    echo "$set_name: generating"
    rm -rf "$out/$set_name.tmp" "$out/build-$set_name"
    config=()
    if [ $ext != none ] && [ -z "${EXT_WITH_PRO_INT:-}" ]; then
        # An extension set holds only the extension's own tests: the generator would repeat
        # every PRO-INT test in it (the pro-int set has them). The extension's tests come from
        # the generation groups of cts-config that name it; EXT-DOUBLEROUND has no group of its
        # own, its tests are RESCALE's PRO-INT group generated with the extension on.
        cfg_dir="$("$tvenv/bin/python" -c 'import os, conformance.tosa_verif_conformance_generator as g; print(os.path.dirname(g.__file__))')"
        "$tvenv/bin/python" - "$cfg_dir/cts-config_v1.0.json" "$ext" "$out/cts-config-$set_name.json" <<'PY'
import json, sys
src, ext, dst = sys.argv[1:]
cfg = json.load(open(src))
for op, v in list(cfg.items()):
    if op.startswith("$"):
        continue
    groups = {g: d for g, d in v["generation"].items()
              if ext in d.get("supports_all", []) + d.get("supports_any", [])}
    if ext == "tosa-ext-doubleround" and op == "rescale":
        groups = v["generation"]
    if groups:
        v["generation"] = groups
    else:
        del cfg[op]
json.dump(cfg, open(dst, "w"), indent=1)
PY
        config=(--cts-config "$out/cts-config-$set_name.json")
    fi
    nice -n 10 tosa_verif_conformance_generator --profile tosa-pro-int --extension $ext \
        --test-type positive --tosa-version 1.0.2 --output-type binary "${config[@]}" \
        --output-directory "$out/$set_name.tmp" --build-directory "$out/build-$set_name" \
        -j "$jobs" > "$out/$set_name.generate.log" 2>&1
    rm -f "$out/cts-config-$set_name.json"
    if [ $ext = tosa-ext-doubleround ] && [ -z "${EXT_WITH_PRO_INT:-}" ]; then
        # RESCALE's group also gives its SINGLE_ROUND tests, which are PRO-INT's (same names).
        find "$out/$set_name.tmp/operators" -mindepth 3 -maxdepth 3 -type d -name '*_rmS_*' \
            -exec rm -rf {} +
    fi
    mv "$out/$set_name.tmp" "$out/$set_name"
    rm -rf "$out/build-$set_name"
done

# Expected results: the reference model on every test that has none yet.
run_one() {
    local desc="$1"
    local dir
    dir="$(dirname "$desc")"
    local first
    first="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ofm_file"][0])' "$desc")"
    [ -f "$dir/$first" ] && return 0
    if ! tosa_reference_model --test_desc "$desc" > "$dir/reference.log" 2>&1; then
        echo "reference model failed: $dir (see $dir/reference.log)" >&2
        return 0
    fi
    rm -f "$dir/reference.log"
}
export -f run_one
for set_name in $sets; do
    echo "$set_name: reference results"
    find "$out/$set_name/operators" -name desc.json -print0 | sort -z |
        nice -n 10 xargs -0 -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}
    echo "$set_name: $(find "$out/$set_name/operators" -name desc.json | wc -l) tests," \
        "$(find "$out/$set_name/operators" -name 'result-0.npy' | wc -l) with results"
done
