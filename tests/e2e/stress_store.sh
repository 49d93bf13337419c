#!/bin/sh
# End to end: a full disk stops a stress run. A soak recorded to a database
# on a 1 MiB filesystem (a tmpfs when the test may mount one, else a file
# size limit) stops once a write fails: the database error is printed, the
# run is not reported completed, and infertop exits 4.
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 2
C=$(ep "$P1")
start st --control "$C" --telemetry "$(ep "$P2")" --threads 1
up "$C" || { fail "node started"; finish; exit 1; }

small="$tmp/small"
mkdir "$small"
# NO_MOUNT=1 tries the fallback where mounting works too.
if [ -z "${NO_MOUNT:-}" ] && mount -t tmpfs -o size=1m tmpfs "$small" 2>/dev/null; then
    trap 'umount "$small"; cleanup' EXIT
    limit=":"
    how="a 1 MiB tmpfs"
else
    # Past the limit a write fails with EFBIG instead of killing the writer.
    limit="trap '' XFSZ; ulimit -f 2048"
    how="a 1 MiB file size limit"
fi
DB="$small/history.db"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
sh -c "$limit; exec infertop stress soak --duration 60s --prompt-tokens 16 --gen 4 \
    --concurrency 2 --control $C --telemetry $(ep "$P2") --db $DB" >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed=$(($(now_ms) - t0))
check "on $how, the run stops long before its 60 s ($elapsed ms)" [ "$elapsed" -lt 40000 ]
check "infertop exits 4 (got $rc)" [ "$rc" = 4 ]
check "the database error is printed ($(grep -o 'cannot be written: .*' "$tmp/err" | head -c 200))" \
    grep -q "the run history cannot be written: .*$DB" "$tmp/err"
check "the run is not reported completed" sh -c "! grep -q completed '$tmp/out'"
# Failed when the disk had room for that; else running until the next
# infertop to open the database marks it aborted.
status=$(sqlite3 "$DB" "SELECT status FROM runs WHERE id = 1" 2>/dev/null)
not_completed() { [ "$1" = failed ] || [ "$1" = running ]; }
check "the history does not call it completed (status '$status')" not_completed "$status"

finish
