#!/usr/bin/env bash
# Instructions executed (all threads, valgrind's cachegrind without cache simulation) by
# `npuc compile` of each network, u85-256, Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram_384KB (as
# tools/compile_cpu_ab.py): a measure of compile work that does not drift with the machine's
# speed or load, for before/after comparisons of byte-identical changes (it does not count
# cache misses or the threads' overlap: wall and CPU time stay the figures that matter).
#
#     tools/compile_instructions.sh NPUC NET [NET...]
#
# NET is a corpus network name (models/tflite/NET.tflite; mobilenet_v2_100_224 from
# models/large). Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
npuc=$1
shift
for net in "$@"; do
  model=models/tflite/$net.tflite
  [ "$net" = mobilenet_v2_100_224 ] && model=models/large/tflite/$net.tflite
  refs=$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$npuc" compile "$model" --accel ethos-u85-256 --system-config Ethos_U85_SYS_DRAM_Mid \
    --memory-mode Dedicated_Sram_384KB -o /dev/null 2>&1 >/dev/null |
    awk '/I *refs/ {gsub(",", "", $4); print $4}')
  printf '%-32s %8.1f M instructions\n' "$net" "$(echo "$refs / 1000000" | bc -l)"
done
