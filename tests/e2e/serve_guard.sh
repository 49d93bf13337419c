#!/bin/sh
# End to end: the memory guard and the context cap. A request whose KV
# cache cannot fit under --mem-limit is refused with kv_oom (needed,
# available and budget bytes) before anything is allocated: RSS does not
# grow and no session is touched. Idle sessions are evicted, least recently
# used first, when that makes a request fit. In a ring, the stage that
# cannot fit is named. --max-ctx refuses with ctx_limit. What a stage
# holds before its first request: a synthetic stage only its own layers,
# a GGUF stage's mapped weights counted as used before they are paged in.
. "$(dirname "$0")/lib/serve.sh"

# head_dim 64, 2 layers of 8 KV heads at 32 bits: 8 KiB of KV per position,
# so a 2048-token session holds 16 MiB, well above the noise of RSS.
M="synth:dim=512,hidden=64,layers=2,heads=8,kv_heads=8,vocab=512"
MiB=1048576
# Under AddressSanitizer freed memory waits in a quarantine and stays in
# RSS, which the guard rightly counts as used; without a quarantine the
# allocator reuses it as the guard assumes (ignored by normal builds).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
alloc_ports 18
session_req() { # EP SESSION: 2048 prompt tokens into a session
    call "$1" generate "{\"synthetic_tokens\":2048,\"max_tokens\":1,\"temperature\":0,\"session\":\"$2\"}"
}
FLAGS="--threads 1 --prefill-step 256 --kv-bits 32"
rss_of() { call "$1" status | get memory.rss; }

# The RSS of a node of this model once it has run a session's worth of
# prefill (its scratch at full size) and freed that KV, measured on a probe
# node.
start probe --model "$M" --control "$(ep "$P1")" --telemetry "$(ep "$P2")" $FLAGS
up "$(ep "$P1")" || { fail "probe node started"; finish; exit 1; }
call "$(ep "$P1")" generate '{"synthetic_tokens":2048,"max_tokens":1}' >/dev/null
base=$(rss_of "$(ep "$P1")")
stop probe

# Room for one session above the 32 MiB reserve, not for two.
G=$(ep "$P3")
limit=$((base + 32 * MiB + 24 * MiB))
start guard --model "$M" --control "$G" --telemetry "$(ep "$P4")" $FLAGS --mem-limit "$limit"
up "$G" || { fail "guard node started"; finish; exit 1; }
# The same history as the probe, so that RSS starts from the same point.
call "$G" generate '{"synthetic_tokens":2048,"max_tokens":1}' >/dev/null
check "status reports the --mem-limit budget" \
    [ "$(call "$G" status | get memory.budget)" = "$limit" ]

session_req "$G" s1 >"$tmp/s1"
check "a session that fits is admitted" [ "$(get ok <"$tmp/s1" | tail -n 1)" = true ]

# ---- refusal: nothing allocated, nothing evicted
before=$(rss_of "$G")
call "$G" generate '{"synthetic_tokens":200000,"max_tokens":16}' >"$tmp/oom"
after=$(rss_of "$G")
check "an oversized request is refused with kv_oom" [ "$(get error.code <"$tmp/oom")" = kv_oom ]
check "the refusal gives needed, available and budget bytes ($(get error.message <"$tmp/oom"))" \
    grep -q "needs [0-9]* bytes, available [0-9]* bytes of budget $limit" "$tmp/oom"
check "RSS did not grow ($before -> $after)" [ "$after" -le $((before + MiB)) ]
check "the refusal left the session alone" [ "$(call "$G" status | get sessions)" = 1 ]

# ---- eviction: a second session fits only without the first (LRU)
session_req "$G" s2 >"$tmp/s2"
check "the second session is admitted" [ "$(get ok <"$tmp/s2" | tail -n 1)" = true ]
check "by evicting the least recently used one" grep -q "evicted 's1'" "$tmp/guard.log"
check "one session is left" [ "$(call "$G" status | get sessions)" = 1 ]
call "$G" generate '{"tokens":[5,6],"max_tokens":1,"session":"s2"}' >"$tmp/s2b"
check "the kept session goes on where it was" [ "$(get stats.ctx <"$tmp/s2b")" = 2051 ]
call "$G" generate '{"tokens":[5,6],"max_tokens":1,"session":"s1"}' >"$tmp/s1b"
check "the evicted session starts afresh" [ "$(get stats.ctx <"$tmp/s1b")" = 2 ]

# ---- --max-ctx
X=$(ep "$P5")
start capped --model "$M" --control "$X" --telemetry "$(ep "$P6")" $FLAGS --max-ctx 100
up "$X" || { fail "capped node started"; finish; exit 1; }
call "$X" generate '{"synthetic_tokens":50,"max_tokens":60}' >"$tmp/cap"
check "a context past --max-ctx is refused with ctx_limit" [ "$(get error.code <"$tmp/cap")" = ctx_limit ]
check "the message names the cap" grep -q -- "--max-ctx 100" "$tmp/cap"
call "$X" generate '{"synthetic_tokens":50,"max_tokens":40}' >"$tmp/cap"
check "a context within it runs" [ "$(get ok <"$tmp/cap" | tail -n 1)" = true ]

# ---- prefill scratch: counted, capped, and given back
# hidden 16384: a step's scratch is 137 KB per position (a 1024-position
# chunk: 140 MB) while attention stays cheap.
S="synth:dim=256,hidden=16384,layers=1,heads=4,kv_heads=1,vocab=512"
start sprobe --model "$S" --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1
up "$(ep "$P1")" || { fail "scratch probe started"; finish; exit 1; }
call "$(ep "$P1")" generate '{"tokens":[5],"max_tokens":1}' >/dev/null
sbase=$(rss_of "$(ep "$P1")")
stop sprobe
# Room above the reserve for a 64 MB chunk's scratch, not for 1024 positions.
slimit=$((sbase + 32 * MiB + 64 * MiB))
SC=$(ep "$P1")
start scratch --model "$S" --control "$SC" --telemetry "$(ep "$P2")" --threads 1 \
    --prefill-step 1024 --mem-limit "$slimit" --step-target-ms 1000000
up "$SC" || { fail "scratch node started"; finish; exit 1; }
peak() { echo $(($(awk '/^VmHWM:/ { print $2 }' "/proc/$PID_scratch/status") * 1024)); }
"$CTL" listen "$(ep "$P2")" 60 --until-end big >"$tmp/stel" &
sl=$!
sleep 0.5
call "$SC" generate '{"synthetic_tokens":1024,"max_tokens":1}' --id big >"$tmp/big"
wait $sl
check "a 1024-token prompt at prefill_step 1024 is served" [ "$(get ok <"$tmp/big" | tail -n 1)" = true ]
chunks=$(get topic req phase tokens <"$tmp/stel" | awk '$1 == "step" && $2 == "big" && $3 == "prefill" { printf "%s ", $4 }')
capped() { [ "$1" -lt 1024 ] && [ $# -gt 1 ]; }
check "in chunks smaller than 1024 that fit the budget ($chunks)" capped $chunks
check "peak RSS stayed within --mem-limit ($(peak) <= $slimit)" [ "$(peak)" -le "$slimit" ]
call "$SC" generate '{"tokens":[5,6],"max_tokens":1}' >"$tmp/after"
check "the next request is admitted: the scratch went back" [ "$(get ok <"$tmp/after" | tail -n 1)" = true ]
check "and headroom is back above the reserve" \
    [ "$(call "$SC" status | get memory.headroom)" -gt $((32 * MiB)) ]
call "$SC" set '{"prefill_step":"auto"}' >/dev/null
call "$SC" generate '{"synthetic_tokens":1024,"max_tokens":1}' >"$tmp/auto"
check "prefill_step auto is capped the same way" [ "$(get ok <"$tmp/auto" | tail -n 1)" = true ]
check "peak RSS still within --mem-limit ($(peak) <= $slimit)" [ "$(peak)" -le "$slimit" ]
stop scratch

# ---- in a ring, the stage that cannot fit is named
H=$(ep "$P7")
start ring_h --model "$M" --layers 0:1 --control "$H" --telemetry "$(ep "$P8")" \
    --listen "$(ep "$P11")" --next "$(ep "$P12")" $FLAGS
start ring_t --model "$M" --layers 1:2 --control "$(ep "$P9")" --telemetry "$(ep "$P10")" \
    --listen "$(ep "$P12")" --next "$(ep "$P11")" $FLAGS --mem-limit "$limit"
up "$H" && up "$(ep "$P9")" || { fail "ring started"; finish; exit 1; }
call "$H" generate '{"synthetic_tokens":100000,"max_tokens":16}' >"$tmp/ring"
check "the ring refuses with kv_oom naming the tail ($(get error.message <"$tmp/ring"))" \
    grep -q "kv_oom.*stage 'ring_t' (layers 1:2)" "$tmp/ring"
call "$H" generate '{"synthetic_tokens":100,"max_tokens":4}' >"$tmp/ring"
check "and serves a request that fits" [ "$(get ok <"$tmp/ring" | tail -n 1)" = true ]

# ---- a synthetic stage holds its layers only: 2 of 12 layers of 10 MiB
S12="synth:dim=512,hidden=1024,layers=12,heads=8,kv_heads=8,vocab=256"
start part --model "$S12" --layers 2:4 --control "$(ep "$P13")" --telemetry "$(ep "$P14")" \
    --listen "$(ep "$P15")" --next "$(ep "$P16")" --threads 1
up "$(ep "$P13")" || { fail "a 2-layer stage started"; finish; exit 1; }
call "$(ep "$P13")" status >"$tmp/part"
full=$(get model.shape.layer_bytes <"$tmp/part" | tr -d '[]' | tr ',' '\n' | awk '{ s += $1 } END { print s }')
part_rss=$(get memory.rss <"$tmp/part")
check "the stage counts 2 layers of weights ($(get memory.weights_bytes <"$tmp/part"))" \
    [ "$(get memory.weights_bytes <"$tmp/part")" -lt $((full / 5)) ]
check "its RSS ($part_rss) is under half the 12 layers' weights ($full)" [ "$part_rss" -lt $((full / 2)) ]
stop part

# ---- a GGUF stage's weights count before its first request pages them in
GG="$root/tests/fixtures/gguf/r256-f32.gguf"
start gg --model "$GG" --control "$(ep "$P17")" --telemetry "$(ep "$P18")" --threads 1 \
    --mem-limit 128M
up "$(ep "$P17")" || { fail "a GGUF node started"; finish; exit 1; }
call "$(ep "$P17")" status | get memory >"$tmp/gg0"
mem() { jq -r ".$1" "$tmp/$2"; }
check "before any request most of its $(mem weights_bytes gg0) weight bytes are not paged in ($(mem unpaged gg0))" \
    [ "$(mem unpaged gg0)" -gt $(($(mem weights_bytes gg0) / 2)) ]
check "used is RSS plus them" [ "$(mem used gg0)" = $(($(mem rss gg0) + $(mem unpaged gg0))) ]
check "headroom is the budget less that" \
    [ "$(mem headroom gg0)" = $(($(mem budget gg0) - $(mem used gg0))) ]
call "$(ep "$P17")" generate '{"prompt":"Once upon a time","max_tokens":2}' >"$tmp/gg.gen"
check "a request runs" [ "$(get ok <"$tmp/gg.gen" | tail -n 1)" = true ]
call "$(ep "$P17")" status | get memory >"$tmp/gg1"
check "a request leaves the headroom nearly as it said ($(mem headroom gg0) then $(mem headroom gg1))" \
    [ "$(mem headroom gg1)" -gt $(($(mem headroom gg0) - 4 * MiB)) ]
check "its weights are paged in now ($(mem unpaged gg1) left)" \
    [ "$(mem unpaged gg1)" -lt $(($(mem weights_bytes gg1) / 10)) ]
stop gg

finish
