#!/bin/sh
# End to end: backpressure through the HTTP door over real TCP (issue 26).
# --stall-limit 5, the issue's:
#   - a reader with a 4 KB receive buffer taking 4 KB every 2 s for 12 s
#     (past the stall limit: a client reading slowly is not stalled), then
#     fast, gets every token of a 6,000-token greedy stream (the text a fast
#     reader gets), its final chunk, usage and [DONE]; meanwhile its request
#     stays in flight (the node paused it);
#   - a client that stops reading: a request beside it completes while it
#     is paused; after the stall limit it ends with finish_reason abort and
#     a stalled error event (seen by the client reading again), its KV is
#     freed and /metrics counts it stalled.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"

# A tiny synthetic model with a long context: 6,000 tokens in seconds
# (EOS is banned by logit_bias in lib/http_raw.py, so that greedy runs on).
MODEL=synth:dim=64,hidden=172,layers=2,heads=8,kv_heads=4,vocab=512,seq_len=8192
STALL=5
alloc_ports 3
start n --model "$MODEL" --alias m --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
    --threads 1 --http "$(hp "$P3")" --stall-limit "$STALL"
up "$(ep "$P1")" || { fail "node started"; finish; exit 1; }
http_up "$(hp "$P3")" || { fail "HTTP started"; finish; exit 1; }
STALLED='inferd_requests_total{node="n",outcome="error",code="stalled"}'

rawp slow "$P3" 6000 12
check "the slow reader was not counted stalled" [ "$(metric "$P3" "$STALLED")" = 0 ]
rawp stall "$P3" 6000 "$STALL"
kv_free() { [ "$(call "$(ep "$P1")" status | get memory.kv_bytes active)" = "$(printf '0\t0')" ]; }
check "the stalled request's KV is freed" retry 25 kv_free
check "/metrics counts it stalled" retry 25 [ "$(metric "$P3" "$STALLED")" = 1 ]
finish
