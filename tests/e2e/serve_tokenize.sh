#!/bin/sh
# End to end: a long text prompt never freezes the node. Tokenizing runs
# off the node's loop, so while a 12 KB prompt is tokenized (seconds with a
# quadratic tokenizer) status answers at once, the request can be
# cancelled, and SIGTERM stops the node within seconds. A prompt
# with "special" has its control tokens' texts tokenized as those tokens
# (as `inferd tokenize --special`), and as text without.
. "$(dirname "$0")/lib/serve.sh"

alloc_ports 2
C=$(ep "$P1")
start tok --control "$C" --telemetry "$(ep "$P2")" --threads 1
up "$C" || { fail "node started"; finish; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
within() { [ "$1" -lt "$2" ]; }

# 12 KB of words, as a careless client might paste.
words="once upon a time there was a little girl named lily she liked to play with her ball"
text=""
i=0
while [ ${#text} -lt 12000 ]; do
    set -- $words
    shift $((i % 17))
    text="$text $1"
    i=$((i + 7))
done
# Enough tokens, BOS and EOS banned, that the requests still run when
# they are cancelled and stopped: a fast machine tokenized, prefilled and
# decoded 16 of them in 0.3 s, before either came.
args="{\"prompt\":\"$text\",\"max_tokens\":4000,\"temperature\":0,\"logit_bias\":{\"1\":-100,\"2\":-100}}"

call "$C" generate "$args" --id slow1 >"$tmp/slow1" &
g=$!
sleep 0.3
t0=$(now_ms)
call "$C" status --timeout 5000 >"$tmp/status"
elapsed=$(($(now_ms) - t0))
# The bounds leave a loaded machine room: the frozen loop they guard
# against took 10 s and more for this prompt.
check "status answers within 3 s while a 12 KB prompt is tokenized (${elapsed} ms)" \
    within "$elapsed" 3000
check "and shows the request in flight or queued" [ "$(get ok <"$tmp/status")" = true ]
t0=$(now_ms)
call "$C" cancel '{"target":"slow1"}' >/dev/null
wait $g
elapsed=$(($(now_ms) - t0))
check "cancel ends it within 3 s (${elapsed} ms, $(get error.code <"$tmp/slow1"))" within "$elapsed" 3000
check "and the request gets cancelled" [ "$(get error.code <"$tmp/slow1")" = cancelled ]

call "$C" generate "$args" --id slow2 >"$tmp/slow2" &
g=$!
sleep 0.3
t0=$(now_ms)
stop tok
elapsed=$(($(now_ms) - t0))
wait $g
check "SIGTERM stops the node within 5 s (${elapsed} ms)" within "$elapsed" 5000
check "with exit status 0" [ "$STOP_RC" = 0 ]
check "and the request gets shutdown" [ "$(get error.code <"$tmp/slow2")" = shutdown ]

# ---- "special": a GGUF vocabulary's control tokens
G="$INFERTOP_ROOT/tests/fixtures/gguf/stories260K-f32.gguf"
start gg --model "$G" --control "$C" --telemetry "$(ep "$P2")" --threads 1
up "$C" || fail "the GGUF node started"
marked="Once</s> upon<s> a time"
prompt_tokens() { # ARGS: the prompt's length as the node counted it
    call "$C" generate "{\"prompt\":\"$marked\",\"max_tokens\":0$1}" | get stats.prompt_tokens
}
want_special=$(inferd tokenize --model "$G" --special --prompt "$marked" | wc -w)
want_text=$(inferd tokenize --model "$G" --prompt "$marked" | wc -w)
check "the markers are fewer tokens as control tokens ($want_special) than as text ($want_text)" \
    [ "$want_special" -lt "$want_text" ]
check "special: the node counts the prompt as tokenize --special does" \
    [ "$(prompt_tokens ',"special":true')" = "$want_special" ]
check "without it, the markers are text" [ "$(prompt_tokens '')" = "$want_text" ]
stop gg

finish
