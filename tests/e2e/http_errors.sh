#!/bin/sh
# End to end: the HTTP API's error table (engine/http/README.md). Each bad
# request gets its documented status and an OpenAI-shaped body
# {"error":{"message","type","param","code"}} with the documented code and
# type, those libmicrohttpd would answer itself included (raw sockets:
# lib/http_raw.py walk); every status of the table is walked; the nodes
# keep serving afterwards.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"

printf 'sekret-key-1\n' >"$tmp/key"
chmod 600 "$tmp/key"
alloc_ports 16
# A: an API key and a context cap. B: a small memory budget. C: a ring
# whose second stage will go silent.
start a --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1 --max-ctx 64 \
    --http "$(hp "$P3")" --api-key "$tmp/key"
# B's budget is above what the node holds even built with ASan (64M was
# not), and below the KV of the longest request (max_tokens 1048576 at
# kv_bits 16: 671 MB of stories260K's cache).
start b --control "$(ep "$P4")" --telemetry "$(ep "$P5")" --threads 1 --mem-limit 512M \
    --http "$(hp "$P6")"
start c1 --layers 0:3 --control "$(ep "$P7")" --telemetry "$(ep "$P8")" --step-timeout 1 \
    --listen "$(ep "$P9")" --next "$(ep "$P10")" --threads 1 --http "$(hp "$P11")"
start c2 --layers 3:5 --control "$(ep "$P12")" --telemetry "$(ep "$P13")" \
    --listen "$(ep "$P10")" --next "$(ep "$P9")" --threads 1
# D: HTTP on every interface, without a key; a short header deadline and
# few connections a client, for the raw walk.
start d --control "$(ep "$P14")" --telemetry "$(ep "$P15")" --threads 1 --http "0.0.0.0:$P16" \
    --http-header-timeout 1 --http-per-client 4
HA=$(hp "$P3")
HB=$(hp "$P6")
HC=$(hp "$P11")
for c in "$(ep "$P1")" "$(ep "$P4")" "$(ep "$P7")" "$(ep "$P12")" "$(ep "$P14")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
for h in "$HA" "$HB" "$HC"; do
    http_up "$h" || { fail "HTTP at $h started"; finish; exit 1; }
done

KEY="Authorization: Bearer sekret-key-1"
CHAT='"model":"stories260K","messages":[{"role":"user","content":"Hi"}]'

type_of() {
    case $1 in
    401) echo authentication_error ;;
    429) echo rate_limit_error ;;
    5*) echo server_error ;;
    *) echo invalid_request_error ;;
    esac
}

# row NAME STATUS CODE METHOD URL BODY [CURL_ARGS...]: the request gets
# STATUS and an error body with CODE, the type of STATUS, a message and a
# param (null or a name).
row() {
    name=$1 want=$2 want_code=$3 method=$4 url=$5 body=$6
    shift 6
    if [ "$method" = GET ]; then
        code=$(curl -s -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' "$@" "$url")
    else
        code=$(curl -s -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' -X "$method" "$@" \
            --data-binary "$body" "$url")
    fi
    got=$(get error.message error.type error.param error.code <"$tmp/body" |
        awk -F '\t' '$1 != "" && $1 != "-" && $3 != "-" { print $2 ":" $4 }')
    if [ "$code $got" = "$want $(type_of "$want"):$want_code" ]; then
        ok "$name: $want $want_code"
        echo "$want" >>"$tmp/walked"
    else
        fail "$name: $want $want_code (got $code $got)"
    fi
}

A=http://$HA
row "malformed JSON" 400 bad_json POST "$A/v1/chat/completions" '{"model":' -H "$KEY"
row "not an object" 400 not_object POST "$A/v1/chat/completions" '[1,2]' -H "$KEY"
row "no messages" 400 missing_field POST "$A/v1/chat/completions" '{"model":"stories260K"}' -H "$KEY"
row "empty messages" 400 bad_value POST "$A/v1/chat/completions" \
    '{"model":"stories260K","messages":[]}' -H "$KEY"
row "max_tokens of the wrong type" 400 bad_type POST "$A/v1/chat/completions" \
    "{$CHAT,\"max_tokens\":\"x\"}" -H "$KEY"
row "temperature out of range" 400 bad_value POST "$A/v1/chat/completions" \
    "{$CHAT,\"temperature\":5}" -H "$KEY"
row "an unknown field" 400 unknown_field POST "$A/v1/chat/completions" "{$CHAT,\"foo\":1}" -H "$KEY"
row "n past --max-seqs" 400 bad_value POST "$A/v1/chat/completions" "{$CHAT,\"n\":17}" -H "$KEY"
check "... which names the limit" grep -q 'at most 16 requests at once (--max-seqs)' "$tmp/body"
row "a feature at a value other than off" 400 unsupported POST "$A/v1/chat/completions" \
    "{$CHAT,\"tools\":[{\"type\":\"function\"}]}" -H "$KEY"
row "top_logprobs without logprobs" 400 bad_value POST "$A/v1/chat/completions" \
    "{$CHAT,\"top_logprobs\":2}" -H "$KEY"
row "stream_options without stream" 400 bad_value POST "$A/v1/chat/completions" \
    "{$CHAT,\"stream_options\":{\"include_usage\":true}}" -H "$KEY"
row "a tool message" 400 bad_value POST "$A/v1/chat/completions" \
    '{"model":"stories260K","messages":[{"role":"tool","content":"x"}]}' -H "$KEY"
row "two prompts" 400 unsupported POST "$A/v1/completions" \
    '{"model":"stories260K","prompt":["a","b"]}' -H "$KEY"
row "a token outside the vocabulary" 400 bad_token POST "$A/v1/completions" \
    '{"model":"stories260K","prompt":[1,99999]}' -H "$KEY"
row "an unknown model" 404 model_not_found POST "$A/v1/chat/completions" \
    '{"model":"gpt-4","messages":[{"role":"user","content":"Hi"}]}' -H "$KEY"
row "an unknown path" 404 unknown_url POST "$A/v1/audio/speech" '{}' -H "$KEY"
row "GET on a POST route" 405 method_not_allowed GET "$A/v1/chat/completions" '' -H "$KEY"
check "... which names the method in Allow" grep -qi '^allow: POST' "$tmp/head"
head -c 70000 /dev/zero | tr '\0' a >"$tmp/big"
row "a body over --max-body (auto: 16 bytes a token of --max-ctx 64, plus 64 KiB)" 413 too_large \
    POST "$A/v1/completions" "{\"model\":\"stories260K\",\"prompt\":\"$(cat "$tmp/big")\"}" -H "$KEY"
check "... which names the limit" grep -q 'at most 66560 (--max-body auto' "$tmp/body"
row "no API key" 401 invalid_api_key POST "$A/v1/chat/completions" "{$CHAT}"
check "... which asks for a bearer token" grep -qi '^www-authenticate: Bearer' "$tmp/head"
row "a wrong API key" 401 invalid_api_key POST "$A/v1/chat/completions" "{$CHAT}" \
    -H "Authorization: Bearer sekret-key-2"
row "/metrics without the key" 401 invalid_api_key GET "$A/metrics" ''
row "past --max-ctx" 400 ctx_limit POST "$A/v1/chat/completions" "{$CHAT,\"max_tokens\":100}" -H "$KEY"
check "... with the engine's message" grep -q 'max-ctx' "$tmp/body"
row "KV over the memory budget" 503 kv_oom POST "http://$HB/v1/completions" \
    '{"model":"stories260K","prompt":"Hi","max_tokens":1048576}'
kill -STOP "$PID_c2"
row "a ring stage gone silent" 503 stage_timeout POST "http://$HC/v1/completions" \
    '{"model":"stories260K","prompt":"Hi","max_tokens":4}'
kill -CONT "$PID_c2"

# ---- the statuses the server writes itself, on raw sockets: D's body
# limit is the auto one of its 512-token context (16 bytes a token, plus
# 64 KiB).
http_up "127.0.0.1:$P16" || fail "HTTP at D started"
rawp walk "$P16" $((16 * 512 + 65536)) 1 4
awk -F '\t' '$1 == "#walked" { print $2 }' "$tmp/raw" >>"$tmp/walked"
# Every status of the README's error table was walked above, but 500 (out
# of memory, a socket failure: not provoked from outside).
table=$(awk -F '|' '/^\| [0-9][0-9][0-9] \| `/ { gsub(/ /, "", $2); print $2 }' \
    "$root/engine/http/README.md" | sort -u)
missing=""
for st in $table; do
    [ "$st" = 500 ] || grep -qx "$st" "$tmp/walked" || missing="$missing $st"
done
check "every status of the error table is walked ($(echo $table | tr '\n' ' '); not:$missing)" \
    test -n "$table" -a -z "$missing"
check "... and libmicrohttpd's cases counted in inferd_http_requests_total" \
    [ "$(metric "$P16" 'inferd_http_requests_total{route="other",method="other",code="414"}')" -ge 1 ]

# ---- an exposed listener without a key is loudly warned about
check "HTTP on 0.0.0.0 without --api-key: a loud warning at start" \
    grep -q '^\*\*\* WARNING: HTTP listener 0.0.0.0:.* has no --api-key' "$tmp/d.err"
check "... and in status (security.warning)" \
    [ "$(call "$(ep "$P14")" status | get security.warning | grep -c 'HTTP listener 0.0.0.0')" = 1 ]
check "a loopback listener gets no warning" \
    [ "$(call "$(ep "$P4")" status | get security.curve security.warning)" = "$(printf 'false\t-')" ]

# ---- everything still serves
code=$(post "$HA" /v1/chat/completions "{$CHAT,\"max_tokens\":8}" -H "$KEY")
check "the node with the key serves a good request" [ "$code" = 200 ]
code=$(post "$HB" /v1/completions '{"model":"stories260K","prompt":"Hi","max_tokens":8}')
check "the node with the small budget serves a request that fits" [ "$code" = 200 ]
code=$(post "$HC" /v1/completions '{"model":"stories260K","prompt":"Hi","max_tokens":8}')
check "the ring serves again once its stage is back" [ "$code" = 200 ]
check "the metrics count the refusals" \
    [ "$(curl -s "http://$HB/metrics" | grep -c 'inferd_requests_total{node="b",outcome="refused",code="kv_oom"} 1')" = 1 ]

finish
