# Shared by the serve_*.sh end-to-end tests (sourced, not run by itself):
# pass/fail counters, free loopback ports, `inferd serve` nodes started in
# the background and always stopped, and the inferctl client helper.
set -u
passed=0
failed=0
root=${INFERTOP_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
CTL="$root/${B:-build}/tests/inferctl"
tmp=$(mktemp -d)
pids=""
# The console opens the default run history when given no --db: keep the
# tests' runs out of the user's.
export XDG_DATA_HOME="$tmp/data"

# stop_all: every node `start` started, stopped and waited for.
stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    pids=""
}

# KEEP_TMP=1 keeps the nodes' logs and replies for a post-mortem.
cleanup() {
    stop_all
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds.
check() {
    what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

ep() { echo "tcp://127.0.0.1:$1"; }

# Sets P1 .. Pn to n free ports.
alloc_ports() {
    i=0
    for p in $("$CTL" ports "$1"); do
        i=$((i + 1))
        eval "P$i=$p"
    done
    [ "$i" -eq "$1" ] || { echo "could not allocate $1 ports" >&2; exit 1; }
}

# start NAME ARGS...: `inferd serve --name NAME --log $tmp/NAME.log ARGS` in
# the background; its pid goes to PID_NAME (and is stopped at exit).
start() {
    name=$1
    shift
    inferd serve --name "$name" --log "$tmp/$name.log" "$@" 2>>"$tmp/$name.err" &
    eval "PID_$name=$!"
    pids="$pids $!"
}

# up EP: waits (at most 30 s) until the node at EP answers status.
up() {
    n=0
    while [ $n -lt 150 ]; do
        "$CTL" call "$1" status --timeout 200 >/dev/null 2>&1 && return 0
        sleep 0.2
        n=$((n + 1))
    done
    echo "node at $1 did not come up" >&2
    return 1
}

# stop NAME: SIGTERM and wait for the exit; its status goes to STOP_RC.
stop() {
    eval "p=\$PID_$1"
    kill "$p" 2>/dev/null
    wait "$p"
    STOP_RC=$?
}

# call EP OP [ARGS] [--id ID] [--timeout MS]: reply frames as JSON lines.
call() { "$CTL" call "$@"; }

# The values of PATH... in JSON lines on stdin.
get() { "$CTL" get "$@"; }

# The token ids a generate reply stream holds, on one line.
tokens_of() { get token | tr '\n' ' '; }

# ring_state EP: the head's ring_health.state (loading, up, down).
ring_state() { call "$1" status --timeout 1000 | get ring_health.state; }

# ring_up EP: waits (at most 30 s) until the head at EP has seen its ring
# answer, so that a request sent next is not refused with ring_down.
ring_up() {
    n=0
    while [ $n -lt 150 ]; do
        [ "$(ring_state "$1" 2>/dev/null)" = up ] && return 0
        sleep 0.2
        n=$((n + 1))
    done
    echo "the ring of the head at $1 did not answer" >&2
    return 1
}
