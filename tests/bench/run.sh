#!/bin/sh
# Runs every bench binary (build/tests/bench_*; B names another build dir)
# and prints their tables. Each binary writes its figures as JSON to
# $BENCH_DIR/<part>.json. A missed bar shows as MISS in the table: bars are
# targets measured on a noisy machine, so only a bench that crashes or
# cannot write its results makes this script fail.
set -u
B=${B:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BENCH_DIR=${BENCH_DIR:-$B/bench}
export B BENCH_DIR INFERTOP_ROOT="$root" PATH="$root/$B/bin:$PATH"

broken=""
for t in "$B"/tests/bench_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    echo "== $name"
    "$t" || broken="$broken $name"
    echo
done

echo "JSON results: $BENCH_DIR/*.json"
if [ -n "$broken" ]; then
    echo "benches that did not complete:$broken"
    exit 1
fi
