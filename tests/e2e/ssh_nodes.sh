#!/bin/sh
# End to end: `infertop nodes` against real OpenSSH servers. Three sshd run
# as the current user on 127.0.0.2, .3 and .4, each with its own host key,
# accepting only a key made here; the cluster file's start lines launch a
# 3-stage inferd ring of the embedded model (layers 0:2, 2:4, 4:5).
# Covered: start all (telemetry from every stage), status, logs, logs -f
# and its end, facts against /proc/meminfo, exec, restart of one stage with
# the ring recovering, stop all leaving no inferd; an HTTP node (an inferd
# serve --http declared `engine = openai`) started once its URL answers,
# refusing a set, its log, stopped; a connection kept by the
# node pool between jobs and re-established after it drops; host keys unknown
# (refused, then recorded with --accept-new) and changed (refused with both
# fingerprints), a wrong user key, a closed port, and a server that
# accepts and never answers (bounded by the connect timeout).
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/sshd.sh"

HANGD="$root/${B:-build}/tests/hangd"
INFERD=$(command -v inferd)
run="$tmp/run"
mkdir -p "$run" "$tmp/home"
user=$(id -un)

# The detached inferd stages are not children of this script: stop them
# by their pidfiles (and by the test's own paths) before the rest.
stop_stages() {
    for f in "$run"/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    done
    pkill -KILL -f -- "--log $run/" 2>/dev/null
    cleanup
}
trap stop_stages EXIT

# The SSH client sees only what the test made: no agent, no ~/.ssh.
export HOME="$tmp/home"
unset SSH_AUTH_SOCK

alloc_ports 17
sshd_keys || { fail "ssh keys"; finish; exit 1; }
sshd_start s0 127.0.0.2 "$P1" && sshd_start s1 127.0.0.3 "$P2" && sshd_start s2 127.0.0.4 "$P3" ||
    { fail "three sshd started"; finish; exit 1; }

# node NAME ADDR SSH_PORT CONTROL TELEMETRY LISTEN NEXT LAYERS
node() {
    cat <<EOF

[node $1]
ssh = $user@$2:$3
control = tcp://$2:$4
telemetry = tcp://$2:$5
layers = $8
start = $INFERD serve --name $1 --layers $8 --threads 1
    --control tcp://$2:$4 --telemetry tcp://$2:$5
    --listen tcp://$2:$6 --next $7
    --log $run/$1.log --pidfile $run/$1.pid
log = $run/$1.log
pidfile = $run/$1.pid
EOF
}
conf="$tmp/cluster.conf"
{
    printf '[cluster]\nname = sshtest\nidentity = %s\nknown_hosts = %s\n' \
        "$tmp/ssh/id" "$tmp/ssh/known_hosts"
    node s0 127.0.0.2 "$P1" "$P4" "$P5" "$P6" "tcp://127.0.0.3:$P9" 0:2
    node s1 127.0.0.3 "$P2" "$P7" "$P8" "$P9" "tcp://127.0.0.4:$P12" 2:4
    node s2 127.0.0.4 "$P3" "$P10" "$P11" "$P12" "tcp://127.0.0.2:$P6" 4:5
} >"$conf"
HEAD=tcp://127.0.0.2:$P4

nodes() { infertop nodes -c "$conf" "$@"; }
has() { grep -q -- "$1" "$2"; }
# No process whose command line matches $1 (run here, not under sh -c,
# whose own command line would match).
no_proc() { ! pgrep -f -- "$1" >/dev/null; }
# PID has exited (a zombie waiting for a slow reaper counts as exited).
gone() {
    kill -0 "$1" 2>/dev/null || return 0
    case $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) in Z* | X*) return 0 ;; esac
    return 1
}

# ---- host keys: unknown
# Errors of table operations are in the table's MESSAGE column.
nodes status s0 >"$tmp/out" 2>&1
rc=$?
fp0=$(sshd_fingerprint s0)
check "an unknown host is refused (exit 1)" [ "$rc" = 1 ]
check "the refusal says unknown host key" has 'unknown host key' "$tmp/out"
check "the refusal shows the host key's fingerprint" grep -qF "$fp0" "$tmp/out"
check "nothing was recorded" [ ! -s "$tmp/ssh/known_hosts" ]
nodes status s0 --accept-new >"$tmp/out" 2>"$tmp/err"
check "--accept-new connects to the new host" [ $? = 0 ]
key0=$(cut -d' ' -f2 "$tmp/ssh/s0_host.pub")
check "--accept-new records the host key in known_hosts" has "$key0" "$tmp/ssh/known_hosts"
nodes status s1 >"$tmp/out" 2>&1
check "another unknown host is still refused when known_hosts exists" has 'unknown host key' "$tmp/out"
nodes status s0 >"$tmp/out" 2>"$tmp/err"
check "a recorded host is accepted without --accept-new" [ $? = 0 ]
nodes status all --accept-new >"$tmp/out" 2>"$tmp/err"
check "status all --accept-new: every node reports stopped" \
    [ "$(grep -c ' stopped ' "$tmp/out")" = 3 ]

# ---- start all: the ring comes up and every stage publishes telemetry
nodes start all >"$tmp/start" 2>"$tmp/err"
check "start all succeeds" [ $? = 0 ]
check "start all: three nodes running" [ "$(grep -c ' running ' "$tmp/start")" = 3 ]
for c in "$HEAD" "tcp://127.0.0.3:$P7" "tcp://127.0.0.4:$P10"; do
    up "$c" || fail "node at $c answers"
done
"$CTL" listen "tcp://127.0.0.2:$P5" 4 >"$tmp/tel0" &
l0=$!
"$CTL" listen "tcp://127.0.0.3:$P8" 4 >"$tmp/tel1" &
l1=$!
"$CTL" listen "tcp://127.0.0.4:$P11" 4 >"$tmp/tel2" &
l2=$!
sleep 0.5
call "$HEAD" generate '{"prompt":"Once upon a time","max_tokens":12,"temperature":0}' \
    --id g1 >"$tmp/g1"
check "a generate through the ring succeeds" [ $? = 0 ]
wait $l0 $l1 $l2
i=0
for name in s0 s1 s2; do
    got=$(get topic node <"$tmp/tel$i" | awk -v n="$name" '$1 == "step" && $2 == n' | wc -l)
    check "telemetry: step messages from $name ($got)" [ "$got" -gt 0 ]
    i=$((i + 1))
done

# ---- status, logs, facts, exec
nodes status all --json >"$tmp/st" 2>"$tmp/err"
check "status all --json succeeds" [ $? = 0 ]
for name in s0 s1 s2; do
    pid=$(tr -d '\n' <"$run/$name.pid")
    check "status: $name running with the pidfile's pid $pid" \
        sh -c "tr -d ' \n' <'$tmp/st' | grep -q '\"node\":\"$name\",\"ok\":true,\"running\":true,\"pid\":$pid,'"
done
check "status reports inferd's version" has "\"version\": \"$(inferd --version | head -n 1)\"" "$tmp/st"
nodes logs s1 -n 500 >"$tmp/logs" 2>"$tmp/err"
check "logs returns the step lines" has '\[STEP ' "$tmp/logs"
nodes logs s1 -n 3 >"$tmp/logs3" 2>&1
check "logs -n 3 returns 3 lines" [ "$(wc -l <"$tmp/logs3")" = 3 ]
nodes facts s2 --json >"$tmp/facts" 2>"$tmp/err"
want=$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)
check "facts: MemTotal equals /proc/meminfo's ($want kB)" has "\"mem_total_kb\": $want," "$tmp/facts"
check "facts: cores" has "\"cores\": $(nproc)," "$tmp/facts"
nodes facts all >"$tmp/facts_t" 2>"$tmp/err"
check "facts all: a table row per node" [ "$(grep -c '^s[012] ' "$tmp/facts_t")" = 3 ]
nodes start s0 >"$tmp/out" 2>&1
check "start on a running node is refused" \
    sh -c "[ $? = 1 ] && grep -q 'already running' '$tmp/out'"
nodes exec s2 -- 'echo out; echo err >&2; exit 7' >"$tmp/ex" 2>"$tmp/exerr"
rc=$?
check "exec streams stdout and returns failure for exit 7" \
    sh -c "[ $rc = 1 ] && [ \"\$(cat '$tmp/ex')\" = out ] && grep -q '^err' '$tmp/exerr'"
check "exec reports the exit status" has 'status 7' "$tmp/exerr"
nodes exec s2 --json -- 'exit 7' >"$tmp/exj" 2>&1
check "exec --json carries the exit status" has '"exit_status": 7' "$tmp/exj"
nodes exec all -- echo hi >"$tmp/exa" 2>&1
check "exec all: each line prefixed by its node" \
    [ "$(sort "$tmp/exa" | tr '\n' ' ')" = "s0: hi s1: hi s2: hi " ]

# ---- logs -f follows until interrupted, and leaves no tail behind
infertop nodes logs s0 -f -n 1 -c "$conf" >"$tmp/follow" 2>&1 &
fpid=$!
sleep 1.5
echo "marker-$$-follow" >>"$run/s0.log"
n=0
while ! grep -q "marker-$$-follow" "$tmp/follow" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
check "logs -f shows a line appended to the log" has "marker-$$-follow" "$tmp/follow"
kill -INT $fpid
wait $fpid
check "logs -f ends with exit 0 on Ctrl-C" [ $? = 0 ]
n=0
while ! no_proc "-F -- $run/s0.log" && [ $n -lt 30 ]; do sleep 0.1; n=$((n + 1)); done
check "no remote tail outlives logs -f" no_proc "-F -- $run/s0.log"

# ---- restart one stage: the ring recovers
old=$(cat "$run/s1.pid")
nodes restart s1 >"$tmp/rs" 2>&1
check "restart s1 succeeds" [ $? = 0 ]
new=$(cat "$run/s1.pid")
check "restart: a new process ($old -> $new)" [ "$old" != "$new" ]
check "the old process is gone" gone "$old"
up "tcp://127.0.0.3:$P7"
ok=0
for try in 1 2 3 4 5; do
    if call "$HEAD" generate '{"prompt":"The little dog","max_tokens":8,"temperature":0}' \
        --timeout 20000 >"$tmp/g2" 2>&1; then
        ok=1
        break
    fi
    sleep 1
done
check "after the restart a generate through the ring succeeds (try $try)" [ $ok = 1 ]

# ---- stop all: no inferd left
nodes stop all >"$tmp/stop" 2>&1
check "stop all succeeds" [ $? = 0 ]
check "stop all: each stopped with SIGTERM" [ "$(grep -c 'with SIGTERM' "$tmp/stop")" = 3 ]
check "no inferd process of this test is left" no_proc "--log $run/"
check "the pidfiles are gone" sh -c "! ls '$run'/*.pid >/dev/null 2>&1"
nodes stop s0 >"$tmp/out" 2>&1
check "stop on a stopped node is not an error" sh -c "[ $? = 0 ] && grep -q 'was not running' '$tmp/out'"

# ---- an HTTP node: any engine with `ssh` and a `start` line
HURL=http://127.0.0.2:$P17
conf_h="$tmp/http.conf"
cat >"$conf_h" <<EOF
[cluster]
name = httptest
identity = $tmp/ssh/id
known_hosts = $tmp/ssh/known_hosts

[node h]
engine = openai
url = $HURL
ssh = $user@127.0.0.2:$P1
start = $INFERD serve --name h --threads 1 --control tcp://127.0.0.2:$P15
    --telemetry tcp://127.0.0.2:$P16 --http 127.0.0.2:$P17
log = $run/h.log
pidfile = $run/h.pid
EOF
infertop nodes -c "$conf_h" start h >"$tmp/hstart" 2>&1
check "http node: start succeeds" [ $? = 0 ]
check "http node: started means its URL answers at once" \
    curl -sf -o /dev/null --max-time 2 "$HURL/v1/models"
check "http node: the start says running" has ' running ' "$tmp/hstart"
infertop set -c "$conf_h" h kv_bits=8 >"$tmp/hset" 2>&1
check "http node: set on an openai node is refused (exit 1)" [ $? = 1 ]
check "http node: the refusal names the node, the knob and why" \
    has "node h: kv_bits: an openai node's start line is not known to infertop" "$tmp/hset"
infertop set -c "$conf_h" h prefill_step=64 --dry-run >"$tmp/hdry" 2>&1
check "http node: --dry-run refuses the same" has "node h: prefill_step" "$tmp/hdry"
infertop nodes -c "$conf_h" logs h -n 200 >"$tmp/hlogs" 2>&1
check "http node: logs exits 0" [ $? = 0 ]
check "http node: logs shows its log" sh -c "[ -s '$tmp/hlogs' ] && cmp -s '$tmp/hlogs' '$run/h.log'"
infertop nodes -c "$conf_h" stop h >"$tmp/hstop" 2>&1
check "http node: stop succeeds" [ $? = 0 ]
check "http node: stopped with SIGTERM" has 'with SIGTERM' "$tmp/hstop"
check "http node: its URL no longer answers" \
    sh -c "! curl -sf -o /dev/null --max-time 2 '$HURL/v1/models'"

# ---- one pool (as the console uses it): the node's connection is kept
# between jobs, and opened again after it dropped
mkfifo "$tmp/pool.in"
# Created here, not by the redirection below: that one happens only once
# the FIFO has a writer, and ask() reads the file before.
: >"$tmp/pool.out"
"$root/${B:-build}/tests/poolctl" "$conf" s0 <"$tmp/pool.in" >"$tmp/pool.out" 2>&1 &
pool=$!
pids="$pids $pool"
exec 3>"$tmp/pool.in"
asked=0
# ask OP: sends one operation to poolctl and sets $answer to its answer
# line (not called in $(...): the count of questions must survive).
ask() {
    echo "$1" >&3
    asked=$((asked + 1))
    n=0
    while [ "$(wc -l <"$tmp/pool.out")" -lt $asked ] && [ $n -lt 200 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    answer=$(sed -n "${asked}p" "$tmp/pool.out")
}
# The per-connection processes of sshd s0.
conns() { pgrep -P "$SSHD_PID_s0" | tr '\n' ' '; }
ask status
check "pool: a first job connects ($answer)" [ "$answer" = "ok " ]
c1=$(conns)
check "pool: one connection to s0 ($c1)" [ "$(echo $c1 | wc -w)" = 1 ]
ask 'exec true'
check "pool: a second job succeeds ($answer)" [ "$answer" = "ok " ]
check "pool: ... on the same connection" [ "$(conns)" = "$c1" ]
kill $c1
n=0
while [ "$(conns)" = "$c1" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
ask status
check "pool: after the connection dropped a job succeeds ($answer)" [ "$answer" = "ok " ]
c2=$(conns)
check "pool: ... on a new connection ($c1 -> $c2)" sh -c "[ -n '$c2' ] && [ '$c2' != '$c1' ]"
exec 3>&-
wait $pool

# ---- host keys: changed
fp_old=$(sshd_fingerprint s2)
sshd_rekey s2 || fail "sshd s2 restarted with a new host key"
fp_new=$(sshd_fingerprint s2)
nodes status s2 --accept-new >"$tmp/out" 2>&1
rc=$?
check "a changed host key is refused, even with --accept-new" [ "$rc" = 1 ]
check "the refusal shows the expected fingerprint" grep -qF "$fp_old" "$tmp/out"
check "the refusal shows the offered fingerprint" grep -qF "$fp_new" "$tmp/out"
check "the refusal says the key changed" has 'HOST KEY CHANGED' "$tmp/out"

# ---- wrong user key, closed port, a server that never answers
sed "s|^identity = .*|identity = $tmp/ssh/wrong_id|" "$conf" >"$tmp/wrong.conf"
infertop nodes status s0 -c "$tmp/wrong.conf" >"$tmp/out" 2>&1
check "a wrong user key is refused with an authentication error" \
    sh -c "[ $? = 1 ] && grep -q 'authentication failed' '$tmp/out'"

"$HANGD" 127.0.0.5 "$P13" >"$tmp/hangd.out" &
pids="$pids $!"
n=0
while ! grep -qs ready "$tmp/hangd.out" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
{
    cat "$conf"
    printf '\n[node hang]\nssh = %s@127.0.0.5:%s\ncontrol = tcp://127.0.0.5:1\n' "$user" "$P13"
    printf 'telemetry = tcp://127.0.0.5:2\nstart = inferd serve\n'
    printf '\n[node closed]\nssh = %s@127.0.0.6:%s\ncontrol = tcp://127.0.0.6:1\n' "$user" "$P14"
    printf 'telemetry = tcp://127.0.0.6:2\nstart = inferd serve\n'
} >"$tmp/bad.conf"
t0=$(date +%s)
infertop nodes status closed --timeout 2 -c "$tmp/bad.conf" >"$tmp/out" 2>&1
rc=$?
t1=$(date +%s)
check "a closed port fails with a connect error" \
    sh -c "[ $rc = 1 ] && grep -q 'cannot connect' '$tmp/out'"
check "a closed port fails within the connect timeout ($((t1 - t0)) s)" [ $((t1 - t0)) -le 4 ]
t0=$(date +%s)
infertop nodes status hang --timeout 2 -c "$tmp/bad.conf" >"$tmp/out" 2>&1
rc=$?
t1=$(date +%s)
check "a server that never answers fails with a timeout" \
    sh -c "[ $rc = 1 ] && grep -qi 'timeout' '$tmp/out'"
check "... within the connect timeout ($((t1 - t0)) s for --timeout 2)" [ $((t1 - t0)) -le 4 ]
infertop nodes status all --timeout 2 -c "$tmp/bad.conf" >"$tmp/out" 2>"$tmp/err"
check "status all: the unreachable nodes fail, the others answer, exit 1" \
    sh -c "[ $? = 1 ] && [ \$(grep -c FAILED '$tmp/out') = 3 ] && grep -q '^s0 .* ok ' '$tmp/out'"

# ---- command line
nodes frobnicate s0 >/dev/null 2>&1
check "an unknown operation is a usage error (exit 2)" [ $? = 2 ]
nodes status nosuch >/dev/null 2>"$tmp/err"
check "an unknown node exits 3 and lists the nodes" sh -c "[ $? = 3 ] && grep -q 's0 s1 s2' '$tmp/err'"

finish
