#!/bin/sh
# End to end: a stage that dies or stops answering mid-generation. The
# client gets stage_timeout naming that stage within --step-timeout + 1 s,
# the head answers status all along, refuses requests with ring_down while
# the stage is gone, and once the stage is back the next request succeeds.
. "$(dirname "$0")/lib/serve.sh"

M="synth:dim=128,hidden=256,layers=3,heads=4,kv_heads=4,vocab=4096"
alloc_ports 9
ring3 fault "$M" --step-timeout 3
for c in "$A" "$B" "$C"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A long generation in the background; its end time goes to $tmp/ID.end.
long() { # ID
    (call "$A" generate '{"prompt":"Once upon a time","max_tokens":100000,"temperature":0}' \
        --id "$1" >"$tmp/$1"; now_ms >"$tmp/$1.end") &
    LONG=$!
    n=0
    while [ "$(cat "$tmp/$1" 2>/dev/null | grep -c '"token"')" -lt 20 ] && [ $n -lt 200 ]; do
        sleep 0.05
        n=$((n + 1))
    done
}

# Polls the head's status until the long request is over; counts failures.
status_while() { # PID
    STATUS_OK=0
    STATUS_FAILED=0
    n=0
    while kill -0 "$1" 2>/dev/null && [ $n -lt 100 ]; do
        if call "$A" status --timeout 1000 >/dev/null 2>&1; then
            STATUS_OK=$((STATUS_OK + 1))
        else
            STATUS_FAILED=$((STATUS_FAILED + 1))
        fi
        sleep 0.2
        n=$((n + 1))
    done
    wait "$1"
}

ok_request() { # ID: a short request through the whole ring
    call "$A" generate '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}' --id "$1" \
        >"$tmp/$1"
    [ "$(get ok <"$tmp/$1" | tail -n 1)" = true ] && [ "$(grep -c '"token"' "$tmp/$1")" = 8 ]
}
check "the ring serves before the fault" ok_request warm

# ---- the middle stage dies
long k1
t0=$(now_ms)
kill -9 "$PID_fault_b"
status_while $LONG
elapsed=$(($(cat "$tmp/k1.end") - t0))
check "killed stage: the request fails with stage_timeout" \
    [ "$(get error.code <"$tmp/k1")" = stage_timeout ]
check "killed stage: the error names it ($(get error.message <"$tmp/k1"))" \
    grep -q "stage 'fault_b' (layers 1:2) did not answer \(step\|decode batch\) [0-9]" "$tmp/k1"
check "killed stage: within --step-timeout + 1 s (${elapsed} ms)" [ "$elapsed" -le 4000 ]
check "killed stage: the head answered status throughout ($STATUS_OK answers)" \
    [ "$STATUS_FAILED" = 0 ] && [ "$STATUS_OK" -ge 3 ]
call "$A" generate '{"prompt":"Once","max_tokens":2}' --id down >"$tmp/down"
check "while it is down, requests are refused with ring_down naming it" \
    grep -q "ring_down.*fault_b" "$tmp/down"
ring3_b
up "$B"
check "after the restart the head sees the ring answer" ring_up "$A"
check "after the restart the next request succeeds" ok_request back
check "the head stayed up" kill -0 "$PID_fault_a"

# ---- the tail stops answering (alive, but silent)
long k2
t0=$(now_ms)
kill -STOP "$PID_fault_c"
status_while $LONG
elapsed=$(($(cat "$tmp/k2.end") - t0))
kill -CONT "$PID_fault_c"
check "once it answers again the head sees the ring up" ring_up "$A"
check "stopped stage: stage_timeout naming it ($(get error.message <"$tmp/k2"))" \
    grep -q "stage_timeout.*stage 'fault_c' (layers 2:3) did not answer \(step\|decode batch\) [0-9]" "$tmp/k2"
check "stopped stage: within --step-timeout + 1 s (${elapsed} ms)" [ "$elapsed" -le 4000 ]
check "stopped stage: the head answered status throughout" [ "$STATUS_FAILED" = 0 ]
check "once it answers again, the next request succeeds" ok_request cont
check "the head logged the timeouts" \
    [ "$(grep -c '\[EVENT\] stage_timeout' "$tmp/fault_a.log")" -ge 2 ]
check "the head logged the ring down and up again" \
    grep -q '\[EVENT\] ring_down' "$tmp/fault_a.log" && grep -q '\[EVENT\] ring_up' "$tmp/fault_a.log"

finish
