#!/usr/bin/env bash
# Create the Python virtualenvs used by the npuc fixture scripts.
#
#   models/scripts/setup_venv.sh [VENV_DIR]          # TensorFlow + Vela (requirements.txt)
#   models/scripts/setup_venv.sh --tosa [VENV_DIR]   # TOSA tools (requirements-tosa.txt)
#
# VENV_DIR defaults to $NPUC_FIXTURE_VENV, else ../.venv-npuc-fixtures next to
# the repository (outside it); with --tosa to $NPUC_TOSA_VENV, else
# ../.venv-npuc-tosa.  tosa-tools pins numpy/flatbuffers versions that clash with
# tensorflow-cpu 2.21 (and installs its own flatc), hence two venvs.
# Python 3.11 is what made the committed fixtures (tensorflow-cpu 2.21.0 has
# wheels for 3.9-3.13); set PYTHON to choose one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tosa=0
if [ "${1:-}" = "--tosa" ]; then
    tosa=1
    shift
fi
if [ $tosa = 1 ]; then
    venv="${1:-${NPUC_TOSA_VENV:-$repo/../.venv-npuc-tosa}}"
    req="$here/requirements-tosa.txt"
else
    venv="${1:-${NPUC_FIXTURE_VENV:-$repo/../.venv-npuc-fixtures}}"
    req="$here/requirements.txt"
fi
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "creating venv $venv with $($python --version)"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$req"
if [ $tosa = 0 ]; then
    # tf-keras (Keras 2) for the LSTM models (singleops.py): its LSTM is the one the TFLite
    # converter fuses into UNIDIRECTIONAL_SEQUENCE_LSTM. --no-deps: it requires the
    # `tensorflow` distribution, and tensorflow-cpu is the same package under another name.
    "$venv/bin/python" -m pip install --quiet --no-deps tf-keras==2.21.0
fi
if [ $tosa = 1 ]; then
    "$venv/bin/python" -c "import tosa_reference_model, serializer.tosa_serializer; print('tosa-tools ok')"
    "$venv/bin/tosa-converter-for-tflite" --version 2>/dev/null | head -1 || true
else
    TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c "import tensorflow as tf, numpy; print('tensorflow', tf.__version__, 'numpy', numpy.__version__)"
    "$venv/bin/vela" --version | sed 's/^/ethos-u-vela /'
fi
echo "venv ready: $venv"
