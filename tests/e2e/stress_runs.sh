#!/bin/sh
# End to end: `infertop stress` against a local 2-stage ring of the embedded
# model (stages a 0:3, b 3:5), recorded to a temporary database.
#  - growth 64 -> 4096 (factor 2, gen 8), the ring named by a cluster file:
#    one ok request per context level with TTFT and tok/s, step rows of
#    both nodes reaching context 4096, `history show` prints it;
#  - sweep kv_bits 16,4 x prefill_step 64,256: four legs whose step rows
#    carry the leg's settings (the live change happened), `history best`
#    lists the four;
#  - fixed, 12 requests at concurrency 4 (--json): throughput and
#    percentiles agree with the request rows;
#  - soak for 1.5 s at Poisson arrivals: drift reported and recorded;
#  - a sweep restores the settings it found at start (after its last leg,
#    and after SIGINT), unless --keep-last;
#  - SIGINT during a sweep of growth legs: exit 130, the run aborted with
#    its requests kept;
#  - sweep of fixed legs over --concurrency 1,2: one leg per concurrency,
#    each with its aggregate tok/s (its requests' tokens over its wall
#    time), the requests of the concurrency-2 leg in flight together, and
#    `history best --by agg-tps` ranking the settings by it;
#  - two fixed runs at once: each records only its own requests' steps.
. "$(dirname "$0")/lib/serve.sh"

DB="$tmp/history.db"
q() { sqlite3 "$DB" "$1"; }

alloc_ports 6
A=$(ep "$P1")
B=$(ep "$P4")
start a --layers 0:3 --control "$A" --telemetry "$(ep "$P2")" --listen "$(ep "$P3")" \
    --next "$(ep "$P6")" --threads 1
start b --layers 3:5 --control "$B" --telemetry "$(ep "$P5")" --listen "$(ep "$P6")" \
    --next "$(ep "$P3")" --threads 1
for c in "$A" "$B"; do up "$c" || { fail "node $c started"; finish; exit 1; }; done
RING="--control $A,$B --telemetry $(ep "$P2"),$(ep "$P5")"

# ---- growth, through a cluster file
cat >"$tmp/cluster.conf" <<EOF
[cluster]
name = testring
[node a]
ssh = localhost
control = $A
telemetry = $(ep "$P2")
start = inferd serve --name a
[node b]
ssh = localhost
control = $B
telemetry = $(ep "$P5")
start = inferd serve --name b
EOF
infertop stress growth --from 64 --to 4096 --factor 2 --gen 8 -c "$tmp/cluster.conf" \
    --db "$DB" --name grow >"$tmp/growth.out" 2>"$tmp/growth.err"
rc=$?
check "growth completes (exit 0)" [ "$rc" = 0 ]
check "it prints the run id" grep -q "^run 1 completed: growth" "$tmp/growth.out"
check "one ok request per context level" \
    [ "$(q "SELECT group_concat(ctx_after, ' ') FROM (SELECT ctx_after FROM requests
            WHERE run = 1 AND status = 'ok' ORDER BY idx)")" = "64 128 256 512 1024 2048 4096" ]
check "every request has TTFT, decode and prefill tok/s" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 1 AND ttft_ms > 0 AND decode_tps > 0
            AND prefill_tps > 0 AND tpot_ms > 0 AND gen_tokens = 8")" = 7 ]
check "each request continues the last one's context" \
    [ "$(q "SELECT count(*) FROM requests q JOIN requests p ON p.run = q.run AND p.idx = q.idx - 1
            WHERE q.run = 1 AND q.ctx_before = p.ctx_after")" = 6 ]
check "step rows of both nodes reach context 4096" \
    [ "$(q "SELECT group_concat(node || ':' || m, ' ') FROM (SELECT node, max(pos) AS m
            FROM steps WHERE run = 1 GROUP BY node ORDER BY node)")" = "a:4096 b:4096" ]
check "step rows are attributed to the requests" \
    [ "$(q "SELECT count(DISTINCT req) FROM steps WHERE run = 1 AND node = 'b'")" = 7 ]
check "the run records the cluster file's name and both nodes" \
    [ "$(q "SELECT cluster ->> 'name', json_array_length(cluster, '\$.nodes'), cluster ->> 'model'
            FROM runs WHERE id = 1")" = "testring|2|stories260K" ]
check "each request's inter-token latencies are kept (p50 <= p99)" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 1 AND status = 'ok' AND gen_tokens > 1
            AND itl_p50_ms IS NOT NULL AND itl_p99_ms IS NOT NULL
            AND itl_p50_ms > 0 AND itl_p50_ms <= itl_p99_ms")" = 7 ]
check "each request's slowest-node step times lie within its own step rows" \
    [ "$(q "SELECT count(*) FROM requests q WHERE run = 1 AND status = 'ok'
            AND decode_step_ms BETWEEN
                (SELECT min(step_ms) FROM steps WHERE run = 1 AND req = q.idx AND phase = 'decode')
            AND (SELECT max(step_ms) FROM steps WHERE run = 1 AND req = q.idx AND phase = 'decode')
            AND prefill_step_ms BETWEEN
                (SELECT min(step_ms) FROM steps WHERE run = 1 AND req = q.idx AND phase = 'prefill')
            AND (SELECT max(step_ms) FROM steps WHERE run = 1 AND req = q.idx AND phase = 'prefill')")" = 7 ]
infertop history --db "$DB" show 1 >"$tmp/show"
check "history show prints the run" grep -q "^run 1  grow  growth  completed" "$tmp/show"
check "history show gives the max context" grep -q "context    max 4096" "$tmp/show"

# ---- sweep: 4 legs applied live, and the settings found at start restored
found="$(call "$A" status | get config.kv_bits config.prefill_step) $(call "$B" status | get config.kv_bits config.prefill_step)"
infertop stress sweep --kv-bits 16,4 --prefill-step 64,256 --from 64 --to 1024 --gen 4 $RING \
    --db "$DB" >"$tmp/sweep.out" 2>"$tmp/sweep.err"
check "sweep completes (exit 0)" [ $? = 0 ]
check "sweep records 4 completed legs" \
    [ "$(q "SELECT group_concat(idx || ':' || kv_bits || '/' || prefill_step || ':' || status, ' ')
            FROM legs WHERE run = 2")" = \
      "0:16/64:completed 1:16/256:completed 2:4/64:completed 3:4/256:completed" ]
check "every leg has step rows from both nodes" \
    [ "$(q "SELECT count(DISTINCT leg || node) FROM steps WHERE run = 2")" = 8 ]
check "every step row carries its leg's kv_bits and prefill_step" \
    [ "$(q "SELECT count(*) FROM steps s JOIN legs l ON l.run = s.run AND l.idx = s.leg
            WHERE s.run = 2 AND (s.kv_bits <> l.kv_bits OR s.prefill_step <> l.prefill_step)")" = 0 ]
check "prefill chunks follow the leg's prefill_step" \
    [ "$(q "SELECT group_concat(m, ' ') FROM (SELECT max(tokens) AS m FROM steps
            WHERE run = 2 AND node = 'a' AND phase = 'prefill' GROUP BY leg ORDER BY leg)")" = \
      "64 256 64 256" ]
check "each set is recorded as verified, the 4 legs' and the restore's" \
    [ "$(q "SELECT count(*) FROM events WHERE run = 2 AND kind = 'config'
            AND detail ->> 'verified' = 1")" = 5 ]
check "the sweep leaves the ring as it found it ($found)" \
    [ "$(call "$A" status | get config.kv_bits config.prefill_step) $(call "$B" status | get config.kv_bits config.prefill_step)" = "$found" ]
check "... and records the restore" \
    [ "$(q "SELECT count(*) FROM events WHERE run = 2 AND kind = 'restore'
            AND detail ->> 'restored' = 1")" = 1 ]
infertop history --db "$DB" best >"$tmp/best"
n=0
for kp in "16 64" "16 256" "4 64" "4 256"; do
    set -- $kp
    awk -v k="$1" -v p="$2" '$3 == "inferd" && $4 == k && $5 == p && $8 == 2' "$tmp/best" | grep -q . && n=$((n + 1))
done
check "history best lists the four settings of the sweep" [ "$n" = 4 ]

# ---- fixed at concurrency 4
infertop stress fixed --requests 12 --prompt-tokens 48 --gen 8 --concurrency 4 $RING \
    --db "$DB" --json >"$tmp/fixed.json" 2>"$tmp/fixed.err"
check "fixed completes (exit 0)" [ $? = 0 ]
j() { sqlite3 :memory: "SELECT json_extract(readfile('$tmp/fixed.json'), '\$.$1')"; }
check "the result counts the 12 request rows" \
    [ "$(j requests)" = 12 ] && [ "$(q "SELECT count(*) FROM requests WHERE run = 3 AND status = 'ok'")" = 12 ]
check "requests/s x wall time = ok requests" \
    awk -v r="$(j req_per_s)" -v w="$(j wall_s)" 'BEGIN { d = r * w - 12; exit !(d < 0.001 && d > -0.001) }'
gen=$(q "SELECT sum(gen_tokens) FROM requests WHERE run = 3")
check "tokens/s x wall time = generated tokens ($gen)" \
    awk -v r="$(j tok_per_s)" -v w="$(j wall_s)" -v g="$gen" 'BEGIN { d = r * w - g; exit !(d < 0.01 && d > -0.01) }'
# nearest rank over 12 values: p50 is the 6th smallest, p99 the 12th
for p in "p50 5" "p99 11"; do
    set -- $p
    want=$(q "SELECT printf('%.6f', ttft_ms) FROM requests WHERE run = 3 ORDER BY ttft_ms LIMIT 1 OFFSET $2")
    got=$(sqlite3 :memory: "SELECT printf('%.6f', json_extract(readfile('$tmp/fixed.json'), '\$.summary.legs[0].ttft_ms.$1'))")
    check "TTFT $1 is the request rows' ($got = $want)" [ "$got" = "$want" ]
done
check "requests were in flight together (sum of E2E > 2 x wall time)" \
    [ "$(q "SELECT sum(e2e_ms) > 2000 * $(j wall_s) FROM requests WHERE run = 3")" = 1 ]

# ---- soak: drift over the run, Poisson arrivals
infertop stress soak --duration 1.5s --prompt-tokens 32 --gen 4 --concurrency 2 --rate 40 $RING \
    --db "$DB" --json >"$tmp/soak.json" 2>"$tmp/soak.err"
check "soak completes (exit 0)" [ $? = 0 ]
s() { sqlite3 :memory: "SELECT json_extract(readfile('$tmp/soak.json'), '\$.$1')"; }
check "soak reports drift (first and last decile)" \
    awk -v a="$(s drift.e2e_ms_first)" -v b="$(s drift.e2e_ms_last)" 'BEGIN { exit !(a > 0 && b > 0) }'
check "soak: the drift is kept with the run" \
    [ "$(q "SELECT count(*) FROM events WHERE run = 4 AND kind = 'result'
            AND detail ->> '\$.drift.ttft_ms_last' > 0")" = 1 ]
check "soak: every request recorded ($(s requests))" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 4")" = "$(s requests)" ]

# ---- SIGINT: aborted, requests kept; a sweep's, so the settings found
# at start come back even so
found="$(call "$A" status | get config.kv_bits) $(call "$B" status | get config.kv_bits)"
infertop stress sweep --kv-bits 4 --prefill-step 64 --from 64 --to 1000000 --step 64 --gen 4 \
    $RING --db "$DB" >"$tmp/int.out" 2>"$tmp/int.err" &
spid=$!
pids="$pids $spid"
: >>"$tmp/int.err" # the job may not have opened it yet
n=0
while [ "$(grep -c ' ended' "$tmp/int.err")" -lt 3 ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
kill -INT $spid
wait $spid
rc=$?
check "SIGINT: exit 130" [ "$rc" = 130 ]
check "SIGINT: the run is aborted" [ "$(q "SELECT status FROM runs WHERE id = 5")" = aborted ]
check "SIGINT: its requests are kept" [ "$(q "SELECT count(*) >= 3 FROM requests WHERE run = 5")" = 1 ]
check "SIGINT: its leg is aborted" [ "$(q "SELECT status FROM legs WHERE run = 5")" = aborted ]
check "SIGINT: the sweep still restored kv_bits ($found)" \
    [ "$(call "$A" status | get config.kv_bits) $(call "$B" status | get config.kv_bits)" = "$found" ]
check "SIGINT: the ring still serves" \
    [ "$(call "$A" generate '{"prompt":"Hi","max_tokens":2}' | get ok | tail -n 1)" = true ]

# ---- sweep over concurrency: aggregate throughput per leg
infertop stress sweep --leg fixed --kv-bits 16 --prefill-step 64 --concurrency 1,2 --requests 6 \
    --prompt-tokens 32 --gen 8 $RING --db "$DB" --json --keep-last >"$tmp/conc.json" 2>"$tmp/conc.err"
check "concurrency sweep completes (exit 0)" [ $? = 0 ]
check "--keep-last leaves the ring at the last leg's settings" \
    [ "$(call "$A" status | get config.kv_bits config.prefill_step | tr '\t' ' ')" = "16 64" ]
check "one leg per concurrency, each recorded with it" \
    [ "$(q "SELECT group_concat(idx || ':' || concurrency || ':' || status, ' ') FROM legs
            WHERE run = 6")" = "0:1:completed 1:2:completed" ]
check "each leg's aggregate tok/s is above 0" \
    [ "$(q "SELECT count(*) FROM legs WHERE run = 6 AND agg_tps > 0")" = 2 ]
check "aggregate tok/s = the leg's generated tokens / first sent to last ended" \
    [ "$(q "SELECT count(*) FROM legs l WHERE run = 6 AND abs(agg_tps - (SELECT sum(gen_tokens)
            / (max(t) - min(t - e2e_ms / 1000.0)) FROM requests WHERE run = 6 AND leg = l.idx))
            < 1e-6 * agg_tps")" = 2 ]
check "the concurrency-2 leg had requests in flight together" \
    [ "$(q "SELECT count(*) > 0 FROM requests a JOIN requests b ON b.run = a.run AND b.leg = a.leg
            AND b.idx > a.idx WHERE a.run = 6 AND a.leg = 1
            AND b.t - b.e2e_ms / 1000.0 < a.t AND a.t - a.e2e_ms / 1000.0 < b.t")" = 1 ]
jc() { sqlite3 :memory: "SELECT $1 FROM (SELECT readfile('$tmp/conc.json') AS j)"; }
check "the result's summary gives each leg's concurrency and aggregate tok/s" \
    [ "$(jc "json_extract(j, '\$.summary.legs[1].concurrency') || ':'
             || (json_extract(j, '\$.summary.legs[1].agg_tps') > 0)")" = "2:1" ]
infertop history --db "$DB" show 6 --full >"$tmp/show6"
check "history show gives each leg's concurrency and aggregate tok/s" \
    grep -qE '^ +1 +16 +64 +2 +completed +6 +0 +[0-9]+ +[0-9.]+$' "$tmp/show6"
infertop history --db "$DB" best --by agg-tps --json >"$tmp/best.json"
check "history best --by agg-tps exits 0" [ $? = 0 ]
# best.json as rows (position, cluster, kv_bits, prefill_step, concurrency,
# agg_tps, run) beside the database's tables.
bq() {
    sqlite3 "$DB" "WITH r AS (SELECT key AS i, value ->> 'cluster' AS cluster,
        value ->> 'kv_bits' AS kv, value ->> 'prefill_step' AS ps, value ->> 'concurrency' AS c,
        value ->> 'agg_tps' AS agg, value ->> 'run' AS run
        FROM json_each(readfile('$tmp/best.json'))) $1"
}
check "history best --by agg-tps: a row per concurrency of the sweep's setting" \
    [ "$(bq "SELECT group_concat(c, ' ') FROM (SELECT c FROM r WHERE cluster = 'local' AND kv = 16
             AND ps = 64 AND c IN (1, 2) ORDER BY c)")" = "1 2" ]
check "history best --by agg-tps: highest aggregate tok/s first within a cluster" \
    [ "$(bq "SELECT count(*) FROM r a JOIN r b ON b.i = a.i + 1 AND b.cluster = a.cluster
             WHERE b.agg > a.agg")" = 0 ]
check "history best --by agg-tps: each row is its setting's best leg" \
    [ "$(bq "SELECT count(*) FROM r WHERE cluster = 'local' AND abs(agg - (SELECT max(agg_tps)
             FROM legs l JOIN runs x ON x.id = l.run WHERE x.cluster ->> 'name' = 'local'
             AND l.kv_bits = r.kv AND l.prefill_step = r.ps AND l.concurrency = r.c)) > 1e-9")" = 0 ]
check "history best --by agg-tps ranks more than one setting" \
    [ "$(bq "SELECT count(*) > 1 FROM r WHERE cluster = 'local' AND agg > 0")" = 1 ]
infertop history --db "$DB" best --by agg-tps >"$tmp/best.txt"
check "history best --by agg-tps: its table names concurrency and aggregate tok/s" \
    grep -qE '^MODEL +CLUSTER +ENGINE +KV_BITS +PREFILL_STEP +CONCURRENCY +AGG_TPS +RUN +RUNS$' "$tmp/best.txt"

# ---- two runs at once: each records its own requests' steps only
for k in 1 2; do
    infertop stress fixed --requests 8 --prompt-tokens 32 --gen 8 $RING --db "$tmp/two$k.db" \
        >"$tmp/two$k.out" 2>&1 &
    eval "two$k=\$!"
done
wait "$two1"
rc1=$?
wait "$two2"
check "two runs at once both complete" [ "$rc1 $?" = "0 0" ]
for k in 1 2; do
    tq() { sqlite3 "$tmp/two$k.db" "$1"; }
    check "run $k at once: steps recorded ($(tq "SELECT count(*) FROM steps"))" \
        [ "$(tq "SELECT count(*) > 0 FROM steps")" = 1 ]
    check "run $k at once: every step row is one of its own requests'" \
        [ "$(tq "SELECT count(*) FROM steps WHERE req IS NULL OR req NOT IN (SELECT idx FROM requests)")" = 0 ]
done
finish
