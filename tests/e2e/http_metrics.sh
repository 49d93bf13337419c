#!/bin/sh
# End to end: Prometheus metrics. `promtool check metrics` passes on the
# /metrics of every node of a 2-stage ring and on `infertop metrics` (the
# cluster's merged view, `node` label); over a batch of requests, the
# counts each gives equal the telemetry of the same steps, and the sums
# agree within rounding.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/http.sh"

alloc_ports 9
start head --layers 0:3 --control "$(ep "$P1")" --telemetry "$(ep "$P2")" \
    --listen "$(ep "$P3")" --next "$(ep "$P6")" --threads 1 --http "$(hp "$P7")"
start tail --layers 3:5 --control "$(ep "$P4")" --telemetry "$(ep "$P5")" \
    --listen "$(ep "$P6")" --next "$(ep "$P3")" --threads 1 --http "$(hp "$P8")"
cat >"$tmp/cluster.conf" <<EOF
[cluster]
name = metrics-test
[node head]
ssh = localhost
control = $(ep "$P1")
telemetry = $(ep "$P2")
start = inferd serve --name head
[node tail]
ssh = localhost
control = $(ep "$P4")
telemetry = $(ep "$P5")
start = inferd serve --name tail
EOF
infertop metrics -c "$tmp/cluster.conf" --listen "$(hp "$P9")" 2>"$tmp/exporter.err" &
exporter=$!
pids="$pids $exporter"
for c in "$(ep "$P1")" "$(ep "$P4")"; do
    up "$c" || { fail "node $c started"; finish; exit 1; }
done
for h in "$(hp "$P7")" "$(hp "$P8")" "$(hp "$P9")"; do
    http_up "$h" || { fail "HTTP at $h started"; finish; exit 1; }
done
# Every source has seen a heartbeat of both nodes.
sleep 1.2

scrape() { # NAME: every exporter's text into $tmp/NAME.{head,tail,all}
    curl -s "http://$(hp "$P7")/metrics" >"$tmp/$1.head"
    curl -s "http://$(hp "$P8")/metrics" >"$tmp/$1.tail"
    curl -s "http://$(hp "$P9")/metrics" >"$tmp/$1.all"
}

"$CTL" listen "$(ep "$P2")" 5 >"$tmp/tel.head" &
l1=$!
"$CTL" listen "$(ep "$P5")" 5 >"$tmp/tel.tail" &
l2=$!
sleep 0.5
scrape before
for p in "Once upon a time" "The little dog" "Lily and Tom"; do
    post "$(hp "$P7")" /v1/completions \
        "{\"model\":\"stories260K\",\"prompt\":\"$p\",\"max_tokens\":25,\"temperature\":0}" >/dev/null
done
call "$(ep "$P1")" set '{"prefill_step":2}' >/dev/null
call "$(ep "$P1")" generate '{"prompt":"Once upon a time there was","max_tokens":12}' >/dev/null
wait $l1 $l2
sleep 0.3
scrape after

for f in after.head after.tail after.all; do
    if promtool check metrics <"$tmp/$f" >"$tmp/promtool.out" 2>&1; then
        ok "promtool check metrics passes on $f"
    else
        fail "promtool check metrics on $f: $(cat "$tmp/promtool.out")"
    fi
done

# value FILE SERIES: the value of one series (exact name and labels).
value() { awk -v s="$2" 'index($0, s " ") == 1 { print $2 }' "$1"; }
# delta SOURCE SERIES: after minus before.
delta() { awk -v a="$(value "$tmp/after.$1" "$2")" -v b="$(value "$tmp/before.$1" "$2")" \
    'BEGIN { printf "%.9f\n", a - b }'; }
# telemetry NODE PHASE FIELD: count and sum of a step field over the batch.
telemetry() {
    get topic phase "$3" <"$tmp/tel.$1" |
        awk -F '\t' -v p="$2" '$1 == "step" && $2 == p { n++; s += $3 } END { printf "%d %.9f\n", n, s }'
}
# agree COUNT SUM COUNT2 SUM2: counts equal, sums within 1 us a step.
agree() { awk -v n="$1" -v s="$2" -v m="$3" -v t="$4" \
    'BEGIN { d = s - t; if (d < 0) d = -d; exit !(n == m && n > 0 && d <= 1e-6 * n + 1e-9) }'; }

for node in head tail; do
    for phase in prefill decode; do
        for src in "$node" all; do
            labels="{node=\"$node\",phase=\"$phase\"}"
            set -- $(telemetry "$node" "$phase" step_ms)
            n=$1
            s=$(awk -v x="$2" 'BEGIN { printf "%.9f", x / 1000 }')
            dn=$(delta "$src" "inferd_step_seconds_count$labels" | cut -d . -f 1)
            ds=$(delta "$src" "inferd_step_seconds_sum$labels")
            check "$node $phase steps from $src: $dn counted, $n in telemetry; sums $ds s / $s s" \
                agree "$dn" "$ds" "$n" "$s"
            set -- $(telemetry "$node" "$phase" model_ms)
            dm=$(delta "$src" "inferd_step_model_seconds_sum$labels")
            check "$node $phase model time from $src agrees with telemetry" \
                agree "$n" "$dm" "$1" "$(awk -v x="$2" 'BEGIN { printf "%.9f", x / 1000 }')"
            want=$(get topic phase tokens <"$tmp/tel.$node" |
                awk -F '\t' -v p="$phase" '$1 == "step" && $2 == p { s += $3 } END { print s + 0 }')
            dt=$(delta "$src" "inferd_tokens_processed_total$labels" | cut -d . -f 1)
            check "$node $phase tokens from $src: $dt = $want" [ "$dt" = "$want" ]
        done
    done
done
for src in head all; do
    check "requests ok on the head from $src: 4 (3 HTTP, 1 protocol)" \
        [ "$(delta "$src" 'inferd_requests_total{node="head",outcome="ok"}' | cut -d . -f 1)" = 4 ]
done
check "infertop metrics has model info for both nodes, with their layers" \
    [ "$(grep -c '^inferd_model_info{node="head",model="stories260K",.*layers="0:3"' "$tmp/after.all"):$(grep -c '^inferd_model_info{node="tail",model="stories260K",.*layers="3:5"' "$tmp/after.all")" = 1:1 ]
check "both nodes are up in the merged view" \
    [ "$(grep -c '^inferd_up{node="[a-z]*"} 1$' "$tmp/after.all")" = 2 ]
check "no telemetry lost on the way" \
    [ "$(grep '^inferd_telemetry_dropped_messages_total' "$tmp/after.all" | awk '{ s += $2 } END { print s }')" = 0 ]
kill "$exporter"
wait "$exporter"
check "infertop metrics stops cleanly on SIGTERM" [ $? = 0 ]

finish
