#!/bin/sh
# End to end: the desired settings (tui/core/desired.h) on a 3-stage ring
# with the console running in tmux.
#   - a state file that does not parse stops `infertop set`, naming file
#     and line, and is left as it was; `status` says so too;
#   - `infertop set all kv_bits=8` records the setting of every stage;
#   - a set a node could not take (it is down) records nothing;
#   - the console's Config view records what it sets;
#   - a stage killed and restarted at its default comes back to the
#     desired kv_bits, re-applied through the head (both other stages log
#     the set too);
#   - a stage set behind the console's back shows its drift: `status`
#     (table and --json), the dashboard's `*`, the Config view's
#     "drift: desired ..." on its row and "mixed" on the all-nodes row.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

M="synth:dim=64,hidden=172,layers=3,heads=4,kv_heads=4,vocab=512,seed=3"
alloc_ports 9
ring3 d "$M"
for e in "$A" "$B" "$C"; do up "$e" || { fail "stage $e up"; finish; exit 1; }; done
ring_up "$A" || { fail "the ring answers"; finish; exit 1; }
conf="$tmp/ring.conf"
state="$conf.state"
cluster_conf "$conf" d d_a "$A" "$(ep "$P2")" d_b "$B" "$(ep "$P4")" d_c "$C" "$(ep "$P6")"
kv() { echo "$(call "$A" status | get config.kv_bits) $(call "$B" status | get config.kv_bits) $(call "$C" status | get config.kv_bits)"; }
# The kv_bits the state file records for NODE.
recorded() {
    awk -v s="[node $1]" '$0 == s { in_s = 1; next } /^\[/ { in_s = 0 }
        in_s && $1 == "kv_bits" { print $3 }' "$state"
}
k0=$(kv)

# ---- a state file that does not parse
printf '[node d_a]\nkv_bits = 8\nthis is no line of an INI file\n' >"$state"
cp "$state" "$tmp/corrupt.copy"
infertop set -c "$conf" all kv_bits=8 >"$tmp/corrupt" 2>&1
check "set with a corrupt state file fails" [ $? != 0 ]
check "... naming the file and its line ($(cat "$tmp/corrupt"))" grep -qF "$state:3:" "$tmp/corrupt"
check "... leaving the file as it was" cmp -s "$state" "$tmp/corrupt.copy"
check "... and every stage as it was ($k0)" [ "$(kv)" = "$k0" ]
infertop status -c "$conf" >/dev/null 2>"$tmp/status.err"
check "status fails too, naming file and line" \
    [ $? != 0 ] && grep -qF "$state:3:" "$tmp/status.err"
rm -f "$state"

# ---- set records what the stages took
infertop set -c "$conf" all kv_bits=8 >"$tmp/set8" 2>&1
check "set all kv_bits=8 applies ($(tr '\n' ' ' <"$tmp/set8"))" [ $? = 0 ]
check "every stage runs 8 bits" [ "$(kv)" = "8 8 8" ]
check "the state file records 8 for every stage" \
    [ "$(recorded d_a) $(recorded d_b) $(recorded d_c)" = "8 8 8" ]
infertop status -c "$conf" --json >"$tmp/st.json"
check "status --json: desired 8, no drift" \
    [ "$(get nodes.1.desired.kv_bits nodes.1.drift <"$tmp/st.json" | tr '\t' ' ')" = "8 null" ]

# ---- the console keeps the ring at it
T -f "$tmp/tmux.conf" new-session -d -s C -x 180 -y 40 \
    "env LC_ALL=C.UTF-8 infertop -c $conf; echo \$? >$tmp/c.rc"
cap() { T capture-pane -p -t C; }
says() { cap | grep -qE -- "$1"; }
check "the console shows the three stages up" wait_for 100 says "d_c +inferd +up "
applied() { grep -c '\[EVENT\] config_applied' "$tmp/$1.log"; }
a0=$(applied d_a)
c0=$(applied d_c)
stop d_b
ring3_b
up "$B" || { fail "d_b restarted"; finish; exit 1; }
t0=$(date +%s.%N)
b_is_8() { [ "$(call "$B" status | get config.kv_bits)" = 8 ]; }
check "the restarted stage comes back to the desired 8 bits" retry 100 b_is_8
t1=$(date +%s.%N)
echo "     (8 bits again $(echo "$t1 - $t0" | bc) s after the restarted stage first answered)"
check "... through the head: d_a and d_c applied the set too" \
    [ "$(applied d_a)" -gt "$a0" ] && [ "$(applied d_c)" -gt "$c0" ]
check "every stage runs 8 bits" [ "$(kv)" = "8 8 8" ]
# The re-apply confirmed by d_b's telemetry, before the next change.
T send-keys -t C c
check "Config: the re-apply is confirmed on d_b" wait_for 50 says "d_b .* 8 +live +confirmed kv_bits=8"
T send-keys -t C d

# ---- drift: d_b set behind the console's back
call "$B" set '{"kv_bits":16}' >/dev/null
infertop status -c "$conf" >"$tmp/st.txt"
check "status: d_b's row says it lacks kv_bits=8" grep -qE '^d_b .*want kv_bits=8' "$tmp/st.txt"
check "status: the others have no drift" \
    [ "$(grep -cE '^d_[ac] .* - +$' "$tmp/st.txt")" = 2 ]
infertop status -c "$conf" --json >"$tmp/st.json"
check "status --json: d_b's drift is kv_bits 8" \
    [ "$(get nodes.1.drift.kv_bits nodes.0.drift <"$tmp/st.json" | tr '\t' ' ')" = "8 null" ]
check "dashboard: d_b's kv_bits marked 16*" wait_for 50 says "^.?d_b .* 16\* "
T send-keys -t C c
check "Config: d_b's row shows its drift" wait_for 50 says "d_b .*16\* .*drift: desired kv_bits=8"
check "Config: the all-nodes row reads mixed" wait_for 30 says "all nodes .* mixed "
check "the console did not undo a change made on purpose" [ "$(kv)" = "8 16 8" ]

# ---- the Config view's own set is recorded
T send-keys -t C G l Enter 4 Enter
check "Config: kv_bits 4 confirmed on every stage" \
    wait_for 100 sh -c "tmux -L $SOCK capture-pane -p -t C | grep -cE 'd_[abc] .*confirmed kv_bits=4' | grep -qx 3"
check "the state file records the console's 4 for every stage" \
    wait_for 30 sh -c "[ \"\$(awk '\$1 == \"kv_bits\" { print \$3 }' $state | tr '\n' ' ')\" = '4 4 4 ' ]"

# ---- a set that does not reach its node records nothing
stop d_c
infertop set -c "$conf" --timeout 1 d_c kv_bits=16 >"$tmp/down" 2>&1
check "set to a stopped stage fails" [ $? != 0 ]
check "... and records nothing" [ "$(recorded d_c)" = 4 ]

T send-keys -t C q
check "q quits the console with status 0" wait_for 100 test -s "$tmp/c.rc"
check "... 0" [ "$(cat "$tmp/c.rc")" = 0 ]
finish
