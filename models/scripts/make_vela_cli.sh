#!/usr/bin/env bash
# Vela 5.2's --output-dir files for two corpus models, the reference for npuc compile's
# Vela command line (compiler/tests/cli_vela.rs compares file names, CSV columns and .npz
# keys, dtypes and shapes):
#   vela_cli/tflite/     conv2d_3x3_relu.tflite, --verbose-performance, Flash_High + Sram_Only
#   vela_cli/raw/        conv2d_3x3_relu.tflite, --output-format raw
#   vela_cli/tosa_raw/   tosa/add_relu.tosa, --output-format raw
#   vela_cli/per_layer/  ds_cnn, mobilenet_tiny, resnet8: --verbose-performance on ethos-u85-256
#                        (Vela's default system configuration and memory mode); only the
#                        per-layer and summary CSV files are kept (compiler/tests/cli_vela.rs
#                        compares npuc's per-layer rows with them)
#
#   models/scripts/make_vela_cli.sh [VELA]     (VELA: a vela 5.2.0 executable; default: vela)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
models="$(cd "$here/.." && pwd)"
vela="${1:-vela}"
out="$models/vela_cli"
rm -rf "$out"
"$vela" "$models/tflite/conv2d_3x3_relu.tflite" --accelerator-config ethos-u85-256 \
    --system-config Ethos_U85_SYS_Flash_High --memory-mode Sram_Only \
    --output-dir "$out/tflite" --verbose-performance >/dev/null
"$vela" "$models/tflite/conv2d_3x3_relu.tflite" --accelerator-config ethos-u85-256 \
    --output-dir "$out/raw" --output-format raw >/dev/null
"$vela" "$models/tosa/add_relu.tosa" --accelerator-config ethos-u85-256 \
    --output-dir "$out/tosa_raw" --output-format raw >/dev/null
for m in ds_cnn mobilenet_tiny resnet8; do
    "$vela" "$models/tflite/$m.tflite" --accelerator-config ethos-u85-256 \
        --output-dir "$out/per_layer" --verbose-performance >/dev/null
    rm -f "$out/per_layer/${m}_vela.tflite"
done
