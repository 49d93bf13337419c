#!/bin/sh
# End to end: a mixed cluster. A 2-stage inferd ring beside an inferd node
# started with --http and declared `engine = openai` (any OpenAI-compatible
# server, watched over HTTP only):
#   - `status --json` shows both kinds, each with engine, state, model and
#     the shared numbers (null where the engine does not say), the HTTP
#     node with its poll's latency; the table has an ENGINE column;
#   - `infertop metrics` exports every node under infertop_node_* with an
#     `engine` label, and promtool accepts it;
#   - the dashboard (tmux) shows the HTTP node up, and down within 3 s of
#     its process being killed; `status` then says down and fails.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"
. "$(dirname "$0")/lib/tmux.sh"

alloc_ports 10
start head --layers 0:3 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P3")" --next "$(ep "$P6")" --threads 1
start tail --layers 3:5 --control "$(ep "$P4")" --telemetry "$(ep "$P5")" \
    --listen "$(ep "$P6")" --next "$(ep "$P3")" --threads 1
start web --control "$(ep "$P7")" --telemetry "$(ep "$P8")" --threads 1 --http "$(hp "$P9")"
CONF="$tmp/cluster.conf"
cat >"$CONF" <<EOF
[cluster]
name = mixed
[node head]
control = $(ep "$P1")
telemetry = $(ep "$P2")
start = inferd serve --name head
[node tail]
control = $(ep "$P4")
telemetry = $(ep "$P5")
start = inferd serve --name tail
[node web]
engine = openai
url = http://$(hp "$P9")
start = inferd serve --name web --http $(hp "$P9")
EOF
for c in "$(ep "$P1")" "$(ep "$P4")" "$(ep "$P7")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
http_up "$(hp "$P9")" || { fail "HTTP of web started"; finish; exit 1; }

# ---- status --json
infertop status -c "$CONF" --json >"$tmp/status.json"
check "status exits 0 with every node up" [ $? -eq 0 ]
check "status: the ring's nodes are inferd, up, with their model" \
    [ "$(get nodes.0.engine nodes.0.state nodes.0.model.name nodes.1.engine nodes.1.state \
        <"$tmp/status.json")" = "$(printf 'inferd\tup\tstories260K\tinferd\tup')" ]
check "status: the HTTP node is openai, up, with the model /v1/models names" \
    [ "$(get nodes.2.name nodes.2.engine nodes.2.state nodes.2.model.name <"$tmp/status.json")" = \
        "$(printf 'web\topenai\tup\tstories260K')" ]
check "status: the HTTP node's poll latency in ms" \
    awk -v v="$(get nodes.2.latency_ms <"$tmp/status.json")" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 2000) }'
check "status: what an openai server does not say is null, never 0" \
    [ "$(get nodes.2.prompt_tps nodes.2.decode_tps nodes.2.requests_running nodes.2.requests_waiting \
        nodes.2.kv_usage nodes.2.slots_busy nodes.2.slots_total <"$tmp/status.json")" = \
        "$(printf 'null\tnull\tnull\tnull\tnull\tnull\tnull')" ]
check "status: an inferd node's requests from its reply, the rest null" \
    [ "$(get nodes.0.requests_running nodes.0.requests_waiting nodes.0.kv_usage nodes.0.slots_busy \
        <"$tmp/status.json")" = "$(printf '0\t0\tnull\tnull')" ]
check "status: an inferd node keeps its reply's fields" \
    [ "$(get nodes.0.config.kv_bits nodes.1.model.layers.0 <"$tmp/status.json")" = "$(printf '16\t3')" ]
infertop status -c "$CONF" >"$tmp/status.txt"
check "status table: an ENGINE column" \
    sh -c "head -n 1 '$tmp/status.txt' | grep -qE '^NODE +ENGINE +STATE' &&
        grep -qE '^web +openai +up ' '$tmp/status.txt' && grep -qE '^head +inferd +up ' '$tmp/status.txt'"

# ---- metrics
infertop metrics -c "$CONF" --listen "$(hp "$P10")" 2>"$tmp/exporter.err" &
exporter=$!
pids="$pids $exporter"
http_up "$(hp "$P10")" || { fail "infertop metrics started"; finish; exit 1; }
both_up_in_metrics() {
    curl -s "http://$(hp "$P10")/metrics" >"$tmp/metrics.txt" &&
        grep -q '^infertop_node_up{node="web",engine="openai"} 1$' "$tmp/metrics.txt" &&
        grep -q '^infertop_node_up{node="head",engine="inferd"} 1$' "$tmp/metrics.txt" &&
        grep -q '^infertop_node_up{node="tail",engine="inferd"} 1$' "$tmp/metrics.txt"
}
check "metrics: every node of both engines up, under one schema" wait_for 50 both_up_in_metrics
check "metrics: the HTTP node's poll latency, in seconds" \
    grep -qE '^infertop_node_poll_latency_seconds\{node="web",engine="openai"\} [0-9.e-]+$' \
    "$tmp/metrics.txt"
check "metrics: what the engine does not report has no series" \
    sh -c "! grep -q '^infertop_node_kv_usage_ratio{node=\"web\"' '$tmp/metrics.txt' &&
        ! grep -q '^infertop_node_requests_running{node=\"web\"' '$tmp/metrics.txt'"
check "metrics: an inferd node's requests running" \
    grep -q '^infertop_node_requests_running{node="head",engine="inferd"} 0$' "$tmp/metrics.txt"
check "metrics: the inferd series are still there" grep -q '^inferd_up{node="head"} 1$' "$tmp/metrics.txt"
if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1; then
    ok "promtool check metrics passes on the mixed cluster's metrics"
else
    fail "promtool check metrics: $(cat "$tmp/promtool.out")"
fi
kill "$exporter"
wait "$exporter"
check "infertop metrics stops cleanly on SIGTERM" [ $? = 0 ]

# ---- the dashboard
cap() { T capture-pane -p -t "$1"; }
# The node's row, whatever columns come between its name and its state.
row_says() { cap D | grep -qE "^.?$1 .*[^a-z]$2( |\$)"; }
# -d 0.5: polls and redraws twice a second, so that a hung node's poll
# timeout and the next frame fit the 3 s below with room on a loaded host
# (at the default 1 s they take up to 3 s between them).
T -f "$tmp/tmux.conf" new-session -d -s D -x 160 -y 40 \
    "env LC_ALL=C.UTF-8 infertop -c $CONF -d 0.5 --db $tmp/runs.db; echo \$? >$tmp/d.rc"
check "dashboard: the HTTP node's row says up" wait_for 100 row_says web up
check "dashboard: the ring's rows say up" wait_for 100 sh -c \
    "tmux -L $SOCK capture-pane -p -t D | grep -qE '^.?head .*[^a-z]up( |\$)'"
# down_within WHAT: the web row says down within 3 s of now.
down_within() {
    t0=$(date +%s.%N)
    wait_for 50 row_says web down
    t1=$(date +%s.%N)
    check "dashboard: $1 shows down within 3 s" awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a <= 3.0) }'
    echo "     (down after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
}
# Stopped, it accepts connections and never answers: its polls time out.
kill -STOP "$PID_web"
down_within "the HTTP node, hung,"
kill -CONT "$PID_web"
check "dashboard: the HTTP node, going on, is up again" wait_for 50 row_says web up
kill -9 "$PID_web"
down_within "the killed HTTP node"
check "dashboard: the ring stays up" row_says head up
T send-keys -t D q
check "the console exits with status 0" wait_for 50 sh -c "[ \"\$(cat $tmp/d.rc 2>/dev/null)\" = 0 ]"

infertop status -c "$CONF" --json >"$tmp/status2.json"
check "status fails with a node down" [ $? -ne 0 ]
check "status: the killed HTTP node is down, saying why" \
    [ "$(get nodes.2.state <"$tmp/status2.json"):$(get nodes.2.problem <"$tmp/status2.json" | grep -c .)" = "down:1" ]

finish
