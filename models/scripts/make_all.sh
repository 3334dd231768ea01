#!/usr/bin/env bash
# Regenerate the whole npuc model corpus under models/:
#   tflite/       models                        (make_models.py: singleops.py, networks.py)
#   vela/         Vela 5.2 outputs              (compile_vela.py)
#   golden/       TFLite reference I/O          (make_goldens.py)
#   tosa/         TOSA 1.0 models               (make_tosa.py, TOSA venv)
#   golden-tosa/  TOSA reference model I/O      (make_tosa.py)
#   vela-tosa/    Vela 5.2 outputs of tosa/     (compile_vela.py --tosa)
#   large/        networks kept out of the per-model test sweeps (common.LARGE_NETWORKS:
#                 MobileNetV2 1.0 224) with their tflite/, golden/ and vela/u85_256/
#   corpus.json   index of everything           (make_index.py)
# then checks that Vela's listings match its payloads (check_fixtures.py).
#
#   models/scripts/make_all.sh [VENV_DIR [TOSA_VENV_DIR]]
#
# VENV_DIR: as for setup_venv.sh ($NPUC_FIXTURE_VENV, else ../.venv-npuc-fixtures
# next to the repo); TOSA_VENV_DIR: as for setup_venv.sh --tosa ($NPUC_TOSA_VENV,
# else ../.venv-npuc-tosa).  Missing venvs are created first.
# Idempotent: with the pinned tools a rerun rewrites byte-identical files.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${1:-${NPUC_FIXTURE_VENV:-$repo/../.venv-npuc-fixtures}}"
tvenv="${2:-${NPUC_TOSA_VENV:-$repo/../.venv-npuc-tosa}}"
if [ ! -x "$venv/bin/python" ] || [ ! -x "$venv/bin/vela" ]; then
    "$here/setup_venv.sh" "$venv"
fi
if [ ! -x "$tvenv/bin/python" ] || [ ! -x "$tvenv/bin/tosa-opt" ]; then
    "$here/setup_venv.sh" --tosa "$tvenv"
fi
py="$venv/bin/python"
cd "$here"
# start from a clean slate so that removed models leave nothing behind
rm -rf ../tflite ../vela ../golden ../tosa ../golden-tosa ../vela-tosa ../large ../corpus.json
"$py" make_models.py
"$py" compile_vela.py --vela "$venv/bin/vela"
"$py" make_goldens.py
TOSA_MODEL_NO_BACKTRACE=1 "$tvenv/bin/python" make_tosa.py
"$py" compile_vela.py --vela "$venv/bin/vela" --tosa
"$py" make_index.py
"$py" check_fixtures.py
du -sh ../tflite ../vela ../golden ../tosa ../golden-tosa ../vela-tosa ../large
