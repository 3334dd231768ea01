#!/usr/bin/env bash
# Regenerate the whole npuc fixture corpus under models/:
#   tflite/   models            (make_models.py)
#   vela/     Vela 5.2 outputs  (compile_vela.py)
#   golden/   reference I/O     (make_goldens.py)
# then checks that Vela's listings match its payloads (check_fixtures.py).
#
#   models/scripts/make_all.sh [VENV_DIR]
#
# VENV_DIR: as for setup_venv.sh ($NPUC_FIXTURE_VENV, else ../.venv-npuc-fixtures
# next to the repo).  If the venv does not exist it is created first.
# Idempotent: with the pinned tools a rerun rewrites byte-identical files.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${1:-${NPUC_FIXTURE_VENV:-$repo/../.venv-npuc-fixtures}}"
if [ ! -x "$venv/bin/python" ] || [ ! -x "$venv/bin/vela" ]; then
    "$here/setup_venv.sh" "$venv"
fi
py="$venv/bin/python"
cd "$here"
# start from a clean slate so that removed models leave nothing behind
rm -rf ../tflite ../vela ../golden
"$py" make_models.py
"$py" compile_vela.py --vela "$venv/bin/vela"
"$py" make_goldens.py
"$py" check_fixtures.py
du -sh ../tflite ../vela ../golden
