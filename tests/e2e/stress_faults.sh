#!/bin/sh
# End to end: failures are data. A growth run on a ring whose second stage
# has a low --mem-limit stops at kv_oom, recording the context reached and
# the stage that refused; a stage killed in the middle of a growth run
# fails the request with stage_timeout at the context it had reached.
. "$(dirname "$0")/lib/serve.sh"

DB="$tmp/history.db"
q() { sqlite3 "$DB" "$1"; }
MiB=1048576

# ---- kv_oom: head_dim 64, 8 KV heads, one layer per stage at 32 bits =
# 4 KiB of KV per position on each stage.
M="synth:dim=512,hidden=64,layers=2,heads=8,kv_heads=8,vocab=512"
FLAGS="--model $M --kv-bits 32 --threads 1"
alloc_ports 12
# The tail's RSS once started, measured on a probe, sets a budget with
# room for some context (64 MiB above RSS, of which the 32 MiB reserve),
# far less than 65536 positions (256 MiB).
start probe $FLAGS --control "$(ep "$P1")" --telemetry "$(ep "$P2")"
up "$(ep "$P1")" || { fail "probe started"; finish; exit 1; }
base=$(call "$(ep "$P1")" status | get memory.rss)
stop probe
A=$(ep "$P3")
start a $FLAGS --layers 0:1 --control "$A" --telemetry "$(ep "$P4")" --listen "$(ep "$P5")" \
    --next "$(ep "$P8")"
start b $FLAGS --layers 1:2 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
    --listen "$(ep "$P8")" --next "$(ep "$P5")" --mem-limit $((base + 64 * MiB))
for c in "$A" "$(ep "$P6")"; do up "$c" || { fail "node $c started"; finish; exit 1; }; done
infertop stress growth --from 512 --to 65536 --factor 2 --gen 4 \
    --control "$A,$(ep "$P6")" --telemetry "$(ep "$P4"),$(ep "$P7")" --db "$DB" \
    >"$tmp/oom.out" 2>"$tmp/oom.err"
rc=$?
check "kv_oom: the run fails (exit 5)" [ "$rc" = 5 ]
check "kv_oom: the run is failed, naming the refusal" \
    [ "$(q "SELECT status, failure LIKE '%kv_oom%' FROM runs WHERE id = 1")" = "failed|1" ]
reached=$(q "SELECT max_context FROM runs WHERE id = 1")
check "kv_oom: some context was reached first ($reached)" [ "$reached" -ge 512 ]
check "kv_oom: the failed request starts at the context reached" \
    [ "$(q "SELECT ctx_before, error_code FROM requests WHERE run = 1 AND status = 'failed'")" = \
      "$reached|kv_oom" ]
check "kv_oom: the last request failed and the growth stopped there" \
    [ "$(q "SELECT status FROM requests WHERE run = 1 ORDER BY idx DESC LIMIT 1")" = failed ]
check "kv_oom: the error names stage b" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 1 AND error_message LIKE 'stage ''b''%'")" = 1 ]
check "kv_oom: a refusal event on node b" \
    [ "$(q "SELECT node, detail ->> 'code' FROM events WHERE run = 1 AND kind = 'refusal'")" = "b|kv_oom" ]
infertop history --db "$DB" show 1 >"$tmp/show"
check "kv_oom: history show gives the failure" grep -q "failed at  leg 0, request .*kv_oom" "$tmp/show"
stop a
stop b

# ---- a stage killed mid-run: stage_timeout at the right context
H=$(ep "$P9")
start k1 --layers 0:3 --step-timeout 1 --threads 1 --control "$H" --telemetry "$(ep "$P10")" \
    --listen "$(ep "$P11")" --next "$(ep "$P12")"
alloc_ports 2
start k2 --layers 3:5 --threads 1 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P12")" --next "$(ep "$P11")"
for c in "$H" "$(ep "$P1")"; do up "$c" || { fail "node $c started"; finish; exit 1; }; done
infertop stress growth --from 64 --to 1000000 --step 64 --gen 4 --control "$H,$(ep "$P1")" \
    --telemetry "$(ep "$P10"),$(ep "$P2")" --db "$DB" >"$tmp/kill.out" 2>"$tmp/kill.err" &
spid=$!
pids="$pids $spid"
: >>"$tmp/kill.err" # the job may not have opened it yet
n=0
while [ "$(grep -c ' ended' "$tmp/kill.err")" -lt 3 ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
kill -9 "$PID_k2"
wait $spid
rc=$?
check "killed stage: the run fails (exit 5)" [ "$rc" = 5 ]
ok_ctx=$(q "SELECT max(ctx_after) FROM requests WHERE run = 2 AND status = 'ok'")
check "killed stage: stage_timeout at the context reached ($ok_ctx)" \
    [ "$(q "SELECT ctx_before, error_code FROM requests WHERE run = 2 AND status = 'failed'")" = \
      "$ok_ctx|stage_timeout" ]
check "killed stage: the timeout names k2" \
    [ "$(q "SELECT node FROM events WHERE run = 2 AND kind = 'timeout'")" = k2 ]
check "killed stage: the run records it" \
    [ "$(q "SELECT status, failure LIKE '%stage_timeout%' FROM runs WHERE id = 2")" = "failed|1" ]

finish
