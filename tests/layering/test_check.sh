#!/bin/sh
# test_check.sh: the layering check passes on this tree, and fails, naming
# the file and the rule, on a copy of it with one deliberate mistake each.
. "$(dirname "$0")/lib.sh"
check=$here/check.sh

# The real tree, with the calls read from the build's objects.
if out=$(sh "$check" -r "$root" -b "$B" 2>&1) && ! printf '%s' "$out" | grep -q 'not checked'; then
    ok "this tree follows the rules ($out)"
else
    bad "this tree follows the rules: $out"
fi

# copy: a fresh copy of the sources and rules at $tmp/t, and an empty build.
copy() {
    rm -rf "$tmp/t" "$tmp/b"
    mkdir -p "$tmp/t/tests/layering" "$tmp/b"
    (cd "$root" && tar cf - engine tui store) | (cd "$tmp/t" && tar xf -)
    cp "$root/tests/layering/rules" "$tmp/t/tests/layering/"
}
# refused NAME PATTERN: the check fails on $tmp/t and says PATTERN.
refused() {
    out=$(sh "$check" -r "$tmp/t" -b "$tmp/b" 2>&1); rc=$?
    if [ $rc = 1 ] && printf '%s\n' "$out" | grep -qE "$2"; then
        ok "$1"
    else
        bad "$1 (exit $rc): $out"
    fi
}
# add FILE LINE: LINE becomes FILE's first line.
add() { printf '%s\n' "$2" | cat - "$tmp/t/$1" >"$tmp/t/$1.new" && mv "$tmp/t/$1.new" "$tmp/t/$1"; }

copy
out=$(sh "$check" -r "$tmp/t" -b "$tmp/b" 2>&1)
case $out in *follow*) ok "the copy passes before any change" ;; *) bad "the copy passes: $out" ;; esac

copy; add engine/compute/kvcache.c '#include <curses.h>'
refused "curses outside the views" \
    'engine/compute/kvcache.c \(engine/compute\) includes <curses.h>: only tui/views may'
copy; add engine/compute/forward.c '#include <zmq.h>'
refused "ZeroMQ in the model math" 'engine/compute/forward.c .* includes <zmq.h>'
copy; add engine/compute/attention.c '#include <jansson.h>'
refused "JSON in the model math" 'engine/compute/attention.c .* includes <jansson.h>'
copy; add store/db.c '#include "tui/core/state.h"'
refused "the store including the console" 'store/db.c \(store\) includes tui/core/state.h: store may not use tui/core'
copy; add engine/proto/protocol.c '#include "engine/node/node.h"'
refused "the protocol including the node server" 'engine/proto may not use engine/node'
copy; add engine/compute/kvcache.h '#include "attention.h"'
refused "an include cycle between two files" 'includes run in a cycle'
copy; add engine/sys/clock.c '#include "no/such.h"'
refused "an include of no file" 'engine/sys/clock.c includes "no/such.h", which is no file of the tree'
copy; mkdir -p "$tmp/t/tui/extra"; echo 'int extra;' >"$tmp/t/tui/extra/x.c"
refused "a file in no part" 'tui/extra/x.c is in no part'

# Calls, read from objects: two files that call each other without
# including each other's headers, and a call across parts with no include.
copy
printf 'int b_f(int);\nint a_f(int x) { return x ? b_f(x - 1) : 0; }\n' >"$tmp/t/engine/sys/a.c"
printf 'int a_f(int);\nint b_f(int x) { return x ? a_f(x - 1) : 1; }\n' >"$tmp/t/engine/sys/b.c"
mkdir -p "$tmp/b/engine/sys"
${CC:-cc} -c -o "$tmp/b/engine/sys/a.o" "$tmp/t/engine/sys/a.c" &&
    ${CC:-cc} -c -o "$tmp/b/engine/sys/b.o" "$tmp/t/engine/sys/b.c"
refused "a call cycle between object files" 'calls between object files run in a cycle'
copy
printf 'int node_f(void);\nint compute_f(void) { return node_f(); }\n' >"$tmp/t/engine/compute/c.c"
printf 'int node_f(void) { return 1; }\n' >"$tmp/t/engine/node/n.c"
mkdir -p "$tmp/b/engine/compute" "$tmp/b/engine/node"
${CC:-cc} -c -o "$tmp/b/engine/compute/c.o" "$tmp/t/engine/compute/c.c" &&
    ${CC:-cc} -c -o "$tmp/b/engine/node/n.o" "$tmp/t/engine/node/n.c"
refused "a call across parts the rules forbid" \
    'engine/compute/c \(engine/compute\) calls into engine/node/n \(engine/node\)'

finish
