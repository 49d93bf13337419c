#!/bin/sh
# End-to-end test of `infertop history`: a database written by
# tests/lib/store_fill (three runs: growth kv16 ok to 8192, growth kv4
# failing at 8192, a 4-leg sweep), then every verb's output and exit code;
# `show` of the sweep on one screen, `compare` of it against its legs in
# another order pairing the same settings.
# JSON is checked with the sqlite3 shell's json functions.
set -u
root=${INFERTOP_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${B:-build}
fill="$root/$B/tests/store_fill"
dir=$(mktemp -d /tmp/infertop-e2e-history-XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
db="$dir/history.db"
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }

# run NAME WANT_RC ARGS...: runs infertop history --db $db ARGS, keeps
# stdout in $out and stderr in $errout, checks the exit code.
run() {
    name=$1 want=$2
    shift 2
    infertop history --db "$db" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    out=$(cat "$dir/out")
    errout=$(cat "$dir/err")
    if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"; else bad "$name: exit $rc, want $want: $errout"; fi
}

# has NAME TEXT WHERE: WHERE ("$out" or "$errout") contains TEXT
has() {
    case "$3" in *"$2"*) ok "$1" ;; *) bad "$1: no \"$2\" in: $3" ;; esac
}

# json_eq NAME FILE EXPR WANT: sqlite3 evaluates EXPR over the JSON text j
json_eq() {
    got=$(sqlite3 :memory: "select $3 from (select cast(readfile('$2') as text) as j)" 2>&1)
    if [ "$got" = "$4" ]; then ok "$1"; else bad "$1: got '$got', want '$4'"; fi
}

if ! "$fill" "$db" >"$dir/ids"; then
    bad "store_fill wrote the database"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok "store_fill wrote runs $(tr '\n' ' ' <"$dir/ids")"

run "list" 0 list
has "list shows the three runs" "growth kv16" "$out"
has "list is aligned" "ID  STARTED" "$out"
first=$(printf '%s\n' "$out" | sed -n 2p | awk '{print $1}')
[ "$first" = 3 ] && ok "newest run first" || bad "newest run first: got $first"

run "list --json" 0 list --json
json_eq "list --json is valid JSON" "$dir/out" "json_valid(j)" 1
json_eq "list --json holds 3 runs" "$dir/out" "json_array_length(j)" 3
run "list --mode sweep" 0 list --mode sweep --json
json_eq "mode filter" "$dir/out" "json_extract(j, '\$[0].name') || json_array_length(j)" "sweep1"
run "list --status failed --grep QUOTED" 0 list --status failed --grep QUOTED --json
json_eq "status and text filters" "$dir/out" "json_extract(j, '\$[0].id')" 2
run "list --until 2000-01-01" 0 list --until 2000-01-01
has "date range excludes every run" "no runs match" "$out"
run "list --limit 1 --page 2" 0 list --limit 1 --page 2 --json
json_eq "paging" "$dir/out" "json_extract(j, '\$[0].id')" 2

run "bad date" 2 list --since 2024-02-30
has "bad date is named" "2024-02-30" "$errout"
run "bad mode" 2 list --mode grwoth
has "bad mode is named" "grwoth" "$errout"
run "option of another verb" 2 list --vacuum
has "misplaced option is named" "--vacuum" "$errout"

run "show" 0 show 2
has "show names the failure point" "failed at  leg 0, request 3, context 4096: timeout" "$out"
has "show gives a line per leg: knobs, tok/s, TTFT, failures" \
    "LEG  KV  PREFILL  CONC  REQS  FAILED  MAX_CTX  DEC_TPS  AGG_TPS  TTFT50  TTFT95" "$out"
run "show of the 4-leg sweep" 0 show 3
lines=$(printf '%s\n' "$out" | wc -l)
[ "$lines" -le 24 ] && ok "show of a 4-leg sweep fits in 24 lines ($lines)" || bad "show of a 4-leg sweep is $lines lines"
wide=$(printf '%s\n' "$out" | awk '{ if (length($0) > w) w = length($0) } END { print w }')
[ "$wide" -le 80 ] && ok "and in 80 columns ($wide)" || bad "show is $wide columns wide"
legs=$(printf '%s\n' "$out" | grep -cE '^ *[0-3] +(16|4) +(256|512) +1 +1 +0 ')
[ "$legs" = 4 ] && ok "each leg on its line with its knobs" || bad "$legs leg lines in: $out"
run "show --full" 0 show 2 --full
has "show --full has step percentiles" "decode   step_ms" "$out"
has "show --full gives each leg's concurrency and aggregate tok/s" "CONCURRENCY  STATUS  REQS  FAILED  MAX_CTX  AGG_TPS" "$out"
run "show --json" 0 show 1 --json
json_eq "show --json" "$dir/out" "json_extract(j, '\$.legs[0].max_context')" 8192
run "unknown run" 3 show 99
has "unknown run is named" "no run with id 99" "$errout"
run "run id not a number" 2 show abc
run "show needs a run" 2 show

run "compare" 0 compare 1 2
has "compare: a kv 16 leg is not set beside a kv 4 leg" "A only    0  16" "$out"
has "the kv 4 leg is listed alone" "B only    0   4" "$out"
run "compare --full" 0 compare 1 2 --full
has "compare --full has deltas" "max_context" "$out"
run "compare --json" 0 compare 1 2 --json
json_eq "compare ratio" "$dir/out" \
    "(select json_extract(value, '\$.ratio') from json_each(j, '\$.deltas') where json_extract(value, '\$.key') = 'run' and json_extract(value, '\$.metric') = 'max_context')" 0.5
run "compare with an unknown run" 3 compare 1 42

# The sweep again as run 4, its legs in the reverse order.
sw="$dir/sweeps.db"
cp "$db" "$sw"
sqlite3 "$sw" "
INSERT INTO runs (id, name, mode, status, started, ended, params, cluster, engine)
  SELECT 4, 'reversed', mode, status, started + 1, ended + 1, params, cluster, engine
  FROM runs WHERE id = 3;
INSERT INTO legs (run, idx, kv_bits, prefill_step, status, started, ended, max_context,
                  concurrency, agg_tps)
  SELECT 4, 3 - idx, kv_bits, prefill_step, status, started, ended, max_context, concurrency,
         agg_tps FROM legs WHERE run = 3;
INSERT INTO requests (run, leg, idx, ctx_before, ctx_after, prompt_tokens, gen_tokens, ttft_ms,
                      prefill_ms, prefill_tps, decode_tps, tpot_ms, e2e_ms, status, t)
  SELECT 4, 3 - leg, idx, ctx_before, ctx_after, prompt_tokens, gen_tokens, ttft_ms, prefill_ms,
         prefill_tps, decode_tps, tpot_ms, e2e_ms, status, t FROM requests WHERE run = 3;" >/dev/null
infertop history --db "$sw" compare 3 4 >"$dir/out" 2>"$dir/err"
[ $? -eq 0 ] && ok "compare of two differently ordered sweeps (exit 0)" || bad "compare 3 4: $(cat "$dir/err")"
# Each A line and the B line after it: the same KV, PREFILL and CONC.
pairs=$(awk '$1 == "A" { a = $3 " " $4 " " $5; next }
             $1 == "B" && a != "" { n++; if ($3 " " $4 " " $5 == a) same++; a = "" }
             END { print n + 0, same + 0 }' "$dir/out")
[ "$pairs" = "4 4" ] && ok "compare pairs the same settings (4 pairs)" || bad "pairs, same: $pairs in $(cat "$dir/out")"
grep -q "only" "$dir/out" && bad "no leg unpaired: $(cat "$dir/out")" || ok "no leg left unpaired"
lines=$(wc -l <"$dir/out")
[ "$lines" -le 24 ] && ok "compare of two 4-leg sweeps fits in 24 lines ($lines)" || bad "compare is $lines lines"
infertop history --db "$sw" compare 3 4 --json >"$dir/out"
json_eq "compare --json pairs legs 0-3, 1-2, 2-1, 3-0" "$dir/out" \
    "(select group_concat(json_extract(value, '\$.a_leg') || '-' || json_extract(value, '\$.b_leg'), ' ') from json_each(j, '\$.pairs'))" \
    "0-3 1-2 2-1 3-0"

run "best" 0 best --model stories260K
has "best lists settings" "PREFILL_STEP" "$out"
run "best --json" 0 best --json
json_eq "best setting first" "$dir/out" "json_extract(j, '\$[0].kv_bits') || '/' || json_extract(j, '\$[0].max_context')" "16/8192"
run "best --by agg-tps" 0 best --by agg-tps
has "best --by agg-tps names concurrency and aggregate tok/s" "CONCURRENCY  AGG_TPS" "$out"
run "best --by agg-tps --json" 0 best --by agg-tps --json
json_eq "best --by agg-tps: highest aggregate tok/s first" "$dir/out" \
    "(select count(*) from json_each(j) a join json_each(j) b on b.key = a.key + 1 where json_extract(b.value, '\$.agg_tps') > json_extract(a.value, '\$.agg_tps'))" 0
json_eq "best --by agg-tps: every setting has one" "$dir/out" \
    "(select count(*) from json_each(j) where json_extract(value, '\$.agg_tps') > 0) = json_array_length(j)" 1
run "best --by an unknown figure" 2 best --by speed
has "the unknown figure is named" "--by: 'speed' is not valid, expected context or agg-tps" "$errout"

run "export csv" 0 export 2 --format csv
lines=$(printf '%s\n' "$out" | wc -l)
[ "$lines" -eq 5 ] && ok "csv has a header and 4 requests" || bad "csv has $lines lines"
has "csv quotes commas" '"n2, did not answer in 30 s"' "$out"
run "export steps json to a file" 0 export 3 --what steps --format json --out "$dir/steps.json"
json_eq "steps json" "$dir/steps.json" "json_valid(j) || '/' || json_array_length(j)" "1/80"
run "export summary" 0 export 1 --what summary --format json
json_eq "summary json" "$dir/out" "json_extract(j, '\$.run.name')" "growth kv16"
run "export table" 0 export 1 --what steps
has "export table" "prefill_step" "$out"
run "bad format" 2 export 1 --format xml
run "bad what" 2 export 1 --what nodes
run "unwritable --out" 1 export 1 --format csv --out /nonexistent/dir/x.csv
has "unwritable --out is named" "/nonexistent/dir/x.csv" "$errout"
[ ! -e /nonexistent/dir/x.csv ] && ok "nothing written" || bad "a file was written"

infertop history --db /nonexistent/dir/h.db list >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 4 ] && ok "unwritable --db (exit 4)" || bad "unwritable --db: exit $rc"
has "unwritable --db is named" "/nonexistent/dir" "$(cat "$dir/err")"

cp "$db" "$dir/newer.db"
sqlite3 "$dir/newer.db" "PRAGMA user_version = 99" >/dev/null
infertop history --db "$dir/newer.db" list >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 4 ] && ok "newer schema refused (exit 4)" || bad "newer schema: exit $rc"
has "newer schema is explained" "newer than this infertop" "$(cat "$dir/err")"

run "prune needs --older-than" 2 prune
run "prune with a negative age" 2 prune --older-than -3
run "prune keeps recent runs" 0 prune --older-than 1 --json
json_eq "nothing pruned" "$dir/out" "json_extract(j, '\$.deleted')" 0
# Age the runs by three days: prune --older-than 2 must take them all.
sqlite3 "$db" "UPDATE runs SET started = started - 3 * 86400" >/dev/null
run "prune everything" 0 prune --older-than 2 --vacuum
has "prune reports" "pruned 3 runs" "$out"
run "empty history" 0 list
has "no runs left" "no runs match" "$out"

infertop --version >"$dir/out" 2>&1 && has "--version" "infertop 0.1.0" "$(cat "$dir/out")" || bad "--version"
infertop history --help >"$dir/out" 2>&1 && has "--help lists exit codes" "3 no such run" "$(cat "$dir/out")" || bad "--help"
infertop frobnicate >/dev/null 2>&1
[ $? -eq 2 ] && ok "unknown verb (exit 2)" || bad "unknown verb"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
