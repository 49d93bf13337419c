#!/bin/sh
# End to end: live config. `set kv_bits` sent to the head of a 2-stage ring
# during a long generation converts every stage's cache at the next step
# boundary (telemetry switches from 16 to 4 bits between two steps, and the
# KV bytes shrink by the formula's ratio); `set prefill_step` changes the
# chunks of the next request; `auto` adapts the chunk to the step target.
. "$(dirname "$0")/lib/serve.sh"

# head_dim 64. A converted cache must shrink exactly by the ratio of the
# formula's block sizes (kv_block_bytes: codes, scales and biases).
M="synth:dim=256,hidden=512,layers=4,heads=4,kv_heads=4,vocab=4096"
b16=$("$CTL" kvblock 64 16)
b4=$("$CTL" kvblock 64 4)
alloc_ports 10
A=$(ep "$P1")
B=$(ep "$P3")
start cfg_a --model "$M" --layers 0:2 --control "$A" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P5")" --next "$(ep "$P6")" --threads 1
start cfg_b --model "$M" --layers 2:4 --control "$B" --telemetry "$(ep "$P4")" \
    --listen "$(ep "$P6")" --next "$(ep "$P5")" --threads 1
start cfg_big --model "$M" --control "$(ep "$P7")" --telemetry "$(ep "$P8")" --threads 1 \
    --prefill-step auto --step-target-ms 1000000
start cfg_small --model "$M" --control "$(ep "$P9")" --telemetry "$(ep "$P10")" --threads 1 \
    --prefill-step auto --step-target-ms 1
for c in "$A" "$B" "$(ep "$P7")" "$(ep "$P9")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done

# ---- kv_bits during a generation
"$CTL" listen "$(ep "$P2")" 60 --until-end kv1 >"$tmp/tel_a" &
la=$!
"$CTL" listen "$(ep "$P4")" 60 >"$tmp/tel_b" &
lb=$!
sleep 0.5
call "$A" generate '{"prompt":"Once upon a time","max_tokens":1500,"temperature":0}' \
    --id kv1 >"$tmp/kv1" &
g=$!
n=0
while [ "$(grep -c '"req":"kv1","step"' "$tmp/tel_a")" -lt 100 ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
call "$A" set '{"kv_bits":4}' >"$tmp/set"
wait $g
wait $la
kill $lb 2>/dev/null
wait $lb 2>/dev/null

check "the generation ran to its end" [ "$(get stats.gen_tokens <"$tmp/kv1")" = 1500 ]
check "set lists both stages at 4 bits" \
    [ "$(get stages.0.kv_bits stages.1.kv_bits <"$tmp/set")" = "$(printf '4\t4')" ]
for i in 0 1; do
    line=$(get stages.$i.kv.from_bits stages.$i.kv.to_bits stages.$i.kv.bytes_before \
        stages.$i.kv.bytes_after <"$tmp/set")
    set -- $line
    if [ "$1 $2" = "16 4" ] && [ "$3" -gt 0 ] && [ $(($4 * b16)) -eq $(($3 * b4)) ]; then
        ok "stage $i converted its cache 16 -> 4 bits: $3 -> $4 bytes ($b4/$b16)"
    else
        fail "stage $i conversion: $line"
    fi
done

# On each stage: steps at 16 bits, then (from one step on) at 4 bits, with
# the conversion event published in between.
for s in a b; do
    f="$tmp/tel_$s"
    bits=$(get topic req kv_bits <"$f" | awk '$1 == "step" && $2 == "kv1" { print $3 }' | uniq |
        tr '\n' ' ')
    check "stage $s: kv_bits goes 16 then 4, once ($bits)" [ "$bits" = "16 4 " ]
    last16=$(get topic req kv_bits seq <"$f" |
        awk '$1 == "step" && $2 == "kv1" && $3 == 16 { s = $4 } END { print s }')
    first4=$(get topic req kv_bits seq <"$f" |
        awk '$1 == "step" && $2 == "kv1" && $3 == 4 { print $4; exit }')
    conv=$(get topic kind seq <"$f" | awk '$1 == "event" && $2 == "kv_converted" { print $3 }')
    check "stage $s: the conversion falls between two steps" \
        [ "$last16" -lt "$conv" ] && [ "$conv" -lt "$first4" ]
    kv16=$(get topic req kv_bits kv_bytes <"$f" |
        awk '$1 == "step" && $2 == "kv1" && $3 == 16 { k = $4 } END { print k }')
    kv4=$(get topic req kv_bits kv_bytes <"$f" |
        awk '$1 == "step" && $2 == "kv1" && $3 == 4 { print $4; exit }')
    # One more position may open one more block per layer and head (8 here).
    check "stage $s: KV bytes shrink at the switch ($kv16 -> $kv4)" \
        [ $((kv4 * b16)) -le $((kv16 * b4 + b16 * b4 * 8)) ]
    check "stage $s: config_applied event" \
        [ "$(get topic kind <"$f" | grep -c '^event	config_applied')" -ge 1 ]
done

# ---- prefill_step applies to the next request's chunks
chunks() { # EP REQ: the tokens of each prefill step of REQ, seen on EP's telemetry
    get topic req phase tokens <"$1" |
        awk -v r="$2" '$1 == "step" && $2 == r && $3 == "prefill" { printf "%s ", $4 }'
}
prefill_run() { # HEAD_EP TEL_EP REQ: a 300-token synthetic prompt, its chunks
    "$CTL" listen "$2" 30 --until-end "$3" >"$tmp/tel_$3" &
    l=$!
    sleep 0.5
    call "$1" generate '{"synthetic_tokens":300,"max_tokens":1}' --id "$3" >/dev/null
    wait $l
    chunks "$tmp/tel_$3" "$3"
}
call "$A" set '{"prefill_step":64}' >/dev/null
got=$(prefill_run "$A" "$(ep "$P2")" ps64)
check "prefill_step 64: chunks 64 64 64 64 44 ($got)" [ "$got" = "64 64 64 64 44 " ]
call "$A" set '{"prefill_step":100}' >/dev/null
got=$(prefill_run "$A" "$(ep "$P2")" ps100)
check "prefill_step 100: chunks 100 100 100 ($got)" [ "$got" = "100 100 100 " ]

# ---- auto: a probe chunk, then what the step target allows
got=$(prefill_run "$(ep "$P7")" "$(ep "$P8")" auto_big)
check "auto with a generous target: probe, then the rest at once ($got)" [ "$got" = "64 236 " ]
got=$(prefill_run "$(ep "$P9")" "$(ep "$P10")" auto_small)
set -- $got
probe=$1
shift
small=1
for c in "$@"; do [ "$c" -lt 236 ] || small=0; done
check "auto with a 1 ms target: probe, then $# smaller chunks" \
    [ "$probe" = 64 ] && [ $# -gt 1 ] && [ $small = 1 ]
resolved=$(get topic req phase tokens prefill_step <"$tmp/tel_auto_small" |
    awk '$1 == "step" && $2 == "auto_small" && $3 == "prefill" && $4 != $5 { n++ }
         END { print n + 0 }')
check "auto: step messages report the chunk in effect" [ "$resolved" -le 1 ]

finish
