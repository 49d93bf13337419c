#!/bin/sh
# End to end: the operator's kit in contrib/. Both man pages render, at
# the programs' version; every row of the settings table is in its verb's
# --help, man page section and bash and zsh completion, and no other flag
# is (all four are generated from the table: this proves it); the
# completions offer verbs, node names from the cluster file and run ids
# from the history; the systemd unit verifies and its flag file works;
# `make install` puts everything in place.
. "$(dirname "$0")/lib/serve.sh"

# ---- man pages render (as make builds them from contrib/man/*.1.in)
man="$root/${B:-build}/man"
for page in inferd infertop; do
    out=$(MANWIDTH=80 man --warnings -l "$man/$page.1" 2>"$tmp/man.err")
    rc=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    check "man -l renders $page(1) ($lines lines) without warnings" \
        [ "$rc:$(wc -c <"$tmp/man.err"):$([ "$lines" -gt 50 ] && echo long)" = "0:0:long" ]
    check "$page(1) is of the version $page --version reports" \
        [ "$(sed -n 's/^\.TH [A-Z]* 1 "[^"]*" "\([^"]*\)".*/\1/p' "$man/$page.1")" = "$("$page" --version | head -n 1)" ]
done

# ---- every row of the settings table, and nothing more
# The table's rows as optdoc lists them ("PROG|VERB|--FLAG", VERB "" for
# infertop's dashboard, "stress growth" for a mode): each must be in its
# verb's --help, man page section and completion, and nothing else may.
"$root/${B:-build}/tools/optdoc" list >"$tmp/rows"
check "optdoc lists the settings table's rows ($(wc -l <"$tmp/rows"))" [ "$(wc -l <"$tmp/rows")" -gt 100 ]
comp="$root/${B:-build}/completion"
cut -d'|' -f1,2 "$tmp/rows" | sort -u >"$tmp/verbs"

for prog in inferd infertop; do
    check "$prog(1) has a section for every verb of the table, and no other" \
        [ "$(sed -n "s/^\.SS \($prog\( .*\)*\)$/\1/p" "$man/$prog.1" | sort -u)" = \
          "$(grep "^$prog|" "$tmp/verbs" | tr '|' ' ' | sed 's/ $//' | sort -u)" ]
done

# The long flags of option lines: --help's ("  -c, --config FILE  ..."),
# and the man page's (the line after .TP; roff's \- is a hyphen).
help_flags() { sed -nE 's/^  (-[a-zA-Z], )?(--[a-z][a-z0-9-]*).*/\2/p'; }
man_flags() { awk 'prev == ".TP" { print } { prev = $0 }' | sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z0-9-]*'; }
# bash_complete, zsh_complete WORDS...: what TAB offers after WORDS (the
# last word is the one being completed).
bash_complete() {
    bash -c '. "$1/infertop.bash"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        if [ "$1" = inferd ]; then _inferd; else _infertop; fi
        [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' sh "$comp" "$@"
}
zsh_complete() {
    zsh -f -c 'fpath=("$1" $fpath); autoload -U _infertop; shift
        compadd() { shift; print -rl -- "$@"; }
        _files() { :; }
        service=$1; words=("$@"); CURRENT=$#words; _infertop' zsh "$comp" "$@" |
        sort | tr '\n' ' '
}
# differ WHAT WANT: the flags on stdin against the file WANT; what differs
# goes to $tmp/diff.
differ() {
    sort -u >"$tmp/got"
    m=$(comm -23 "$2" "$tmp/got" | tr '\n' ' ')
    x=$(comm -13 "$2" "$tmp/got" | tr '\n' ' ')
    [ -z "$m$x" ] || echo "$1${m:+ lacks $m}${x:+ shows ${x}not in the table}" >>"$tmp/diff"
}
while IFS='|' read -r prog verb; do
    awk -F'|' -v p="$prog" -v v="$verb" '$1 == p && $2 == v { print $3 }' "$tmp/rows" |
        sort -u >"$tmp/want"
    # The man page documents --help once, for every verb.
    grep -vx -- --help "$tmp/want" >"$tmp/want.man"
    : >"$tmp/diff"
    # $verb unquoted: a mode is two words ("stress growth").
    "$prog" $verb --help | help_flags | differ "--help" "$tmp/want"
    awk -v s=".SS $prog${verb:+ $verb}" '/^\.S[SH] / { on = $0 == s; next } on' "$man/$prog.1" |
        man_flags | differ "the man page" "$tmp/want.man"
    bash_complete "$prog" $verb -- | tr ' ' '\n' | differ "bash completion" "$tmp/want"
    zsh_complete "$prog" $verb -- | tr ' ' '\n' | differ "zsh completion" "$tmp/want"
    check "$prog ${verb:-(dashboard)}: --help, man page, bash and zsh completion show its $(wc -l <"$tmp/want") rows and no other flag$(sed 's/^/; /' "$tmp/diff" | tr -d '\n')" \
        [ ! -s "$tmp/diff" ]
done <"$tmp/verbs"

# ---- bash completion: verbs, node names, run ids
verbs() { "$1" --help | awk '/^verbs:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'; }
"$root/${B:-build}/tests/store_fill" "$tmp/history.db" >"$tmp/runs"
cat >"$tmp/cluster.conf" <<EOF
[cluster]
name = kit
[node alpha]
ssh = localhost
control = tcp://127.0.0.1:1
telemetry = tcp://127.0.0.1:2
start = inferd serve
[node beta]
ssh = localhost
control = tcp://127.0.0.1:3
telemetry = tcp://127.0.0.1:4
start = inferd serve
EOF
check "bash: complete -p shows the completion" \
    [ "$(bash -c ". '$comp/infertop.bash'; complete -p infertop")" = "complete -F _infertop infertop" ]
# offers SHELL WANT WORDS...: TAB after WORDS (the last one is being
# completed) offers WANT, sorted, a space after each.
offers() {
    sh=$1 want=$2
    shift 2
    check "$sh: $* <TAB> offers ${want:-nothing}" [ "$("${sh}_complete" "$@")" = "$want" ]
}
runs=$(sort "$tmp/runs" | tr '\n' ' ')
offers bash "$runs" infertop history --db "$tmp/history.db" show ""
offers bash "$(verbs infertop | sort | tr '\n' ' ')" infertop ""
offers bash "all alpha beta " infertop -c "$tmp/cluster.conf" nodes stop ""
offers bash "--concurrency --config --control " infertop stress --co
offers bash "--http --http-header-timeout --http-per-client " inferd serve --ht
# Modes, settings and values, from the table.
offers bash "fixed growth quality soak sweep " infertop stress ""
offers bash "kv_bits= prefill_step= " infertop -c "$tmp/cluster.conf" set alpha ""
offers bash "16 32 4 8 " inferd serve --kv-bits ""
offers bash "512 auto " inferd serve --prefill-step ""
offers bash "csv json table " infertop history export --format ""
offers bash "" infertop stress growth --to ""

# ---- zsh completion
if command -v zsh >/dev/null; then
    check "zsh: the completion parses" zsh -n "$comp/_infertop"
    offers zsh "$runs" infertop history --db "$tmp/history.db" show ""
    offers zsh "all alpha beta " infertop -c "$tmp/cluster.conf" nodes logs ""
    offers zsh "command exec facts logs restart start status stop " infertop nodes ""
    offers zsh "fixed growth " infertop stress sweep --leg ""
    offers zsh "kv_bits= prefill_step= " infertop -c "$tmp/cluster.conf" set alpha ""
    offers zsh "--help --version eval generate keygen quality quantize serve tokenize " inferd ""
else
    fail "zsh is installed (contrib/install-deps.sh)"
fi

# ---- systemd: the unit verifies, and its flag file runs a node
sed "s|/usr/local/bin/inferd|$(command -v inferd)|" "$root/contrib/systemd/inferd@.service" \
    >"$tmp/inferd@kit.service"
if command -v systemd-analyze >/dev/null; then
    check "systemd-analyze verify accepts the unit" \
        systemd-analyze verify --man=no "$tmp/inferd@kit.service"
fi
alloc_ports 2
cat >"$tmp/kit.conf" <<EOF
# the flags of one node, as /etc/inferd/NAME.conf holds them
--control $(ep "$P1")   --telemetry $(ep "$P2")
--threads 1 --kv-bits 8   # comments end a line
EOF
start kit --flags "$tmp/kit.conf"
up "$(ep "$P1")"
check "a node started from a flag file has its flags" \
    [ "$(call "$(ep "$P1")" status | get node config.kv_bits)" = "$(printf 'kit\t8')" ]

# ---- make install
make -s -C "$root" install DESTDIR="$tmp/root" PREFIX=/usr B="${B:-build}" >"$tmp/install.log" 2>&1
for f in bin/inferd bin/infertop share/man/man1/inferd.1 share/man/man1/infertop.1 \
    share/bash-completion/completions/infertop share/bash-completion/completions/inferd \
    share/zsh/site-functions/_infertop lib/systemd/system/inferd@.service \
    share/infertop/cluster.example.conf; do
    check "make install puts $f in place" [ -e "$tmp/root/usr/$f" ]
done
check "the installed unit runs the installed inferd" \
    grep -q '^ExecStart=/usr/bin/inferd serve --name %i' "$tmp/root/usr/lib/systemd/system/inferd@.service"
make -s -C "$root" uninstall DESTDIR="$tmp/root" PREFIX=/usr B="${B:-build}" >>"$tmp/install.log" 2>&1
check "make uninstall removes them" [ -z "$(find "$tmp/root" -type f -o -type l)" ]

finish
