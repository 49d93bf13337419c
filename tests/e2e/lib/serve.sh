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

# retry N COMMAND...: runs COMMAND every 0.2 s until it succeeds, at most
# N times.
retry() {
    retry_n=$1
    shift
    while [ "$retry_n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.2
        retry_n=$((retry_n - 1))
    done
    return 1
}

# up EP: waits (at most 30 s) until the node at EP answers status.
up() {
    retry 150 "$CTL" call "$1" status --timeout 200 >/dev/null 2>&1 && return 0
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
ring_is_up() { [ "$(ring_state "$1" 2>/dev/null)" = up ]; }
ring_up() {
    retry 150 ring_is_up "$1" && return 0
    echo "the ring of the head at $1 did not answer" >&2
    return 1
}

# ring3 PREFIX MODEL HEAD_ARGS...: a ring of three stages of a 3-layer
# MODEL, one layer each, on the ports P1..P9: PREFIX_a (the head, with
# HEAD_ARGS), PREFIX_b and PREFIX_c, their control endpoints in A, B, C.
# ring3_b starts (or restarts) the middle one.
ring3() {
    R3=$1
    R3M=$2
    shift 2
    A=$(ep "$P1")
    B=$(ep "$P3")
    C=$(ep "$P5")
    start "${R3}_a" --model "$R3M" --layers 0:1 --control "$A" --telemetry "$(ep "$P2")" \
        --listen "$(ep "$P7")" --next "$(ep "$P8")" --threads 1 "$@"
    ring3_b
    start "${R3}_c" --model "$R3M" --layers 2:3 --control "$C" --telemetry "$(ep "$P6")" \
        --listen "$(ep "$P9")" --next "$(ep "$P7")" --threads 1
}
ring3_b() {
    start "${R3}_b" --model "$R3M" --layers 1:2 --control "$B" --telemetry "$(ep "$P4")" \
        --listen "$(ep "$P8")" --next "$(ep "$P9")" --threads 1
}

# cluster_conf FILE NAME [NODE CONTROL TELEMETRY]...: a cluster file of
# inferd nodes on loopback, in ring order.
cluster_conf() {
    f=$1
    printf '[cluster]\nname = %s\n' "$2" >"$f"
    shift 2
    while [ $# -ge 3 ]; do
        printf '[node %s]\nssh = localhost\ncontrol = %s\ntelemetry = %s\n' "$1" "$2" "$3" >>"$f"
        printf 'start = inferd serve --name %s\n' "$1" >>"$f"
        shift 3
    done
}
