#!/bin/sh
# End to end: the quality op (PROTOCOL.md "quality") and `inferd quality`.
#   - on a single node and on the head of a 2-stage ring, kv_bits 32
#     against 32 gives KL exactly 0 and top-1 1.0; kv_bits 4 gives KL > 0
#     with figures in the scored depth buckets; the ring's figures are the
#     single node's; one chunk frame per window and chunk;
#   - `inferd quality --json` prints the op's very `quality` object;
#   - telemetry: req start and end of kind quality (generate's of kind
#     generate), a step per chunk of each pass at its own kv_bits;
#   - the memory guard counts both caches: a window whose eval fits but
#     whose two caches do not is refused with kv_oom, needed and available
#     bytes; a smaller window is admitted;
#   - a running quality request is cancelled, and the node takes the next;
#   - malformed requests get the decoder's codes, a text shorter than a
#     window bad_value naming its tokens;
#   - perplexity at kv_bits 32 and 16 within 0.5% of llama-perplexity's for
#     the same model file, text and context, and as many windows
#     (tests/fixtures/quality/llamacpp-ppl.tsv).
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 12
ONE=$(ep "$P1")
HEAD=$(ep "$P3")
FLAGS="--threads 1 --prefill-step 48"
start one --control "$ONE" --telemetry "$(ep "$P2")" $FLAGS
start qa --layers 0:3 --control "$HEAD" --telemetry "$(ep "$P4")" \
    --listen "$(ep "$P5")" --next "$(ep "$P8")" $FLAGS
start qb --layers 3:5 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
    --listen "$(ep "$P8")" --next "$(ep "$P5")" $FLAGS
for c in "$ONE" "$HEAD" "$(ep "$P6")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done

# The text: the shipped one's first 40 lines, as token ids (BOS first).
text="$tmp/text.txt"
head -n 40 "$root/contrib/quality/text-en.txt" >"$text"
ids=$(inferd tokenize --file "$text")
n=$(echo "$ids" | wc -w)
toks="[$(echo "$ids" | tr ' ' ',')]"
windows=$((n / 128))
check "the text is $windows windows of 128 tokens ($n tokens)" [ "$windows" -ge 4 ]
# quality EP BITS [ID]: the reply frames of the measurement at BITS.
quality() {
    call "$1" quality "{\"tokens\":$toks,\"kv_bits\":$2,\"ctx\":128,\"bucket\":64}" \
        --id "${3:-q$2}" --timeout 60000
}

# ---- kv_bits 32 against 32, 4 against 32, on a node and on a ring
for where in one ring; do
    c=$ONE
    [ $where = ring ] && c=$HEAD
    quality "$c" 32 >"$tmp/$where.32"
    quality "$c" 4 >"$tmp/$where.4"
    check "$where: kv_bits 32 against itself: KL 0, p99 0, max 0, top-1 1.0 over $((windows * 63)) positions" \
        [ "$(get quality.kl_mean quality.kl_p99 quality.kl_max quality.top1 quality.positions \
            <"$tmp/$where.32")" = "$(printf '0.0\t0.0\t0.0\t1.0\t%d' $((windows * 63)))" ]
    check "$where: perplexities equal at kv_bits 32 against itself" \
        [ "$(get quality.ppl_ref <"$tmp/$where.32")" = "$(get quality.ppl_test <"$tmp/$where.32")" ]
    kl=$(get quality.kl_mean <"$tmp/$where.4")
    check "$where: kv_bits 4 costs something: KL mean $kl > 0" \
        awk -v k="$kl" 'BEGIN { exit !(k > 0) }'
    check "$where: buckets: 0-64 unscored, 64-128 holds every position with its figures" \
        [ "$(get quality.buckets.0.positions quality.buckets.0.kl_mean quality.buckets.1.from \
            quality.buckets.1.positions quality.buckets.1.kl_mean <"$tmp/$where.4" | cut -f1-4)" = \
          "$(printf '0\t-\t64\t%d' $((windows * 63)))" ] &&
        [ "$(get quality.buckets.1.kl_mean <"$tmp/$where.4")" = "$kl" ]
    # 128 positions in chunks of 48: 3 chunks per window, one frame each.
    check "$where: one frame per window and chunk ($((windows * 3)))" \
        [ "$(get window <"$tmp/$where.4" | wc -l)" = $((windows * 3)) ]
done
check "the ring's figures are the single node's (kv_bits 4)" \
    [ "$(get quality <"$tmp/ring.4")" = "$(get quality <"$tmp/one.4")" ]
check "the ring's chunk frames are the single node's" \
    [ "$(get kl <"$tmp/ring.4")" = "$(get kl <"$tmp/one.4")" ]

# ---- the local command: the same object from the same arithmetic
inferd quality --text "$text" --kv-bits 32,4 --ctx 128 --bucket 64 --prefill-step 48 \
    --threads 1 --json >"$tmp/local.json"
check "inferd quality --json: the op's object at kv_bits 32" \
    [ "$(sed -n 1p "$tmp/local.json")" = "$(get quality <"$tmp/one.32")" ]
check "inferd quality --json: the op's object at kv_bits 4" \
    [ "$(sed -n 2p "$tmp/local.json")" = "$(get quality <"$tmp/one.4")" ]
inferd quality --text "$text" --kv-bits 4 --ctx 128 --bucket 64 --threads 1 >"$tmp/local.txt"
check "inferd quality prints a table per setting and bucket" \
    [ "$(grep -c -E '^  (all|0-64|64-128) ' "$tmp/local.txt")" = 3 ]
inferd quality --prompt "x" --kv-bits 4 --ctx 128 >/dev/null 2>"$tmp/short.err"
check "inferd quality on too short a text fails naming its tokens ($(cat "$tmp/short.err"))" \
    grep -q "holds [0-9]* tokens, not one whole window of ctx 128" "$tmp/short.err"

# ---- telemetry
"$CTL" listen "$(ep "$P2")" 30 --until-end tq >"$tmp/tel" &
lpid=$!
sleep 0.3
quality "$ONE" 8 tq >/dev/null
wait $lpid
check "req start and end say kind quality" \
    [ "$(get state kind ok <"$tmp/tel" | tr '\n' ' ')" = "$(printf 'start\tquality\t- end\tquality\ttrue ')" ]
check "a step per chunk of each pass ($((windows * 6)))" \
    [ "$(get phase <"$tmp/tel" | grep -c prefill)" = $((windows * 6)) ]
check "the reference's steps at kv_bits 32, the test's at 8, as many of each" \
    [ "$(get kv_bits req <"$tmp/tel" | grep tq | cut -f1 | sort | uniq -c | awk '{print $2 ":" $1}' |
        tr '\n' ' ')" = "32:$((windows * 3)) 8:$((windows * 3)) " ]
"$CTL" listen "$(ep "$P2")" 30 --until-end tg >"$tmp/telg" &
lpid=$!
sleep 0.3
call "$ONE" generate '{"prompt":"Once","max_tokens":2}' --id tg >/dev/null
wait $lpid
check "a generate's req messages say kind generate" \
    [ "$(get kind <"$tmp/telg" | sort -u)" = generate ]

# ---- malformed requests, and a text shorter than a window
call "$ONE" quality "{\"tokens\":$toks}" >"$tmp/bad1"
check "no kv_bits: missing_field" [ "$(get error.code error.field <"$tmp/bad1")" = "$(printf 'missing_field\tkv_bits')" ]
call "$ONE" quality "{\"tokens\":$toks,\"kv_bits\":5}" >"$tmp/bad2"
check "kv_bits 5: bad_value" [ "$(get error.code error.field <"$tmp/bad2")" = "$(printf 'bad_value\tkv_bits')" ]
call "$ONE" quality "{\"tokens\":$toks,\"kv_bits\":4,\"max_tokens\":3}" >"$tmp/bad3"
check "a generate field: unknown_field" [ "$(get error.code <"$tmp/bad3")" = unknown_field ]
call "$ONE" quality '{"tokens":[1,5,9],"kv_bits":4,"ctx":64}' >"$tmp/bad4"
check "3 tokens for a window of 64: bad_value naming them ($(get error.message <"$tmp/bad4"))" \
    [ "$(get error.code error.field <"$tmp/bad4")" = "$(printf 'bad_value\tctx')" ] &&
    grep -q "holds 3 tokens" "$tmp/bad4"
call "$ONE" quality '{"tokens":[1,999999],"kv_bits":4}' >"$tmp/bad5"
check "a token outside the vocabulary: bad_token" [ "$(get error.code <"$tmp/bad5")" = bad_token ]
stop_all

# ---- the memory guard counts both caches
# head_dim 64, 2 layers of 8 KV heads at 32 bits: 8 KiB of KV per position:
# a window of 2048 is 16 MiB at kv_bits 32, 32 MiB for the two caches.
M="synth:dim=512,hidden=64,layers=2,heads=8,kv_heads=8,vocab=512"
MiB=1048576
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
GFLAGS="--threads 1 --prefill-step 256 --kv-bits 32 --max-body 1M"
# A JSON array of N token ids, BOS first.
ids_json() { echo "[$(seq 0 $(($1 - 1)) | awk '{ printf "%s%d", (NR > 1 ? "," : ""), (NR == 1 ? 1 : 3 + ($1 * 37) % 500) }')]"; }
long=$(ids_json 2048)
start probe --model "$M" --control "$(ep "$P9")" --telemetry "$(ep "$P10")" $GFLAGS
up "$(ep "$P9")" || { fail "probe node started"; finish; exit 1; }
call "$(ep "$P9")" eval "{\"tokens\":$long}" >/dev/null
base=$(call "$(ep "$P9")" status | get memory.rss)
stop probe
G=$(ep "$P11")
limit=$((base + 32 * MiB + 24 * MiB))
start guard --model "$M" --control "$G" --telemetry "$(ep "$P12")" $GFLAGS --mem-limit "$limit"
up "$G" || { fail "guard node started"; finish; exit 1; }
call "$G" eval "{\"tokens\":$long}" >"$tmp/eval"
check "an eval of 2048 positions fits" [ "$(get ok <"$tmp/eval" | tail -n 1)" = true ]
call "$G" quality "{\"tokens\":$long,\"kv_bits\":32,\"ctx\":2048}" >"$tmp/oom"
check "a quality window of 2048 (two caches) is refused with kv_oom" \
    [ "$(get error.code <"$tmp/oom")" = kv_oom ]
check "the refusal counts the reference and gives needed and available bytes ($(get error.message <"$tmp/oom"))" \
    grep -q "kv_bits 32 and 32 (the reference).*needs [0-9]* bytes, available [0-9]* bytes" "$tmp/oom"
call "$G" quality "{\"tokens\":$long,\"kv_bits\":4,\"ctx\":512}" >"$tmp/small"
check "windows of 512 are admitted ($(get quality.windows <"$tmp/small") of them)" \
    [ "$(get ok quality.windows <"$tmp/small" | tail -n 1)" = "$(printf 'true\t4')" ]

# ---- cancel: one position a step over 16 windows makes it long (2048
# tokens at a position a step ran to its end before the cancel came)
longer=$(ids_json 8192)
call "$G" quality "{\"tokens\":$longer,\"kv_bits\":4,\"ctx\":512,\"prefill_step\":1}" --id qc \
    --timeout 60000 >"$tmp/qc" &
qpid=$!
i=0
# The shell may not have opened the reply file yet: until then it counts 0.
while [ "$(cat "$tmp/qc" 2>/dev/null | wc -l)" -lt 1 ] && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
call "$G" cancel '{"target":"qc"}' >"$tmp/cancel"
wait $qpid
check "cancel answers ok" [ "$(get ok <"$tmp/cancel")" = true ]
check "the quality request ended cancelled, after $(($(wc -l <"$tmp/qc") - 1)) chunk frames" \
    [ "$(get error.code <"$tmp/qc" | tail -n 1)" = cancelled ]
call "$G" quality "{\"tokens\":$long,\"kv_bits\":8,\"ctx\":512}" >"$tmp/after"
check "the node takes the next quality request" [ "$(get ok <"$tmp/after" | tail -n 1)" = true ]
check "and holds no cache once it ended" [ "$(call "$G" status | get memory.kv_bytes)" = 0 ]
stop_all

# ---- llama.cpp's perplexity, same model file, text and windows
# tests/fixtures/quality/llamacpp-ppl.tsv (its README says how it was
# made): each f32 row against inferd's kv_bits 32, each f16 row against 16.
# One measurement at kv_bits 16 per model and window gives both: its
# reference pass is the kv_bits 32 one (ppl_ref), its test pass kv_bits
# 16's (ppl_test); on both cores, as nothing else runs beside it.
fq="$root/tests/fixtures/quality"
full="$root/contrib/quality/text-en.txt"
tail -n +2 "$fq/llamacpp-ppl.tsv" | while IFS="$(printf '\t')" read -r model ctx kv chunks ppl rest; do
    case $kv in f32) fig=ppl_ref ;; f16) fig=ppl_test ;; *) continue ;; esac
    out="$tmp/ppl-$model-$ctx"
    [ -s "$out" ] || inferd quality --model "$root/tests/fixtures/gguf/$model" --text "$full" \
        --kv-bits 16 --ctx "$ctx" --threads 2 --json >"$out"
    got=$(get "$fig" <"$out")
    echo "$model $ctx $kv $chunks $(get windows <"$out") $ppl $got"
done >"$tmp/ppl"
check "every f32 and f16 row of llama.cpp's was measured ($(wc -l <"$tmp/ppl") of them)" \
    [ "$(wc -l <"$tmp/ppl")" = "$(tail -n +2 "$fq/llamacpp-ppl.tsv" | cut -f3 | grep -c -E '^f(32|16)$')" ]
while read -r model ctx kv chunks windows want got; do
    check "$model ctx $ctx $kv: $windows windows as llama.cpp's $chunks, perplexity $got within 0.5% of llama.cpp's $want" \
        awk -v w="$want" -v g="$got" -v c="$chunks" -v n="$windows" \
        'BEGIN { d = (g - w) / w; if (d < 0) d = -d; exit !(c == n && d <= 0.005) }'
done <"$tmp/ppl"

finish
