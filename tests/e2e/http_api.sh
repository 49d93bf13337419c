#!/bin/sh
# End to end: the OpenAI-compatible API of `inferd serve --http` on a
# 2-stage ring on loopback, driven by real clients: curl (streaming and
# not) and the official `openai` npm package. Greedy text equals what
# `inferd generate` gives for the same prompt; HTTP requests are ordinary
# requests inside (telemetry with source "http"); stop sequences end the
# text; a client that disconnects mid-stream has its request cancelled and
# its KV freed; the console shows an HTTP request in flight as one; a full
# queue answers 429 with Retry-After.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"
. "$(dirname "$0")/lib/tmux.sh"

alloc_ports 11
# The ring: the embedded model over two stages, HTTP on both.
start head --layers 0:3 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P3")" --next "$(ep "$P6")" --threads 1 --http "$(hp "$P7")"
start tail --layers 3:5 --control "$(ep "$P4")" --telemetry "$(ep "$P5")" \
    --listen "$(ep "$P6")" --next "$(ep "$P3")" --threads 1 --http "$(hp "$P8")"
# A slow single node (synthetic 110M weights, ~20 ms a token) for requests
# that must still be running when the test acts on them; one request runs
# at a time, so that its queue fills with few clients.
start slow --model synth:110m --control "$(ep "$P9")" --telemetry "$(ep "$P10")" --threads 1 \
    --http "$(hp "$P11")" --max-seqs 1
H1=$(hp "$P7")
H2=$(hp "$P8")
HS=$(hp "$P11")
for c in "$(ep "$P1")" "$(ep "$P4")" "$(ep "$P9")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
for h in "$H1" "$H2" "$HS"; do
    http_up "$h" || { fail "HTTP at $h started"; finish; exit 1; }
done

PROMPT="Once upon a time"
N=30
want=$(greedy "$PROMPT" $N)
check "inferd generate gives a continuation" [ ${#want} -gt 40 ]

# ---- models, and the status that names the chat template
check "GET /v1/models lists the model" \
    [ "$(curl -s "http://$H1/v1/models" | get data.0.id object)" = "$(printf 'stories260K\tlist')" ]
check "status says which chat template the API uses" \
    [ "$(call "$(ep "$P1")" status | get model.chat_template)" = plain ]

# ---- curl, not streaming
"$CTL" listen "$(ep "$P2")" 4 >"$tmp/tel" &
lpid=$!
sleep 0.3
code=$(post "$H1" /v1/completions \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0,\"seed\":7}")
check "completion: 200" [ "$code" = 200 ]
check "completion: the text of inferd generate" [ "$(get choices.0.text <"$tmp/body" | tr -d '\n')" = "$want" ]
check "completion: finish_reason length, usage 5 + $N" \
    [ "$(get choices.0.finish_reason usage.prompt_tokens usage.completion_tokens usage.total_tokens \
        <"$tmp/body")" = "$(printf 'length\t5\t%d\t%d' $N $((N + 5)))" ]
check "completion: object text_completion, id cmpl-..." \
    [ "$(get object <"$tmp/body" | sed 's/^/x/')$(get id <"$tmp/body" | cut -c 1-5)" = "xtext_completioncmpl-" ]
wait $lpid
check "the request is an ordinary one inside: req start with source http" \
    [ "$(get topic state source <"$tmp/tel" | grep -c "$(printf '^req\tstart\thttp$')")" = 1 ]
check "... and its steps on the head's telemetry" \
    [ "$(get topic <"$tmp/tel" | grep -c '^step$')" = $N ]

# ---- sampling fields cross the ring to the tail, which samples
code=$(post "$H1" /v1/completions \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":1,\"top_k\":1,\"min_p\":0.2,\"repeat_penalty\":1}")
check "over the ring: top_k 1 at temperature 1 is the greedy text" \
    [ "$code $(get choices.0.text <"$tmp/body" | tr -d '\n')" = "200 $want" ]
code=$(post "$H1" /v1/completions \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0,\"frequency_penalty\":2,\"logit_bias\":{\"1\":-100}}")
check "over the ring: penalties and logit_bias reach the tail (another text)" \
    [ "$code" = 200 ] && [ "$(get choices.0.text <"$tmp/body" | tr -d '\n')" != "$want" ]

# ---- curl, streaming
curl -sN -X POST "http://$H1/v1/completions" --data-binary \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0,\"stream\":true}" \
    >"$tmp/sse"
check "completion stream: the same text" [ "$(sse_text <"$tmp/sse")" = "$want" ]
check "completion stream: ends with data: [DONE]" [ "$(tail -n 2 "$tmp/sse" | head -n 1)" = "data: [DONE]" ]
check "completion stream: the last chunk says length" \
    [ "$(sed -n 's/^data: {/{/p' "$tmp/sse" | get choices.0.finish_reason | tail -n 1)" = length ]

chat_prompt=$(printf 'User: %s\nAssistant:' "$PROMPT")
want_chat=$(greedy "$chat_prompt" $N)
code=$(post "$H1" /v1/chat/completions \
    "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}],\"max_tokens\":$N,\"temperature\":0}")
check "chat: 200, the plain template's prompt continued as inferd generate does" \
    [ "$code:$(get choices.0.message.content <"$tmp/body" | tr -d '\n')" = "200:$want_chat" ]
check "chat: role assistant, object chat.completion" \
    [ "$(get choices.0.message.role object <"$tmp/body")" = "$(printf 'assistant\tchat.completion')" ]
curl -sN -X POST "http://$H1/v1/chat/completions" --data-binary \
    "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}],\"max_tokens\":$N,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
    >"$tmp/sse"
check "chat stream: the same text" [ "$(sse_text <"$tmp/sse")" = "$want_chat" ]
check "chat stream: the first chunk gives the role" \
    [ "$(sed -n 's/^data: {/{/p' "$tmp/sse" | head -n 1 | get choices.0.delta.role)" = assistant ]
check "chat stream: include_usage adds the usage before [DONE]" \
    [ "$(sed -n 's/^data: {/{/p' "$tmp/sse" | get usage.completion_tokens)" = $N ]

# ---- the official openai npm package
if openai_setup; then
    NODE_PATH="$OPENAI_NODE_PATH" node "$root/tests/e2e/lib/openai_client.cjs" "http://$H1/v1" \
        stories260K "$PROMPT" $N >"$tmp/oai" 2>"$tmp/oai.err"
    check "openai npm: streaming chat completion gives inferd generate's text" \
        [ "$(get what text <"$tmp/oai" | grep '^chat_stream' | cut -f 2-)" = "$want_chat" ]
    check "openai npm: completion gives inferd generate's text" \
        [ "$(get what text <"$tmp/oai" | grep '^completion' | cut -f 2- | tr -d '\n')" = "$want" ]
    check "openai npm: finish_reason length on both" \
        [ "$(get finish <"$tmp/oai" | tr '\n' ' ')" = "length length " ]
else
    fail "openai npm package installed from the registry (npm install openai@$OPENAI_VERSION)"
fi

# ---- stop sequences, seed
code=$(post "$H1" /v1/completions \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0,\"stop\":[\"Lily\"]}")
cut_want=${want%%Lily*}
check "stop: the text ends before the stop sequence, finish_reason stop" \
    [ "$(get choices.0.text choices.0.finish_reason <"$tmp/body")" = "$(printf '%s\tstop' "$cut_want")" ]
curl -sN -X POST "http://$H1/v1/completions" --data-binary \
    "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0,\"stop\":\"Lily\",\"stream\":true}" \
    >"$tmp/sse"
check "stop while streaming: no text past it" [ "$(sse_text <"$tmp/sse")" = "$cut_want" ]
check "a stopped request leaves no KV behind" \
    [ "$(call "$(ep "$P1")" status | get memory.kv_bytes active)" = "$(printf '0\t0')" ]
sampled() {
    post "$H1" /v1/completions \
        "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":20,\"temperature\":1,\"seed\":$1}" \
        >/dev/null
    get choices.0.text <"$tmp/body"
}
a=$(sampled 42)
b=$(sampled 42)
check "the same seed gives the same sampled text" [ "${#a}:$a" = "${#b}:$b" ] && [ -n "$a" ]

# ---- a stage that is not the head
code=$(post "$H2" /v1/completions "{\"model\":\"stories260K\",\"prompt\":\"x\"}")
check "the second stage sends API requests to the head: 404 not_head" \
    [ "$code:$(get error.code <"$tmp/body")" = 404:not_head ]

# ---- several clients at once
par=""
for i in 1 2 3; do
    curl -s -X POST "http://$H1/v1/completions" --data-binary \
        "{\"model\":\"stories260K\",\"prompt\":\"$PROMPT\",\"max_tokens\":$N,\"temperature\":0}" \
        >"$tmp/par$i" &
    par="$par $!"
done
wait $par
same=0
for i in 1 2 3; do
    [ "$(get choices.0.text <"$tmp/par$i" | tr -d '\n')" = "$want" ] && same=$((same + 1))
done
check "three clients at once each get the greedy text" [ "$same" = 3 ]

# ---- a client that disconnects mid-stream
"$CTL" listen "$(ep "$P10")" 6 >"$tmp/tel_slow" &
lpid=$!
sleep 0.3
curl -sN -X POST "http://$HS/v1/completions" --data-binary \
    '{"model":"synth:110m","prompt":"x","max_tokens":5000,"stream":true}' 2>/dev/null |
    head -n 6 >"$tmp/cut"
check "the stream had begun" [ "$(grep -c '^data: {' "$tmp/cut")" = 3 ]
n=0
while [ $n -lt 50 ] && [ "$(call "$(ep "$P9")" status | get active)" != 0 ]; do
    sleep 0.1
    n=$((n + 1))
done
check "the disconnected client's request ends and its KV is freed" \
    [ "$(call "$(ep "$P9")" status | get active sessions memory.kv_bytes)" = "$(printf '0\t0\t0')" ]
wait $lpid
check "telemetry shows the request cancelled" \
    [ "$(get topic state error.code <"$tmp/tel_slow" | grep -c "$(printf '^req\tend\tcancelled$')")" = 1 ]

# ---- the console names an HTTP request's source in its header
cat >"$tmp/slow.conf" <<EOF
[cluster]
name = http-test
[node slow]
control = $(ep "$P9")
telemetry = $(ep "$P10")
EOF
T -f "$tmp/tmux.conf" new-session -d -s A -x 120 -y 30 \
    "env LC_ALL=C.UTF-8 infertop -c $tmp/slow.conf; echo \$? >$tmp/console.rc"
# The console learns of a request from its start: it must be watching first.
console_up() { T capture-pane -p -t A | head -n 1 | grep -q 'nodes 1/1 up'; }
check "the console sees the node" wait_for 100 console_up
curl -s -N -o /dev/null -X POST "http://$HS/v1/completions" --data-binary \
    '{"model":"synth:110m","prompt":"x","max_tokens":5000,"stream":true}' &
long=$!
# On the right of the events pane's title (the header keeps fixed fields).
http_req_shown() { T capture-pane -p -t A | grep -qE '^events .* req [^ ]+ \(http\) *$'; }
check "the console shows the request in flight as an HTTP one" wait_for 100 http_req_shown
curl -s "http://$HS/slots" >"$tmp/slots"
check "GET /slots lists the request in flight: its source, input and max_tokens" \
    [ "$(get 0.is_processing 0.source 0.input 0.max_tokens <"$tmp/slots")" = "$(printf 'true\thttp\tprompt\t5000')" ]
kill $long 2>/dev/null
wait $long 2>/dev/null
T send-keys -t A q
check "the console exits 0" wait_for 50 grep -qsx 0 "$tmp/console.rc"

# ---- the node's queue bound is a 429 with Retry-After
queue=""
for i in $(seq 1 18); do
    curl -s -N -o "$tmp/b.q$i" -D "$tmp/h.q$i" -X POST "http://$HS/v1/completions" --data-binary \
        '{"model":"synth:110m","prompt":"x","max_tokens":5000,"stream":true}' &
    queue="$queue $!"
done
sleep 2
busy=""
for i in $(seq 1 18); do
    grep -q '^HTTP/1.1 429' "$tmp/h.q$i" 2>/dev/null && busy="$busy $i"
done
check "past one running and the node's queue of 16, one request of 18 gets 429" [ "$(echo $busy | wc -w)" = 1 ]
b=$(echo $busy | cut -d ' ' -f 1)
check "... with Retry-After and an OpenAI error body" \
    [ "$(grep -ci '^retry-after: 1' "$tmp/h.q$b"):$(get error.type error.code <"$tmp/b.q$b")" = \
        "$(printf '1:rate_limit_error\tbusy')" ]
kill $queue 2>/dev/null
wait $queue 2>/dev/null
n=0
while [ $n -lt 100 ] && [ "$(call "$(ep "$P9")" status | get active memory.kv_bytes)" != "$(printf '0\t0')" ]; do
    sleep 0.1
    n=$((n + 1))
done
check "every client gone: nothing left running or queued on the node" \
    [ "$(call "$(ep "$P9")" status | get active memory.kv_bytes)" = "$(printf '0\t0')" ]
code=$(post "$HS" /v1/completions '{"model":"synth:110m","prompt":"x","max_tokens":2}')
check "... and the node serves the next request" [ "$code" = 200 ]

finish
