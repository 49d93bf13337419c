#!/bin/sh
# End to end: `infertop stress --node` over HTTP, against inferd nodes
# started with --http and declared `engine = openai` in a cluster file
# (real servers on loopback, a temporary database):
#  - fixed, 6 requests at concurrency 2: a run of engine "openai" whose
#    `history show --json` has TTFT percentiles and decode tok/s, the
#    engine's usage counts in every request row;
#  - growth 16 -> 128 over HTTP: one request per level, each recording the
#    context the engine reports (usage: prompt + completion tokens);
#  - the same model driven over ZeroMQ, also at concurrency 2: `history
#    compare` pairs the two engines' legs by concurrency; list and best
#    filter by engine;
#  - a node without url, and a sweep over kv_bits that would need a
#    restart nobody can do, are refused naming why;
#  - the server killed mid-run: the requests in flight fail as disconnect
#    (or timeout), the node is recorded down, the run failed.
. "$(dirname "$0")/lib/serve.sh"

DB="$tmp/history.db"
q() { sqlite3 "$DB" "$1"; }
js() { jq -r "$1" "$tmp/show.json"; }

alloc_ports 6
# synth:110m on both: the client times decoding from the first chunk to
# the last, and the embedded model's tokens, a fraction of a millisecond
# apart, can all come in one read on a busy machine (no time to measure).
start web --model synth:110m --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1 \
    --http "127.0.0.1:$P3"
# A slow node (synthetic 110M weights, ~20 ms a token) to kill mid-run.
start slow --model synth:110m --control "$(ep "$P4")" --telemetry "$(ep "$P5")" --threads 1 \
    --http "127.0.0.1:$P6"
for c in "$(ep "$P1")" "$(ep "$P4")"; do up "$c" || { fail "node $c started"; finish; exit 1; }; done
for p in "$P3" "$P6"; do
    n=0
    until curl -s -o /dev/null "http://127.0.0.1:$p/v1/models" || [ $n -ge 150 ]; do
        sleep 0.2
        n=$((n + 1))
    done
done

cat >"$tmp/cluster.conf" <<EOF
[cluster]
name = mixed
[node ring]
control = $(ep "$P1")
telemetry = $(ep "$P2")
[node web]
engine = openai
url = http://127.0.0.1:$P3
kv_bits = 16
[node slow]
engine = openai
url = http://127.0.0.1:$P6
EOF
S="-c $tmp/cluster.conf --db $DB"

# ---- fixed over HTTP
infertop stress fixed --node web --requests 6 --concurrency 2 --prompt-tokens 24 --gen 8 $S \
    --name http-fixed >"$tmp/fixed.out" 2>"$tmp/fixed.err"
rc=$?
check "fixed over HTTP completes (exit 0)" [ "$rc" = 0 ]
check "six ok requests with TTFT, decode tok/s and the engine's counts" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 1 AND status = 'ok' AND ttft_ms > 0
            AND decode_tps > 0 AND prefill_tps > 0 AND gen_tokens = 8 AND prompt_tokens > 0
            AND ctx_after = prompt_tokens + gen_tokens AND itl_p50_ms >= 0")" = 6 ]
infertop history show 1 --json --db "$DB" >"$tmp/show.json"
check "history show --json: engine openai, the model, the node's kv_bits" \
    [ "$(js '[.run.engine, .run.model, .legs[0].kv_bits] | join(" ")')" = "openai synth:110m 16" ]
check "history show --json: TTFT percentiles and decode tok/s" \
    [ "$(js '[.legs[0].ttft_ms.p50 > 0, .legs[0].ttft_ms.p99 >= .legs[0].ttft_ms.p50,
              .legs[0].decode_tps.p50 > 0, .legs[0].decode_tps.count == 6] | all')" = true ]
check "the run records the node it drove" \
    [ "$(q "SELECT cluster ->> '\$.nodes[0].url' || ' ' || (cluster ->> '\$.nodes[0].engine')
            FROM runs WHERE id = 1")" = "http://127.0.0.1:$P3 openai" ]

# ---- growth over HTTP
infertop stress growth --node web --from 16 --to 128 --factor 2 --gen 4 $S \
    >"$tmp/growth.out" 2>"$tmp/growth.err"
rc=$?
check "growth over HTTP completes (exit 0)" [ "$rc" = 0 ]
check "one ok request per level, each reaching at least its level" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 2 AND status = 'ok'
            AND ctx_after >= ctx_before AND ctx_after >= (16 << idx)")" = 4 ]
check "the contexts grow level by level" \
    [ "$(q "SELECT count(*) FROM requests a JOIN requests b ON b.run = a.run AND b.idx = a.idx + 1
            WHERE a.run = 2 AND b.ctx_after > a.ctx_after")" = 3 ]

# ---- the same model over ZeroMQ, compared
infertop stress fixed --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --requests 4 --concurrency 2 \
    --prompt-tokens 24 --gen 8 --db "$DB" >/dev/null 2>"$tmp/zmq.err"
check "a ZeroMQ run of the same node records engine inferd" \
    [ "$(q "SELECT engine FROM runs WHERE id = 3")" = inferd ]
infertop history compare 1 3 --full --db "$DB" >"$tmp/compare.out" 2>&1
rc=$?
check "history compare of the HTTP and the ZeroMQ run (exit 0)" [ "$rc" = 0 ]
check "compare names both engines" \
    sh -c "grep -q '^A: run 1 .* openai' '$tmp/compare.out' && grep -q '^B: run 3 .* inferd' '$tmp/compare.out'"
check "compare pairs the legs of both engines by concurrency: TTFT figures of both" \
    grep -Eq 'conc 2 +ttft_ms p50 +[0-9.]+ +[0-9.]+' \
    "$tmp/compare.out"
check "history list shows the ENGINE column" \
    sh -c "infertop history list --db '$DB' | head -1 | grep -q ENGINE"
check "history list --engine openai lists the HTTP runs only" \
    [ "$(infertop history list --engine openai --json --db "$DB" | jq -r '[.[].id] | join(" ")')" = "2 1" ]
check "history best --engine inferd keeps the ZeroMQ run's setting only" \
    [ "$(infertop history best --engine inferd --json --db "$DB" | jq -r '[.[].engine] | unique | join(" ")')" = inferd ]

# ---- refusals
infertop stress fixed --node ring --requests 1 $S >/dev/null 2>"$tmp/nourl.err"
rc=$?
check "a node without url is refused" [ "$rc" != 0 ]
check "the error names the node and the key" \
    sh -c "grep -q \"node 'ring'\" '$tmp/nourl.err' && grep -q 'url' '$tmp/nourl.err'"
infertop stress sweep --node web --kv-bits 16,4 --prefill-step 64 --leg fixed --requests 1 $S >/dev/null \
    2>"$tmp/sweep.err"
rc=$?
check "a sweep over kv_bits on an HTTP node without a restart is refused" \
    sh -c "[ $rc != 0 ] && grep -q 'restart' '$tmp/sweep.err'"
check "nothing was recorded for the refusals" [ "$(q "SELECT count(*) FROM runs")" = 3 ]

# ---- the server killed mid-run
infertop stress fixed --node slow --requests 8 --concurrency 2 --prompt-tokens 16 --gen 200 \
    --timeout 5 $S >"$tmp/kill.out" 2>"$tmp/kill.err" &
spid=$!
n=0
until [ "$(q "SELECT count(*) FROM runs WHERE id = 4" 2>/dev/null)" = 1 ] || [ $n -ge 100 ]; do
    sleep 0.1
    n=$((n + 1))
done
sleep 1
kill "$PID_slow"
wait "$spid"
rc=$?
check "the run fails (exit 5: requests failed)" [ "$rc" = 5 ]
check "the run is recorded failed" [ "$(q "SELECT status FROM runs WHERE id = 4")" = failed ]
check "requests in flight failed as disconnect or timeout" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 4 AND status = 'failed'
            AND error_code IN ('disconnect', 'timeout')")" -ge 1 ]
check "the node is recorded down" \
    [ "$(q "SELECT count(*) FROM events WHERE run = 4 AND kind = 'node_down' AND node = 'slow'")" = 1 ]

finish
