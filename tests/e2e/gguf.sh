#!/bin/sh
# End to end: GGUF files made by llama.cpp, checked against llama.cpp's own
# outputs for them (tests/fixtures/README.md):
#   - `inferd tokenize` gives every .ref.tokens, and every line of
#     llama.cpp's tokenizer suites for three vocabularies;
#   - greedy generation of the fixtures' prompt gives .ref.greedy for the
#     trained stories260K in F32, F16 and BF16, at kv_bits 32 and 16, for
#     prefill steps 1, 7 and 512, on rings of 1, 2 and 3 stages;
#   - `inferd eval --logits` of every r256 file is within the acceptance
#     bound of llama.cpp's logits (normalized RMS difference at most half
#     the file's noise floor + 0.002, top-1 agreement on 90% of positions);
#   - `inferd eval --control` on the head of a 2-stage ring prints what the
#     local eval prints and writes the same logits, within the same bound
#     of llama.cpp's; an eval without a prompt, with a field it does not
#     take, or sent to a stage that is not the head gets its error;
#   - a stage reports its own share of the file's weights, and a model
#     that is not llama is refused by name.
. "$(dirname "$0")/lib/serve.sh"

fx="$root/tests/fixtures/gguf"
voc="$root/tests/fixtures/vocab"
CMP="$root/${B:-build}/tests/logitcmp"
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high."

# ---- tokenize: the prompt, per model file
for ref in "$fx"/*.ref.tokens; do
    name=$(basename "$ref" .ref.tokens)
    model="$fx/$name.gguf"
    [ "$name" = s260-f32 ] && model="$fx/stories260K-f32.gguf"
    got=$(inferd tokenize --model "$model" --prompt "$PROMPT")
    check "tokenize $name gives llama.cpp's ids" [ "$got" = "$(cat "$ref")" ]
done

# ---- tokenize: llama.cpp's suites, one text per `__ggml_vocab_test__`
for v in llama-spm gpt-2 deepseek-llm; do
    inp="$voc/ggml-vocab-$v.gguf.inp"
    i=0
    bad=0
    # Each text is what lies between separator lines, without the newline
    # before the separator.
    awk -v dir="$tmp" 'BEGIN { n = 0; f = dir "/t0"; printf "" > f }
        $0 == "__ggml_vocab_test__" { close(f); n++; f = dir "/t" n; printf "" > f; next }
        { if (seen[n]++) printf "\n" >> f; printf "%s", $0 >> f }
        END { print n > (dir "/count") }' "$inp"
    count=$(cat "$tmp/count")
    while [ $i -lt "$count" ]; do
        want=$(sed -n "$((i + 1))p" "$voc/ggml-vocab-$v.gguf.out" | sed 's/^ //')
        got=$(inferd tokenize --model "$voc/ggml-vocab-$v.gguf" --no-bos --file "$tmp/t$i")
        [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "  $v text $i: got '$got', want '$want'"; }
        i=$((i + 1))
    done
    check "tokenize: all $count texts of llama.cpp's $v suite" [ "$bad" -eq 0 -a "$count" -ge 40 ]
done

# ---- greedy generation on rings of 1, 2 and 3 stages
ids=$(tr ' ' ',' <"$fx/s260-f32.ref.tokens")
alloc_ports 18
ring_start() { # model
    start one --model "$1" --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1
    start two_a --model "$1" --layers 0:3 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P5")" --next "$(ep "$P8")" --threads 1
    start two_b --model "$1" --layers 3:5 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
        --listen "$(ep "$P8")" --next "$(ep "$P5")" --threads 1
    start three_a --model "$1" --layers 0:2 --control "$(ep "$P9")" --telemetry "$(ep "$P10")" \
        --listen "$(ep "$P11")" --next "$(ep "$P14")" --threads 1
    start three_b --model "$1" --layers 2:4 --control "$(ep "$P12")" --telemetry "$(ep "$P13")" \
        --listen "$(ep "$P14")" --next "$(ep "$P17")" --threads 1
    start three_c --model "$1" --layers 4:5 --control "$(ep "$P15")" --telemetry "$(ep "$P16")" \
        --listen "$(ep "$P17")" --next "$(ep "$P11")" --threads 1
    for c in "$(ep "$P1")" "$(ep "$P3")" "$(ep "$P6")" "$(ep "$P9")" "$(ep "$P12")" "$(ep "$P15")"; do
        up "$c" || return 1
    done
}
want=$(cat "$fx/s260-f32.ref.greedy")
for file in stories260K-f32 s260-F16 s260-BF16; do
    if ! ring_start "$fx/$file.gguf"; then
        fail "$file: the three rings start"
        stop_all
        continue
    fi
    bad=0
    runs=0
    for kv in 32 16; do
        for step in 1 7 512; do
            for head in "$(ep "$P1")" "$(ep "$P3")" "$(ep "$P9")"; do
                call "$head" set "{\"prefill_step\":$step,\"kv_bits\":$kv}" >/dev/null
                got=$(call "$head" generate "{\"tokens\":[$ids],\"max_tokens\":32,\"temperature\":0}" |
                    tokens_of | sed 's/ $//')
                runs=$((runs + 1))
                [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "  $file kv $kv step $step $head: $got"; }
            done
        done
    done
    check "$file: llama.cpp's greedy tokens on 1, 2 and 3 stages, kv_bits 32/16, steps 1/7/512 ($runs runs)" \
        [ "$bad" -eq 0 ]
    if [ "$file" = s260-F16 ]; then
        w1=$(call "$(ep "$P9")" status | get memory.weights_bytes)
        w2=$(call "$(ep "$P12")" status | get memory.weights_bytes)
        w3=$(call "$(ep "$P15")" status | get memory.weights_bytes)
        all=$(call "$(ep "$P1")" status | get memory.weights_bytes)
        check "each stage reports its share of the file's weights ($w1 + $w2 + $w3 = $all)" \
            [ "$w1" -gt 0 -a "$w2" -gt 0 -a "$w3" -gt 0 -a $((w1 + w2 + w3)) -eq "$all" ]
        check "status names the format and the weight types" \
            [ "$(call "$(ep "$P1")" status | get model.format model.weight_types)" = \
                "$(printf 'gguf\tF16: f32 11, f16 37')" ]
    fi
    stop_all
done

# ---- eval: every r256 file against llama.cpp's logits
toks=$(cat "$fx/r256-f32.ref.tokens")
# file, llama.cpp's own noise floor against F32 (fixtures README)
for pair in f32:0 F16:0.0006 BF16:0.0042 Q8_0:0.0144 Q6_K:0.0384 Q5_K_M:0.0649 \
    Q4_K_M:0.1213 Q4_0:0.1520; do
    t=${pair%%:*}
    floor=${pair#*:}
    inferd eval --model "$fx/r256-$t.gguf" --tokens "$toks" --logits "$tmp/l.bin" >/dev/null
    m=$("$CMP" 512 "$tmp/l.bin" "$fx/r256-$t.ref.logits")
    nrmse=$(echo "$m" | awk '{ print $2 }')
    agree=$(echo "$m" | awk '{ split($4, a, "/"); print a[1] / a[2] }')
    bound=$(awk -v f="$floor" 'BEGIN { print f / 2 + 0.002 }')
    check "eval r256-$t: $m (bound nrmse $bound, top-1 0.9)" \
        awk -v e="$nrmse" -v b="$bound" -v a="$agree" 'BEGIN { exit !(e <= b && a >= 0.9) }'
done

# ---- eval on a ring's head: the same lines and logits as the local eval
q8="$fx/r256-Q8_0.gguf"
start eval_a --model "$q8" --layers 0:2 --control "$(ep "$P3")" --telemetry "$(ep "$P4")" \
    --listen "$(ep "$P5")" --next "$(ep "$P8")" --threads 1
start eval_b --model "$q8" --layers 2:4 --control "$(ep "$P6")" --telemetry "$(ep "$P7")" \
    --listen "$(ep "$P8")" --next "$(ep "$P5")" --threads 1
if up "$(ep "$P3")" && up "$(ep "$P6")"; then
    inferd eval --model "$q8" --tokens "$toks" --logits "$tmp/local.bin" >"$tmp/local.txt"
    inferd eval --control "$(ep "$P3")" --tokens "$toks" --logits "$tmp/ring.bin" >"$tmp/ring.txt"
    check "eval on a 2-stage ring's head prints what the local eval prints ($(wc -l <"$tmp/ring.txt") lines)" \
        cmp -s "$tmp/local.txt" "$tmp/ring.txt"
    # The same arithmetic on both (kv_bits 16, prefill step 512): the same bytes.
    m=$("$CMP" 512 "$tmp/ring.bin" "$tmp/local.bin")
    check "eval on the ring writes the local eval's logits ($m)" cmp -s "$tmp/local.bin" "$tmp/ring.bin"
    m=$("$CMP" 512 "$tmp/ring.bin" "$fx/r256-Q8_0.ref.logits")
    check "eval on the ring against llama.cpp: $m (bound nrmse 0.0092, top-1 0.9)" \
        awk -v e="$(echo "$m" | awk '{ print $2 }')" \
        -v a="$(echo "$m" | awk '{ split($4, x, "/"); print x[1] / x[2] }')" \
        'BEGIN { exit !(e <= 0.0092 && a >= 0.9) }'
    inferd eval --control "$(ep "$P3")" --prompt "$PROMPT" >"$tmp/ring-prompt.txt"
    inferd eval --model "$q8" --prompt "$PROMPT" >"$tmp/local-prompt.txt"
    check "eval of a text prompt on the ring prints what the local eval prints" \
        cmp -s "$tmp/local-prompt.txt" "$tmp/ring-prompt.txt"
    out=$(call "$(ep "$P3")" eval '{"logits":true}' | get error.code)
    check "eval without a prompt is missing_field ($out)" [ "$out" = missing_field ]
    out=$(call "$(ep "$P3")" eval '{"tokens":[1],"session":"s"}' | get error.code)
    check "eval with a field it does not take is unknown_field ($out)" [ "$out" = unknown_field ]
    out=$(inferd eval --control "$(ep "$P6")" --tokens 1 2>&1 >/dev/null)
    check "eval sent to a stage that is not the head is refused ($out)" \
        sh -c "echo '$out' | grep -q 'busy: this node holds layers 2:4, not the head'"
else
    fail "the 2-stage ring of r256-Q8_0 starts"
fi
stop_all

# ---- refusals name the file and what is wrong
head -c 100000 "$fx/r256-Q8_0.gguf" >"$tmp/cut.gguf"
out=$(inferd eval --model "$tmp/cut.gguf" --tokens 1 2>&1)
check "a truncated file is refused, naming it ($out)" \
    sh -c "echo '$out' | grep -q 'cut.gguf'"
finish
