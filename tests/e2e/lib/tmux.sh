# The console's end-to-end tests drive `infertop` inside a private tmux
# server (its own socket, so a user's tmux is never touched). Source after
# lib/serve.sh. The EXIT trap kills the tmux server, any demo stage a failed
# step left behind (their command lines hold $tmp), and what
# console_cleanup_extra (a script may redefine it) adds.
SOCK="infertop-test-$$"
T() { tmux -L "$SOCK" "$@"; }
# No status line: the console has the whole window. remain-on-exit keeps
# the server up between runs, so an exit status can still be read.
printf 'set -g remain-on-exit on\nset -g status off\n' >"$tmp/tmux.conf"

console_cleanup_extra() { :; }
console_cleanup() {
    T kill-server 2>/dev/null
    console_cleanup_extra
    for p in $(pgrep -f "$tmp/infertop-demo" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    cleanup
}
trap console_cleanup EXIT

if ! command -v tmux >/dev/null 2>&1; then
    fail "tmux is installed"
    finish
    exit 1
fi

# wait_for TENTHS COMMAND...: polls every 0.1 s until COMMAND succeeds, at
# most TENTHS times.
wait_for() {
    n=$1
    shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}

# tmux_kill: ends the private server and waits until its socket is gone:
# a new-session sent while the old server still exits reaches the dying
# server and fails (seen on a loaded machine).
tmux_kill() {
    T kill-server 2>/dev/null
    wait_for 100 test ! -S "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"
}
