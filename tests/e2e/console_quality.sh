#!/bin/sh
# End to end: quality in the console, driven through tmux (a private
# server socket, as console_tmux.sh), on a demo ring of 2 stages.
#   - a headless `stress quality --kv-bits 32,4` against the demo's
#     cluster file records a quality run;
#   - the History view (H) shows its settings beside their speed (the
#     quality table's titles, kv_bits 4's KL), and v charts the KL by
#     depth;
#   - the Config view (c): while kv_bits is edited (Enter, b cycles it),
#     the edit line shows the last measurement of the target setting on
#     the model, or that there is none; Esc drops the draft;
#   - the Stress view starts a quality run (mode quality, its kv-bits
#     field 16,4, its ctx field 128: windows as short as the headless
#     run's, the whole text as one window took minutes) on the built-in
#     text and shows the first setting's quality once measured; a aborts
#     the second measurement;
#   - q exits 0.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

cap() { T capture-pane -p -t A; }
says() { cap | grep -q -e "$1"; }
says_e() { cap | grep -qE "$1"; }
both_up() { [ "$(cap | grep -cE 'stage[01] +(inferd +)?up ')" = 2 ]; }

DB="$tmp/history.db"
CONF="$tmp/demo.conf"
T -f "$tmp/tmux.conf" new-session -d -s A -x 140 -y 40 -c "$tmp" \
    "env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop demo --stages 2 -d 0.1 --db $DB --write-config $CONF; echo \$? >$tmp/a.rc"
check "demo: both stages up" wait_for 300 both_up

text="$tmp/text.txt"
head -n 40 "$root/contrib/quality/text-en.txt" >"$text"
infertop stress quality --kv-bits 32,4 --text "$text" --ctx 128 --bucket 32 -c "$CONF" \
    --db "$DB" >"$tmp/q.out" 2>"$tmp/q.err"
check "a headless quality run against the demo's ring completes" [ $? = 0 ]
kl4=$(sqlite3 "$DB" "SELECT printf('%.3g', kl_mean) FROM quality WHERE kv_bits = 4")

T send-keys -t A H
check "the History view shows the run's quality table beside its speed" \
    wait_for 50 says 'speed.*| quality against kv_bits 32'
check "kv_bits 4's KL mean ($kl4) on its row" wait_for 30 says "^1 *4 .*| *$kl4 "
T send-keys -t A v
check "v charts the KL by depth" wait_for 30 says 'KL by depth'

# Config: Enter on the first node's row, b cycles kv_bits (16 -> 8 -> 4 -> 32 ...)
T send-keys -t A c
check "c opens the Config view" wait_for 30 says 'kv_bits'
# cycle_to TEXT: b until the screen says TEXT, at most once round kv_bits.
cycle_to() {
    n=0
    while [ $n -lt 4 ] && ! says "$1"; do
        T send-keys -t A b
        sleep 0.3
        n=$((n + 1))
    done
}
T send-keys -t A Enter b
cycle_to "kv_bits 4 on stories260K: KL mean $kl4"
check "while kv_bits is edited to 4 the last measurement shows (KL mean $kl4, run 1)" \
    wait_for 30 says "kv_bits 4 on stories260K: KL mean $kl4 .*run 1"
cycle_to "no quality measured"
check "a setting never measured (16) says so" \
    wait_for 30 says "kv_bits 16: no quality measured on stories260K yet"
T send-keys -t A Escape
check "Esc drops the draft and the line" wait_for 30 sh -c "! tmux -L $SOCK capture-pane -p -t A | grep -q 'no quality measured'"
# Stress view: mode cycles to quality (growth, fixed, soak, sweep, quality);
# its kv-bits field is the form's 16,4; start (the last row).
T send-keys -t A s
wait_for 30 says 'stress run'
T send-keys -t A g Enter Enter Enter Enter
check "the form's mode takes quality" wait_for 30 says_e '^mode +quality'
# ctx: the seventh row up from start (the last).
T send-keys -t A G k k k k k k k Enter 1 2 8 Enter
check "the form's ctx takes 128" wait_for 30 says_e '^ctx +128'
T send-keys -t A G Enter
measured() {
    [ "$(sqlite3 "$DB" "SELECT count(*) FROM quality WHERE run = 2 AND kv_bits = 16
        AND ctx = 128 AND text_name = 'text-en.txt'" 2>/dev/null)" = 1 ]
}
check "a quality run started from the console records kv_bits 16 on the built-in text, ctx 128" \
    wait_for 1200 measured
check "the Stress view shows the measured setting's quality" \
    wait_for 30 says 'quality against kv_bits 32'
# The second setting's measurement is cancelled: the run ends aborted.
T send-keys -t A a
check "a aborts the quality run" wait_for 300 says_e 'run 2 quality +aborted'
T send-keys -t A q
check "the console exits with status 0" wait_for 100 sh -c "[ \"\$(cat $tmp/a.rc 2>/dev/null)\" = 0 ]"
finish
