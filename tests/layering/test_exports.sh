#!/bin/sh
# test_exports.sh: every name this tree's objects export is used by another
# file (exports.sh), and the check names one that is not, on a small tree
# made for it, without taking a test's or a token-pasted use for none.
. "$(dirname "$0")/lib.sh"
check=$here/exports.sh

if out=$(sh "$check" -r "$root" -b "$B" 2>&1); then
    ok "this tree exports only names other files use ($out)"
else
    bad "this tree exports only names other files use: $out"
fi

# A tree of three files: a.c exports four names; b.c calls one by name and
# one through a pasted token; a test names the third; the fourth is a.c's
# alone.
t=$tmp/t
mkdir -p "$t/engine/x" "$t/tests" "$tmp/b/engine/x"
cat >"$t/engine/x/a.c" <<'C'
int x_called(void) { return 1; }
int x_pasted(void) { return 2; }
int x_tested(void) { return 3; }
int x_alone(void) { return 4; }
static int x_private(void) { return x_alone(); }
int (*x_keep)(void) = x_private;
C
cat >"$t/engine/x/b.c" <<'C'
int x_called(void);
int x_pasted(void);
#define CALL(n) x_##n()
int x_user(void) { return x_called() + CALL(pasted); }
C
printf 'int x_tested(void);\nint main(void) { return x_tested() + x_user(); }\n' >"$t/tests/t.c"
printf 'int x_keep;\n' >>"$t/tests/t.c"
for f in a b; do
    ${CC:-cc} -c -o "$tmp/b/engine/x/$f.o" "$t/engine/x/$f.c" || bad "compile $f.c"
done
out=$(sh "$check" -r "$t" -b "$tmp/b" 2>&1); rc=$?
if [ $rc = 1 ] && printf '%s\n' "$out" | grep -q '^engine/x/a.c: x_alone is used by no other file'; then
    ok "a name used only in its own file is named"
else
    bad "a name used only in its own file is named (exit $rc): $out"
fi
for name in x_called x_pasted x_tested x_user x_keep; do
    if [ $rc = 1 ] && ! printf '%s\n' "$out" | grep -q " $name "; then
        ok "$name is used elsewhere and not named"
    else
        bad "$name is used elsewhere, yet named (exit $rc): $out"
    fi
done

finish
