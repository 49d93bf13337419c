#!/bin/sh
# End to end: the console's Stress and History views on a demo ring,
# driven through tmux (a private server socket, as console_tmux.sh).
#   - `infertop demo --stages 2 --db DB`; the Stress view (s) sets a
#     growth run to 1024 tokens (gen 32, a name, stop on failure) with
#     keys and starts it; the context shown grows while it runs, and the
#     run ends completed, recorded with the form's settings;
#   - a second growth run, headless against the demo's cluster file;
#   - while and after it runs, the Stress view charts tok/s and step ms
#     against the context (log scale, 64 .. 1024);
#   - the History view (H) lists both, the first completed; g charts the
#     selected run; marking the newer (m) and comparing it with the older
#     (C) shows both run ids and a delta column, and g charts both; x
#     writes the shown run's requests as CSV;
#   - back in the Stress view, a sweep of fixed legs whose concurrency
#     field takes a list (a bad one is refused naming --concurrency): a
#     leg per kv_bits and concurrency, each recorded with its concurrency
#     and aggregate tok/s, the last leg's concurrency in the progress;
#   - q exits 0.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

cap() { T capture-pane -p -t A; }
says() { cap | grep -q -e "$1"; }
says_e() { cap | grep -qE "$1"; }
# Braille is U+2800..U+28FF: bytes E2 A0..A3 and one more in UTF-8.
has_braille() { cap | LC_ALL=C grep -q "$(printf '\342[\240-\243]')"; }
both_up() { [ "$(cap | grep -cE 'stage[01] +(inferd +)?up ')" = 2 ]; }

DB="$tmp/history.db"
CONF="$tmp/demo.conf"
T -f "$tmp/tmux.conf" new-session -d -s A -x 140 -y 40 -c "$tmp" \
    "env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop demo --stages 2 -d 0.1 --db $DB --write-config $CONF; echo \$? >$tmp/a.rc"
check "demo: both stages up" wait_for 300 both_up

# Stress view; the `to` field (the fourth) set to 1024; start (the last row).
T send-keys -t A s
check "s opens the Stress view with its form" wait_for 30 says 'stress run'
T send-keys -t A j j j Enter 1 0 2 4 Enter
check "the form takes to = 1024" wait_for 30 says_e '^to +1024'
# gen (three down) 32: requests long enough for the context to be seen
# growing.
T send-keys -t A j j j Enter 3 2 Enter
check "the form takes gen = 32" wait_for 30 says_e '^gen +32'
# From the last row (start): up to `name` (two up) and `stop on fail`
# (three up, it cycles), then start.
T send-keys -t A G k k Enter f o r m r u n Enter k Enter
check "the form takes a name and stop on failure" \
    wait_for 30 says_e '^stop on fail +yes'

# The context shown, sampled until the run ends. A fast machine runs the
# whole growth between two samples, so the stages are frozen (SIGSTOP)
# while the screen is read and run in short slices between reads: every
# sample is a state the run was in, and the run advances a little at a time
# however fast the machine is. A slice that shows no progress doubles the
# next one (up to 1.28 s), so that a slow build (make asan) still ends.
stages() { pgrep -f "$tmp/infertop-demo"; }
# shellcheck disable=SC2046 # one pid a word
freeze() { kill -"$1" $(stages) 2>/dev/null; }
: >"$tmp/contexts"
slice_ms=10
last=""
sample_slice() {
    sleep 0.2 # the console redraws from the frozen state (-d 0.1)
    now=$(cap | sed -n 's/.*context \([0-9]*\) \/ 1024.*/\1/p')
    echo "$now" >>"$tmp/contexts"
    says 'growth completed' && return 0
    [ "$now" = "$last" ] && [ "$slice_ms" -lt 1280 ] && slice_ms=$((slice_ms * 2))
    last=$now
    freeze CONT
    sleep "$(awk -v ms="$slice_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
    freeze STOP
    return 1
}
freeze STOP
T send-keys -t A G Enter
check "the growth run completes in the Stress view" wait_for 600 sample_slice
freeze CONT
check "the context shown grew while it ran (a value between 0 and 1024 seen)" \
    awk '$1 > 0 && $1 < 1024 { found = 1 } END { exit !found }' "$tmp/contexts"
check "the last context shown is the target" says 'context 1024 / 1024'
check "the Stress view charts tok/s against context" says 'prefill tok/s .* decode tok/s'
check "the Stress view charts step ms against context" says 'step ms on the slowest node'
check "the charts' x axis is the context, 64 to 1024 on a log scale" \
    says_e ' 64 +context \(log\) +1024'
check "the charts have braille dots" has_braille
check "the run is recorded completed" \
    [ "$(sqlite3 "$DB" "SELECT status || ' ' || max_context FROM runs WHERE id = 1")" = "completed 1024" ]
check "the run is recorded with the form's name and stop on failure" \
    [ "$(sqlite3 "$DB" "SELECT name || ' ' || (params ->> 'stop_on_failure') FROM runs WHERE id = 1")" = "formrun 1" ]

infertop stress growth -c "$CONF" --from 64 --to 512 --gen 4 --db "$DB" >"$tmp/stress2.out" 2>&1
check "a second, headless growth run against the demo completes" [ $? = 0 ]

T send-keys -t A H
check "H opens the History view listing both runs" \
    wait_for 30 says '2 runs'
check "run 1 is listed completed" \
    says_e '^ +1 +formrun +growth +completed +1024 '
check "the selected run's summary shows its nodes' step times" says 'step ms p50/p99'
check "the bottleneck node is marked" says 'bottleneck'

T send-keys -t A v
check "v charts the selected run against context" wait_for 30 says 'step ms on the slowest node'
check "the run's chart spans its contexts, 64 to 512 (8x: a linear scale)" \
    says_e ' 64 +context +512'
T send-keys -t A v
check "v again brings the summary back" wait_for 30 says 'step ms p50/p99'

# Newest first: run 2 is selected. Mark it, select run 1, compare.
T send-keys -t A m j C
check "the comparison names both runs" wait_for 30 says 'compare run 2 .* with run 1'
check "the comparison has both runs' columns and a delta" \
    says_e 'key +metric +run 2 +run 1 +delta +ratio'
check "the comparison has rows" says 'decode_tps'
T send-keys -t A v
check "v charts both runs on shared axes" wait_for 30 says 'decode tok/s .* run 2 .* run 1'
check "the compared charts span both runs' contexts, 64 to 1024" \
    says_e ' 64 +context \(log\) +1024'
T send-keys -t A v

T send-keys -t A x
check "x exports the shown run as CSV" wait_for 30 test -s "$tmp/infertop-run-1.csv"
check "the footer names the file" wait_for 30 says 'infertop-run-1.csv'
check "the CSV holds the run's 5 requests with inter-token latencies" \
    [ "$(grep -c ',ok,' "$tmp/infertop-run-1.csv")" = 5 ]
check "the CSV header names the ITL columns" grep -q 'itl_p50_ms,itl_p99_ms' "$tmp/infertop-run-1.csv"

# Stress view, first field: mode (cycles growth, fixed, soak, sweep), then
# sweep legs (growth, fixed); concurrency is the ninth field below it.
T send-keys -t A s
wait_for 30 says 'stress run'
T send-keys -t A g Enter Enter Enter j Enter
check "the form takes a sweep of fixed legs" wait_for 30 says_e '^sweep legs +fixed'
T send-keys -t A j j j j j j j j Enter 1 , x Enter
check "a bad concurrency list is refused, naming the option" \
    wait_for 30 says '--concurrency: "x" in "1,x" is not a whole number'
T send-keys -t A Enter 1 , 2 Enter
check "the concurrency field takes a list" wait_for 30 says_e '^concurrency +1,2( |$)'
# requests, two fields up: 4 a leg.
T send-keys -t A k k Enter 4 Enter
check "the form takes requests = 4" wait_for 30 says_e '^requests +4( |$)'
T send-keys -t A G Enter
check "the sweep completes in the Stress view" wait_for 600 says_e 'run 3 sweep +completed'
check "its progress shows the last leg's concurrency" \
    says 'leg 4/4  kv_bits 4  prefill_step 256  concurrency 2'
check "a leg per kv_bits and concurrency (16,4 x 1,2), each with its aggregate tok/s" \
    [ "$(sqlite3 "$DB" "SELECT group_concat(idx || ':' || kv_bits || ':' || concurrency || ':'
        || (agg_tps > 0), ' ') FROM legs WHERE run = 3")" = "0:16:1:1 1:16:2:1 2:4:1:1 3:4:2:1" ]

# The sweep restores the ring as it found it (as the CLI's), unless the
# form's keep-last (the row below prefill-step) is on: then it stays at
# the last leg. From start (where the cursor is), keep-last is five rows
# up, concurrency seven above it (past ctx), kv-bits four below that: a one-leg sweep
# at kv_bits 8.
kv_all() {
    for ep in $(sed -n 's/^control = //p' "$CONF"); do call "$ep" status | get config.kv_bits; done |
        tr '\n' ' '
}
check "the console's sweep leaves the ring as it found it ($(kv_all))" [ "$(kv_all)" = "16 16 " ]
T send-keys -t A k k k k k Enter
check "the form has keep-last, from the options table, turned on" wait_for 30 says_e '^keep-last +yes'
T send-keys -t A k k k k k k k Enter 1 Enter j j j j Enter 8 Enter
check "the form takes a one-leg sweep at kv_bits 8" wait_for 30 says_e '^kv-bits +8( |$)'
T send-keys -t A G Enter
check "the keep-last sweep completes" wait_for 600 says_e 'run 4 sweep +completed'
check "with keep-last, the ring stays at the last leg ($(kv_all))" [ "$(kv_all)" = "8 8 " ]

T send-keys -t A q
check "q exits the console" wait_for 100 test -s "$tmp/a.rc"
check "the console exits with status 0" [ "$(cat "$tmp/a.rc")" = 0 ]
finish
