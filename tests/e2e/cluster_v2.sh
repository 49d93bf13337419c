#!/bin/sh
# End to end: a cluster file of the second form (host, base_port, model,
# layers, threads, flags) without any `ssh` key.
#  - `infertop nodes command` derives each node's `inferd serve` line, the
#    ring wired in section order; `nodes command --systemd` the flag file
#    of the systemd unit inferd@.service instead; the test starts a with
#    its line and b as the unit would, with its flag file, and they form a
#    working ring;
#  - status, set, stress and history work on it, with the options before
#    the verb (`infertop -c FILE status`) as well as after;
#  - its nodes are local (loopback, no `ssh`); with `local = no`, `nodes
#    start` fails saying no ssh is configured.
. "$(dirname "$0")/lib/serve.sh"

DB="$tmp/history.db"
BASE=$("$CTL" portrun 6) || { fail "six consecutive free ports"; finish; exit 1; }
conf="$tmp/cluster.conf"
cat >"$conf" <<EOF
[cluster]
name = second
base_port = $BASE
model = synth:dim=64,hidden=64,layers=4,heads=4,kv_heads=4,vocab=256
inferd = $(command -v inferd)
threads = 1
flags = --prefill-step 64

[node a]
host = 127.0.0.1
layers = 0:2
log = $tmp/a.log

[node b]
host = 127.0.0.1
layers = 2:4
log = $tmp/b.log
flags = --max-ctx 4096
EOF

infertop nodes command all -c "$conf" >"$tmp/commands" 2>"$tmp/commands.err"
check "nodes command derives both lines" [ "$(wc -l <"$tmp/commands")" = 2 ]
check "a binds base_port .. +2 and sends to b's ring input" \
    grep -q "^a: .* --layers 0:2 --control tcp://127.0.0.1:$BASE --telemetry tcp://127.0.0.1:$((BASE + 1)) --listen tcp://127.0.0.1:$((BASE + 2)) --next tcp://127.0.0.1:$((BASE + 5)) " "$tmp/commands"
check "b, the tail, closes the ring to a" \
    grep -q "^b: .* --listen tcp://127.0.0.1:$((BASE + 5)) --next tcp://127.0.0.1:$((BASE + 2)) " "$tmp/commands"
check "[cluster] flags come before the node's" grep -q "^b: .* --prefill-step 64 --max-ctx 4096$" "$tmp/commands"

infertop nodes command b --systemd -c "$conf" >"$tmp/b.conf" 2>"$tmp/unit.err"
check "nodes command --systemd writes b's flag file for the unit" \
    [ "$(head -n 1 "$tmp/b.conf")" = "# /etc/inferd/b.conf: the flags of inferd@b.service" ]
check "... an option a line, without what the unit adds (--name, --log)" \
    [ "$(grep -c '^--' "$tmp/b.conf"):$(grep -c -e --name -e --log "$tmp/b.conf")" = "8:0" ]
infertop nodes command all --systemd --json -c "$conf" >"$tmp/units.json"
check "--json gives both flag files" \
    [ "$(tr -d ' \n' <"$tmp/units.json" | grep -o '"flag_file":"#/etc/inferd/[ab].conf' | wc -l)" = 2 ]

# a started with exactly its derived line; b as the unit starts it
# (contrib/systemd/inferd@.service's ExecStart) with the flag file.
# The line runs as printed (it makes its folders first): its sh's child is
# the node, stopped by its pid at the end.
line=$(infertop nodes command a -c "$conf")
check "a's line makes its log's folder first" [ "${line#mkdir -p $tmp && }" != "$line" ]
sh -c "$line" 2>>"$tmp/a.err" &
sh_a=$!
inferd serve --name b --log "$tmp/b.log" --flags "$tmp/b.conf" 2>>"$tmp/b.err" &
pids="$pids $!"
for p in $BASE $((BASE + 3)); do up "$(ep "$p")" || { fail "node on $p up"; finish; exit 1; }; done
pids="$pids $(ps -o pid= --ppid "$sh_a") $sh_a"

infertop -c "$conf" status >"$tmp/status" 2>&1
check "infertop -c FILE status: both nodes up" [ "$(grep -cE '^(a|b) +inferd +up ' "$tmp/status")" = 2 ]
infertop status --json -c "$conf" >"$tmp/status.json"
check "infertop status -c FILE: b holds layers 2:4" \
    [ "$(get nodes.1.model.layers <"$tmp/status.json")" = "[2,4]" ]
infertop -c "$conf" set all kv_bits=8 >"$tmp/set" 2>&1
check "set works on it" [ $? = 0 ]
check "both nodes applied kv_bits 8" \
    [ "$(call "$(ep "$BASE")" status | get config.kv_bits)" = 8 ] &&
    [ "$(call "$(ep $((BASE + 3)))" status | get config.kv_bits)" = 8 ]
infertop -c "$conf" --db "$DB" stress growth --from 64 --to 512 --gen 4 >"$tmp/growth" 2>&1
check "stress growth completes on it" [ $? = 0 ]
infertop --db "$DB" history list >"$tmp/list"
check "history lists the run" grep -qE "^ *1 .* growth +completed" "$tmp/list"
check "the run records the file's cluster name" \
    [ "$(sqlite3 "$DB" "SELECT cluster ->> 'name' FROM runs WHERE id = 1")" = second ]
check "the run reached context 512" \
    [ "$(sqlite3 "$DB" "SELECT max(ctx_after) FROM requests WHERE run = 1 AND status = 'ok'")" = 512 ]

# Both are on loopback without `ssh`: local nodes. With `local = no`, a
# node has no way to be reached.
sed 's/^\[node a\]$/[node a]\nlocal = no/' "$conf" >"$tmp/remote.conf"
infertop nodes start a -c "$tmp/remote.conf" >"$tmp/start" 2>&1
check "nodes start of a node with neither ssh nor local fails (exit 1)" [ $? = 1 ]
check "... saying no ssh is configured" grep -q "node a: no ssh configured.*local = yes" "$tmp/start"
infertop nodes status all -c "$tmp/remote.conf" >"$tmp/nstatus" 2>&1
check "nodes status all: a has no ssh configured, b (local) answers" \
    [ "$(grep -c 'no ssh configured' "$tmp/nstatus"):$(grep -c '^b' "$tmp/nstatus")" = 1:1 ]

finish
