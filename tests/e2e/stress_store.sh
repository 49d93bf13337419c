#!/bin/sh
# End to end: a full disk stops a stress run, and the history still says
# how it ended. A short run is recorded, then a soak to the same database
# on a 1 MiB tmpfs fills it: the soak stops, the cause says the disk is
# full and names the database, the run row says the same (also after
# another infertop opens the database: not rewritten as "process died"),
# stdout's counts are the database's, the first run is intact and the
# database passes integrity_check. infertop exits 4.
#
# Mounting the tmpfs takes root; else (or with NO_MOUNT=1) the script runs
# itself again in a user and mount namespace of its own (unshare -rm).
small_fs_ok() {
    d=$(mktemp -d)
    if [ -z "${NO_MOUNT:-}" ] && mount -t tmpfs -o size=1m tmpfs "$d" 2>/dev/null; then
        umount "$d"
        rmdir "$d"
        return 0
    fi
    rmdir "$d"
    return 1
}
if [ -z "${STRESS_STORE_NS:-}" ] && ! small_fs_ok; then
    STRESS_STORE_NS=1 NO_MOUNT= exec unshare -rm sh "$0" "$@"
fi
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 2
C=$(ep "$P1")
T=$(ep "$P2")
start st --control "$C" --telemetry "$T" --threads 1
up "$C" || { fail "node started"; finish; exit 1; }

small="$tmp/small"
mkdir "$small"
if ! mount -t tmpfs -o size=1m tmpfs "$small"; then
    fail "a 1 MiB tmpfs is mounted (${STRESS_STORE_NS:+in a namespace, }as $(id -u))"
    finish
    exit 1
fi
trap 'umount "$small"; cleanup' EXIT
DB="$small/history.db"
q() { sqlite3 "$DB" "$1" 2>&1; }

infertop stress fixed --requests 3 --prompt-tokens 8 --gen 2 --control "$C" --telemetry "$T" \
    --db "$DB" >"$tmp/first" 2>&1
check "a first run is recorded ($(grep "^run 1" "$tmp/first"))" grep -q '^run 1 completed' "$tmp/first"
before=$(q "SELECT count(*) || ' ' || (SELECT count(*) FROM steps WHERE run = 1)
            FROM requests WHERE run = 1")

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
infertop stress soak --duration 60s --prompt-tokens 16 --gen 4 --concurrency 2 --control "$C" \
    --telemetry "$T" --db "$DB" >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed=$(($(now_ms) - t0))
check "on a full disk, the run stops long before its 60 s ($elapsed ms)" [ "$elapsed" -lt 40000 ]
check "infertop exits 4 (got $rc)" [ "$rc" = 4 ]
full="the disk holding $DB is full"
why=$(grep -o "cannot be written: .*" "$tmp/err" | head -c 200)
check "the cause says the disk is full and names the database ($why)" \
    grep -q "the run history cannot be written: $full" "$tmp/err"
check "stdout gives the same cause" grep -q "^failure: .*$full" "$tmp/out"
check "the run is not reported completed" sh -c "! grep -q completed '$tmp/out'"
# Recorded from the room kept for the run's end, not left `running`.
check "the run row says failed ($(q 'SELECT status FROM runs WHERE id = 2'))" \
    [ "$(q 'SELECT status FROM runs WHERE id = 2')" = failed ]
check "the run row's failure is the disk ($(q 'SELECT failure FROM runs WHERE id = 2'))" \
    sh -c "sqlite3 '$DB' 'SELECT failure FROM runs WHERE id = 2' | grep -q '$full'"
infertop history show 2 --db "$DB" >"$tmp/show" 2>&1
check "history show, from another process, says the same ($(grep failure "$tmp/show"))" \
    sh -c "grep -q '^failure .*$full' '$tmp/show' && ! grep -q died '$tmp/show'"
line=$(head -n 1 "$tmp/out")
reqs=$(q "SELECT count(*) FROM requests WHERE run = 2")
bad=$(q "SELECT count(*) FROM requests WHERE run = 2 AND status <> 'ok'")
check "stdout's counts are the database's ('$line'; $reqs requests, $bad failed)" \
    [ "$line" = "run 2 failed: soak, $reqs requests ($bad failed) in ${line##* in }" ]
check "the first run is intact ($(q "SELECT count(*) || ' ' || (SELECT count(*) FROM steps WHERE
    run = 1) FROM requests WHERE run = 1") = $before)" \
    [ "$(q "SELECT count(*) || ' ' || (SELECT count(*) FROM steps WHERE run = 1)
            FROM requests WHERE run = 1")" = "$before" ]
check "integrity_check ($(q 'PRAGMA integrity_check' | head -n 1))" \
    [ "$(q 'PRAGMA integrity_check')" = ok ]
finish
