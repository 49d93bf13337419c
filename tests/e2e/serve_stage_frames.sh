#!/bin/sh
# End to end: forged stage-to-stage frames. Anyone who reaches a stage's
# --listen can send frames; a stage checks every field of a frame as
# strictly as a control request and drops what does not check out (a
# context of 2^31-1, a temperature that is a string, a step at a negative
# position), and keeps serving. With CURVE the ring's links are CURVE too:
# a frame from a peer whose key the stage does not hold never arrives, so a
# forged `set` changes nothing.
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 14
frame() { "$CTL" frame "$@"; }
ok_request() { # EP [CURVE ARGS]: a short greedy request through the ring
    ep=$1
    shift
    call "$ep" generate '{"prompt":"Once upon a time","max_tokens":4,"temperature":0}' "$@" \
        >"$tmp/ok"
    [ "$(get ok <"$tmp/ok" | tail -n 1)" = true ] && [ "$(grep -c '"token"' "$tmp/ok")" = 4 ]
}
dropped() { # LOG TEXT: the stage logged a dropped frame naming TEXT
    n=0
    while [ $n -lt 50 ]; do
        grep "dropped a frame" "$1" | grep -q -- "$2" && return 0
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

# ---- a plain ring: forged frames are checked and dropped
A=$(ep "$P1")
B=$(ep "$P3")
LA=$(ep "$P5")
LB=$(ep "$P6")
start frm_a --layers 0:3 --control "$A" --telemetry "$(ep "$P2")" --listen "$LA" --next "$LB" \
    --threads 1
start frm_b --layers 3:5 --control "$B" --telemetry "$(ep "$P4")" --listen "$LB" --next "$LA" \
    --threads 1
up "$A" && up "$B" || { fail "ring started"; finish; exit 1; }
check "the ring serves" ok_request "$A"

frame "$LB" prepare '{"req":"x","session":"","pos":0,"ctx":2147483647,"drop":[],"stages":[]}'
check "a prepare with ctx 2^31-1 is dropped, naming ctx" dropped "$tmp/frm_b.log" "field 'ctx'"
frame "$LB" start '{"req":"x","session":"","pos":0,"ctx":9,"temperature":"hot","top_p":0.9,"seed":1,"stages":[]}'
check "a start whose temperature is a string is dropped" dropped "$tmp/frm_b.log" "temperature"
frame "$LB" hidden --step 0 --pos -5 --n 1 --dim 64
check "a hidden frame at a negative position is dropped" dropped "$tmp/frm_b.log" "pos -5"
frame "$LB" set '{"kv_bits":8,"stages":[],"admin":true}'
check "a set with a field sets do not take is dropped" dropped "$tmp/frm_b.log" "admin"
check "the stage's config is untouched" [ "$(call "$B" status | get config.kv_bits)" = 16 ]
check "and the ring still serves" ok_request "$A"
check "both stages are up" kill -0 "$PID_frm_a" "$PID_frm_b"

# ---- CURVE on the ring's links: only the stages' own keys get frames in
mkdir "$tmp/keys" "$tmp/keys/clients"
for k in sa sb me stranger; do inferd keygen --out "$tmp/keys/$k" >/dev/null; done
cp "$tmp/keys/sa.pub" "$tmp/keys/sb.pub" "$tmp/keys/me.pub" "$tmp/keys/clients/"
SA=$(ep "$P7")
SB=$(ep "$P9")
LSA=$(ep "$P11")
LSB=$(ep "$P12")
ME="--curve $tmp/keys/me.key"
start sec_a --layers 0:3 --control "$SA" --telemetry "$(ep "$P8")" --listen "$LSA" --next "$LSB" \
    --threads 1 --curve-secret "$tmp/keys/sa.key" --curve-clients "$tmp/keys/clients" \
    --next-key "$tmp/keys/sb.pub"
start sec_b --layers 3:5 --control "$SB" --telemetry "$(ep "$P10")" --listen "$LSB" --next "$LSA" \
    --threads 1 --curve-secret "$tmp/keys/sb.key" --curve-clients "$tmp/keys/clients" \
    --next-key "$tmp/keys/sa.pub"
status_b() { call "$SB" status --timeout 10000 $ME "$tmp/keys/sb.pub"; }
status_b >/dev/null
check "a CURVE ring serves its allowed client" ok_request "$SA" --timeout 20000 $ME "$tmp/keys/sa.pub"
frame "$LSB" set '{"kv_bits":8,"stages":[]}'
frame "$LSB" set '{"kv_bits":8,"stages":[]}' --curve "$tmp/keys/stranger.key" "$tmp/keys/sb.pub"
sleep 0.5
check "a forged set from a peer without an allowed key changes nothing" \
    [ "$(status_b | get config.kv_bits)" = 16 ]
check "the ring still serves" ok_request "$SA" $ME "$tmp/keys/sa.pub"
start sec_c --layers 3:5 --control "$(ep "$P13")" --telemetry "$(ep "$P14")" --listen "$LSB" \
    --next "$LSA" --curve-secret "$tmp/keys/sb.key" --curve-clients "$tmp/keys/clients"
wait "$PID_sec_c"
check "with CURVE, a stage without --next-key refuses to start" \
    grep -q -- "--next-key" "$tmp/sec_c.err"

finish
