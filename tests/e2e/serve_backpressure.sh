#!/bin/sh
# End to end: flow control on the control socket (PROTOCOL.md "Flow
# control"). A client that does not read pauses its own request and no
# other, loses no frame, and is ended with stalled after --stall-limit.
#   - A greedy generate whose client (a receive queue of 8 messages and a
#     4 KB kernel buffer) stops reading after its first token: a second
#     request with the same prompt runs beside it to the end while the
#     first stays paused (still running, its KV held); once the first
#     client reads again, slowly then fast, it gets exactly the second's
#     tokens and the final ok frame.
#   - With --stall-limit 2, a generate and an eval (logits frames) whose
#     clients stop reading: each ends with stalled naming the limit, the
#     node's status shows no request running and no KV held, the
#     request-end telemetry carries code stalled, and each client, reading
#     again, gets the final stalled frame.
. "$(dirname "$0")/lib/serve.sh"

M="synth:dim=64,hidden=128,layers=2,heads=4,kv_heads=4,vocab=512,seq_len=8192"
N=4000
alloc_ports 2
# ipc: a kernel buffer of fixed size (a loopback TCP one grows to
# megabytes), so that a client that stops reading fills the whole way in
# a few hundred frames.
A=ipc://$tmp/bp.ctl
B=ipc://$tmp/st.ctl
start bp --model "$M" --control "$A" --telemetry "$(ep "$P1")" --threads 1 --max-seqs 4 \
    --stall-limit 300
start st --model "$M" --control "$B" --telemetry "$(ep "$P2")" --threads 1 --max-seqs 4 \
    --stall-limit 2 --prefill-step 4
up "$A" && up "$B" || { fail "nodes started"; finish; exit 1; }
status_of() { call "$1" status --timeout 5000 | get "$2"; } # EP PATH
# until_status EP PATH VALUE: waits (at most 30 s) for status PATH = VALUE.
status_is() { [ "$(status_of "$1" "$2")" = "$3" ]; }
until_status() { retry 150 status_is "$@"; }

# ---- a paused request, and one beside it that is not held back
# logprobs: frames of a few hundred bytes fill the buffers sooner
G="{\"tokens\":[5,6,7],\"max_tokens\":$N,\"temperature\":0,\"logprobs\":5}"
call "$A" generate "$G" --id slow --hwm 8 --stop 1 "$tmp/go" --slow 300 5 --timeout 300000 \
    >"$tmp/slow" 2>"$tmp/slow.err" &
slow=$!
until_status "$A" active 1
call "$A" generate "$G" --id fast --timeout 300000 >"$tmp/fast"
check "the request beside it completes ($(get ok <"$tmp/fast" | tail -n 1))" \
    [ "$(get ok <"$tmp/fast" | tail -n 1)" = true ]
check "... with its $N tokens" [ "$(grep -c '"token"' "$tmp/fast")" -eq "$N" ]
check "while the one whose client stopped reading is paused: still running" \
    [ "$(status_of "$A" active)" = 1 ]
kv=$(status_of "$A" memory.kv_bytes)
check "... its KV held ($kv bytes)" [ "${kv:-0}" -gt 0 ]
not_ended() { ! grep -q "$1 end" "$tmp/bp.log"; }
check "... and its end not reached" not_ended slow
touch "$tmp/go"
wait $slow
check "the paused client, reading again, gets the final ok frame ($(tail -n 1 "$tmp/slow" | cut -c1-80))" \
    [ "$(get ok <"$tmp/slow" | tail -n 1)" = true ]
check "... and every token, the same as the request beside it" \
    [ "$(tokens_of <"$tmp/slow")" = "$(tokens_of <"$tmp/fast")" ]
check "... $N of them" [ "$(grep -c '"token"' "$tmp/slow")" -eq "$N" ]

# ---- --stall-limit 2: a generate and an eval whose clients stop reading
"$CTL" listen "$(ep "$P2")" 60 --until-end sgen >"$tmp/tel.sgen" &
tel="$!"
"$CTL" listen "$(ep "$P2")" 60 --until-end sev >"$tmp/tel.sev" &
tel="$tel $!"
sleep 0.5
call "$B" generate "$G" --id sgen --hwm 8 --stop 1 "$tmp/go2" --timeout 60000 >"$tmp/sgen" &
sgen=$!
long=$(seq 1 3000 | awk '{printf "%s%d", (NR > 1 ? "," : ""), $1 % 500 + 3}')
call "$B" eval "{\"tokens\":[$long],\"logits\":true}" --id sev --hwm 8 --stop 1 "$tmp/go2" \
    --timeout 60000 >"$tmp/sev" &
sev=$!
until_status "$B" active 2
check "both stalled requests end: no request running" until_status "$B" active 0
check "... and no KV held" status_is "$B" memory.kv_bytes 0
touch "$tmp/go2"
wait $sgen
wait $sev
wait $tel # both ends seen
for r in sgen sev; do
    check "$r's client, reading again, gets the final stalled frame ($(tail -n 1 "$tmp/$r" | cut -c1-120))" \
        [ "$(get error.code <"$tmp/$r" | tail -n 1)" = stalled ]
    check "... whose message names the limit" \
        grep -q 'took no reply frame for .* (--stall-limit 2.0 s)' "$tmp/$r"
    check "$r's request-end telemetry carries code stalled" \
        [ "$(grep "\"req\":\"$r\",\"state\":\"end\"" "$tmp/tel.$r" | get error.code)" = stalled ]
    check "... as does its error event" \
        [ "$(grep '"topic":"event"' "$tmp/tel.$r" | grep "\"req\":\"$r\"" | get code)" = stalled ]
done
check "the node logs both ends as stalled" [ "$(grep -c 'end stalled' "$tmp/st.log")" -eq 2 ]

finish
