#!/bin/sh
# End to end: what real clients send beyond the basics, through the official
# `openai` npm package and curl. A 1 MB prompt is taken up to --max-body
# (auto: from the node's context) and refused by the context, never by the
# body's size, below it; past it the 413 names the limit. --alias names the
# model for /v1/models and requests.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"

alloc_ports 16
# A: a context cap of 100000 (--max-body auto 1.66 MB), aliases, CORS. B: the
# embedded model's own 512 positions (--max-body auto 72 KiB; without
# --max-ctx the node caps no context, so what fits the body is served).
start a --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1 --max-ctx 100000 \
    --http "$(hp "$P3")" --alias tiny --alias stories --cors http://ui.example
start b --control "$(ep "$P4")" --telemetry "$(ep "$P5")" --threads 1 --http "$(hp "$P6")"
# C: for the metrics of a scripted mix of requests (--max-body auto 66560).
start c --control "$(ep "$P7")" --telemetry "$(ep "$P8")" --threads 1 --max-ctx 64 \
    --http "$(hp "$P9")"
# R: a 2-stage ring whose head serves HTTP: the tail samples, and sends
# the logprobs back with each token.
start ra --layers 0:3 --control "$(ep "$P10")" --telemetry "$(ep "$P11")" \
    --listen "$(ep "$P12")" --next "$(ep "$P15")" --threads 1 --http "$(hp "$P13")"
start rb --layers 3:5 --control "$(ep "$P14")" --telemetry "$(ep "$P16")" \
    --listen "$(ep "$P15")" --next "$(ep "$P12")" --threads 1
HR=$(hp "$P13")
HA=$(hp "$P3")
HB=$(hp "$P6")
HC=$(hp "$P9")
for c in "$(ep "$P1")" "$(ep "$P4")" "$(ep "$P7")" "$(ep "$P10")" "$(ep "$P14")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
for h in "$HA" "$HB" "$HC" "$HR"; do
    http_up "$h" || { fail "HTTP at $h started"; finish; exit 1; }
done
openai_setup || { fail "openai npm package installed"; finish; exit 1; }
oai() { NODE_PATH="$OPENAI_NODE_PATH" node "$root/tests/e2e/lib/openai_client.cjs" "$@"; }

# ---- aliases
check "--alias: /v1/models lists the aliases" \
    [ "$(curl -s "http://$HA/v1/models" | get data.0.id data.1.id | tr '\n' ' ')" = "tiny	stories " ]
code=$(post "$HA" /v1/completions '{"model":"stories","prompt":"Once","max_tokens":2}')
check "--alias: a request may use any alias, and its reply names it" \
    [ "$code $(get model <"$tmp/body")" = "200 stories" ]
code=$(post "$HA" /v1/completions '{"model":"stories260K","prompt":"Once","max_tokens":2}')
check "--alias: the file's name is no longer one" [ "$code" = 404 ]

# ---- the model, its context, the node's properties
oai "http://$HA/v1" stories "" 0 retrieve >"$tmp/retrieve"
check "openai npm models.retrieve: the alias, with the context (--max-ctx)" \
    [ "$(get model.id model.object model.max_model_len <"$tmp/retrieve")" = "$(printf 'stories\tmodel\t100000')" ]
check "... and a name not served: 404 model_not_found" \
    [ "$(get missing.status missing.code <"$tmp/retrieve")" = "$(printf '404\tmodel_not_found')" ]
check "GET /v1/models/NAME without --max-ctx: the model's context" \
    [ "$(curl -s "http://$HB/v1/models/stories260K" | get id max_model_len)" = "$(printf 'stories260K\t512')" ]
curl -s "http://$HA/props" >"$tmp/props"
check "GET /props: llama.cpp's fields (n_ctx, total_slots: --max-seqs, aliases, defaults)" \
    [ "$(get n_ctx total_slots model_alias.1 chat_template default_generation_settings.top_k <"$tmp/props")" = \
        "$(printf '100000\t16\tstories\tplain\t0')" ]
check "GET /slots on an idle node: no request in flight" [ "$(curl -s "http://$HB/slots")" = "[]" ]
check "GET /version: inferd's" [ "$(curl -s "http://$HA/version" | get version)" = "$(inferd --version 2>&1 | grep -o '[0-9][0-9.]*' | head -n 1)" ]

# ---- /tokenize and /detokenize, in llama.cpp's shapes
post "$HB" /tokenize '{"content":"Once upon a time"}' >/dev/null
toks=$(get tokens <"$tmp/body" | tr -d '[]')
want_toks=$(call "$(ep "$P4")" generate '{"prompt":"Once upon a time","max_tokens":0}' | get stats.prompt_tokens)
check "/tokenize: the node's tokens of the text (its prompt count, BOS aside)" \
    [ "$(get count <"$tmp/body")" = $((want_toks - 1)) ]
post "$HB" /tokenize '{"content":"Once upon a time","add_special":true,"with_pieces":true}' >/dev/null
check "/tokenize add_special, with_pieces: BOS first, pieces beside the ids" \
    [ "$(get tokens.0.id tokens.1.piece <"$tmp/body")" = "$(printf '1\t Once')" ]
post "$HB" /detokenize "{\"tokens\":[$toks]}" >/dev/null
check "/detokenize of /tokenize's ids: the text again (SentencePiece's leading space)" \
    [ "$(get content <"$tmp/body" | sed 's/^ //')" = "Once upon a time" ]
check "/detokenize of an id outside the vocabulary: 400 bad_token" \
    [ "$(post "$HB" /detokenize '{"tokens":[1,99999]}') $(get error.code <"$tmp/body")" = "400 bad_token" ]
check "/tokenize without content: 400 missing_field" \
    [ "$(post "$HB" /tokenize '{}') $(get error.code <"$tmp/body")" = "400 missing_field" ]

# ---- CORS: a browser's preflight, then its request
preflight() {
    curl -s -o /dev/null -D "$tmp/head" -w '%{http_code}' -X OPTIONS \
        -H 'Origin: http://ui.example' -H 'Access-Control-Request-Method: POST' \
        -H 'Access-Control-Request-Headers: authorization, content-type' \
        "http://$1/v1/chat/completions"
}
check "--cors: a preflight succeeds (204)" [ "$(preflight "$HA")" = 204 ]
check "... allowing the origin, POST and the headers clients send" \
    sh -c "grep -qi '^access-control-allow-origin: http://ui.example' '$tmp/head' &&
        grep -qi '^access-control-allow-methods: POST' '$tmp/head' &&
        grep -qi '^access-control-allow-headers: Authorization, Content-Type' '$tmp/head'"
post "$HA" /v1/completions '{"model":"tiny","prompt":"Once","max_tokens":2}' \
    -H 'Origin: http://ui.example' -D "$tmp/head" >/dev/null
check "--cors: the request's response allows the origin" \
    grep -qi '^access-control-allow-origin: http://ui.example' "$tmp/head"
check "without --cors: the preflight is refused (405)" [ "$(preflight "$HB")" = 405 ]
check "... with no CORS header" sh -c "! grep -qi '^access-control' '$tmp/head'"

# ---- a 1 MB prompt
i=0
: >"$tmp/mb"
while [ "$(wc -c <"$tmp/mb")" -lt 1000000 ]; do
    printf 'Once upon a time there was a little girl named Lily. She liked to play. ' >>"$tmp/mb"
    i=$((i + 1))
done
head -c 1000000 "$tmp/mb" >"$tmp/prompt"
oai "http://$HA/v1" tiny "$tmp/prompt" 4 big >"$tmp/big_a"
check "1 MB prompt under --max-body: taken, and refused by the context (400 ctx_limit), not 413" \
    [ "$(get status code <"$tmp/big_a")" = "$(printf '400\tctx_limit')" ]
check "... the engine's message names the context" grep -q 'would pass --max-ctx 100000' "$tmp/big_a"
oai "http://$HB/v1" stories260K "$tmp/prompt" 4 big >"$tmp/big_b"
check "1 MB prompt past --max-body: 413 too_large" \
    [ "$(get status code <"$tmp/big_b")" = "$(printf '413\ttoo_large')" ]
check "... naming the limit (16 bytes a token of 512, plus 64 KiB)" \
    grep -q 'at most 73728 (--max-body auto' "$tmp/big_b"
# 20 KB, some 5,000 tokens: served whole, and a prefill short enough for
# make asan (the 1 MB cases above test the limit itself).
head -c 20000 "$tmp/mb" >"$tmp/prompt20k"
oai "http://$HB/v1" stories260K "$tmp/prompt20k" 4 big >"$tmp/big_c"
check "a 20 KB prompt under the limit (no --max-ctx: the node has no cap): served" \
    [ "$(get status <"$tmp/big_c")" = 200 ] && [ "$(get usage.prompt_tokens <"$tmp/big_c")" -gt 3000 ]
check "the nodes keep serving" \
    [ "$(post "$HB" /v1/completions '{"model":"stories260K","prompt":"Once","max_tokens":2}')" = 200 ]

# ---- /metrics after a scripted mix of good and bad requests
GOOD='{"model":"stories260K","prompt":"Once upon a time","max_tokens":4}'
for i in 1 2 3; do post "$HC" /v1/completions "$GOOD" >/dev/null; done
post "$HC" /v1/chat/completions \
    '{"model":"stories260K","messages":[{"role":"user","content":"Hi"}],"max_tokens":3}' >/dev/null
post "$HC" /v1/completions 'not json' >/dev/null
post "$HC" /v1/completions '{"model":"stories260K","prompt":"x","top_k":-1}' >/dev/null
post "$HC" /v1/completions '{"model":"gpt-4","prompt":"x"}' >/dev/null
post "$HC" /v1/nothing '{}' >/dev/null
curl -s -o /dev/null "http://$HC/v1/completions"
head -c 70000 /dev/zero | tr '\0' a >"$tmp/70k"
post "$HC" /v1/completions "{\"model\":\"stories260K\",\"prompt\":\"$(cat "$tmp/70k")\"}" >/dev/null
curl -s "http://$HC/tokenize" -d '{"content":"Hi"}' >/dev/null
sleep 0.5
curl -s "http://$HC/metrics" >"$tmp/metrics"
count() { grep -F "inferd_http_requests_total{route=\"$1\",method=\"$2\",code=\"$3\"} " "$tmp/metrics" | awk '{print $2}'; }
check "metrics: 200s by route (3 completions, 1 chat, 1 tokenize)" \
    [ "$(count /v1/completions POST 200) $(count /v1/chat/completions POST 200) $(count /tokenize POST 200)" = "3 1 1" ]
check "metrics: refused ones counted by status (2 x 400, 404, 405, 413)" \
    [ "$(count /v1/completions POST 400) $(count /v1/completions POST 404) $(count /v1/completions GET 405) $(count /v1/completions POST 413)" = "2 1 1 1" ]
check "metrics: an unknown URL is route other" [ "$(count other POST 404)" = 1 ]
hcount() { grep "^inferd_$1_count{node=\"c\"}" "$tmp/metrics" | awk '{print $2}'; }
check "metrics: every request histogram's _count is the 4 requests served" \
    [ "$(hcount e2e_request_latency_seconds) $(hcount request_queue_time_seconds) $(hcount time_per_output_token_seconds) $(hcount request_prompt_tokens) $(hcount request_generation_tokens) $(hcount time_to_first_token_seconds)" = "4 4 4 4 4 4" ]
check "metrics: generation tokens summed (3 x 4 + 3)" \
    [ "$(grep '^inferd_request_generation_tokens_sum{node="c"}' "$tmp/metrics" | awk '{print $2}')" = 15 ]
check "metrics: inter-token latency, one per token after the first (3 x 3 + 2)" \
    [ "$(hcount inter_token_latency_seconds)" = 11 ]
if command -v promtool >/dev/null; then
    check "metrics: promtool check metrics is clean" sh -c "promtool check metrics <'$tmp/metrics'"
else
    fail "promtool installed"
fi

# ---- sampling: every field from the one table, reaching the node's sampler
oai "http://$HB/v1" stories260K "Once upon a time" 24 sampling >"$tmp/smp" ||
    { cat "$tmp/smp"; fail "openai npm: the sampling case ran"; }
grep '"what":"greedy"' "$tmp/smp" >"$tmp/greedy"
solo=$(get solo <"$tmp/greedy")
check "greedy: a continuation" [ ${#solo} -gt 20 ]
check "n 3, greedy: three choices, each the solo run's text" \
    [ "$(get three.0 three.1 three.2 <"$tmp/greedy")" = "$(printf '%s\t%s\t%s' "$solo" "$solo" "$solo")" ]
check "n 3: choices indexed 0, 1, 2; usage counts the prompt once and every choice's tokens" \
    [ "$(get index.0 index.1 index.2 usage.prompt_tokens usage.completion_tokens <"$tmp/greedy")" = \
        "$(printf '0\t1\t2\t5\t72')" ]
check "n 3, streaming: each index's text is the solo run's" \
    [ "$(grep greedy_stream "$tmp/smp" | get three.0 three.1 three.2)" = \
        "$(printf '%s\t%s\t%s' "$solo" "$solo" "$solo")" ]
grep '"what":"seeded"' "$tmp/smp" >"$tmp/seeded"
check "seed: a sampled request gives the same text twice" \
    [ "$(get seeded.0 <"$tmp/seeded")" = "$(get seeded.1 <"$tmp/seeded")" ]
check "... another seed another text (the sampling is not greedy)" \
    [ "$(get seeded.0 <"$tmp/seeded")" != "$(get other <"$tmp/seeded")" ]
check "top_k 1 (an extra body field): temperature 1 samples the greedy text" \
    [ "$(grep '"what":"top_k"' "$tmp/smp" | get text)" = "$solo" ]
check "chat: top_k 1 with min_p and repeat_penalty equals chat's greedy text" \
    sh -c "[ \"\$(grep chat_top_k '$tmp/smp' | '$CTL' get text)\" = \"\$(grep chat_top_k '$tmp/smp' | '$CTL' get greedy)\" ]"
pen=$(grep '"what":"penalised"' "$tmp/smp" | get text)
check "frequency and presence penalties 2 change greedy's text" [ -n "$pen" ] && [ "$pen" != "$solo" ]
first=$(call "$(ep "$P4")" generate '{"prompt":"Once upon a time","max_tokens":1,"temperature":0}' |
    tokens_of | tr -d ' ')
oai "http://$HB/v1" stories260K "{\"$first\":-100}" 24 bias >"$tmp/bias"
banned=$(get text <"$tmp/bias")
check "logit_bias -100 on greedy's first token: another first token" \
    [ -n "$banned" ] && [ "$(printf '%s' "$banned" | cut -c1-3)" != "$(printf '%s' "$solo" | cut -c1-3)" ]

# ---- logprobs: chat and completions, streaming and not, n 3, on one node
# and across a ring (whose tail samples)
lp_checks() { # WHERE FILE
    l() { grep "\"what\":\"$1\"" "$2"; }
    check "$1 chat logprobs: 5 alternatives a token, sorted, <= 0, mass <= 1, bytes the token's" \
        [ "$(l lp_chat "$2" | get k sorted nonpos mass bytes)" = "$(printf 'true\ttrue\ttrue\ttrue\ttrue')" ]
    check "$1 ... greedy: the chosen token is the top entry, its logprob equal" \
        [ "$(l lp_chat "$2" | get chosen)" = true ]
    check "$1 ... one entry per generated token, their strings the content" \
        [ "$(l lp_chat "$2" | get n joined)" = "$(printf '%s\ttrue' "$(l lp_chat "$2" | get tokens)")" ]
    check "$1 chat streaming: the same entries, chunk by chunk, one per token" \
        [ "$(l lp_chat_stream "$2" | get same n)" = "$(printf 'true\t%s' "$(l lp_chat "$2" | get tokens)")" ]
    check "$1 chat sampled (temperature 1): sorted, <= 0, the chosen no likelier than the top" \
        [ "$(l lp_chat_sampled "$2" | get sorted nonpos mass chosen)" = "$(printf 'true\ttrue\ttrue\ttrue')" ]
    check "$1 chat n 3 greedy: each choice its own logprobs, equal to the solo run's" \
        [ "$(l lp_chat_n3 "$2" | get choices each same)" = "$(printf '3\ttrue\ttrue')" ]
    check "$1 completions logprobs 5: tokens, token_logprobs, top_logprobs, text_offset" \
        [ "$(l lp_completion "$2" | get k sorted nonpos mass chosen joined offsets)" = \
            "$(printf 'true\ttrue\ttrue\ttrue\ttrue\ttrue\ttrue')" ]
    check "$1 completions streaming n 3: every choice's token_logprobs the solo run's" \
        [ "$(l lp_completion_stream_n3 "$2" | get same)" = true ]
}
oai "http://$HB/v1" stories260K "Once upon a time" 12 logprobs >"$tmp/lp" ||
    { cat "$tmp/lp"; fail "openai npm: the logprobs case ran"; }
lp_checks "node:" "$tmp/lp"
oai "http://$HR/v1" stories260K "Once upon a time" 12 logprobs >"$tmp/lp_ring" ||
    { cat "$tmp/lp_ring"; fail "openai npm: the logprobs case ran on the ring"; }
lp_checks "ring:" "$tmp/lp_ring"
check "ring: the greedy chat's tokens and logprobs those of one node (to 1e-9)" \
    node -e '
        const a = JSON.parse(process.argv[1]).content, b = JSON.parse(process.argv[2]).content;
        process.exit(a.length === b.length && a.every((e, i) => e.token === b[i].token &&
            Math.abs(e.logprob - b[i].logprob) < 1e-9) ? 0 : 1);' \
        "$(grep '"what":"lp_chat"' "$tmp/lp")" "$(grep '"what":"lp_chat"' "$tmp/lp_ring")"
one=$(call "$(ep "$P4")" generate '{"prompt":"Once upon a time","max_tokens":1,"temperature":0,"logprobs":3}')
check "control generate logprobs 3: the token frame's logprob is its top_logprobs' first" \
    [ "$(printf '%s\n' "$one" | head -n 1 | get token logprob)" = \
        "$(printf '%s\n' "$one" | head -n 1 | get top_logprobs.0.token top_logprobs.0.logprob)" ]
check "... three alternatives" [ "$(printf '%s\n' "$one" | head -n 1 | get top_logprobs.2.token | wc -l)" = 1 ]
check "control generate logprobs 21: bad_value naming the field" \
    [ "$(call "$(ep "$P4")" generate '{"prompt":"x","logprobs":21}' | get error.code error.field)" = \
        "$(printf 'bad_value\tlogprobs')" ]
code=$(post "$HB" /v1/chat/completions \
    '{"model":"stories260K","messages":[{"role":"user","content":"x"}],"top_logprobs":3}')
check "chat top_logprobs without logprobs true: 400 naming top_logprobs" \
    [ "$code $(get error.param <"$tmp/body")" = "400 top_logprobs" ]
code=$(post "$HB" /v1/completions '{"model":"stories260K","prompt":"x","logprobs":21}')
check "completions logprobs 21: 400 bad_value (at most 20)" \
    [ "$code $(get error.code error.param <"$tmp/body")" = "$(printf '400 bad_value\tlogprobs')" ]

# ---- /v1/embeddings: the final norm's output, mean-pooled, unit length
emb_checks() { # WHERE HOST
    ids=$(post "$2" /tokenize '{"content":"Once upon a time","add_special":true}' >/dev/null &&
        get tokens <"$tmp/body" | tr -d ' \n')
    oai "http://$2/v1" stories260K "$ids" 64 embeddings >"$tmp/emb" ||
        { cat "$tmp/emb"; fail "$1 openai npm: the embeddings case ran"; }
    e() { grep '"what":"embeddings"' "$tmp/emb" | get "$@"; }
    check "$1 embeddings.create of 3 strings: a list, indexed 0, 1, 2, each of the model's dim (64)" \
        [ "$(e object n index.2 dim_ok)" = "$(printf 'list\t3\t2\ttrue')" ]
    check "$1 ... each of unit length" [ "$(e unit)" = true ]
    check "$1 ... identical inputs give identical vectors, different texts differ" \
        [ "$(e identical differ)" = "$(printf 'true\ttrue')" ]
    check "$1 ... a token array (the text's ids, BOS first) gives the text's vector" \
        [ "$(e tokens_equal_text)" = true ]
    check "$1 ... encoding_format base64 decodes to the same vector" [ "$(e base64_equal)" = true ]
    check "$1 ... usage counts every input's tokens (BOS included: 5 + 5 + 13)" \
        [ "$(e usage.prompt_tokens usage.total_tokens)" = "$(printf '23\t23')" ]
    r() { grep '"what":"embeddings_refused"' "$tmp/emb" | get "$@"; }
    check "$1 refused with a clear 400: an empty string, no input, an empty token array, a token past the vocabulary" \
        [ "$(r refused.0.code refused.1.code refused.2.code refused.3.code)" = \
            "$(printf 'bad_value\tbad_value\tbad_value\tbad_token')" ]
}
emb_checks "node:" "$HB"
emb_checks "ring:" "$HR"
check "ring: the same vector as one node's (to 1e-6)" \
    node -e '
        const a = JSON.parse(process.argv[1]), b = JSON.parse(process.argv[2]);
        process.exit(a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6) ? 0 : 1);' \
    "$(curl -s "http://$HB/v1/embeddings" -d '{"model":"stories260K","input":"Once upon a time"}' | get data.0.embedding)" \
    "$(curl -s "http://$HR/v1/embeddings" -d '{"model":"stories260K","input":"Once upon a time"}' | get data.0.embedding)"
head -c 4000 "$tmp/mb" >"$tmp/long"
code=$(post "$HB" /v1/embeddings "{\"model\":\"stories260K\",\"input\":\"$(cat "$tmp/long")\"}")
check "an input longer than the model's context (512): 400 ctx_limit naming it" \
    [ "$code $(get error.code <"$tmp/body")" = "400 ctx_limit" ] &&
    grep -q "passes the model's context of 512" "$tmp/body"
code=$(post "$HB" /v1/embeddings '{"model":"stories260K","input":"x","dimensions":32}')
check "dimensions other than the model's: 400 unsupported" \
    [ "$code $(get error.code error.param <"$tmp/body")" = "$(printf '400 unsupported\tdimensions')" ]
check "control embed: the pooled final hidden state, of the model's dim" \
    [ "$(call "$(ep "$P4")" embed '{"prompt":"Once upon a time"}' | get embedding.63 stats.prompt_tokens | cut -f2)" = 5 ]

finish
