#!/bin/sh
# End to end: a `set` of the whole ring is checked on every stage before
# any stage applies it. With 2 stages, the tail near its memory limit, a
# `set kv_bits 32` is refused with kv_oom naming the tail, and both stages
# keep their precision; a set that fits every stage applies everywhere.
# `infertop set all` goes through the head only: refused, it leaves every
# stage as it was; applied, each stage logs config_applied once.
. "$(dirname "$0")/lib/serve.sh"

# head_dim 64, 16 KV heads, one layer per stage: a 4096-token session holds
# 32 MiB of KV at 32 bits and 5 MiB at 4 bits.
M="synth:dim=1024,hidden=64,layers=2,heads=16,kv_heads=16,vocab=512"
MiB=1048576
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
alloc_ports 8
FLAGS="--threads 1 --prefill-step 512 --kv-bits 4"
session() { # HEAD_EP: a 4096-token session (minutes under the sanitizers)
    call "$1" generate '{"synthetic_tokens":4096,"max_tokens":1,"temperature":0,"session":"s"}' \
        --timeout 600000
}
ring() { # NAME_PREFIX TAIL_FLAGS...: a 2-stage ring on the ports P1..P8
    p=$1
    shift
    start "${p}_h" --model "$M" --layers 0:1 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
        --listen "$(ep "$P5")" --next "$(ep "$P6")" $FLAGS
    start "${p}_t" --model "$M" --layers 1:2 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P6")" --next "$(ep "$P5")" $FLAGS "$@"
    up "$(ep "$P1")" && up "$(ep "$P3")"
}
H=$(ep "$P1")
T=$(ep "$P3")

# The tail's RSS once it holds the session, measured on a probe ring.
ring probe || { fail "probe ring started"; finish; exit 1; }
session "$H" >/dev/null
base=$(call "$T" status | get memory.rss)
stop probe_h
stop probe_t

# Room for the session and half of what 32 bits would add, above the
# 32 MiB reserve.
limit=$((base + 32 * MiB + 13 * MiB))
ring tight --mem-limit "$limit" || { fail "ring started"; finish; exit 1; }
session "$H" >"$tmp/s"
check "the session fits the tail" [ "$(get ok <"$tmp/s" | tail -n 1)" = true ]

call "$H" set '{"kv_bits":32}' >"$tmp/set32"
check "set kv_bits 32 is refused with kv_oom naming the tail ($(get error.message <"$tmp/set32"))" \
    grep -q "kv_oom.*stage 'tight_t' (layers 1:2).*no stage changed" "$tmp/set32"
check "the head kept 4 bits" [ "$(call "$H" status | get config.kv_bits)" = 4 ]
check "the tail kept 4 bits" [ "$(call "$T" status | get config.kv_bits)" = 4 ]
check "the head converted nothing" [ "$(grep -c 'kv_converted' "$tmp/tight_h.log")" = 0 ]

call "$H" set '{"kv_bits":8}' >"$tmp/set8"
check "set kv_bits 8 fits and applies on both stages" \
    [ "$(get stages.0.kv_bits stages.1.kv_bits <"$tmp/set8")" = "$(printf '8\t8')" ]
check "both stages report 8 bits" \
    [ "$(call "$H" status | get config.kv_bits) $(call "$T" status | get config.kv_bits)" = "8 8" ]

# ---- the console's `set all`: through the head's two rounds only, so a
# stage's refusal leaves both as they were and each applies once.
cluster_conf "$tmp/ring.conf" set-ring tight_h "$H" "$(ep "$P2")" tight_t "$T" "$(ep "$P4")"
infertop set -c "$tmp/ring.conf" nosuch kv_bits=8 >"$tmp/nosuch" 2>&1
check "set on no such node exits 3, as the man page says, naming the nodes" \
    [ $? = 3 ] && grep -q 'no node "nosuch".*tight_h tight_t' "$tmp/nosuch"
applied() { grep -c '\[EVENT\] config_applied' "$tmp/$1.log"; }
converted() { grep -c 'kv_converted' "$tmp/$1.log"; }
h0=$(applied tight_h)
t0=$(applied tight_t)
c0="$(converted tight_h) $(converted tight_t)"
infertop set -c "$tmp/ring.conf" all kv_bits=32 >"$tmp/all32" 2>&1
check "infertop set all kv_bits=32 fails" [ $? != 0 ]
check "... with the tail's kv_oom, no stage changed" \
    grep -q "kv_oom.*tight_t.*no stage changed" "$tmp/all32"
check "every stage's status still says 8 bits" \
    [ "$(call "$H" status | get config.kv_bits) $(call "$T" status | get config.kv_bits)" = "8 8" ]
check "no stage applied or converted anything" \
    [ "$(applied tight_h) $(applied tight_t)" = "$h0 $t0" ] &&
    [ "$(converted tight_h) $(converted tight_t)" = "$c0" ]
infertop set -c "$tmp/ring.conf" all kv_bits=4 >"$tmp/all4" 2>&1
check "infertop set all kv_bits=4 applies ($(tr '\n' ' ' <"$tmp/all4"))" [ $? = 0 ]
check "every stage's status says 4 bits" \
    [ "$(call "$H" status | get config.kv_bits) $(call "$T" status | get config.kv_bits)" = "4 4" ]
check "config_applied logged once per stage, not twice" \
    [ "$(applied tight_h) $(applied tight_t)" = "$((h0 + 1)) $((t0 + 1))" ]
check "the table lists both stages from the head's reply" \
    grep -qE '^tight_h +applied' "$tmp/all4" && grep -qE '^tight_t +applied' "$tmp/all4"

call "$H" generate '{"tokens":[5,6],"max_tokens":2,"session":"s"}' >"$tmp/after"
check "the session goes on after the sets" [ "$(get stats.ctx <"$tmp/after")" = 4100 ]

finish
