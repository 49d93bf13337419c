#!/bin/sh
# End to end: the console on a live demo ring, driven through tmux.
#
# A detached tmux session of fixed size (its own server socket, so a user's
# tmux is never touched) runs `infertop demo --stages 2`; the test reads
# the screen with capture-pane, polling with bounded retries, and:
#   - sees both stages up with non-zero steps/s, a busy percentage and a
#     batch size (sequences per step, at least 1) on each row;
#   - opens the node view (Enter) and sees its busy % and batch charts,
#     with data, and the node's busy and batch among its facts;
#   - sets kv_bits 4 on all nodes with keys (config view, all-nodes row),
#     and sees 4 on the dashboard and in `infertop status --json`;
#   - `infertop set` does the same headless, with exit code 0;
#   - kills one stage's process and sees it down before heartbeats alone
#     would mark it (the demo reaps it);
#   - resizes to 80x24 and 200x60 and checks the layout fills the window;
#   - drives the navigation keys: -d and +/- (the header shows the
#     interval), / filters rows, > and I sort and reverse, p freezes the
#     numbers (and unfreezes them), y shows a node's raw status, digits
#     switch views outside a field and are typed inside one (Config, Plan);
#   - quits with F10: exit status 0, no inferd left;
# then a second demo with --no-color --ascii --readonly shows no byte
# >= 0x80 and no colour, refuses a config change, and when the console is
# killed outright (SIGKILL) its stages die with it.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

cap() { T capture-pane -p -t "$1"; }
pane() { T display-message -p -t "$1" "$2"; }


# The dashboard row of a stage, by its state's word.
row_of() { cap "$1" | grep -E "stage$2 +(up|down|stale|starting) " | head -n 1; }
# The value in a right-aligned column (busy, batch, steps/s) of a stage's
# row: it ends where the column's title ends. The selection glyph before
# a name is one column but several bytes: it becomes a space first.
cell() { # SESSION STAGE TITLE
    cap "$1" | LC_ALL=C sed 's/^[^ -~][^ -~]*/ /' |
        awk -v st="stage$2" -v t="$3" '
            /^node / && !end { end = index($0, t) + length(t) - 1; next }
            end && ($1 == st || substr($1, 2) == st) { n = split(substr($0, 1, end), f, " "); print f[n]; exit }'
}
up_and_stepping() { # SESSION STAGE
    row_of "$1" "$2" | grep -qE "stage$2 +up " &&
        awk -v v="$(cell "$1" "$2" 'steps/s')" 'BEGIN { exit !(v + 0 > 0) }'
}
both_stepping() { up_and_stepping "$1" 0 && up_and_stepping "$1" 1; }
# A percentage while the demo's requests run (a node idle for 2 s says idle).
busy_is_percent() { cell "$1" "$2" busy | grep -qE '^[0-9]+%$'; }
both_busy() { busy_is_percent "$1" 0 && busy_is_percent "$1" 1; }
# Sequences per step: a mean of at least one.
batch_at_least_one() {
    awk -v v="$(cell "$1" "$2" batch)" 'BEGIN { exit !(v ~ /^[0-9]+(\.[0-9])?$/ && v + 0 >= 1) }'
}
both_batch() { batch_at_least_one "$1" 0 && batch_at_least_one "$1" 1; }
# The node view's load charts: their titles on one row, and below them
# the busy axis (to 100%) and the batch axis labelled with the largest
# batch (none when the chart has no data).
load_charts() {
    cap "$1" | grep -A1 -E 'busy % +── model/wall +batch +── seqs/step' | tail -n 1 |
        grep -qE '^ *100%│.* [0-9]+(\.[0-9]+)?│'
}
busy_fact() { cap "$1" | grep -qE 'busy +([0-9]+%|idle), batch [0-9]+\.[0-9]'; }
# kv_bits then prefill_step 512 (the demo's, never changed here) on the row.
row_kv_is() { row_of "$1" "$2" | grep -qE "[^0-9]$3 +512( |$)"; }
both_kv() { row_kv_is "$1" 0 "$2" && row_kv_is "$1" 1 "$2"; }
status_kv() { # CONF: the kv_bits of both nodes, tab-separated
    infertop status -c "$1" --json | get nodes.0.config.kv_bits nodes.1.config.kv_bits
}
status_kv_is() { [ "$(status_kv "$1")" = "$(printf '%s\t%s' "$2" "$2")" ]; }
# The n-th pidfile the cluster file names.
pid_of_stage() { cat "$(sed -n 's/^pidfile = //p' "$1" | sed -n "$(($2 + 1))p")"; }
stages_left() { pgrep -f "$tmp/infertop-demo" >/dev/null 2>&1; }
no_stages_left() { ! stages_left; }
says() { cap "$1" | grep -q "$2"; }

# The layout fills a COLSxROWS window: as many lines, none wider, the
# header (the node count) on the first line, the footer's keys on the last,
# both stages.
layout_ok() { # SESSION COLS ROWS
    s=$(cap "$1")
    [ "$(printf '%s\n' "$s" | wc -l)" -eq "$3" ] &&
        [ "$(printf '%s\n' "$s" | LC_ALL=C.UTF-8 wc -L)" -le "$2" ] &&
        printf '%s\n' "$s" | head -n 1 | grep -q 'nodes [0-9]/2 up' &&
        printf '%s\n' "$s" | tail -n 1 | grep -q 'q quit' &&
        printf '%s\n' "$s" | grep -q 'stage0' && printf '%s\n' "$s" | grep -q 'stage1'
}
resized() { # SESSION COLS ROWS
    T resize-window -t "$1" -x "$2" -y "$3" && wait_for 50 layout_ok "$1" "$2" "$3"
}

# A colour is SGR 30-38, 40-48, 90-97 or 100-107 (39 and 49 are the default).
COLOUR_SGR='\[([0-9]+;)*(3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]'

# ---- run A: colour, UTF-8 ------------------------------------------------
A_CONF="$tmp/a.conf"
# The exit status goes to a file: tmux does not always reap a console
# built with the sanitizers (make asan) in time to report it.
T -f "$tmp/tmux.conf" new-session -d -s A -x 120 -y 40 \
    "env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop demo --stages 2 -d 0.5 --write-config $A_CONF; echo \$? >$tmp/a.rc"

check "demo: both stages up with non-zero steps/s" wait_for 300 both_stepping A
check "dashboard: a busy percentage on both rows" wait_for 100 both_busy A
check "dashboard: a batch size (sequences per step, >= 1) on both rows" wait_for 50 both_batch A

T send-keys -t A Enter
check "node view: busy % and batch charts, with data" wait_for 50 load_charts A
check "node view: the node's busy and batch among its facts" busy_fact A
T send-keys -t A d
wait_for 30 says A 'events ──'

# The same pattern as the --no-color check below, which this shows can match.
check "colour by default" sh -c "tmux -L $SOCK capture-pane -p -e -t A | grep -qE \"$COLOUR_SGR\""

# ---- navigation keys (issue 28) ----
check "-d 0.5: the header shows the refresh interval" says A 'every 0\.5s'
T send-keys -t A +
check "+ lengthens the refresh interval" wait_for 30 says A 'every 1\.0s'
T send-keys -t A -
wait_for 30 says A 'every 0\.5s'
# The node rows, top to bottom, are named NAMES (e.g. "stage1 stage0 ").
rows_are() { # SESSION NAMES
    [ "$(cap "$1" | grep -oE '^.?stage[0-9]+ ' | tr -dc 'stage0-9\n' | tr '\n' ' ')" = "$2" ]
}
T send-keys -t A / s t a g e 1 Enter
check "/ stage1: the filter leaves one row" wait_for 30 rows_are A 'stage1 '
T send-keys -t A Escape
check "Esc clears the filter" wait_for 30 rows_are A 'stage0 stage1 '
T send-keys -t A '>' I
check "> then I: sorted by name, reversed" wait_for 30 rows_are A 'stage1 stage0 '
check "the sort column's title is marked" says A 'node▾ '
T send-keys -t A '<' I
check "< back to the cluster's order" wait_for 30 rows_are A 'stage0 stage1 '
# Paused, two captures 2 s apart show the same numbers; running, not.
node_rows() { cap "$1" | grep -E '^.?stage[01] '; }
T send-keys -t A p
wait_for 30 says A PAUSED
node_rows A >"$tmp/p1"
sleep 2
node_rows A >"$tmp/p2"
check "p: paused, the numbers stay put" cmp -s "$tmp/p1" "$tmp/p2"
# Going to another view and back redraws the same moment, not the live one.
T send-keys -t A e
wait_for 30 says A 'Events'
sleep 1
T send-keys -t A d
wait_for 30 says A PAUSED
node_rows A >"$tmp/p3"
check "p: keys while paused redraw the paused moment" cmp -s "$tmp/p1" "$tmp/p3"
T send-keys -t A p
wait_for 30 sh -c "! tmux -L $SOCK capture-pane -p -t A | grep -q PAUSED"
node_rows A >"$tmp/p1"
sleep 2
node_rows A >"$tmp/p2"
check "p again: the numbers move" sh -c "! cmp -s $tmp/p1 $tmp/p2"
# The filter left stage1 selected (its row was the only one).
T send-keys -t A y
check "y: the selected node's raw status" wait_for 30 says A '"node": "stage1"'
T send-keys -t A Escape
wait_for 30 sh -c "! tmux -L $SOCK capture-pane -p -t A | grep -q 'raw status'"
# Digits: outside a field they switch views, in a focused field they are typed.
T send-keys -t A 7
wait_for 30 says A 'target context \['
T send-keys -t A 1
check "Plan: 1 outside a field switches to the dashboard" wait_for 30 says A 'events ──'
T send-keys -t A 7 Enter 1 2
check "Plan: in the focused field digits are typed" wait_for 30 says A 'target context \[12_\]'
T send-keys -t A Escape c
wait_for 30 says A 'all nodes'
T send-keys -t A 1
check "Config: 1 outside a field switches to the dashboard" wait_for 30 says A 'events ──'

# Config view, the all-nodes row (last), the kv_bits field, Enter to
# edit it, 4, Enter.
T send-keys -t A c
wait_for 30 says A 'all nodes'
T send-keys -t A G l Enter 4 Enter
check "keys: config view shows kv_bits 4 confirmed on both stages" \
    wait_for 100 sh -c "tmux -L $SOCK capture-pane -p -t A | grep -cE 'stage[01] .*confirmed kv_bits=4' | grep -qx 2"
T send-keys -t A Escape d
check "keys: dashboard shows kv_bits 4 on both stages" wait_for 50 both_kv A 4
check "status --json shows kv_bits 4 on both nodes" status_kv_is "$A_CONF" 4

infertop set -c "$A_CONF" all kv_bits=8 >"$tmp/set.out" 2>&1
check "set all kv_bits=8 exits 0" [ $? -eq 0 ]
check "status --json then shows kv_bits 8" status_kv_is "$A_CONF" 8
check "the dashboard follows the headless set" wait_for 50 both_kv A 8

# The demo reaps its stages, so a killed one is down at once, where
# heartbeats alone would take STATE_DOWN_S (10 s): 8 s tells the two apart
# and leaves a loaded machine room. A heartbeat the stage sent just before
# it died, read after the reap, must not bring it back as stale.
kill -9 "$(pid_of_stage "$A_CONF" 1)"
check "a killed stage shows down before its heartbeats could say so" wait_for 80 sh -c \
    "tmux -L $SOCK capture-pane -p -t A | grep -qE 'stage1 +down '"

check "80x24 keeps a correct layout" resized A 80 24
check "200x60 keeps a correct layout" resized A 200 60

T send-keys -t A F10
check "F10 exits the console" wait_for 100 test -s "$tmp/a.rc"
check "the console exits with status 0" [ "$(cat "$tmp/a.rc")" = 0 ]
check "no inferd is left after q" wait_for 30 no_stages_left

# ---- run B: --no-color --ascii --readonly ----------------------------------
B_CONF="$tmp/b.conf"
T new-session -d -s B -x 120 -y 40 \
    "exec env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop demo --stages 2 --no-color --ascii --readonly --write-config $B_CONF"
check "ascii demo: both stages up with non-zero steps/s" wait_for 300 both_stepping B
check "--ascii: no byte >= 0x80 on the screen" \
    [ "$(cap B | LC_ALL=C tr -d '\000-\177' | wc -c)" -eq 0 ]
check "--no-color: no colour escapes on the screen" \
    sh -c "! tmux -L $SOCK capture-pane -p -e -t B | grep -qE \"$COLOUR_SGR\""

T send-keys -t B c
wait_for 30 says B 'all nodes'
T send-keys -t B G l Enter
check "--readonly: the config change is refused on screen" wait_for 50 says B 'read-only'
check "--readonly: the nodes keep kv_bits 16" status_kv_is "$B_CONF" 16

kill -9 "$(pane B '#{pane_pid}')"
check "a console killed outright takes its stages down" wait_for 50 no_stages_left

finish
