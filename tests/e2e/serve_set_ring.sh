#!/bin/sh
# End to end: a `set` of the whole ring is checked on every stage before
# any stage applies it. With 3 stages, the middle one near its memory
# limit, a `set kv_bits 32` is refused with kv_oom naming the middle, and
# every stage keeps its precision (the head before it and the tail after
# it too); a set that fits every stage applies everywhere.
# `infertop set all` goes through the head only: refused, it leaves every
# stage as it was and records nothing in the state file; applied, each
# stage logs config_applied once and the state file records it.
. "$(dirname "$0")/lib/serve.sh"

# head_dim 64, 16 KV heads, one layer per stage: a 4096-token session holds
# 32 MiB of KV at 32 bits and 5 MiB at 4 bits.
M="synth:dim=1024,hidden=64,layers=3,heads=16,kv_heads=16,vocab=512"
MiB=1048576
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
alloc_ports 9
FLAGS="--threads 1 --prefill-step 512 --kv-bits 4"
session() { # HEAD_EP: a 4096-token session (minutes under the sanitizers)
    call "$1" generate '{"synthetic_tokens":4096,"max_tokens":1,"temperature":0,"session":"s"}' \
        --timeout 600000
}
ring() { # NAME_PREFIX MIDDLE_FLAGS...: a 3-stage ring on the ports P1..P9
    p=$1
    shift
    start "${p}_h" --model "$M" --layers 0:1 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
        --listen "$(ep "$P7")" --next "$(ep "$P8")" $FLAGS
    start "${p}_m" --model "$M" --layers 1:2 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P8")" --next "$(ep "$P9")" $FLAGS "$@"
    start "${p}_t" --model "$M" --layers 2:3 --control "$(ep "$P5")" --telemetry "$(ep "$P6")" \
        --listen "$(ep "$P9")" --next "$(ep "$P7")" $FLAGS
    up "$(ep "$P1")" && up "$(ep "$P3")" && up "$(ep "$P5")"
}
H=$(ep "$P1")
MID=$(ep "$P3")
T=$(ep "$P5")
bits() { echo "$(call "$H" status | get config.kv_bits) $(call "$MID" status | get config.kv_bits) $(call "$T" status | get config.kv_bits)"; }

# The middle stage's RSS once it holds the session, measured on a probe ring.
ring probe || { fail "probe ring started"; finish; exit 1; }
session "$H" >/dev/null
base=$(call "$MID" status | get memory.rss)
stop probe_h
stop probe_m
stop probe_t

# Room for the session and half of what 32 bits would add, above the
# 32 MiB reserve.
limit=$((base + 32 * MiB + 13 * MiB))
ring tight --mem-limit "$limit" || { fail "ring started"; finish; exit 1; }
session "$H" >"$tmp/s"
check "the session fits the middle stage" [ "$(get ok <"$tmp/s" | tail -n 1)" = true ]

call "$H" set '{"kv_bits":32}' >"$tmp/set32"
check "set kv_bits 32 is refused with kv_oom naming the middle ($(get error.message <"$tmp/set32"))" \
    grep -q "kv_oom.*stage 'tight_m' (layers 1:2).*no stage changed" "$tmp/set32"
check "the head, the middle and the tail kept 4 bits" [ "$(bits)" = "4 4 4" ]
check "neither the head nor the tail converted anything" \
    [ "$(grep -c 'kv_converted' "$tmp/tight_h.log") $(grep -c 'kv_converted' "$tmp/tight_t.log")" = "0 0" ]

call "$H" set '{"kv_bits":8}' >"$tmp/set8"
check "set kv_bits 8 fits and applies on every stage" \
    [ "$(get stages.0.kv_bits stages.1.kv_bits stages.2.kv_bits <"$tmp/set8")" = "$(printf '8\t8\t8')" ]
check "every stage reports 8 bits" [ "$(bits)" = "8 8 8" ]

# ---- the console's `set all`: through the head's two rounds only, so a
# stage's refusal leaves both as they were and each applies once.
cluster_conf "$tmp/ring.conf" set-ring tight_h "$H" "$(ep "$P2")" tight_m "$MID" "$(ep "$P4")" \
    tight_t "$T" "$(ep "$P6")"
state="$tmp/ring.conf.state"
infertop set -c "$tmp/ring.conf" nosuch kv_bits=8 >"$tmp/nosuch" 2>&1
check "set on no such node exits 3, as the man page says, naming the nodes" \
    [ $? = 3 ] && grep -q 'no node "nosuch".*tight_h tight_m tight_t' "$tmp/nosuch"
applied() { grep -c '\[EVENT\] config_applied' "$tmp/$1.log"; }
converted() { grep -c 'kv_converted' "$tmp/$1.log"; }
n0="$(applied tight_h) $(applied tight_m) $(applied tight_t)"
c0="$(converted tight_h) $(converted tight_m) $(converted tight_t)"
infertop set -c "$tmp/ring.conf" all kv_bits=32 >"$tmp/all32" 2>&1
check "infertop set all kv_bits=32 fails" [ $? != 0 ]
check "... with the middle's kv_oom, no stage changed" \
    grep -q "kv_oom.*tight_m.*no stage changed" "$tmp/all32"
check "every stage's status still says 8 bits" [ "$(bits)" = "8 8 8" ]
check "no stage applied or converted anything" \
    [ "$(applied tight_h) $(applied tight_m) $(applied tight_t)" = "$n0" ] &&
    [ "$(converted tight_h) $(converted tight_m) $(converted tight_t)" = "$c0" ]
check "the refused set recorded nothing (no state file)" [ ! -e "$state" ]
infertop set -c "$tmp/ring.conf" all kv_bits=4 >"$tmp/all4" 2>&1
check "infertop set all kv_bits=4 applies ($(tr '\n' ' ' <"$tmp/all4"))" [ $? = 0 ]
check "every stage's status says 4 bits" [ "$(bits)" = "4 4 4" ]
set -- $n0
check "config_applied logged once per stage, not twice" \
    [ "$(applied tight_h) $(applied tight_m) $(applied tight_t)" = "$(($1 + 1)) $(($2 + 1)) $(($3 + 1))" ]
check "the table lists the three stages from the head's reply" \
    grep -qE '^tight_h +applied' "$tmp/all4" && grep -qE '^tight_m +applied' "$tmp/all4" &&
    grep -qE '^tight_t +applied' "$tmp/all4"
check "the state file records 4 bits for the three stages" \
    [ "$(grep -c '^kv_bits = 4$' "$state") $(grep -c '^\[node tight_' "$state")" = "3 3" ]

call "$H" generate '{"tokens":[5,6],"max_tokens":2,"session":"s"}' >"$tmp/after"
check "the session goes on after the sets" [ "$(get stats.ctx <"$tmp/after")" = 4100 ]

finish
