#!/bin/sh
# End to end: pipeline rings of 1, 2 and 3 stages (separate processes on
# loopback, the embedded model split 0:5 / 0:3,3:5 / 0:2,2:4,4:5) give the
# same greedy tokens for several prompts and prefill steps; a `set` sent to
# a head reaches every stage; every stage publishes its own telemetry with
# gapless seq and the same step numbering.
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 17
# 1 stage
start one --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1
# 2 stages
start two_a --layers 0:3 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
    --listen "$(ep "$P5")" --next "$(ep "$P8")" --threads 1
start two_b --layers 3:5 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
    --listen "$(ep "$P8")" --next "$(ep "$P5")" --threads 1
# 3 stages
start three_a --layers 0:2 --control "$(ep "$P9")" --telemetry "$(ep "$P10")" \
    --listen "$(ep "$P11")" --next "$(ep "$P14")" --threads 1
start three_b --layers 2:4 --control "$(ep "$P12")" --telemetry "$(ep "$P13")" \
    --listen "$(ep "$P14")" --next "$(ep "$P17")" --threads 1
start three_c --layers 4:5 --control "$(ep "$P15")" --telemetry "$(ep "$P16")" \
    --listen "$(ep "$P17")" --next "$(ep "$P11")" --threads 1
HEADS="$(ep "$P1") $(ep "$P3") $(ep "$P9")"
for c in $HEADS $(ep "$P6") $(ep "$P12") $(ep "$P15"); do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done

# ---- identical tokens
for step in 1 3 512; do
    for c in $HEADS; do
        call "$c" set "{\"prefill_step\":$step}" >/dev/null
    done
    for prompt in "Once upon a time" "The little dog" "Lily and Tom went to the park. They saw"; do
        args="{\"prompt\":\"$prompt\",\"max_tokens\":30,\"temperature\":0}"
        t1=$(call "$(ep "$P1")" generate "$args" | tokens_of)
        t2=$(call "$(ep "$P3")" generate "$args" | tokens_of)
        t3=$(call "$(ep "$P9")" generate "$args" | tokens_of)
        n=$(echo "$t1" | wc -w)
        if [ "$n" -ge 10 ] && [ "$t1" = "$t2" ] && [ "$t1" = "$t3" ]; then
            ok "prefill_step $step, '$prompt': 1, 2 and 3 stages agree ($n tokens)"
        else
            fail "prefill_step $step, '$prompt': 1: $t1 / 2: $t2 / 3: $t3"
        fi
    done
done
want=$(inferd generate --prompt "Once upon a time" --steps 30 --temperature 0 2>/dev/null | tr -d '\n')
got="Once upon a time$(call "$(ep "$P9")" generate \
    '{"prompt":"Once upon a time","max_tokens":30,"temperature":0}' | get text | tr -d '\n')"
check "3 stages give inferd generate's text" [ "$got" = "$want" ]

# ---- a set sent to the head reaches every stage, and the reply lists them
call "$(ep "$P9")" set '{"prefill_step":4,"kv_bits":8}' >"$tmp/set"
check "set on the head lists the three stages in order" \
    [ "$(get stages.0.name stages.1.name stages.2.name <"$tmp/set")" = \
        "$(printf 'three_a\tthree_b\tthree_c')" ]
for c in "$(ep "$P12")" "$(ep "$P15")"; do
    check "stage $c has kv_bits 8 and prefill_step 4" \
        [ "$(call "$c" status | get config.kv_bits config.prefill_step)" = "$(printf '8\t4')" ]
done
call "$(ep "$P12")" status >"$tmp/st"
check "a middle stage knows its place in the ring" \
    [ "$(get stage n_stages <"$tmp/st")" = "$(printf '1\t3')" ]
check "status lists the ring's endpoints" \
    [ "$(get ring <"$tmp/st")" = "[\"$(ep "$P11")\",\"$(ep "$P14")\",\"$(ep "$P17")\"]" ]

# ---- telemetry of every stage for one request
for i in 10 13 16; do
    eval "tp=\$P$i"
    "$CTL" listen "$(ep "$tp")" 3 >"$tmp/tel$i" &
    eval "lp$i=$!"
done
sleep 0.5
call "$(ep "$P9")" generate '{"prompt":"Once upon a time","max_tokens":10,"temperature":0}' \
    --id tr1 >"$tmp/tr1"
wait $lp10 $lp13 $lp16
# prompt of 5 tokens in chunks of 4: 2 prefill steps, then 9 decode steps
want="0:prefill:4 1:prefill:1 2:decode:1 3:decode:1 4:decode:1 5:decode:1 6:decode:1 7:decode:1 8:decode:1 9:decode:1 10:decode:1 "
for i in 10 13 16; do
    got=$(get topic req step phase tokens <"$tmp/tel$i" |
        awk '$1 == "step" && $2 == "tr1" { printf "%s:%s:%s ", $3, $4, $5 }')
    check "stage telemetry $i: the same steps, phases and sizes" [ "$got" = "$want" ]
    gaps=$(get seq <"$tmp/tel$i" |
        awk 'NR > 1 && $1 != prev + 1 { n++ } { prev = $1 } END { print n + 0 }')
    check "stage telemetry $i: seq without gaps" [ "$gaps" = 0 ]
    check "stage telemetry $i: kv_bits 8 in every step" \
        [ "$(get topic kv_bits <"$tmp/tel$i" | awk '$1 == "step" && $2 != 8' | wc -l)" = 0 ]
done
nodes=$(cat "$tmp/tel10" "$tmp/tel13" "$tmp/tel16" | get topic node |
    awk '$1 == "step" { print $2 }' | sort -u | tr '\n' ' ')
check "each stage publishes under its own name ($nodes)" [ "$nodes" = "three_a three_b three_c " ]
wait_ms=$(get topic req step wait_ms <"$tmp/tel10" |
    awk '$1 == "step" && $2 == "tr1" && $4 > 0 { n++ } END { print n + 0 }')
check "the head's steps report time waiting for the other stages" [ "$wait_ms" -gt 0 ]

finish
