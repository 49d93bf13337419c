#!/bin/sh
# End to end, the field notes' memory-poor node (S5): a 3-stage ring of a
# synthetic model on loopback, each stage a real sshd's node (127.0.0.2,
# .3, .4) started from a cluster file of the second form; the middle
# stage's --mem-limit is a quarter of the others'.
#  - with the even split (2 + 2 + 2 layers), `infertop stress growth` to
#    the target stops with kv_oom on the poor node;
#  - the three stages share one host (one kernel): the plan's JSON
#    splits its memory between them, counting it once;
#  - an apply with a's sshd down checks every node first: it stops
#    nothing, names a, and leaves the file;
#  - an apply whose start fails on a node (planned for a model of 8
#    layers, which the nodes' 6-layer model refuses) restarts the old
#    layout, and the file still matches what runs;
#  - `infertop plan --ctx TARGET --apply` says the current layout does not
#    fit, gives the poor node fewer layers, restarts the ring over SSH
#    (check all, stop all, start tail to head, wait for the new ranges)
#    and updates the cluster file;
#  - the same growth run then reaches the target;
#  - both runs are in the history, and `history compare` shows the
#    difference.
# The model is small (6 layers of dim 384, 12 MiB of fp32 KV per layer at
# 4096 positions) so that memory, not time, is the limit.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/sshd.sh"

M="synth:dim=384,hidden=64,layers=6,heads=6,kv_heads=6,vocab=256"
TARGET=4096
MiB=1048576
DB="$tmp/history.db"
run="$tmp/run"
mkdir -p "$run" "$tmp/home"
user=$(id -un)

# The stages run over SSH, whose sessions do not inherit this environment:
# a wrapper gives them the AddressSanitizer options serve_guard.sh explains
# (without a quarantine, freed KV leaves RSS as the guard assumes).
cat >"$tmp/inferd" <<EOF
#!/bin/sh
ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
export ASAN_OPTIONS
exec $(command -v inferd) "\$@"
EOF
chmod +x "$tmp/inferd"

stop_stages() {
    for f in "$run"/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    done
    cleanup
}
trap stop_stages EXIT

export HOME="$tmp/home"
unset SSH_AUTH_SOCK

alloc_ports 3
BASE=$("$CTL" portrun 3) || { fail "three consecutive free ports"; finish; exit 1; }
sshd_keys || { fail "ssh keys"; finish; exit 1; }
sshd_start a 127.0.0.2 "$P1" && sshd_start b 127.0.0.3 "$P2" && sshd_start c 127.0.0.4 "$P3" ||
    { fail "three sshd started"; finish; exit 1; }

conf="$tmp/cluster.conf"
# write_conf LIMIT_A LIMIT_B LIMIT_C: the ring, split 2 + 2 + 2.
write_conf() {
    {
        cat <<EOF
# The field notes' ring: b is the memory-poor node.
[cluster]
name = s5
base_port = $BASE
model = $M
inferd = $tmp/inferd
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
            eval "limit=\$$i"
            printf '\n[node %s]\nhost = 127.0.0.%d\nssh = %s@:%s\nlayers = %d:%d\n' \
                "$n" $((i + 1)) "$user" "$port" $((2 * i - 2)) $((2 * i))
            [ "$limit" = 0 ] || printf 'mem_limit = %s\n' "$limit"
            printf 'log = %s/%s.log\npidfile = %s/%s.pid\n' "$run" "$n" "$run" "$n"
        done
    } >"$conf"
}
A=tcp://127.0.0.2:$BASE
ctl_of() { case $1 in a) echo "$A" ;; b) echo "tcp://127.0.0.3:$BASE" ;; c) echo "tcp://127.0.0.4:$BASE" ;; esac; }
all_up() { for n in a b c; do up "$(ctl_of $n)" || return 1; done; }
rss_of() { call "$(ctl_of "$1")" status | get memory.rss; }

# ---- the ring without limits: what a stage holds besides its KV
write_conf 0 0 0
infertop nodes start all -c "$conf" >"$tmp/start0" 2>&1
check "the ring starts over SSH from the derived command lines" [ $? = 0 ]
all_up || { fail "ring up"; cat "$tmp/start0"; finish; exit 1; }
call "$A" generate '{"synthetic_tokens":512,"max_tokens":1}' --timeout 60000 >"$tmp/warm"
check "a warm-up request through the ring" [ "$(get ok <"$tmp/warm" | tail -n 1)" = true ]
base=0
for n in a b c; do
    r=$(rss_of $n)
    [ "$r" -gt "$base" ] && base=$r
done

# ---- one host, three stages: its memory is counted once
infertop plan --ctx 512 -c "$conf" --json --no-ssh >"$tmp/hosts.json" 2>"$tmp/hosts.err"
check "plan --json on the unlimited ring (exit 0)" [ $? = 0 ]
avail=$(($(awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo) * 1024))
jq_() { jq -r "$1" "$tmp/hosts.json"; }
check "each stage knows it shares its host with 3" \
    [ "$(jq_ '[.planned.nodes[].host_nodes] | join(" ")')" = "3 3 3" ]
sum=$(jq_ '[.planned.nodes[].budget] | add')
check "the three budgets add up to the host's memory once ($sum <= $avail + 3 x $base + 10%)" \
    [ "$sum" -le $(((avail + 3 * base) / 10 * 11)) ]
check "... not three times: a budget is under half of MemAvailable" \
    [ $((sum / 3)) -lt $((avail / 2)) ]
check "a plan that fits names no short node" [ "$(jq_ .planned.short_node)" = null ]
# The file says $M; a node's status names its model in full (seq_len, seed).
check "the shape came from the nodes' status ($(jq_ .model))" [ "$(jq_ .model)" != "$M" ] &&
    [ "$(jq_ .model)" = "$(call "$A" status | get model.name)" ]

# b gets room for the 32 MiB reserve and one layer's KV at the target
# (12 MiB) with 6 MiB to spare; two layers' (24 MiB) do not fit.
poor=$((base + 50 * MiB))
rich=$((4 * poor))
write_conf "$rich" "$poor" "$rich"
infertop nodes restart all -c "$conf" >"$tmp/restart" 2>&1
check "restart with b's mem_limit a quarter of the others'" [ $? = 0 ]
all_up || { fail "ring up again"; cat "$tmp/restart"; finish; exit 1; }
check "b reports its budget ($poor)" [ "$(call "$(ctl_of b)" status | get memory.budget)" = "$poor" ]

# ---- the even split fails on b
infertop -c "$conf" stress growth --from 512 --to $TARGET --gen 4 --name even --db "$DB" \
    >"$tmp/even" 2>&1
check "growth on the even split fails (exit 5)" [ $? = 5 ]
q() { sqlite3 "$DB" "$1"; }
check "it stopped with kv_oom" \
    [ "$(q "SELECT error_code FROM requests WHERE run = 1 AND status <> 'ok'")" = kv_oom ]
q "SELECT error_message FROM requests WHERE run = 1 AND status <> 'ok'" >"$tmp/oom"
check "... on the poor node b: $(cat "$tmp/oom")" grep -q "stage 'b'" "$tmp/oom"
check "... short of the target" \
    [ "$(q "SELECT max(ctx_after) FROM requests WHERE run = 1 AND status = 'ok'")" -lt $TARGET ]

layers_of() { awk -v n="[node $1]" '$0 == n { s = 1; next } /^\[/ { s = 0 } s && $1 == "layers" { print $3 }' "$conf"; }
pids_now() { cat "$run"/a.pid "$run"/b.pid "$run"/c.pid | tr '\n' ' '; }
ranges_now() { for n in a b c; do call "$(ctl_of $n)" status | get model.layers; done | tr '\n' ' '; }
even="[0,2] [2,4] [4,6] "

# ---- an unreachable node: nothing is stopped, the node is named
sshd_stop a
before=$(cksum <"$conf")
# (not $pids: lib/serve.sh's list of what to stop at exit, the sshds included)
node_pids=$(pids_now)
infertop plan --ctx $TARGET -c "$conf" --apply --wait 20 >"$tmp/nossh" 2>&1
check "an apply with a's sshd down fails (exit 1)" [ $? = 1 ]
check "it names the node it could not check" grep -q "^apply failed: checking a: " "$tmp/nossh"
check "it stopped nothing" grep -q "^nothing was stopped" "$tmp/nossh" &&
    ! grep -q "^stopping" "$tmp/nossh"
check "every node still runs, same processes ($node_pids)" [ "$(pids_now)" = "$node_pids" ]
check "... with the old layers" [ "$(ranges_now)" = "$even" ]
check "the cluster file is as it was" [ "$(cksum <"$conf")" = "$before" ]
check "no staged file is left" [ ! -e "$conf.plan" ]
sshd_run a || { fail "a's sshd again"; finish; exit 1; }

# ---- a start that fails: the old layout runs again, the file matches it
M8=$(echo "$M" | sed 's/layers=6/layers=8/')
infertop plan --ctx $TARGET --model "$M8" -c "$conf" --apply --wait 20 >"$tmp/badstart" 2>&1
check "an apply whose start fails (exit 1)" [ $? = 1 ]
check "it names the start that failed" grep -q "^apply failed: starting c: " "$tmp/badstart"
check "it restarts the old layout" grep -q "^the old layout runs again" "$tmp/badstart"
check "every node runs the old layers again" [ "$(ranges_now)" = "$even" ]
check "the file is as it was, matching what runs" [ "$(cksum <"$conf")" = "$before" ] &&
    [ "$(layers_of a) $(layers_of b) $(layers_of c)" = "0:2 2:4 4:6" ]
check "no staged file is left after the failure" [ ! -e "$conf.plan" ]

# ---- plan and apply
infertop plan --ctx $TARGET -c "$conf" >"$tmp/plan" 2>&1
check "plan: the target fits (exit 0)" [ $? = 0 ]
check "plan: the current layout does not fit, b is short" \
    grep -q "^current layout: does not fit: b is short by" "$tmp/plan"
check "plan: budgets come from the nodes' status" [ "$(grep -c ' status ' "$tmp/plan")" = 6 ]
infertop plan --ctx $TARGET -c "$conf" --apply --wait 60 >"$tmp/apply" 2>&1
check "plan --apply succeeds (exit 0)" [ $? = 0 ]
check "apply checks every node, then stops them" grep -q "^checking every node" "$tmp/apply" &&
    grep -q "^stopping every node" "$tmp/apply"
check "apply starts the tail first and the head last" \
    [ "$(grep -o '^starting [abc]' "$tmp/apply" | tr '\n' ' ')" = "starting c starting b starting a " ]
check "apply waits for the new layers" grep -q "every node runs its layers" "$tmp/apply"
lb=$(layers_of b)
nb=$((${lb#*:} - ${lb%:*}))
check "the cluster file gives b fewer layers ($lb)" [ "$nb" -lt 2 ]
check "the file's ranges cover the model in ring order ($(layers_of a) $lb $(layers_of c))" \
    [ "$(layers_of a | cut -d: -f2)" = "${lb%:*}" ] && [ "${lb#*:}" = "$(layers_of c | cut -d: -f1)" ] &&
    [ "$(layers_of c | cut -d: -f2)" = 6 ]
check "b runs its new range" [ "$(call "$(ctl_of b)" status | get model.layers)" = "[${lb%:*},${lb#*:}]" ]
check "the comment in the file is kept" grep -q "^# The field notes' ring" "$conf"
check "no staged file is left" [ ! -e "$conf.plan" ]

# ---- the same growth run reaches the target
infertop -c "$conf" stress growth --from 512 --to $TARGET --gen 4 --name planned --db "$DB" \
    >"$tmp/planned" 2>&1
check "growth on the planned layout completes (exit 0)" [ $? = 0 ]
check "it reaches the target" \
    [ "$(q "SELECT max(ctx_after) FROM requests WHERE run = 2 AND status = 'ok'")" = $TARGET ]
infertop history --db "$DB" list >"$tmp/list"
check "both runs are in the history" \
    grep -qE "^ *1 .* failed .* even" "$tmp/list" && grep -qE "^ *2 .* completed .* planned" "$tmp/list"
infertop history --db "$DB" compare 1 2 --full >"$tmp/compare"
check "history compare shows the context reached, 2048 against $TARGET" \
    grep -qE "^run +max_context +2048 +$TARGET " "$tmp/compare"

finish
