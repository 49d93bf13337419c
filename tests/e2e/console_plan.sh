#!/bin/sh
# End to end: the console's Plan view (key 7), in tmux, on a 3-stage ring
# of a synthetic model whose stages are real sshd's nodes (127.0.0.2, .3,
# .4), the middle one with a quarter of the others' memory.
#  - in a --readonly console, `a` is refused;
#  - the view shows the current and the planned layout, a bar per node;
#  - editing the target context updates them: at 34000 positions the even
#    split does not fit b (OVER), the plan gives b one layer;
#  - `a` asks y/n, `y` applies: the ring restarts on the planned layout,
#    the view shows the apply's progress and then the current layout fits;
#    the cluster file has the new layers.
# The budgets leave room for the runtime memory of a stage (measured from
# its status) anywhere from 15 to 100 MiB, so that the plan is the same
# under the sanitizers: 1 layer fits b at the target, 2 do not.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/sshd.sh"

M="synth:dim=384,hidden=64,layers=6,heads=6,kv_heads=6,vocab=256"
run="$tmp/run"
mkdir -p "$run" "$tmp/home"
user=$(id -un)
. "$(dirname "$0")/lib/tmux.sh"

console_cleanup_extra() {
    for f in "$run"/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    done
}

export HOME="$tmp/home"
unset SSH_AUTH_SOCK

alloc_ports 3
BASE=$("$CTL" portrun 3) || { fail "three consecutive free ports"; finish; exit 1; }
sshd_keys || { fail "ssh keys"; finish; exit 1; }
sshd_start a 127.0.0.2 "$P1" && sshd_start b 127.0.0.3 "$P2" && sshd_start c 127.0.0.4 "$P3" ||
    { fail "three sshd started"; finish; exit 1; }

conf="$tmp/cluster.conf"
{
    cat <<EOF
[cluster]
name = planview
base_port = $BASE
model = $M
inferd = $(command -v inferd)
threads = 1
flags = --kv-bits 32 --prefill-step 256
identity = $tmp/ssh/id
known_hosts = $tmp/ssh/known_hosts
accept_new = yes
EOF
    i=0
    for n in a b c; do
        i=$((i + 1))
        eval "port=\$P$i"
        limit=984M
        [ $n = b ] && limit=246M
        printf '\n[node %s]\nhost = 127.0.0.%d\nssh = %s@:%s\nlayers = %d:%d\nmem_limit = %s\n' \
            "$n" $((i + 1)) "$user" "$port" $((2 * i - 2)) $((2 * i)) "$limit"
        printf 'log = %s/%s.log\npidfile = %s/%s.pid\n' "$run" "$n" "$run" "$n"
    done
} >"$conf"
ctl_b=tcp://127.0.0.3:$BASE

infertop nodes start all -c "$conf" >"$tmp/start" 2>&1
check "the ring starts over SSH" [ $? = 0 ]
for h in 2 3 4; do up "tcp://127.0.0.$h:$BASE" || { fail "node 127.0.0.$h up"; finish; exit 1; }; done

cap() { T capture-pane -p -t C; }
says() { cap | grep -qF -- "$1"; }
says_e() { cap | grep -qE -- "$1"; }
# The node's row: NAME, its budget, then the current and the planned range.
row() { cap | grep -E "^$1 " | head -n 1; }
ranges_are() { row "$1" | grep -qE "^$1 +[0-9.]+M +$2 .* $3 "; }

# ---- read-only: no apply
T -f "$tmp/tmux.conf" new-session -d -s C -x 160 -y 40 \
    "env LC_ALL=C.UTF-8 infertop --readonly -c $conf; echo \$? >$tmp/ro.rc"
check "the read-only console opens" wait_for 100 says "planview"
T send-keys -t C 7
check "7 opens the Plan view" wait_for 50 says "target context [4096]"
T send-keys -t C a
check "a is refused in --readonly" wait_for 30 says "read-only: plan applies are disabled"
T send-keys -t C q
check "it quits" wait_for 50 test -s "$tmp/ro.rc"
tmux_kill

# ---- the view: current and planned, a bar per node
T -f "$tmp/tmux.conf" new-session -d -s C -x 160 -y 40 \
    "env LC_ALL=C.UTF-8 infertop -c $conf; echo \$? >$tmp/c.rc"
check "the console opens" wait_for 100 says "planview"
T send-keys -t C 7
check "the Plan view shows the target and kv_bits" wait_for 50 says "target context [4096]   kv_bits [32]"
check "at 4096 the even split fits" wait_for 50 says "current layout: fits"
check "... and is the plan: b 2:4 in both" wait_for 50 ranges_are b 2:4 2:4
check "each row has a memory bar with its free bytes" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -E '^c ' | grep -qE '[0-9.]+M +4:6 +[^ ]+ +[0-9.]+[MG] '"
check "the legend names the parts" says "KV at target"

# ---- editing the target context updates the bars
T send-keys -t C Enter 3 4 0 0 0 Enter
check "the target becomes 34000" wait_for 30 says "target context [34000]"
check "the even split no longer fits" wait_for 30 says "current layout: does not fit"
check "b is over its budget in the current layout" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t C | grep -E '^b ' | grep -q OVER"
check "the plan gives b one layer" wait_for 30 ranges_are b 2:4 2:3
check "... and a and c the rest" ranges_are a 0:2 0:2 && ranges_are c 4:6 3:6
check "the max-context table compares the layouts" says_e "^planned layout +[0-9.]+[kM]? +[0-9.]+[kM]? +[0-9.]+[kM]?"

# ---- a applies, with confirmation
T send-keys -t C a
check "a asks y/n with the ranges" wait_for 30 says "apply a 0:2, b 2:3, c 3:6, restarting every node over SSH? y/n"
T send-keys -t C y
check "the apply stops every node" wait_for 100 says "stopping every node"
check "the apply is reported done" wait_for 600 says "the plan is applied"
check "b runs layers 2:3" [ "$(call "$ctl_b" status | get model.layers)" = "[2,3]" ]
check "the cluster file gives b 2:3" \
    awk '$0 == "[node b]" { s = 1; next } /^\[/ { s = 0 } s && $0 == "layers = 2:3" { f = 1 } END { exit !f }' "$conf"
check "the current layout is now the plan" wait_for 100 ranges_are b 2:3 2:3
check "... and fits the target" wait_for 50 says "current layout: fits"

T send-keys -t C q
check "q exits the console" wait_for 100 test -s "$tmp/c.rc"
check "the console exits with status 0" [ "$(cat "$tmp/c.rc" 2>/dev/null)" = 0 ]
infertop nodes stop all -c "$conf" >/dev/null 2>&1
finish
