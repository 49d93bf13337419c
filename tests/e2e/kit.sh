#!/bin/sh
# End to end: the operator's kit in contrib/. Both man pages render, at
# the programs' version; every verb and long flag of inferd and infertop
# is in its man page and nothing more (checked against each verb's option
# table in the source and its --help); bash and zsh completion offer
# verbs, flags, node names from the cluster file and run ids from the
# history; the systemd unit verifies and its flag file works; `make
# install` puts everything in place.
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
        [ "$(sed -n 's/^\.TH [A-Z]* 1 "[^"]*" "\([^"]*\)".*/\1/p' "$man/$page.1")" = "$("$page" --version)" ]
done

# ---- every verb and flag, and nothing more
# The long flags in a text (roff's \- is a hyphen; --help is everywhere
# and documented once).
flags() { sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u; }
# The long flags a verb's parser in the source knows: the entries of its
# getopt table, or the flags a hand-written parser compares arguments with.
# inferd's verbs have neither: their parser and --help both come from the
# settings table (engine/proto/opt_table.c), so --help is their table.
table() {
    for f in "$@"; do
        grep -oE '\{"[a-z][a-z0-9-]*", *(no|required|optional)_argument' "$root/$f" |
            sed -E 's/^\{"([^"]*)".*/--\1/'
        grep -oE 'strcmp\([a-z]+(\[[a-z]+\])?, "--[a-z][a-z0-9-]*"\)' "$root/$f" |
            sed -E 's/.*"(--[^"]*)".*/\1/'
    done | grep -vx -e '--help' -e '--version' | sort -u
}
verbs() { "$1" --help | awk '/^verbs:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'; }
mansections() { sed -n "s/^\.SS $1 \([a-z][a-z]*\).*/\1/p" "$man/$1.1" | sort -u; }

for prog in inferd infertop; do
    check "$prog: the man page has a section for every verb of --help, and no other" \
        [ "$(verbs $prog | sort -u | tr '\n' ' ')" = "$(mansections $prog | tr '\n' ' ')" ]
done

# PROG VERB [SOURCE...]: the verb's flags in the man page are those of its
# option table (its parser in SOURCE) and its --help.
agree() {
    prog=$1 verb=$2
    shift 2
    if [ -z "$verb" ]; then
        { infertop --help; infertop --readonly --help; } | flags | grep -vx -- '--version' >"$tmp/help"
        awk '/^\.SS infertop$/ { on = 1; next } /^\.S[SH] / { on = 0 } on' \
            "$man/infertop.1" | flags | grep -vx -- '--version' >"$tmp/man"
    else
        "$prog" "$verb" --help | flags >"$tmp/help"
        awk -v v="$verb" -v p="$prog" '/^\.S[SH] / { on = ($1 == ".SS" && $2 == p && $3 == v) ; next } on' \
            "$man/$prog.1" | flags >"$tmp/man"
    fi
    table "$@" >"$tmp/table"
    missing=$(sort -u "$tmp/help" "$tmp/table" | comm -23 - "$tmp/man" | tr '\n' ' ')
    extra=$(sort -u "$tmp/help" "$tmp/table" | comm -13 - "$tmp/man" | tr '\n' ' ')
    check "$prog ${verb:-(dashboard)}: man page flags = option table + --help${missing:+; not in the man page: $missing}${extra:+; only in the man page: $extra}" \
        [ -z "$missing$extra$([ -s "$tmp/man" ] || echo empty)" ]
}
agree inferd eval
agree inferd generate
agree inferd keygen
agree inferd quantize
agree inferd serve
agree inferd tokenize
# infertop's verbs parse by the settings table too; a verb with modes
# (nodes, stress, history) lists the flags of all of them.
for verb in "" demo status set nodes stress history metrics plan; do
    agree infertop "$verb"
done

# ---- bash completion
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
    [ "$(bash -c ". '$root/contrib/completion/infertop.bash'; complete -p infertop")" = "complete -F _infertop infertop" ]
# bash_complete WORDS...: what TAB offers after WORDS (the last word is
# the one being completed).
bash_complete() {
    bash -c '. "$1/contrib/completion/infertop.bash"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        if [ "$1" = inferd ]; then _inferd; else _infertop; fi
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' sh "$root" "$@"
}
runs=$(sort "$tmp/runs" | tr '\n' ' ')
check "bash: infertop history show <TAB> offers the recorded run ids ($runs)" \
    [ "$(bash_complete infertop history --db "$tmp/history.db" show "")" = "$runs" ]
check "bash: infertop <TAB> offers every verb" \
    [ "$(bash_complete infertop "")" = "$(verbs infertop | sort | tr '\n' ' ')" ]
check "bash: infertop nodes stop <TAB> offers the cluster file's nodes" \
    [ "$(bash_complete infertop -c "$tmp/cluster.conf" nodes stop "")" = "all alpha beta " ]
check "bash: infertop stress --co<TAB> offers its flags" \
    [ "$(bash_complete infertop stress --co)" = "--concurrency --config --control " ]
check "bash: inferd serve --ht<TAB>" [ "$(bash_complete inferd serve --ht)" = "--http " ]

# ---- zsh completion
if command -v zsh >/dev/null; then
    zsh_complete() {
        zsh -f -c 'fpath=("$1/contrib/completion" $fpath); autoload -U _infertop; shift
            compadd() { shift; print -rl -- "$@"; }
            _files() { :; }
            service=$1; words=("$@"); CURRENT=$#words; _infertop' zsh "$root" "$@" |
            sort | tr '\n' ' '
    }
    check "zsh: the completion parses" zsh -n "$root/contrib/completion/_infertop"
    check "zsh: infertop history show <TAB> offers the recorded run ids" \
        [ "$(zsh_complete infertop history --db "$tmp/history.db" show "")" = "$runs" ]
    check "zsh: infertop nodes logs <TAB> offers the cluster file's nodes" \
        [ "$(zsh_complete infertop -c "$tmp/cluster.conf" nodes logs "")" = "all alpha beta " ]
    check "zsh: inferd <TAB> offers the verbs" \
        [ "$(zsh_complete inferd "")" = "--help --version eval generate keygen quantize serve tokenize " ]
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
    share/zsh/site-functions/_infertop lib/systemd/system/inferd@.service; do
    check "make install puts $f in place" [ -e "$tmp/root/usr/$f" ]
done
check "the installed unit runs the installed inferd" \
    grep -q '^ExecStart=/usr/bin/inferd serve --name %i' "$tmp/root/usr/lib/systemd/system/inferd@.service"
make -s -C "$root" uninstall DESTDIR="$tmp/root" PREFIX=/usr B="${B:-build}" >>"$tmp/install.log" 2>&1
check "make uninstall removes them" [ -z "$(find "$tmp/root" -type f -o -type l)" ]

finish
