#!/bin/sh
# End to end: continuous batching (--max-seqs) and pipelined rings
# (--pipeline-depth).
#   - Greedy tokens do not depend on the company a request keeps: eight
#     requests of different prompt lengths and max_tokens, started one
#     after the other, one of them cancelled while it decodes and one more
#     refused by the memory guard (kv_oom), each get exactly the tokens
#     they get alone on a single node; on 1, 2 and 3 stages, for prefill
#     steps 1, 7 and 512 and kv_bits 16 and 32. The head's step messages
#     show several requests in one step (seqs >= 2), its status several
#     requests active at once.
#   - A stage killed while eight requests decode: each of them ends with
#     stage_timeout within --step-timeout + 1 s; once the stage is back,
#     the ring serves a new request with the tokens of a single node.
#   - A live set of kv_bits 16 -> 8 while requests run on a 2-stage ring:
#     they all complete with their full max_tokens, kv_converted is
#     published, and new requests run at 8 bits.
#   - --max-seqs 2: of four requests, two run and two wait in the queue,
#     and all four complete.
#   - Bad --max-seqs and --pipeline-depth values are refused by name.
. "$(dirname "$0")/lib/serve.sh"

t_begin=$(date +%s)
now_ms() { echo $(($(date +%s%N) / 1000000)); }
ntok() { cat "$1" 2>/dev/null | grep -c '"token"'; } # token frames in a reply file
last_ok() { [ "$(get ok <"$1" | tail -n 1)" = true ]; }
# refused_naming OPT: the last `inferd serve` ($rc, $tmp/flag.out) exited
# with an error (not killed by timeout) that names OPT.
refused_naming() { [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -- "$1" "$tmp/flag.out"; }

# ---- bad flags: refused at start, naming the option
alloc_ports 2
for a in "--max-seqs 0" "--max-seqs 65" "--pipeline-depth 0" "--pipeline-depth x"; do
    opt=${a% *}
    # shellcheck disable=SC2086 # an option and its value
    timeout 10 inferd serve --name badflag --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
        $a >"$tmp/flag.out" 2>&1
    rc=$?
    check "inferd serve $a exits non-zero naming $opt (rc $rc: $(head -n 1 "$tmp/flag.out"))" \
        refused_naming "$opt"
done

# ---- 1. batched greedy tokens equal those of requests run alone
alloc_ports 17
ONE=$(ep "$P1")
TWO=$(ep "$P3")
THREE=$(ep "$P9")
ring_start() { # FLAGS...: a single node, a 2-stage and a 3-stage ring
    start one --control "$ONE" --telemetry "$(ep "$P2")" "$@"
    start two_a --layers 0:2 --control "$TWO" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P5")" --next "$(ep "$P8")" "$@"
    start two_b --layers 2:5 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
        --listen "$(ep "$P8")" --next "$(ep "$P5")" "$@"
    start three_a --layers 0:1 --control "$THREE" --telemetry "$(ep "$P10")" \
        --listen "$(ep "$P11")" --next "$(ep "$P14")" "$@"
    start three_b --layers 1:3 --control "$(ep "$P12")" --telemetry "$(ep "$P13")" \
        --listen "$(ep "$P14")" --next "$(ep "$P17")" "$@"
    start three_c --layers 3:5 --control "$(ep "$P15")" --telemetry "$(ep "$P16")" \
        --listen "$(ep "$P17")" --next "$(ep "$P11")" "$@"
    for c in "$ONE" "$TWO" "$(ep "$P6")" "$THREE" "$(ep "$P12")" "$(ep "$P15")"; do
        up "$c" || return 1
    done
}

# The requests, in the order they start. X is cancelled once it has 20
# tokens (alone it runs for 3756 before its end of text), K needs far more
# KV than --mem-limit allows at any stage; the others end by max_tokens, at
# different times (their end of text comes later).
FIX="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high."
REQS="L X T S O K N D P"
RUN="L T S O N D P" # the requests that complete
args_L='{"tokens":[1,100,200,300,400,500,50,60,70,80,90],"max_tokens":700,"temperature":0}'
args_X='{"prompt":"Lily and Tom went to the park. They saw","max_tokens":3000,"temperature":0}'
ref_X='{"prompt":"Lily and Tom went to the park. They saw","max_tokens":300,"temperature":0}'
args_T='{"prompt":"Tim had a red ball","max_tokens":500,"temperature":0}'
args_S="{\"prompt\":\"$FIX\",\"max_tokens\":200,\"temperature\":0}"
args_O='{"prompt":"Once upon a time","max_tokens":300,"temperature":0}'
args_K='{"prompt":"The little dog","max_tokens":1048576,"temperature":0}'
args_N='{"tokens":[1,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25],"max_tokens":250,"temperature":0}'
args_D='{"prompt":"The little dog","max_tokens":150,"temperature":0}'
args_P='{"prompt":"The sun was","max_tokens":60,"temperature":0}'
# At 16 bits a layer holds 128 bytes of KV per position: K's million
# positions need at least 128 MiB on any stage, above this budget, while
# the others need well under 1 MiB each.
MEMLIMIT=128M

JOBS=""
launch() { # EP ID ARGS: a generate in the background; replies to $tmp/ID
    (call "$1" generate "$3" --id "$2" --timeout 60000 >"$tmp/$2" 2>"$tmp/$2.err"
        now_ms >"$tmp/$2.end") &
    JOBS="$JOBS $!"
}
cancel_at() { # EP ID N: cancels ID once it has N tokens
    n=0
    while [ "$(ntok "$tmp/$2")" -lt "$3" ] && [ $n -lt 1000 ]; do
        sleep 0.01
        n=$((n + 1))
    done
    call "$1" cancel "{\"target\":\"$2\"}" --id "cancel_$2" >"$tmp/$2.cancel" 2>&1
}
poll_status() { # EP OUT: "active queued" lines until $tmp/stop_poll exists
    rm -f "$tmp/stop_poll"
    (while [ ! -e "$tmp/stop_poll" ]; do
        call "$1" status --timeout 2000 2>/dev/null | get active queued
        sleep 0.01
    done >"$2") &
    POLL=$!
}
stop_poll() {
    touch "$tmp/stop_poll"
    wait "$POLL"
}

# batch TAG EP TEL_FILE: the requests on EP, started 30 ms apart, X
# cancelled while it decodes; then the checks against the references
# $tmp/ref_$combo_NAME.
batch() {
    tag=$1
    head=$2
    JOBS=""
    poll_status "$head" "$tmp/${tag}.status"
    canceller=""
    for r in $REQS; do
        eval "a=\$args_$r"
        launch "$head" "${tag}_$r" "$a"
        if [ "$r" = X ]; then
            cancel_at "$head" "${tag}_X" 20 &
            canceller=$!
        fi
        sleep 0.03
    done
    wait $JOBS $canceller
    stop_poll
    bad=""
    for r in $RUN; do
        got=$(tokens_of <"$tmp/${tag}_$r")
        want=$(cat "$tmp/ref_${combo}_$r")
        if ! last_ok "$tmp/${tag}_$r"; then
            bad="$bad $r:failed($(get error.code <"$tmp/${tag}_$r"))"
        elif [ "$got" != "$want" ]; then
            bad="$bad $r:differs"
            printf '%s\n  got:  %s\n  want: %s\n' "${tag}_$r" "$got" "$want" >>"$tmp/diffs"
        fi
    done
    # X: cancelled while decoding, its tokens so far those of X alone
    xn=$(ntok "$tmp/${tag}_X")
    xgot=$(tokens_of <"$tmp/${tag}_X")
    xwant=$(cut -d' ' -f1-"$((xn < 300 ? (xn > 0 ? xn : 1) : 300))" "$tmp/ref_${combo}_X")
    case "$xgot" in
    "$xwant"*) ;;
    *) bad="$bad X:differs" ;;
    esac
    [ "$(get error.code <"$tmp/${tag}_X")" = cancelled ] || bad="$bad X:not-cancelled($(get error.code <"$tmp/${tag}_X"),$xn)"
    [ "$xn" -ge 20 ] && [ "$xn" -lt 3000 ] || bad="$bad X:$xn-tokens"
    [ "$(get ok <"$tmp/${tag}_X.cancel" | tail -n 1)" = true ] || bad="$bad X:cancel-refused"
    [ "$(get error.code <"$tmp/${tag}_K")" = kv_oom ] || bad="$bad K:not-kv_oom($(get error.code <"$tmp/${tag}_K"))"
    check "$tag: 7 requests get their tokens alone, X cancelled at $xn tokens, K kv_oom${bad:+ (bad:$bad)}" \
        [ -z "$bad" ]
}

# batched TAG TEL: step messages of the batch on the head with seqs >= 2,
# and status saw two or more requests active at once.
batched() {
    seqs=$(get topic req seqs <"$2" | awk -v t="$1_" '$1 == "step" && index($2, t) == 1 && $3 >= 2 { n++ } END { print n + 0 }')
    act=$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m }' "$tmp/$1.status")
    check "$1: batched (head steps with seqs >= 2: $seqs; most active at once: $act)" \
        [ "$seqs" -gt 0 -a "$act" -ge 2 ]
}

: >"$tmp/diffs"
for ps in 1 7 512; do
    for kb in 16 32; do
        # The references: one request at a time on the single node, made
        # once per kv_bits (at the first prefill step) and held against
        # the batches of every prefill step: chunked prefill gives the
        # bits of one position at a time, so they must be the same.
        combo=$kb
        if ! ring_start --threads 1 --prefill-step "$ps" --kv-bits "$kb" --mem-limit "$MEMLIMIT"; then
            fail "prefill_step $ps kv_bits $kb: nodes started"
            stop_all
            continue
        fi
        [ -s "$tmp/ref_${combo}_X" ] || for r in $RUN X; do
            eval "a=\$args_$r"
            [ "$r" = X ] && a=$ref_X
            call "$ONE" generate "$a" --id "ref_$r" | tokens_of >"$tmp/ref_${combo}_$r"
        done
        nref=$(cat "$tmp"/ref_"${combo}"_* | wc -w)
        conf=$(call "$THREE" status | get config.kv_bits config.prefill_step config.max_seqs \
            config.pipeline_depth | tr '\t' ' ')
        check "ps $ps kv $kb: references made ($nref tokens); 3-stage head config: $conf" \
            [ "$nref" -ge 2000 -a "$conf" = "$kb $ps 16 0" ]
        "$CTL" listen "$(ep "$P2")" 120 >"$tmp/tel1_${ps}_$kb" &
        l1=$!
        "$CTL" listen "$(ep "$P4")" 120 >"$tmp/tel2_${ps}_$kb" &
        l2=$!
        "$CTL" listen "$(ep "$P10")" 120 >"$tmp/tel3_${ps}_$kb" &
        l3=$!
        sleep 0.3
        batch "ps${ps}_kv${kb}_1stage" "$ONE"
        batch "ps${ps}_kv${kb}_2stages" "$TWO"
        batch "ps${ps}_kv${kb}_3stages" "$THREE"
        sleep 0.2
        kill $l1 $l2 $l3 2>/dev/null
        wait $l1 $l2 $l3 2>/dev/null
        batched "ps${ps}_kv${kb}_1stage" "$tmp/tel1_${ps}_$kb"
        batched "ps${ps}_kv${kb}_2stages" "$tmp/tel2_${ps}_$kb"
        batched "ps${ps}_kv${kb}_3stages" "$tmp/tel3_${ps}_$kb"
        stop_all
    done
done
[ -s "$tmp/diffs" ] && { echo "token differences:"; cat "$tmp/diffs"; }
echo "# batching checks done after $(($(date +%s) - t_begin)) s"

# The later parts use a random model: its greedy tokens never reach an end
# of text, so every request runs for its whole max_tokens.
M="synth:dim=128,hidden=256,layers=3,heads=4,kv_heads=4,vocab=4096"

# ---- 2. a stage killed while eight requests decode
alloc_ports 11
A=$(ep "$P1")
start_kb() {
    start kill_b --model "$M" --layers 1:2 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P8")" --next "$(ep "$P9")" --threads 1
}
start kill_a --model "$M" --layers 0:1 --control "$A" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P7")" --next "$(ep "$P8")" --threads 1 --step-timeout 3
start_kb
start kill_c --model "$M" --layers 2:3 --control "$(ep "$P5")" --telemetry "$(ep "$P6")" \
    --listen "$(ep "$P9")" --next "$(ep "$P7")" --threads 1
start kill_ref --model "$M" --control "$(ep "$P10")" --telemetry "$(ep "$P11")" --threads 1
for c in "$A" "$(ep "$P3")" "$(ep "$P5")" "$(ep "$P10")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
NEW='{"tokens":[7,8,9,10,11],"max_tokens":40,"temperature":0}'
call "$(ep "$P10")" generate "$NEW" | tokens_of >"$tmp/kref"
JOBS=""
for i in 1 2 3 4 5 6 7 8; do
    toks=$(seq 10 $((10 + i * 3)) | tr '\n' ',' | sed 's/,$//')
    launch "$A" "k$i" "{\"tokens\":[$toks],\"max_tokens\":20000,\"temperature\":0}"
    sleep 0.03
done
n=0
decoding() {
    for i in 1 2 3 4 5 6 7 8; do [ "$(ntok "$tmp/k$i")" -ge 5 ] || return 1; done
}
while ! decoding && [ $n -lt 300 ]; do
    sleep 0.05
    n=$((n + 1))
done
check "eight requests decode on the 3-stage ring" decoding
act=$(call "$A" status | get active)
t0=$(now_ms)
kill -9 "$PID_kill_b"
wait "$PID_kill_b" 2>/dev/null
wait $JOBS
bad=""
slowest=0
for i in 1 2 3 4 5 6 7 8; do
    code=$(get error.code <"$tmp/k$i")
    el=$(($(cat "$tmp/k$i.end") - t0))
    [ "$el" -gt "$slowest" ] && slowest=$el
    [ "$code" = stage_timeout ] || bad="$bad k$i:$code"
    grep -q "stage 'kill_b' (layers 1:2) did not answer" "$tmp/k$i" || bad="$bad k$i:names-not-kill_b"
    [ "$el" -le 4000 ] || bad="$bad k$i:${el}ms"
done
check "killed stage: all 8 requests (active $act) end with stage_timeout naming it within 4 s (slowest ${slowest} ms)${bad:+ (bad:$bad)}" \
    [ -z "$bad" -a "$act" = 8 ]
echo "# $(get error.message <"$tmp/k1")"
start_kb
up "$(ep "$P3")"
call "$A" generate "$NEW" --id knew >"$tmp/knew"
last_ok "$tmp/knew" && knew=$(tokens_of <"$tmp/knew") || knew="failed: $(get error.message <"$tmp/knew")"
check "after the restart the ring serves a new request with a single node's tokens ($(printf "%.80s" "$knew"))" \
    [ "$knew" = "$(cat "$tmp/kref")" -a "$(wc -w <"$tmp/kref")" = 40 ]
stop_all

# ---- 3. a live set of kv_bits while requests run on a 2-stage ring
alloc_ports 6
H=$(ep "$P1")
start set_a --model "$M" --layers 0:2 --control "$H" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P3")" --next "$(ep "$P6")" --threads 1 --kv-bits 16
start set_b --model "$M" --layers 2:3 --control "$(ep "$P4")" --telemetry "$(ep "$P5")" \
    --listen "$(ep "$P6")" --next "$(ep "$P3")" --threads 1 --kv-bits 16
up "$H" && up "$(ep "$P4")" || { fail "set ring started"; finish; exit 1; }
# Until the last request's end (not a fixed time: under ASan this part
# outlasted 120 s and the last request's steps went unheard).
"$CTL" listen "$(ep "$P2")" 600 --until-end after8 >"$tmp/tel_set" &
lset=$!
sleep 0.3
JOBS=""
for i in 1 2 3 4; do
    launch "$H" "s$i" "{\"tokens\":[$((20 + i)),30,40],\"max_tokens\":$((1000 + 200 * i)),\"temperature\":0}"
    sleep 0.03
done
running() {
    for i in 1 2 3 4; do [ "$(ntok "$tmp/s$i")" -ge 10 ] || return 1; done
}
n=0
while ! running && [ $n -lt 300 ]; do
    sleep 0.05
    n=$((n + 1))
done
act=$(call "$H" status | get active)
call "$H" set '{"kv_bits":8}' --id set8 >"$tmp/set8"
before=""
for i in 1 2 3 4; do before="$before $(ntok "$tmp/s$i")"; done
wait $JOBS
set_ok=$(get ok stages.0.kv_bits stages.1.kv_bits <"$tmp/set8" | tr '\t' ' ')
check "set kv_bits 8 while $act requests run (tokens so far:$before): ok on both stages ($set_ok)" \
    [ "$act" -ge 2 -a "$set_ok" = "true 8 8" ]
check "the running caches were converted 16 -> 8 ($(get stages.0.kv <"$tmp/set8"))" \
    [ "$(get stages.0.kv.from_bits stages.0.kv.to_bits <"$tmp/set8")" = "$(printf "16\t8")" ]
bad=""
for i in 1 2 3 4; do
    want=$((1000 + 200 * i))
    last_ok "$tmp/s$i" || bad="$bad s$i:$(get error.code <"$tmp/s$i")"
    [ "$(ntok "$tmp/s$i")" = "$want" ] || bad="$bad s$i:$(ntok "$tmp/s$i")/$want"
done
check "every running request completes with its full max_tokens${bad:+ (bad:$bad)}" [ -z "$bad" ]
unfinished=$(echo "$before" | awk '{ for (i = 1; i <= NF; i++) if ($i < 1000) n++ } END { print n + 0 }')
check "the set came while they decoded ($unfinished of 4 unfinished at its reply)" [ "$unfinished" -ge 2 ]
call "$H" generate '{"tokens":[5,6,7],"max_tokens":20,"temperature":0}' --id after8 >"$tmp/after8"
last_ok "$tmp/after8" || kill $lset 2>/dev/null
wait $lset 2>/dev/null
conv=$(get topic kind from_bits to_bits <"$tmp/tel_set" |
    awk '$1 == "event" && $2 == "kv_converted" && $3 == 16 && $4 == 8' | wc -l)
check "a kv_converted event was published (16 -> 8)" [ "$conv" -ge 1 ]
check "status: kv_bits 8 on both stages" \
    [ "$(call "$H" status | get config.kv_bits)$(call "$(ep "$P4")" status | get config.kv_bits)" = 88 ]
k8=$(get topic req kv_bits <"$tmp/tel_set" | awk '$1 == "step" && $2 == "after8" { print $3 }' | sort -u | tr '\n' ' ')
last_ok "$tmp/after8" || k8="failed: $(get error.code <"$tmp/after8")"
check "a new request runs at kv_bits 8 (its steps: $k8)" [ "$k8" = "8 " ]
stop_all

# ---- 4. --max-seqs 2: two run, two wait
alloc_ports 2
Q=$(ep "$P1")
start seqs2 --model "$M" --control "$Q" --telemetry "$(ep "$P2")" --threads 1 --max-seqs 2
up "$Q" || { fail "max-seqs node started"; finish; exit 1; }
check "status: config.max_seqs 2" [ "$(call "$Q" status | get config.max_seqs)" = 2 ]
poll_status "$Q" "$tmp/q.status"
JOBS=""
for i in 1 2 3 4; do
    launch "$Q" "q$i" "{\"tokens\":[$((40 + i))],\"max_tokens\":1500,\"temperature\":0}"
done
wait $JOBS
stop_poll
check "status showed active 2, queued 2 ($(sort -u "$tmp/q.status" | tr '\t\n' '/ '))" \
    grep -q "^2	2$" "$tmp/q.status"
check "never more than 2 active" \
    [ "$(awk '$1 > 2' "$tmp/q.status" | wc -l)" = 0 ]
bad=""
for i in 1 2 3 4; do
    last_ok "$tmp/q$i" && [ "$(ntok "$tmp/q$i")" = 1500 ] || bad="$bad q$i"
done
check "all four complete with their 1500 tokens${bad:+ (bad:$bad)}" [ -z "$bad" ]
stop_all

echo "# total $(($(date +%s) - t_begin)) s"
finish
