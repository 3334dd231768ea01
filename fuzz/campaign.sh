#!/bin/sh
# The fuzz campaign of fuzz/README.md on the stable toolchain: every target for SECONDS
# (default 120) of wall time, one after another, at low priority. New inputs go to
# fuzz/corpus/<target> (git-ignored), seeded from fuzz/seeds/<target>; crashes go to
# fuzz/artifacts/<target>. Prints one line per target: executions, seconds, crashes.
#
#   fuzz/campaign.sh [SECONDS] [TARGET...]
#
# RUSTC_BOOTSTRAP=1 lets the stable compiler accept the -Z flags cargo-fuzz passes; no
# sanitizer (-s none): the code under test has no `unsafe`, and Rust's own bounds and
# overflow checks (cargo fuzz builds with debug assertions) find what ASan would.
set -u
cd "$(dirname "$0")"
secs=${1:-120}
[ $# -gt 0 ] && shift
targets=${*:-"tflite_parse tosa_parse swd_decode fwd_decode scale_decode swd_encode isa_decode cop_parse sim_run"}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$PWD/target"
cargo fuzz build -s none >/dev/null 2>&1 || { echo "build failed"; exit 1; }
for t in $targets; do
    mkdir -p "corpus/$t" "artifacts/$t"
    log="artifacts/$t/campaign.log"
    nice -n 10 cargo fuzz run -s none "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1
    runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' | tail -1)
    crashes=$(ls "artifacts/$t" | grep -c -E '^(crash|oom|timeout|leak)-' || true)
    echo "$t: ${runs:-?} runs in ${secs} s, ${crashes} crash/oom/timeout files"
done
