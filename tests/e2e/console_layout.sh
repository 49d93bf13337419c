#!/bin/sh
# End to end: every view of the console on a live demo ring at 120x40,
# 200x60 and 80x24, and its alerts, driven through tmux.
#
# While a sampler reads the header every half second for 30 s, the test
# visits each view (Tab, from the dashboard round to it again) at each
# size and checks:
#   - the layout fills the window (as many lines as rows, none wider);
#   - at 120x40 and 200x60 no line is cut off: no cell holds the ellipsis
#     the console writes where it cuts a text short (draw_text). Columns
#     the dashboard gives up for width leave no mark (the man page's
#     order, which the unit test test_columns.c checks), so they pass;
#     80x24 may cut texts, and is checked for its layout only;
#   - the header keeps its fields in place and the model whole (120x40);
#   - the Plan view's titles apart and its contexts short (no 7 digits);
#   - the node view's facts whole at 200 columns.
# The sampler must have seen `alerts 0` in every sample (the demo has
# nothing wrong: the measured alerts need a ratio, a floor and
# alert_hold samples, 3 s by default: 30 s is ten times that, and the
# visits take less, so a longer watch only made the test wait). Then a killed stage raises an alert within 3 s.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/tmux.sh"

cap() { T capture-pane -p -t "$1"; }
says() { cap "$1" | grep -q "$2"; }
ELLIPSIS=$(printf '\342\200\246')

# The layout fills a COLSxROWS window.
fills() { # SESSION COLS ROWS
    s=$(cap "$1")
    [ "$(printf '%s\n' "$s" | wc -l)" -eq "$3" ] &&
        [ "$(printf '%s\n' "$s" | LC_ALL=C.UTF-8 wc -L)" -le "$2" ]
}
# No cut text on the screen; the cut lines are printed when there are.
uncut() { # SESSION
    if cap "$1" | grep -F "$ELLIPSIS" >"$tmp/cut"; then
        sed 's/^/     cut: /' "$tmp/cut"
        return 1
    fi
}
up_both() { cap "$1" | grep -cE '^.stage[01] +up ' | grep -qx 2; }

# Each view, in Tab order from the dashboard, by a text only it shows.
VIEWS="node:decode_ms config:all_nodes events:filter: stress:stress_run history:sort:
plan:target_context dashboard:events_──"

visit_all() { # SESSION COLS ROWS
    for v in $VIEWS; do
        name=${v%%:*}
        mark=$(printf '%s' "${v#*:}" | tr _ ' ')
        T send-keys -t "$1" Tab
        check "$2x$3 $name view: shown" wait_for 30 says "$1" "$mark"
        check "$2x$3 $name view: fills the window" fills "$1" "$2" "$3"
        [ "$2" -ge 120 ] && check "$2x$3 $name view: no line cut off" uncut "$1"
        case "$name@$2" in
        plan@*)
            check "$2x$3 plan: its titles apart" says "$1" 'node  *budget  *current layout'
            check "$2x$3 plan: contexts written short" sh -c \
                "! tmux -L $SOCK capture-pane -p -t $1 | sed -n '/^max context/,/^any layout/p' | grep -qE '[0-9]{7}'"
            ;;
        node@200)
            check "200 columns: the node's shape fact whole" says "$1" \
                'shape  *dim [0-9]*, [0-9]* heads ([0-9]* kv), seq [0-9]*'
            check "node view: the memory chart names the budget" says "$1" 'memory (budget '
            ;;
        dashboard@120)
            check "120x40: the header's model whole" sh -c \
                "tmux -L $SOCK capture-pane -p -t $1 | head -n 1 | grep -qE 'model [^ ]+ [^ ]+ *$'"
            ;;
        esac
    done
}

# Every half second for SECONDS, a line a sample: the header's alerts count,
# and any highlight's word on the screen (EVAL>MODEL, LOW MEM: the events
# pane's title lists them).
sample_alerts() { # SESSION SECONDS
    n=$(($2 * 2))
    while [ "$n" -gt 0 ]; do
        T capture-pane -p -t "$1" 2>/dev/null >"$tmp/sample"
        { head -n 1 "$tmp/sample" | grep -oE 'alerts [0-9]+'; } >>"$tmp/alerts"
        grep -oE 'EVAL>MODEL|LOW MEM' "$tmp/sample" >>"$tmp/alerts"
        sleep 0.5
        n=$((n - 1))
    done
}

CONF="$tmp/a.conf"
T -f "$tmp/tmux.conf" new-session -d -s A -x 120 -y 40 \
    "env LC_ALL=C.UTF-8 XDG_RUNTIME_DIR=$tmp infertop demo --stages 2 --write-config $CONF"
check "demo: both stages up" wait_for 300 up_both A

: >"$tmp/alerts"
sample_alerts A 30 &
sampler=$!
# The header's fields keep their columns whatever their values: the
# model's column, read twice a second apart, does not move.
model_col() { cap A | head -n 1 | awk '{ print index($0, "model ") }'; }
m1=$(model_col)
sleep 1
check "the header's fields stay in place" [ "$m1" -gt 0 -a "$m1" = "$(model_col)" ]

visit_all A 120 40
# The help overlay too: every key's line whole at 120 columns.
T send-keys -t A '?'
check "120x40 help: shown" wait_for 30 says A 'infertop help'
check "120x40 help: no line cut off" uncut A
T send-keys -t A Escape
T resize-window -t A -x 200 -y 60
check "200x60: resized" wait_for 50 fills A 200 60
visit_all A 200 60
T resize-window -t A -x 80 -y 24
check "80x24: resized" wait_for 50 fills A 80 24
visit_all A 80 24

wait "$sampler"
samples=$(grep -c '^alerts' "$tmp/alerts")
check "the demo's header read for 30 s ($samples samples)" [ "$samples" -ge 50 ]
check "no alert in 30 s of the demo" sh -c "! grep -v '^alerts 0$' $tmp/alerts"
grep -v '^alerts 0$' "$tmp/alerts" | sort | uniq -c | sed 's/^/     seen: /'

# A killed stage: the demo reaps it, and the down alert is not held.
pid=$(cat "$(sed -n 's/^pidfile = //p' "$CONF" | sed -n 2p)")
kill -9 "$pid"
check "a killed stage raises an alert within 3 s" wait_for 30 sh -c \
    "tmux -L $SOCK capture-pane -p -t A | head -n 1 | grep -qE 'alerts [1-9]'"
check "the events pane's title names it" says A 'alerts: stage1 DOWN'

T send-keys -t A q
finish
