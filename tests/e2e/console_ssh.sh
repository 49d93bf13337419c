#!/bin/sh
# End to end: the console driving nodes over SSH, in tmux.
#
# One real sshd (127.0.0.2, running as the current user, accepting only a
# key made here) serves node s0, whose start line runs the real inferd; a
# second node, `hang`, points its ssh at hangd on 127.0.0.5, which accepts
# connections and never answers, with connect_timeout = 20 in the cluster
# file. `infertop -c FILE` runs in a private tmux server, and the test:
#   - sees the dashboard open without connecting anywhere;
#   - restarts `hang` (R, y): while its SSH connect hangs, view switches
#     (e, d, ?) are answered on screen within a few seconds, and the
#     restart later fails with a timeout in the events pane;
#   - starts s0 (S): `start` and `started` in the events, s0 turns up;
#   - opens s0's node view: its log over SSH (a [STEP line after a
#     generate) in the log pane, its MemTotal in the facts box, all on one
#     SSH connection;
#   - stops s0 (X, y): `stopped` in the events, s0 down, no inferd left;
#   - quits with q and exit status 0.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/sshd.sh"

HANGD="$root/${B:-build}/tests/hangd"
# Absolute: the start line runs in the remote login shell's directory.
INFERD=$(cd "$(dirname "$(command -v inferd)")" && pwd)/inferd
run="$tmp/run"
mkdir -p "$run" "$tmp/home"
user=$(id -un)
. "$(dirname "$0")/lib/tmux.sh"

# The inferd started over SSH is not a child of this script: it is stopped
# by its pidfile, and by the test's own paths in its command line.
console_cleanup_extra() {
    [ -f "$run/s0.pid" ] && kill -KILL "$(cat "$run/s0.pid")" 2>/dev/null
    pkill -KILL -f -- "--log $run/" 2>/dev/null
}

# The SSH client sees only what the test made: no agent, no ~/.ssh. The
# tmux server started below inherits this environment.
export HOME="$tmp/home"
unset SSH_AUTH_SOCK

alloc_ports 6
sshd_keys || { fail "ssh keys"; finish; exit 1; }
sshd_start s0 127.0.0.2 "$P1" || { fail "sshd started"; finish; exit 1; }
"$HANGD" 127.0.0.5 "$P4" >"$tmp/hangd.out" &
pids="$pids $!"

cat >"$tmp/cluster.conf" <<EOF
[cluster]
name = sshconsole
identity = $tmp/ssh/id
known_hosts = $tmp/ssh/known_hosts
accept_new = yes
connect_timeout = 20

[node s0]
ssh = $user@127.0.0.2:$P1
control = tcp://127.0.0.2:$P2
telemetry = tcp://127.0.0.2:$P3
start = $INFERD serve --name s0 --threads 1
    --control tcp://127.0.0.2:$P2 --telemetry tcp://127.0.0.2:$P3
    --log $run/s0.log --pidfile $run/s0.pid
log = $run/s0.log
pidfile = $run/s0.pid

[node hang]
ssh = $user@127.0.0.5:$P4
control = tcp://127.0.0.5:$P5
telemetry = tcp://127.0.0.5:$P6
start = inferd serve
EOF

cap() { T capture-pane -p -t C; }
says() { cap | grep -qF -- "$1"; }
row_is() { cap | grep -qE "$1 +(inferd +)?$2 "; } # NODE [ENGINE] STATE on the dashboard
# Established TCP connections to 127.0.0.5:PORT (hangd), from /proc/net/tcp:
# the remote address column in hex, state 01.
hang_conns() {
    awk -v want="$(printf '0500007F:%04X' "$P4")" '$3 == want && $4 == "01"' /proc/net/tcp | wc -l
}
hanging() { [ "$(hang_conns)" -ge 1 ]; }
# sshd's children: one per connection to s0.
s0_conns() { pgrep -P "$SSHD_PID_s0" | wc -l; }
no_inferd() { ! pgrep -f -- "--log $run/" >/dev/null; }

n=0
while ! grep -qs ready "$tmp/hangd.out" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
printf 'set -g status off\nset -g remain-on-exit on\n' >"$tmp/tmux.conf"
T -f "$tmp/tmux.conf" new-session -d -s C -x 200 -y 50 \
    "env LC_ALL=C.UTF-8 infertop -c $tmp/cluster.conf; echo \$? >$tmp/c.rc"

# ---- the dashboard connects nowhere by itself
check "the dashboard shows both nodes" wait_for 100 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -q 'hang' && tmux -L $SOCK capture-pane -p -t C | grep -q 's0'"
sleep 1
check "opening the dashboard makes no SSH connection ($(s0_conns) to s0, $(hang_conns) to hang)" \
    [ "$(s0_conns)" -eq 0 ] && [ "$(hang_conns)" -eq 0 ]

# ---- a node whose SSH connect hangs: the console keeps answering keys
T send-keys -t C j R
check "restart asks y/n" wait_for 30 says "restart node hang? y/n"
T send-keys -t C y
check "the restart request is in the events" wait_for 30 says "asked over SSH ($user@127.0.0.5:$P4)"
check "its SSH connect is hanging on hangd" wait_for 50 hanging
T send-keys -t C e
check "while it hangs, e switches to the events view at once" wait_for 30 says "/ filter"
T send-keys -t C d
check "... and d back to the dashboard" wait_for 30 says "Enter detail"
T send-keys -t C '?'
check "... and ? opens the help" wait_for 30 says "infertop help"
T send-keys -t C Escape
check "... and a key closes it" wait_for 30 sh -c "! tmux -L $SOCK capture-pane -p -t C | grep -q 'infertop help'"
check "the connect was still hanging meanwhile" hanging

# ---- start a real node over SSH
T send-keys -t C k S
check "S asks no question and the start request is in the events" \
    wait_for 30 says "asked over SSH ($user@127.0.0.2:$P1)"
check "s0 turns up" wait_for 300 row_is s0 up
check "the events say it started, with its pid" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -qE 'started +started, pid [0-9]+'"
call "tcp://127.0.0.2:$P2" generate '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}' \
    --timeout 20000 >"$tmp/gen" 2>&1
check "a generate on s0 succeeds" [ $? = 0 ]

# ---- its node view: the log over SSH and the facts
T send-keys -t C Enter
check "the log pane says where the log comes from" \
    wait_for 50 says "log (ssh: $user@127.0.0.2:$P1:$run/s0.log)"
check "the log pane shows the node's [STEP lines" wait_for 100 says "[STEP "
check "the log pane shows the node's lifecycle lines" says "[NODE] "
want=$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)
check "the facts box shows MemTotal ($want kB)" wait_for 100 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -qE 'MemTotal +.*\($want kB\)'"
check "the facts box shows the cores" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -qE 'cores +$(nproc)( |\$)'"
check "start, facts and the follow share one SSH connection ($(s0_conns))" [ "$(s0_conns)" -eq 1 ]
echo "marker-$$-follow" >>"$run/s0.log"
check "a line appended to the log shows in the pane" wait_for 50 says "marker-$$-follow"

# ---- stop it from the node view
T send-keys -t C X
check "stop asks y/n" wait_for 30 says "stop node s0? y/n"
T send-keys -t C y
check "the log pane follows again after the stop and shows its end" wait_for 150 says "[NODE] stop"
T send-keys -t C d
check "s0 goes down" wait_for 100 row_is s0 down
check "the events say it stopped with SIGTERM" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -qE 'stopped +stopped pid [0-9]+ with SIGTERM'"
check "no inferd is left" wait_for 30 no_inferd

# ---- the hanging restart fails at the connect timeout, clearly
check "the restart of hang fails with a timeout in the events" wait_for 250 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -E 'restart_failed' | grep -qi 'timeout'"

T send-keys -t C q
check "q exits the console" wait_for 100 test -s "$tmp/c.rc"
check "the console exits with status 0" [ "$(cat "$tmp/c.rc" 2>/dev/null)" = 0 ]

finish
