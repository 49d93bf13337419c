#!/bin/sh
# End to end: the HTTP door under hostile and heavy traffic (issue 26), on
# one node with raw-socket clients (lib/http_raw.py). 1,000 idle and 64
# slowloris connections held: /health, /metrics and a completion still
# answer, the slowloris ones get a JSON 408 at the header deadline (which
# does not restart at each byte), the idle ones stay. 100 concurrent
# streams at --max-seqs 16: each 200 or 429/503 with Retry-After, none a
# reset, and the counters add up to 100; requests cancelled while still
# queued are counted. (Every error status and its JSON body: the walk of
# http_errors.sh.)
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"

alloc_ports 3
start n --control "$(ep "$P1")" --telemetry "$(ep "$P2")" --threads 1 --max-seqs 16 \
    --http "$(hp "$P3")" --http-header-timeout 2 --http-per-client 2000
up "$(ep "$P1")" || { fail "node started"; finish; exit 1; }
http_up "$(hp "$P3")" || { fail "HTTP started"; finish; exit 1; }
# /health is 503 "loading" until the node's first heartbeat reaches it.
retry 50 [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$(hp "$P3")/health")" = 200 ]

rawp hold "$P3" 2

req0=$(metric "$P3" 'inferd_requests_total{')
http0=$(metric "$P3" 'inferd_http_requests_total{route="/v1/chat/completions"')
rawp burst "$P3" 100
# The node's request-end and refused events reach the metrics through
# telemetry: give them a moment.
retry 25 [ "$(metric "$P3" 'inferd_requests_total{')" -ge $((req0 + 100)) ]
req1=$(metric "$P3" 'inferd_requests_total{')
http1=$(metric "$P3" 'inferd_http_requests_total{route="/v1/chat/completions"')
check "inferd_http_requests_total counts the 100 (by status)" [ $((http1 - http0)) -eq 100 ]
check "inferd_requests_total counts the 100 by outcome, refused included ($((req1 - req0)))" \
    [ $((req1 - req0)) -eq 100 ]
check "... the refused ones under outcome refused, code busy" \
    [ "$(metric "$P3" 'inferd_requests_total{node="n",outcome="refused",code="busy"}')" -gt 0 ]

# Requests cancelled while still queued are counted too (outcome error,
# code cancelled): 16 places taken, 8 clients gone from the queue.
can0=$(metric "$P3" 'inferd_requests_total{node="n",outcome="error",code="cancelled"}')
rawp queued "$P3" 16 8
retry 25 [ "$(metric "$P3" 'inferd_requests_total{node="n",outcome="error",code="cancelled"}')" -ge $((can0 + 8)) ]
can1=$(metric "$P3" 'inferd_requests_total{node="n",outcome="error",code="cancelled"}')
check "inferd_requests_total counts the 8 cancelled while queued ($((can1 - can0)))" \
    [ $((can1 - can0)) -eq 8 ]
check "the 408s are counted in inferd_http_requests_total" \
    [ "$(metric "$P3" 'inferd_http_requests_total{route="/health",method="other",code="408"}')" -eq 64 ]
check "the node still serves" [ "$(post "$(hp "$P3")" /v1/completions \
    '{"model":"stories260K","prompt":"Hi","max_tokens":4}')" = 200 ]
finish
