#!/bin/sh
# End to end: a client (inferctl, on the engine's protocol module and
# client) runs status, generate, set, cancel and sessions against a real
# `inferd serve`; its tokens equal `inferd generate`'s; bad requests get
# errors and change nothing; telemetry and the log show every step; SIGTERM
# ends the node cleanly with an error for the request in flight.
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 2
C=$(ep "$P1")
T=$(ep "$P2")
start solo --control "$C" --telemetry "$T" --threads 1 --pidfile "$tmp/solo.pid"
if ! up "$C"; then
    fail "node started: $(cat "$tmp/solo.err")"
    finish
    exit 1
fi

# ---- status
call "$C" status >"$tmp/status"
line=$(get node model.name n_stages config.kv_bits active <"$tmp/status")
check "status describes the node ($line)" [ "$line" = "$(printf 'solo\tstories260K\t1\t16\t0')" ]
fp=$(get model.fingerprint <"$tmp/status")
check "status carries the model fingerprint" [ "${#fp}" -eq 64 ]
check "pidfile holds the node's pid" [ "$(cat "$tmp/solo.pid")" = "$PID_solo" ]

# ---- generate: the same text as `inferd generate`, greedy and sampled
gen_text() { # args of inferd generate
    inferd generate --prompt "Once upon a time" --steps 40 "$@" 2>/dev/null | tr -d '\n'
}
serve_text() { # generate args as JSON fields
    printf 'Once upon a time%s' "$(call "$C" generate \
        "{\"prompt\":\"Once upon a time\",\"max_tokens\":40$1}" | get text | tr -d '\n')"
}
want=$(gen_text --temperature 0)
got=$(serve_text ',"temperature":0')
check "greedy tokens equal inferd generate's" [ "$got" = "$want" ]
want=$(gen_text --temperature 0.8 --top-p 0.9 --seed 7)
got=$(serve_text ',"temperature":0.8,"top_p":0.9,"seed":7')
check "sampled tokens (seed 7) equal inferd generate's" [ "$got" = "$want" ]
other=$(serve_text ',"temperature":0.8,"top_p":0.9,"seed":8')
check "another seed gives other tokens" [ "$other" != "$want" ]

call "$C" generate '{"prompt":"Once upon a time","max_tokens":5,"temperature":0}' >"$tmp/g"
line=$(get stats.prompt_tokens stats.gen_tokens stats.ctx <"$tmp/g")
check "final frame carries stats ($line)" [ "$line" = "$(printf '5\t5\t9')" ]

# ---- set
call "$C" set '{"kv_bits":8,"prefill_step":7}' >"$tmp/set"
check "set replies with the applied values" \
    [ "$(get stages.0.kv_bits stages.0.prefill_step <"$tmp/set")" = "$(printf '8\t7')" ]
call "$C" status >"$tmp/status"
check "status shows the new config" \
    [ "$(get config.kv_bits config.prefill_step <"$tmp/status")" = "$(printf '8\t7')" ]
call "$C" set '{"kv_bits":5}' >"$tmp/set"
check "set kv_bits 5 is bad_value" [ "$(get error.code <"$tmp/set")" = bad_value ]
call "$C" set '{"kv_bits":16,"prefill_step":"auto"}' >/dev/null
call "$C" status >"$tmp/status"
check "a bad set changed nothing, a good one applied" \
    [ "$(get config.kv_bits config.prefill_step <"$tmp/status")" = "$(printf '16\tauto')" ]
call "$C" set '{"prefill_step":512}' >/dev/null

# ---- bad requests: an error reply, and the node keeps serving
"$CTL" raw "$C" 'not json' >"$tmp/r"
check "non-JSON frame gets bad_json" [ "$(get error.code <"$tmp/r")" = bad_json ]
"$CTL" raw "$C" '{"v":1,"id":"m1","op":"fly"}' >"$tmp/r"
check "unknown op gets unknown_op with its id" \
    [ "$(get id error.code <"$tmp/r")" = "$(printf 'm1\tunknown_op')" ]
call "$C" generate '{"tokens":[1,600],"max_tokens":1}' >"$tmp/r"
check "a token past the vocabulary gets bad_token" [ "$(get error.code <"$tmp/r")" = bad_token ]
call "$C" generate '{"tokens":[1],"max_tokens":1,"temperature":0}' >"$tmp/r"
check "the node still serves after bad requests" [ "$(get ok <"$tmp/r" | tail -n 1)" = true ]

# ---- cancel: a running request, a queued one, an unknown one
active_is() { # waits (at most 20 s) until status says active = $1
    n=0
    while [ $n -lt 100 ]; do
        [ "$(call "$C" status | get active)" = "$1" ] && return 0
        sleep 0.2
        n=$((n + 1))
    done
    return 1
}
call "$C" generate '{"synthetic_tokens":100000,"max_tokens":1}' --id long1 >"$tmp/long1" &
l1=$!
active_is 1
call "$C" generate '{"prompt":"queued","max_tokens":1}' --id q1 >"$tmp/q1" &
q1=$!
n=0 # until q1 has reached the node's queue (before, it is not_found)
while call "$C" cancel '{"target":"q1"}' >"$tmp/c"; [ "$(get ok <"$tmp/c")" != true ] &&
    [ $n -lt 100 ]; do
    sleep 0.1
    n=$((n + 1))
done
check "cancel of a queued request is ok" [ "$(get ok <"$tmp/c")" = true ]
call "$C" cancel '{"target":"long1"}' >"$tmp/c"
check "cancel of the running request is ok" [ "$(get ok <"$tmp/c")" = true ]
wait $l1
wait $q1
check "the running request ends with cancelled" [ "$(get error.code <"$tmp/long1")" = cancelled ]
check "the queued request ends with cancelled" [ "$(get error.code <"$tmp/q1")" = cancelled ]
call "$C" cancel '{"target":"nope"}' >"$tmp/c"
check "cancel of an unknown request is not_found" [ "$(get error.code <"$tmp/c")" = not_found ]
check "nothing is active after the cancels" active_is 0

# ---- sessions: a second request appends to the first one's context
call "$C" generate '{"tokens":[1,403,411],"max_tokens":8,"temperature":0,"session":"s1"}' \
    >"$tmp/s1"
first=$(tokens_of <"$tmp/s1")
call "$C" generate '{"tokens":[260,261],"max_tokens":8,"temperature":0,"session":"s1"}' \
    >"$tmp/s2"
second=$(tokens_of <"$tmp/s2")
check "session contexts add up ($(get stats.ctx <"$tmp/s1") then $(get stats.ctx <"$tmp/s2"))" \
    [ "$(get stats.ctx <"$tmp/s1") $(get stats.ctx <"$tmp/s2")" = "10 20" ]
ids=$(printf '1 403 411 %s 260 261' "$first" | tr -s ' ' ',' | sed 's/,$//')
call "$C" generate "{\"tokens\":[$ids],\"max_tokens\":8,\"temperature\":0}" >"$tmp/one"
check "a session continues exactly like the whole context in one prompt" \
    [ "$(tokens_of <"$tmp/one")" = "$second" ]
check "status counts the session" [ "$(call "$C" status | get sessions)" = 1 ]
call "$C" drop_session '{"session":"s1"}' >"$tmp/d"
check "drop_session is ok" [ "$(get ok <"$tmp/d")" = true ]
call "$C" drop_session '{"session":"s1"}' >"$tmp/d"
check "dropping it again is not_found" [ "$(get error.code <"$tmp/d")" = not_found ]

# ---- telemetry: every step of a request, seq without gaps
"$CTL" listen "$T" 3 >"$tmp/tel" &
lp=$!
sleep 0.5
call "$C" generate '{"prompt":"Once upon a time","max_tokens":12,"temperature":0}' --id tel1 \
    >/dev/null
wait $lp
steps=$(get topic req step <"$tmp/tel" | awk '$1 == "step" && $2 == "tel1" { print $3 }' |
    tr '\n' ' ')
check "one step message per step, in order ($steps)" \
    [ "$steps" = "0 1 2 3 4 5 6 7 8 9 10 11 " ]
gaps=$(get seq <"$tmp/tel" | awk 'NR > 1 && $1 != prev + 1 { n++ } { prev = $1 } END { print n + 0 }')
check "telemetry seq has no gaps" [ "$gaps" = 0 ]
check "request start and end are published" \
    [ "$(get topic req state <"$tmp/tel" | grep -c "^req	tel1	")" = 2 ]
check "the start says who sent it (control) and the prompt's input" \
    [ "$(get topic req state source input <"$tmp/tel" | grep -c "^req	tel1	start	control	prompt$")" = 1 ]
check "heartbeats carry the fingerprint" grep -q "\"fingerprint\":\"$fp\"" "$tmp/tel"
check "every message decodes" [ "$(get invalid <"$tmp/tel" | wc -l)" = 0 ]

# ---- the log: field-notes style step lines and lifecycle lines
check "log has a line per step" \
    [ "$(grep -c '\[STEP [0-9]*\] req=tel1 phase=' "$tmp/solo.log")" = 12 ]
check "step lines carry model and eval times" \
    grep -q '\[STEP 1\] req=tel1 phase=decode tokens=1 pos=6 model=[0-9.]*ms eval=[0-9.]*ms' \
    "$tmp/solo.log"
check "log has the start line" grep -q '\[NODE\] start name=solo' "$tmp/solo.log"

# ---- numeric health: a checkpoint full of NaN (dim 16, hidden 16, 1 layer,
# 2 heads, vocab 32, seq_len 16: a 28-byte header, then 2480 floats) makes
# every step non-finite; the step messages say so and the request raises
# one numeric event
{
    printf '\020\000\000\000\020\000\000\000\001\000\000\000\002\000\000\000'
    printf '\002\000\000\000\040\000\000\000\020\000\000\000'
    i=0
    while [ $i -lt 2480 ]; do
        printf '\000\000\300\177'
        i=$((i + 1))
    done
} >"$tmp/nan.bin"
alloc_ports 6
N=$(ep "$P5")
start nan --model "$tmp/nan.bin" --control "$N" --telemetry "$(ep "$P6")" --threads 1
up "$N"
"$CTL" listen "$(ep "$P6")" 10 --until-end nan1 >"$tmp/tel_nan" &
lp=$!
sleep 0.5
call "$N" generate '{"tokens":[1,5,6],"max_tokens":4,"temperature":0}' --id nan1 >/dev/null
wait $lp
check "step messages count non-finite values and carry act_max null" \
    [ "$(get topic nonfinite act_max <"$tmp/tel_nan" | awk '$1 == "step" && $2 > 0 && $3 == "null"' |
        wc -l)" = 4 ]
check "the first non-finite value raises one numeric event" \
    [ "$(get topic kind req <"$tmp/tel_nan" | grep -c '^event	numeric	nan1$')" = 1 ]

# ---- CURVE: only clients on the allow-list get answers
mkdir "$tmp/keys" "$tmp/keys/clients"
for k in node me stranger; do inferd keygen --out "$tmp/keys/$k" >/dev/null; done
cp "$tmp/keys/me.pub" "$tmp/keys/clients/"
alloc_ports 4
S=$(ep "$P3")
start secure --control "$S" --telemetry "$(ep "$P4")" --threads 1 \
    --curve-secret "$tmp/keys/node.key" --curve-clients "$tmp/keys/clients"
call "$S" status --timeout 10000 --curve "$tmp/keys/me.key" "$tmp/keys/node.pub" >"$tmp/sec"
check "CURVE: an allowed client gets status, marked secure" \
    [ "$(get security.curve <"$tmp/sec")" = true ]
call "$S" status --timeout 1000 --curve "$tmp/keys/stranger.key" "$tmp/keys/node.pub" \
    >/dev/null 2>&1
check "CURVE: a key not on the list gets nothing" [ $? = 2 ]
call "$S" status --timeout 1000 >/dev/null 2>&1
check "CURVE: a plain client gets nothing" [ $? = 2 ]

# ---- SIGTERM: the request in flight gets `shutdown`, the node exits 0
call "$C" generate '{"synthetic_tokens":100000,"max_tokens":1}' --id long2 >"$tmp/long2" &
l2=$!
active_is 1
stop solo
wait $l2
check "SIGTERM: the request in flight gets shutdown" \
    [ "$(get error.code <"$tmp/long2")" = shutdown ]
check "SIGTERM: exit status 0" [ "$STOP_RC" = 0 ]
check "SIGTERM: pidfile removed" [ ! -e "$tmp/solo.pid" ]
check "SIGTERM: logged" grep -q '\[NODE\] stop (SIGTERM)' "$tmp/solo.log"

finish
