#!/bin/sh
# End to end: a ring whose stages disagree about the model. A stage that
# loaded other weights (another synthetic seed), or layer ranges that do not
# chain from 0 to the last layer, make the head refuse requests with
# model_mismatch naming the stage at fault; fixed, the ring serves.
. "$(dirname "$0")/lib/serve.sh"

M="synth:dim=64,hidden=128,layers=3,heads=4,kv_heads=4,vocab=512,seed=1"
OTHER="synth:dim=64,hidden=128,layers=3,heads=4,kv_heads=4,vocab=512,seed=2"
alloc_ports 9
A=$(ep "$P1")
node_b() { # MODEL LAYERS
    start mm_b --model "$1" --layers "$2" --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P8")" --next "$(ep "$P9")" --threads 1
    up "$(ep "$P3")"
}
start mm_a --model "$M" --layers 0:1 --control "$A" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P7")" --next "$(ep "$P8")" --threads 1 --step-timeout 5
start mm_c --model "$M" --layers 2:3 --control "$(ep "$P5")" --telemetry "$(ep "$P6")" \
    --listen "$(ep "$P9")" --next "$(ep "$P7")" --threads 1
node_b "$OTHER" 1:2
up "$A" && up "$(ep "$P5")" || { fail "ring started"; finish; exit 1; }

request() { # ID
    call "$A" generate '{"prompt":"Once upon a time","max_tokens":4,"temperature":0}' --id "$1" \
        >"$tmp/$1"
}

request r1
check "other weights: refused with model_mismatch" [ "$(get error.code <"$tmp/r1")" = model_mismatch ]
check "the error names the stage ($(get error.message <"$tmp/r1"))" \
    grep -q "stage 'mm_b' (layers 1:2) holds model synth:" "$tmp/r1"
check "and does not blame the stages that agree" [ "$(grep -c "mm_c" "$tmp/r1")" = 0 ]
check "an event reports it" grep -q '\[EVENT\] model_mismatch' "$tmp/mm_a.log"
check "no KV was kept anywhere" \
    [ "$(call "$A" status | get memory.kv_bytes) $(call "$(ep "$P5")" status | get memory.kv_bytes)" = "0 0" ]

stop mm_b
node_b "$M" 1:3
request r2
check "overlapping layers: refused with model_mismatch" [ "$(get error.code <"$tmp/r2")" = model_mismatch ]
check "the error names the stages whose ranges do not chain ($(get error.message <"$tmp/r2"))" \
    grep -q "stage 'mm_c' (layers 2:3) follows stage 'mm_b' (layers 1:3)" "$tmp/r2"

stop mm_b
node_b "$M" 1:2
request r3
check "the same model everywhere: served" \
    [ "$(get ok <"$tmp/r3" | tail -n 1)" = true ] && [ "$(grep -c '"token"' "$tmp/r3")" = 4 ]

finish
