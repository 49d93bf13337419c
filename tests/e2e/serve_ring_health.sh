#!/bin/sh
# End to end: a broken ring says so at once (issue 25). Three stages, the
# head with --step-timeout 5 and an HTTP server; 8 requests run when the
# middle stage is killed, and 8 more arrive one a second. The running ones
# end with stage_timeout within --step-timeout + 1 s; every later one is
# refused with ring_down naming the stage, those sent after the timeout
# at once (no wait behind another timeout); /health turns 503 within 1 s
# of the first timeout and /metrics has the ring gauge and the stage;
# once the stage is restarted /health is 200 again and requests succeed,
# with the same head process throughout.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"
. "$(dirname "$0")/lib/tmux.sh"

M="synth:dim=64,hidden=172,layers=3,heads=4,kv_heads=4,vocab=512,seed=3"
alloc_ports 10
H=$(hp "$P10")
ring3 health "$M" --step-timeout 5 --http "$H"
for c in "$A" "$B" "$C"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
http_up "$H" || { fail "HTTP at $H started"; finish; exit 1; }
CONF="$tmp/ring.conf"
cluster_conf "$CONF" ring-health health_a "$A" "$(ep "$P2")" health_b "$B" "$(ep "$P4")" \
    health_c "$C" "$(ep "$P6")"
T -f "$tmp/tmux.conf" new-session -d -s D -x 160 -y 40 \
    "env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop -c $CONF"
head_pid=$PID_health_a
now_ms() { echo $(($(date +%s%N) / 1000000)); }
health() { curl -s -o "$tmp/health.body" -w '%{http_code}' "http://$H/health"; }

check "the head sees its ring answer" ring_up "$A"
check "/health is 200 ok while the ring answers" \
    sh -c "[ \"\$(curl -s -o '$tmp/h0' -w '%{http_code}' http://$H/health)\" = 200 ] &&
           grep -q '\"status\":\"ok\"' '$tmp/h0'"
call "$A" generate '{"tokens":[1,5,9],"max_tokens":6,"temperature":0}' --id warm >"$tmp/warm"
check "the ring serves before the fault" [ "$(get ok <"$tmp/warm" | tail -n 1)" = true ]

# One request in the background: its replies to $tmp/ID, when it was sent
# and when it ended to $tmp/ID.t0 and $tmp/ID.t1.
send() { # ID MAX_TOKENS
    (
        now_ms >"$tmp/$1.t0"
        call "$A" generate "{\"tokens\":[1,5,9],\"max_tokens\":$2,\"temperature\":0}" \
            --id "$1" >"$tmp/$1" 2>"$tmp/$1.err"
        now_ms >"$tmp/$1.t1"
    ) &
}
tokens_in() { # ID: tokens streamed so far
    k=$(grep -c '"token"' "$tmp/$1" 2>/dev/null)
    echo "${k:-0}"
}

# ---- 8 requests running
for i in 1 2 3 4 5 6 7 8; do send run$i 100000; done
for i in 1 2 3 4 5 6 7 8; do
    n=0
    while [ "$(tokens_in run$i)" -lt 3 ] && [ $n -lt 300 ]; do
        sleep 0.05
        n=$((n + 1))
    done
done
running=0
for i in 1 2 3 4 5 6 7 8; do [ "$(tokens_in run$i)" -ge 3 ] && running=$((running + 1)); done
check "8 requests stream tokens before the fault ($running)" [ "$running" = 8 ]

# /health, polled every 0.1 s from now on: "ms status" lines.
(
    while :; do
        echo "$(now_ms) $(curl -s -o /dev/null -w '%{http_code}' "http://$H/health")"
        sleep 0.1
    done
) >"$tmp/health.log" 2>/dev/null &
poller=$!
pids="$pids $poller"

# The console's dashboard and `infertop status`, polled from now on: when
# each first says the head's ring is broken.
(
    while ! T capture-pane -p -t D | grep -q 'health_a.*ring broken at health_b'; do sleep 0.1; done
    now_ms >"$tmp/dash.seen"
) &
dash_poller=$!
(
    while ! infertop status -c "$CONF" --timeout 1 2>/dev/null |
        grep -q '^health_a .*ring broken at health_b'; do sleep 0.1; done
    now_ms >"$tmp/status.seen"
) &
status_poller=$!
pids="$pids $dash_poller $status_poller"

t_kill=$(now_ms)
kill -9 "$PID_health_b"
for i in 1 2 3 4 5 6 7 8; do
    send late$i 4
    sleep 1
done
wait_all() {
    n=0
    for i in 1 2 3 4 5 6 7 8; do
        for id in run$i late$i; do
            while [ ! -s "$tmp/$id.t1" ] && [ $n -lt 400 ]; do
                sleep 0.05
                n=$((n + 1))
            done
        done
    done
}
wait_all

# ---- the running ones: stage_timeout within --step-timeout + 1 s
first_end=""
worst=0
codes_ok=1
for i in 1 2 3 4 5 6 7 8; do
    [ "$(get error.code <"$tmp/run$i" | tail -n 1)" = stage_timeout ] || codes_ok=0
    t=$(($(cat "$tmp/run$i.t1") - t_kill))
    [ "$t" -gt "$worst" ] && worst=$t
    e=$(cat "$tmp/run$i.t1")
    { [ -z "$first_end" ] || [ "$e" -lt "$first_end" ]; } && first_end=$e
done
check "the 8 running requests end with stage_timeout" [ "$codes_ok" = 1 ]
check "naming the killed stage ($(get error.message <"$tmp/run1" | tail -n 1))" \
    grep -q "stage 'health_b' (layers 1:2) did not answer" "$tmp/run1"
check "within --step-timeout + 1 s of the kill (the last at ${worst} ms)" [ "$worst" -le 6000 ]

# ---- the later ones: ring_down naming the stage; after the timeout, at once
down_ok=1
slowest_after=0
n_after=0
for i in 1 2 3 4 5 6 7 8; do
    code=$(get error.code <"$tmp/late$i" | tail -n 1)
    grep -q "ring_down.*health_b" "$tmp/late$i" || down_ok=0
    [ "$code" = ring_down ] || down_ok=0
    t0=$(cat "$tmp/late$i.t0")
    if [ "$t0" -ge "$first_end" ]; then
        d=$(($(cat "$tmp/late$i.t1") - t0))
        n_after=$((n_after + 1))
        [ "$d" -gt "$slowest_after" ] && slowest_after=$d
    fi
done
check "every later request is refused with ring_down naming health_b" [ "$down_ok" = 1 ]
echo "     ($(get error.message <"$tmp/late8" | tail -n 1))"
check "the $n_after sent after the first timeout are refused at once (slowest ${slowest_after} ms)" \
    [ "$n_after" -ge 2 ] && [ "$slowest_after" -lt 1000 ]
queued_end=$(($(cat "$tmp/late1.t1") - first_end))
check "one queued before the timeout ends with it, not a timeout later (${queued_end} ms after)" \
    [ "$queued_end" -lt 1000 ]

# ---- /health, /metrics and status while it is down
first_503=$(awk -v t="$first_end" '$2 == 503 && $1 >= t - 200 { print $1; exit }' "$tmp/health.log")
check "/health answers 503 within 1 s of the first timeout ($((${first_503:-0} - first_end)) ms)" \
    [ -n "$first_503" ] && [ $((first_503 - first_end)) -le 1000 ]
code=$(health)
check "/health: 503 ring_down: health_b ($(cat "$tmp/health.body"))" \
    [ "$code" = 503 ] && grep -q '"status":"ring_down: health_b"' "$tmp/health.body"
curl -s "http://$H/metrics" >"$tmp/metrics.down"
check "/metrics: inferd_ring_up 0 on the head" \
    grep -q '^inferd_ring_up{node="health_a"} 0$' "$tmp/metrics.down"
check "/metrics: inferd_ring_broken_stage names health_b" \
    grep -q '^inferd_ring_broken_stage{node="health_a",stage="health_b"} 1$' "$tmp/metrics.down"
check "promtool check metrics passes while the ring is down" \
    promtool check metrics <"$tmp/metrics.down"
call "$A" status >"$tmp/status.down"
check "status: ring_health down at health_b" \
    [ "$(get ring_health.state <"$tmp/status.down")" = down ] &&
    [ "$(get ring_health.stage <"$tmp/status.down")" = health_b ]
name=$(get model.name <"$tmp/status.down")
code=$(post "$H" /v1/completions "{\"model\":\"$name\",\"prompt\":\"x\",\"max_tokens\":2}" \
    -D "$tmp/headers")
check "the HTTP API: 503 with Retry-After for ring_down" \
    [ "$code" = 503 ] && grep -qi '^Retry-After: 1' "$tmp/headers" && grep -q ring_down "$tmp/body"
call "$A" set '{"kv_bits":8}' >"$tmp/set.down"
check "a set is refused with ring_down, no stage changed" \
    grep -q "ring_down.*no stage changed" "$tmp/set.down"

# ---- the console: the head's row and `infertop status` within 3 s
n=0
while { [ ! -s "$tmp/dash.seen" ] || [ ! -s "$tmp/status.seen" ]; } && [ $n -lt 100 ]; do
    sleep 0.1
    n=$((n + 1))
done
dash_ms=$(($(cat "$tmp/dash.seen" 2>/dev/null || echo 999999999999999) - first_end))
status_ms=$(($(cat "$tmp/status.seen" 2>/dev/null || echo 999999999999999) - first_end))
check "dashboard: 'ring broken at health_b' on the head within 3 s (${dash_ms} ms)" \
    [ "$dash_ms" -le 3000 ]
check "dashboard: the head's phase reads broken, and an alert event names the stage" \
    sh -c "tmux -L $SOCK capture-pane -p -t D | grep -q 'health_a .*broken' &&
           infertop status -c '$CONF' --json | grep -q '\"state\":\"down\"'"
check "infertop status: 'ring broken at health_b' on the head within 3 s (${status_ms} ms)" \
    [ "$status_ms" -le 3000 ]
infertop status -c "$CONF" >"$tmp/status.table" 2>&1
status_rc=$?
check "infertop status exits non-zero while the ring is broken" [ "$status_rc" != 0 ]

# ---- the stage comes back: the same head serves again
t_restart=$(now_ms)
ring3_b
up "$B"
n=0
while [ "$(health)" != 200 ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
t_back=$(now_ms)
check "/health is 200 again after the restart ($((t_back - t_restart)) ms)" [ "$(health)" = 200 ]
call "$A" generate '{"tokens":[1,5,9],"max_tokens":6,"temperature":0}' --id back >"$tmp/back"
check "a request succeeds again, identical to before the fault" \
    [ "$(get ok <"$tmp/back" | tail -n 1)" = true ] &&
    [ "$(get token <"$tmp/back" | tr '\n' ' ')" = "$(get token <"$tmp/warm" | tr '\n' ' ')" ]
curl -s "http://$H/metrics" >"$tmp/metrics.up"
check "/metrics: inferd_ring_up 1, no broken stage" \
    grep -q '^inferd_ring_up{node="health_a"} 1$' "$tmp/metrics.up" &&
    ! grep -q '^inferd_ring_broken_stage{' "$tmp/metrics.up"
check "the head was never restarted" [ "$PID_health_a" = "$head_pid" ] && kill -0 "$head_pid"
check "the head logged ring_down then ring_up" \
    grep -q '\[EVENT\] ring_down' "$tmp/health_a.log" && grep -q '\[EVENT\] ring_up' "$tmp/health_a.log"
check "dashboard: the alert clears once the ring answers" \
    wait_for 50 sh -c "! tmux -L $SOCK capture-pane -p -t D | grep -q 'ring broken at'"
echo "     measured: last stage_timeout ${worst} ms after the kill; refusal after the timeout" \
    "${slowest_after} ms at most; /health 503 $((${first_503:-0} - first_end)) ms after the first" \
    "timeout; dashboard ${dash_ms} ms, infertop status ${status_ms} ms after it;" \
    "/health 200 $((t_back - t_restart)) ms after the restart"
finish
