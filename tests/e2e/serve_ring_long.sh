#!/bin/sh
# End to end: a ring longer than the old limit of 16 stages serves (issue
# 25). A 24-layer synthetic model on 24 stages of one layer each (24
# processes, one thread each) gives the same greedy tokens as one node
# holding every layer; the head's status knows all 24 stages, and its
# ring answers (ring_health up).
. "$(dirname "$0")/lib/serve.sh"

N=24
M="synth:dim=64,hidden=172,layers=$N,heads=4,kv_heads=4,vocab=512,seed=7"
# Control and ring links on TCP (2 ports a stage, within what alloc_ports
# hands out at once); telemetry on ipc:// sockets in $tmp.
alloc_ports $((2 * N + 1))
# Stage i (0-based): control on port 2i+1, its ring --listen on 2i+2.
port() { eval "echo \$P$1"; }
start one --model "$M" --control "$(ep "$(port $((2 * N + 1)))")" \
    --telemetry "ipc://$tmp/one.tel" --threads 1
i=0
while [ $i -lt $N ]; do
    next=$(((i + 1) % N))
    start "s$i" --model "$M" --layers "$i:$((i + 1))" --control "$(ep "$(port $((2 * i + 1)))")" \
        --telemetry "ipc://$tmp/s$i.tel" --listen "$(ep "$(port $((2 * i + 2)))")" \
        --next "$(ep "$(port $((2 * next + 2)))")" --threads 1 --step-timeout 20
    i=$((i + 1))
done
ONE=$(ep "$(port $((2 * N + 1)))")
HEAD=$(ep "$(port 1)")
up "$ONE" || { fail "the single node started"; finish; exit 1; }
i=0
while [ $i -lt $N ]; do
    up "$(ep "$(port $((2 * i + 1)))")" || { fail "stage s$i started"; finish; exit 1; }
    i=$((i + 1))
done

check "the head of $N stages sees its ring answer" ring_up "$HEAD"
# Several prompts, whose continuations differ: a ring that skipped or
# repeated a stage would not match them all.
same=0
distinct=""
for prompt in "1,17,42,99,7" "1,300,5" "1,64,65,66,67,68,69"; do
    args="{\"tokens\":[$prompt],\"max_tokens\":16,\"temperature\":0}"
    t1=$(call "$ONE" generate "$args" | tokens_of)
    call "$HEAD" generate "$args" --id ring >"$tmp/ring"
    tn=$(tokens_of <"$tmp/ring")
    [ "$(echo "$t1" | wc -w)" = 16 ] && [ "$t1" = "$tn" ] &&
        [ "$(get ok <"$tmp/ring" | tail -n 1)" = true ] && same=$((same + 1))
    echo "     [$prompt] one: $t1 / $N stages: $tn"
    case " $distinct " in *" $t1 "*) ;; *) distinct="$distinct|$t1" ;; esac
done
check "$N stages give the same 16 greedy tokens as one node, for 3 prompts" [ "$same" = 3 ]
check "the prompts' continuations differ" [ "$(echo "$distinct" | tr '|' '\n' | grep -c .)" -ge 2 ]
call "$HEAD" status >"$tmp/status"
check "the head's status has all $N stages" \
    [ "$(get n_stages <"$tmp/status")" = $N ] && [ "$(get ring_health.state <"$tmp/status")" = up ]
check "the head's ring lists $N endpoints" \
    [ -n "$(get ring.$((N - 1)) <"$tmp/status")" ] && [ -z "$(get ring.$N <"$tmp/status")" ]
finish
