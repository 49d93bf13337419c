#!/bin/sh
# End to end, with no sshd anywhere: nodes on this machine and the small
# lies of issue 25.
#  - a local node (loopback `host`, no `ssh`) is started, its log read and
#    stopped by `infertop nodes` on this machine;
#  - in the console (tmux), `S` on a node with neither `ssh` nor `local`
#    says "no ssh configured" and the node stays up; `S` on the local one
#    starts it;
#  - a node port in the kernel's ephemeral range is refused by the cluster
#    file and by inferd serve, naming the range;
#  - a file that is no model says so; `[cluster` is reported at line 1;
#  - `set` to a local node that nothing listens for answers at once with
#    "connection refused".
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

MODEL="synth:dim=64,hidden=64,layers=2,heads=4,kv_heads=4,vocab=256"
PA=$("$CTL" portrun 3) && PB=$("$CTL" portrun 3) || { fail "free ports"; finish; exit 1; }
# (dash's read takes procfs one byte at a time: it gets "3")
set -- $(cat /proc/sys/net/ipv4/ip_local_port_range)
LO=$1 HI=$2
conf="$tmp/cluster.conf"
cat >"$conf" <<EOF
[cluster]
model = $MODEL
inferd = $(command -v inferd)
threads = 1

[node a]
host = 127.0.0.1
port = $PA
log = $tmp/logs/a.log
pidfile = $tmp/run/a.pid

EOF
# The console's file: a as above with its line given (b is no ring stage
# of a's), and b, which has neither `ssh` nor `local`.
cconf="$tmp/console.conf"
cat >"$cconf" <<EOF
[node a]
host = 127.0.0.1
port = $PA
log = $tmp/logs/a.log
pidfile = $tmp/run/a.pid
start = $(command -v inferd) serve --name a --model $MODEL --threads 1
    --control $(ep "$PA") --telemetry $(ep $((PA + 1))) --log $tmp/logs/a.log

[node b]
host = 127.0.0.1
port = $PB
local = no
EOF

# ---- a local node over `infertop nodes`, no SSH
infertop nodes start a -c "$conf" >"$tmp/start" 2>&1
check "nodes start a: started on this machine" grep -q "started, pid" "$tmp/start"
check "... it answers" up "$(ep "$PA")"
pid_a=$(cat "$tmp/run/a.pid" 2>/dev/null)
check "... its pidfile holds a live inferd" [ -n "$pid_a" ] && kill -0 "$pid_a"
check "nodes logs a: the node's own log" sh -c "infertop nodes logs a -c '$conf' | grep -q 'inferd serve'"
infertop nodes stop a -c "$conf" >"$tmp/stop" 2>&1
check "nodes stop a: stopped" grep -q "stopped pid $pid_a" "$tmp/stop"
check "... the process is gone" wait_for 50 sh -c "! kill -0 $pid_a 2>/dev/null"

# ---- the console: b has no way to be reached, a is local
start b --model "$MODEL" --threads 1 --control "$(ep "$PB")" --telemetry "$(ep $((PB + 1)))"
up "$(ep "$PB")" || { fail "b up"; finish; exit 1; }
cap() { T capture-pane -p -t C; }
says() { cap | grep -qF -- "$1"; }
row_is() { cap | grep -qE "$1 +(inferd +)?$2 "; }
T -f "$tmp/tmux.conf" new-session -d -s C -x 200 -y 50 \
    "env LC_ALL=C.UTF-8 infertop -c $cconf --db $tmp/h.db; echo \$? >$tmp/c.rc"
check "the console shows b up" wait_for 100 row_is b up
T send-keys -t C j S
check "S on b says no ssh is configured" wait_for 30 says "no ssh configured"
sleep 1
check "... and b stays up" row_is b up
T send-keys -t C k S
check "S on a starts it on this machine" wait_for 100 row_is a up
check "... asked on this machine" wait_for 30 says "asked on this machine"
T send-keys -t C q
wait_for 50 test -s "$tmp/c.rc"
infertop nodes stop a -c "$conf" >/dev/null 2>&1

# ---- ports in the ephemeral range
sed "s/^port = $PA\$/port = $LO/" "$conf" >"$tmp/eph.conf"
infertop status -c "$tmp/eph.conf" >"$tmp/eph.out" 2>&1
check "the cluster file refuses a port in the ephemeral range" [ $? != 0 ]
check "... naming the range" grep -q "ephemeral range $LO..$HI" "$tmp/eph.out"
inferd serve --model "$MODEL" --control "tcp://127.0.0.1:$HI" >"$tmp/eph.serve" 2>&1
check "inferd serve refuses it (exit 2)" [ $? = 2 ]
check "... naming the range and the override" \
    grep -q "ephemeral range $LO..$HI.*--allow-ephemeral-port" "$tmp/eph.serve"

# ---- smaller lies
printf 'plain text, which no model file is\n' >"$tmp/notes.txt"
inferd generate --model "$tmp/notes.txt" --prompt hi >"$tmp/gen.out" 2>&1
check "a text file is 'not a GGUF or llama2.c file'" grep -q "not a GGUF or llama2.c file" "$tmp/gen.out"
printf '[cluster\nname = x\n' >"$tmp/open.conf"
infertop status -c "$tmp/open.conf" >"$tmp/open.out" 2>&1
check "\`[cluster\` is reported at line 1" grep -q "open.conf:1: section header" "$tmp/open.out"
t0=$(date +%s%N)
infertop set a kv_bits=8 -c "$conf" >"$tmp/set.out" 2>&1
t1=$(date +%s%N)
check "set to a local node that is down: connection refused" grep -q "connection refused" "$tmp/set.out"
echo "     (set answered in $(((t1 - t0) / 1000000)) ms)"
infertop set nosuch kv_bits=8 -c "$conf" >/dev/null 2>&1
rc=$?
check "set on no such node exits 3 (got $rc), as its help says" \
    sh -c "[ $rc = 3 ] && infertop set --help | grep -q '3 no such node'"

finish
