#!/bin/sh
# End to end: `inferd generate` on the embedded model reproduces the
# reference text, documents its flags, and refuses bad input by name.
set -u
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

reference="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."

# A run whose stdout starts with the reference text and whose stderr holds
# the one stats line.
if inferd generate --prompt "Once upon a time" --steps 40 >"$tmp/out" 2>"$tmp/err"; then
    case $(cat "$tmp/out") in
    "$reference"*) ok "greedy continuation matches the reference" ;;
    *) fail "greedy continuation: got '$(cat "$tmp/out")'" ;;
    esac
    if [ "$(grep -c 'decode_tok_s=' "$tmp/err")" -eq 1 ] && ! grep -q 'tok_s=' "$tmp/out"; then
        ok "stats line on stderr only"
    else
        fail "stats line: stderr '$(cat "$tmp/err")'"
    fi
else
    fail "generate exited $? ($(cat "$tmp/err"))"
fi

# The same text at other prefill chunkings and KV precisions.
for args in "--prefill-step 1 --kv-bits 32" "--prefill-step 3 --kv-bits 16" "--threads 1"; do
    # shellcheck disable=SC2086
    out=$(inferd generate --prompt "Once upon a time" --steps 40 $args 2>/dev/null)
    case $out in
    "$reference"*) ok "reference text with $args" ;;
    *) fail "reference text with $args: got '$out'" ;;
    esac
done

# --help lists every flag.
help=$(inferd generate --help)
missing=""
for flag in --model --tokenizer --prompt --steps --temperature --top-p --seed --kv-bits \
    --prefill-step --threads --help; do
    printf '%s\n' "$help" | grep -q -- "$flag" || missing="$missing $flag"
done
if [ -z "$missing" ]; then ok "--help lists every flag"; else fail "--help lacks:$missing"; fi

inferd --version | grep -q '^inferd [0-9]' && ok "--version" || fail "--version"

# Bad input: the exit status (2 bad usage, 1 failure) and a message
# naming the problem.
refuses() { # description, expected status, expected message part, args...
    what=$1 want=$2 part=$3
    shift 3
    inferd "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exited $rc, expected $want ($(cat "$tmp/err"))"
    elif grep -q -- "$part" "$tmp/err"; then
        ok "$what refused"
    else
        fail "$what: message '$(cat "$tmp/err")' lacks '$part'"
    fi
}

root=${INFERTOP_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
head -c 1000000 "$root/engine/model/embedded/stories260K.bin" >"$tmp/short.bin"
refuses "--kv-bits 5" 2 "--kv-bits: '5'" generate --prompt hi --kv-bits 5
refuses "--steps x" 2 "--steps: 'x'" generate --prompt hi --steps x
refuses "--prefill-step 0" 2 "--prefill-step: '0'" generate --prompt hi --prefill-step 0
refuses "--top-p 2" 2 "--top-p: '2'" generate --prompt hi --top-p 2
refuses "missing value" 2 "--steps needs a value" generate --prompt hi --steps
refuses "unknown flag" 2 "unknown option '--bogus'" generate --prompt hi --bogus 1
refuses "missing prompt" 2 "missing --prompt" generate --steps 3
refuses "missing model" 1 "/nonexistent/model.bin: No such file" \
    generate --prompt hi --model /nonexistent/model.bin
refuses "truncated checkpoint" 1 "file is 1000000 bytes, expected 1056540" \
    generate --prompt hi --model "$tmp/short.bin"
refuses "bad synthetic spec" 1 "unknown shape '7b'" generate --prompt hi --model synth:7b
# Piped, stdout and stderr into one pipe: the text ends with its newline
# before the stats line, which is a line of its own.
inferd generate --prompt "Once upon a time" --steps 8 2>&1 | cat >"$tmp/piped"
if [ "$(tail -n 1 "$tmp/piped" | cut -c1-6)" = "stats " ] && [ "$(grep -c stats "$tmp/piped")" = 1 ] &&
    head -n 1 "$tmp/piped" | grep -q '^Once upon a time'; then
    ok "piped: the text ends with a newline before the stats line"
else
    fail "piped: got '$(cat "$tmp/piped")'"
fi
refuses "unknown verb" 2 "unknown verb 'frobnicate'" frobnicate

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
