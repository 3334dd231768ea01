#!/usr/bin/env bash
# Hashes npuc's output for every corpus model (models/tflite, models/tosa, models/large) on every
# configuration, in the default system configuration and memory mode, plus Sram_Only on Flash_High
# and Shared_Sram on DRAM_Mid for u85-256, as container (.bin) and, for TFLite, Vela-format .tflite.
# A restructuring must leave this listing unchanged:
#   tools/hash-corpus.sh > before.txt; (change); tools/hash-corpus.sh > after.txt; diff before.txt after.txt
# Models npuc refuses are listed with "refused" (the refusal must not change either).
# Uses $NPUC if set, else builds and uses the release binary of this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NPUC:-}" ]; then
  cargo build --release -q -p npuc
  NPUC="${CARGO_TARGET_DIR:-target}/release/npuc"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
variants=(
  "u85_128|--accel ethos-u85-128"
  "u85_256|--accel ethos-u85-256"
  "u85_512|--accel ethos-u85-512"
  "u85_1024|--accel ethos-u85-1024"
  "u85_2048|--accel ethos-u85-2048"
  "u85_256_sram_only|--accel ethos-u85-256 --system-config Ethos_U85_SYS_Flash_High --memory-mode Sram_Only"
  "u85_256_shared|--accel ethos-u85-256 --memory-mode Shared_Sram"
)
hash_one() { # model variant-name args... ; prints "<name> <variant> <kind> <sha256|refused>"
  local model=$1 vname=$2; shift 2
  local base; base=$(basename "$model")
  local kinds=(bin)
  case "$model" in *.tflite) kinds+=(tflite) ;; esac
  for kind in "${kinds[@]}"; do
    local out="$tmp/$vname.$base.$kind"
    if "$NPUC" compile "$model" -o "$out" "$@" >/dev/null 2>&1; then
      echo "$base $vname $kind $(sha256sum "$out" | cut -d' ' -f1)"
    else
      echo "$base $vname $kind refused"
    fi
    rm -f "$out"
  done
}
for model in models/tflite/*.tflite models/tosa/*.tosa models/large/tflite/*.tflite; do
  for v in "${variants[@]}"; do
    vname=${v%%|*}
    # shellcheck disable=SC2086
    hash_one "$model" "$vname" ${v#*|}
  done
done
