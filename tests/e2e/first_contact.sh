#!/bin/sh
# End to end: a bare `infertop` without a cluster file, as a new user
# meets it, in a home, config and data directory of the test's own:
#   - without a terminal it explains how to get a cluster file (the demo,
#     the example file and where it goes, -c) and exits 1;
#   - on a terminal (tmux) it asks whether to start the demo, and `y`
#     starts it: both stages come up;
#   - the demo's run history is a database of its own under the runtime
#     directory; the user's default history is never opened (not created).
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

home="$tmp/home"
mkdir -p "$home" "$tmp/cwd"
cd "$tmp/cwd" || exit 1
user_db="$XDG_DATA_HOME/infertop/history.db"
demo_db="$tmp/infertop-$(id -u)/demo-history.db"

env -u XDG_CONFIG_HOME HOME="$home" infertop </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a bare infertop without a cluster file exits 1" [ "$rc" = 1 ]
says_err() { grep -qF -- "$1" "$tmp/err"; }
check "it says where it looked" says_err "$home/.config/infertop/cluster.conf"
check "it offers the demo" says_err "infertop demo "
check "it gives the command that installs the example file" \
    says_err "mkdir -p $home/.config/infertop && cp $INFERTOP_ROOT/contrib/cluster.example.conf $home/.config/infertop/cluster.conf"
check "it names -c" says_err "infertop -c FILE"
check "it does not ask without a terminal" sh -c "! grep -q 'Start the demo' '$tmp/err'"
check "nothing on standard output" [ ! -s "$tmp/out" ]

cap() { T capture-pane -p -t "$1"; }
says() { cap "$1" | grep -qE "$2"; }
both_up() { says "$1" 'stage0 +up ' && says "$1" 'stage1 +up '; }
no_stages_left() { ! pgrep -f "$tmp/infertop-demo" >/dev/null 2>&1; }

T -f "$tmp/tmux.conf" new-session -d -s A -x 120 -y 40 \
    "env -u XDG_CONFIG_HOME HOME=$home XDG_RUNTIME_DIR=$tmp LC_ALL=C.UTF-8 infertop; echo \$? >$tmp/a.rc"
check "on a terminal it asks whether to start the demo" wait_for 100 says A 'Start the demo now\? \[y/N\]'
T send-keys -t A y Enter
check "y starts the demo: both stages up" wait_for 300 both_up A
check "the demo's history is its own database under the runtime directory" test -s "$demo_db"
check "the demo never opens the user's history" [ ! -e "$user_db" ]
check "the demo's events name its history" wait_for 30 says A "run history $demo_db"
T send-keys -t A q
check "q ends the demo" wait_for 100 test -s "$tmp/a.rc"
check "with status 0" [ "$(cat "$tmp/a.rc")" = 0 ]
check "no inferd is left" wait_for 30 no_stages_left
check "the demo's history is kept for \`history --db\`" \
    sh -c "infertop history --db '$demo_db' list >/dev/null"
check "still no user history" [ ! -e "$user_db" ]

finish
