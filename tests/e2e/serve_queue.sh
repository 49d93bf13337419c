#!/bin/sh
# End to end: queued and abandoned work is bounded. Requests whose clients
# disconnected are cancelled, running or queued, so the next client does
# not wait for them; a request queued longer than --queue-timeout is
# refused with busy; one whose tokens and max_tokens already pass
# --max-ctx is refused at once, without waiting for its turn. One place
# (--max-seqs 1) makes every other request wait in the queue.
. "$(dirname "$0")/lib/serve.sh"

# About a second of prefill per thousand positions on one thread.
M="synth:dim=512,hidden=1376,layers=4,heads=8,kv_heads=8,vocab=512"
alloc_ports 4
C=$(ep "$P1")
start q --model "$M" --control "$C" --telemetry "$(ep "$P2")" --threads 1 --prefill-step 256 \
    --queue-timeout 2 --max-ctx 100000 --max-seqs 1
up "$C" || { fail "node started"; finish; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
within() { [ "$1" -ge "$2" ] && [ "$1" -lt "$3" ]; } # MS LOW HIGH
ok_within() { [ "$(get ok <"$1" | tail -n 1)" = true ] && within "$2" 0 "$3"; } # FILE MS HIGH
code_within() { [ "$(get error.code <"$1")" = "$2" ] && within "$3" 0 "$4"; } # FILE CODE MS HIGH
active_is() { # waits (at most 10 s) until status says active = $1
    n=0
    while [ $n -lt 50 ]; do
        [ "$(call "$C" status | get active)" = "$1" ] && return 0
        sleep 0.2
        n=$((n + 1))
    done
    return 1
}

# ---- four 5000-token requests whose clients give up after 0.3 s
gone=""
for i in 1 2 3 4; do
    call "$C" generate '{"synthetic_tokens":5000,"max_tokens":1}' --id "gone$i" --timeout 300 \
        >/dev/null 2>&1 &
    gone="$gone $!"
done
wait $gone
t0=$(now_ms)
call "$C" generate '{"tokens":[5],"max_tokens":1}' --id short >"$tmp/short"
elapsed=$(($(now_ms) - t0))
check "a request after four abandoned ones is served within 3 s (${elapsed} ms)" \
    ok_within "$tmp/short" "$elapsed" 3000
check "the abandoned requests were cancelled (or dropped as they came)" \
    [ "$(grep -c 'its client disconnected' "$tmp/q.log")" -ge 3 ]

# ---- --queue-timeout: queued behind a long request for more than 2 s
call "$C" generate '{"synthetic_tokens":20000,"max_tokens":1}' --id long >"$tmp/long" &
long=$!
active_is 1
t0=$(now_ms)
call "$C" generate '{"tokens":[5],"max_tokens":1}' --id late >"$tmp/late"
elapsed=$(($(now_ms) - t0))
check "a request queued past --queue-timeout is refused with busy ($(get error.message <"$tmp/late"))" \
    grep -q 'busy.*--queue-timeout 2.0 s' "$tmp/late"
# At the timeout, not when the long request ends: a bound in seconds
# would measure the machine (a sanitizer build takes twice as long).
check "not before its 2 s (${elapsed} ms)" [ "$elapsed" -ge 1900 ]
check "... but while the request it queued behind still runs" \
    [ -z "$(get done <"$tmp/long" | grep true)" ]

# ---- --max-ctx: refused as it comes, not after the long request
t0=$(now_ms)
call "$C" generate '{"tokens":[5,6,7],"max_tokens":100000}' --id big --timeout 10000 >"$tmp/big"
elapsed=$(($(now_ms) - t0))
check "tokens + max_tokens past --max-ctx is ctx_limit at once (${elapsed} ms)" \
    code_within "$tmp/big" ctx_limit "$elapsed" 5000
check "while the long request still runs" [ -z "$(get done <"$tmp/long" | grep true)" ]
call "$C" cancel '{"target":"long"}' >/dev/null
wait $long
check "the long request was cancelled on request" [ "$(get error.code <"$tmp/long")" = cancelled ]

finish
