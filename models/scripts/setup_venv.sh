#!/usr/bin/env bash
# Create the Python virtualenv used by the npuc fixture scripts.
#
#   models/scripts/setup_venv.sh [VENV_DIR]
#
# VENV_DIR defaults to $NPUC_FIXTURE_VENV, else ../.venv-npuc-fixtures next to
# the repository (outside it).  Python 3.11 is what made the committed fixtures
# (tensorflow-cpu 2.21.0 has wheels for 3.9-3.13); set PYTHON to choose one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${1:-${NPUC_FIXTURE_VENV:-$repo/../.venv-npuc-fixtures}}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "creating venv $venv with $($python --version)"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c "import tensorflow as tf, numpy; print('tensorflow', tf.__version__, 'numpy', numpy.__version__)"
"$venv/bin/vela" --version | sed 's/^/ethos-u-vela /'
echo "venv ready: $venv"
