#!/bin/sh
# Runs every test: the Criterion unit binaries, the layering check's test,
# then the end-to-end scripts in tests/e2e (each script prints its own
# "N passed, N failed" line). Ends with one
# line that sums them all, which is what CI reads. Each part's wall time is
# printed after it, and the slowest parts before the sum: the whole run has
# a budget (15 minutes on 2 cores, build included), and this is where to
# look when it grows.
set -u
B=${B:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export B INFERTOP_ROOT="$root" PATH="$root/$B/bin:$PATH"

passed=0
failed=0
failures=""

times=""
count() { # name, passed, failed, seconds
    passed=$((passed + $2))
    failed=$((failed + $3))
    [ "$3" -gt 0 ] && failures="$failures $1"
    echo "-- $1: $4 s"
    times="$times$4 $1
"
}

for t in "$B"/tests/unit_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    echo "== $name"
    t0=$(date +%s)
    out=$("$t" -j2 --short-filename 2>&1); rc=$?
    printf '%s\n' "$out" | tail -n 40
    line=$(printf '%s\n' "$out" | grep -E '^\[====\] Synthesis:' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/.*Passing: ([0-9]+).*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/.*Failing: ([0-9]+).*Crashing: ([0-9]+).*/\1 \2/p')
    dt=$(($(date +%s) - t0))
    if [ -z "$p" ]; then count "$name" 0 1 "$dt"; continue; fi
    nf=0; for x in $f; do nf=$((nf + x)); done
    [ $rc -ne 0 ] && [ $nf -eq 0 ] && nf=1
    count "$name" "$p" "$nf" "$dt"
done

for s in tests/layering/test_*.sh tests/style/test_*.sh tests/e2e/*.sh; do
    [ -f "$s" ] || continue
    name=$(basename "$s" .sh)
    echo "== $(basename "$(dirname "$s")") $name"
    t0=$(date +%s)
    out=$(sh "$s" 2>&1); rc=$?
    printf '%s\n' "$out" | tail -n 60
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/^([0-9]+) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/p')
    dt=$(($(date +%s) - t0))
    if [ -z "$p" ]; then count "$name" 0 1 "$dt"; continue; fi
    [ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
    count "$name" "$p" "$f" "$dt"
done

echo "slowest:"
printf '%s' "$times" | sort -rn | head -n 8 | sed 's/^/  /'
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
