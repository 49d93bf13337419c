#!/bin/sh
# End to end: `infertop stress quality` and `stress sweep --quality`
# against a local 2-stage ring of the embedded model (stages a 0:3,
# b 3:5), recorded to a temporary database.
#  - quality --kv-bits 32,4: a run of mode quality, one leg per setting;
#    the 32 leg KL 0 and top-1 1.0 (the identity through the ring), the 4
#    leg KL > 0; depth buckets recorded (the first unscored); the text's
#    name and sha256 with it; the built-in text when --text is not given;
#  - history show prints a line per setting (and per bucket with --full),
#    --json carries the measurements;
#  - sweep --quality over kv_bits 32,4: each leg has its speed and its
#    quality; history best --max-kl keeps only the settings under the
#    floor, --min-top1 the same by agreement;
#  - refusals named: a bad --kv-bits, an unreadable --text, a text too
#    short for one --ctx window (the node's count of its tokens).
. "$(dirname "$0")/lib/serve.sh"

DB="$tmp/history.db"
q() { sqlite3 "$DB" "$1"; }

alloc_ports 6
A=$(ep "$P1")
B=$(ep "$P4")
start a --layers 0:3 --control "$A" --telemetry "$(ep "$P2")" --listen "$(ep "$P3")" \
    --next "$(ep "$P6")" --threads 1 --prefill-step 48
start b --layers 3:5 --control "$B" --telemetry "$(ep "$P5")" --listen "$(ep "$P6")" \
    --next "$(ep "$P3")" --threads 1 --prefill-step 48
for c in "$A" "$B"; do up "$c" || { fail "node $c started"; finish; exit 1; }; done
RING="--control $A,$B --telemetry $(ep "$P2"),$(ep "$P5")"

# A text of a few windows of 128 tokens: the shipped one's first lines.
text="$tmp/text.txt"
head -n 40 "$root/contrib/quality/text-en.txt" >"$text"
sha=$(sha256sum "$text" | cut -d' ' -f1)

# ---- quality 32,4
infertop stress quality --kv-bits 32,4 --text "$text" --ctx 128 --bucket 64 $RING \
    --db "$DB" --name q --json >"$tmp/q.json" 2>"$tmp/q.err"
rc=$?

check "stress quality --kv-bits 32,4 completes (exit 0)" [ "$rc" = 0 ]
check "a run of mode quality with one leg per setting, in order" \
    [ "$(q "SELECT r.mode || ':' || group_concat(l.kv_bits, ',') FROM runs r
            JOIN legs l ON l.run = r.id WHERE r.id = 1 GROUP BY r.id")" = "quality:32,4" ]
check "kv_bits 32 against itself through the ring: KL 0, p99 0, max 0, top-1 1.0" \
    [ "$(q "SELECT kl_mean || ' ' || kl_p99 || ' ' || kl_max || ' ' || top1 FROM quality
            WHERE run = 1 AND kv_bits = 32")" = "0.0 0.0 0.0 1.0" ]
check "and both perplexities equal" \
    [ "$(q "SELECT ppl_ref = ppl_test AND ppl_ref > 1 FROM quality WHERE run = 1 AND kv_bits = 32")" = 1 ]
check "kv_bits 4 costs something: KL mean > 0" \
    [ "$(q "SELECT kl_mean > 0 AND kl_max >= kl_p99 AND kl_p99 >= 0 AND top1 <= 1
            FROM quality WHERE run = 1 AND kv_bits = 4")" = 1 ]
check "windows of 128 scored from 64, figures by bucket of 64: the first unscored" \
    [ "$(q "SELECT group_concat(pos_from || '-' || pos_to || ':' || (positions > 0) || ':'
            || (kl_mean IS NOT NULL), ' ') FROM quality_buckets WHERE run = 1 AND leg = 1")" = \
      "0-64:0:0 64-128:1:1" ]
check "the record names the text and its sha256 (the file's)" \
    [ "$(q "SELECT count(*) FROM quality WHERE run = 1 AND text_name = '$text'
            AND text_sha256 = '$sha' AND model = 'stories260K' AND ctx = 128
            AND score_from = 64")" = 2 ]
check "stress --json carries the measurements" \
    [ "$(jq -r '[.quality[] | "\(.kv_bits):\(.kl_mean == 0):\(.buckets | length)"] | join(" ")' \
        "$tmp/q.json")" = "32:true:2 4:false:2" ]

infertop history show 1 --db "$DB" >"$tmp/show.out"
check "history show prints a line per setting" \
    [ "$(awk '$1 == "LEG" && $2 == "KV_BITS" && $4 == "KL_MEAN" { h = 1; next }
              h && $1 ~ /^[0-9]+$/ { print $1 ":" $2 }' "$tmp/show.out" | tr '\n' ' ')" = "0:32 1:4 " ]
infertop history show 1 --full --db "$DB" >"$tmp/full.out"
check "history show --full prints a line per bucket" \
    [ "$(awk '$3 == "FROM" && $4 == "TO" { h = 1; next } h && $1 ~ /^[0-9]+$/ { n++ } END { print n }' \
        "$tmp/full.out")" = 4 ]
infertop history show 1 --json --db "$DB" >"$tmp/show.json"
check "history show --json carries them, buckets included" \
    [ "$(jq -r '.quality[1].buckets[1].positions > 0' "$tmp/show.json")" = true ]

# ---- the built-in text
infertop stress quality --kv-bits 32 --ctx 256 $RING --db "$DB" >"$tmp/builtin.out" 2>&1
check "its summary says what was measured" \
    grep -q "^run 2 completed: quality, 1 of 1 setting measured" "$tmp/builtin.out"
check "without --text the built-in text is scored (text-en.txt, sha256 of the shipped file)" \
    [ "$(q "SELECT text_name || ' ' || text_sha256 || ' ' || (windows > 1) FROM quality
            WHERE run = 2")" = \
      "text-en.txt $(sha256sum "$root/contrib/quality/text-en.txt" | cut -d' ' -f1) 1" ]

# ---- sweep --quality: speed and quality per leg, then best under a floor
infertop stress sweep --kv-bits 32,4 --prefill-step 48 --leg fixed --requests 2 \
    --prompt-tokens 64 --gen 4 --quality --text "$text" --ctx 128 $RING --db "$DB" \
    >"$tmp/sweep.out" 2>"$tmp/sweep.err"
rc=$?
check "sweep --quality completes (exit 0)" [ "$rc" = 0 ]
check "each leg has its requests and its quality at its kv_bits" \
    [ "$(q "SELECT group_concat(l.kv_bits || ':' || (SELECT count(*) FROM requests x
            WHERE x.run = l.run AND x.leg = l.idx AND x.status = 'ok') || ':'
            || (SELECT count(*) FROM quality k WHERE k.run = l.run AND k.leg = l.idx
                AND k.kv_bits = l.kv_bits), ' ') FROM legs l WHERE l.run = 3")" = "32:2:1 4:2:1" ]
infertop history best --db "$DB" --json >"$tmp/best.json"
check "history best ranks both settings, with their quality" \
    [ "$(jq -r '[.[] | "\(.kv_bits):\(.kl_mean != null)"] | sort | join(" ")' "$tmp/best.json")" = \
      "32:true 4:true" ]
infertop history best --db "$DB" --max-kl 0.0000001 --json >"$tmp/floor.json"
check "history best --max-kl keeps only the settings under the floor" \
    [ "$(jq -r '[.[] | .kv_bits] | join(" ")' "$tmp/floor.json")" = 32 ]
infertop history best --db "$DB" --min-top1 1 --json >"$tmp/top1.json"
kl4=$(q "SELECT top1 FROM quality WHERE run = 3 AND kv_bits = 4")
want=32
[ "$kl4" = "1.0" ] && want="32 4"
check "history best --min-top1 1 keeps the settings that always agree ($want)" \
    [ "$(jq -r '[.[] | .kv_bits] | sort | join(" ")' "$tmp/top1.json")" = "$want" ]
infertop history best --db "$DB" >"$tmp/best.out"
check "history best prints KL_MEAN and TOP1" grep -q "KL_MEAN.*TOP1" "$tmp/best.out"

# ---- refusals, named
runs=$(q "SELECT count(*) FROM runs")
infertop stress quality --kv-bits 32,5 $RING --db "$DB" >/dev/null 2>"$tmp/bad.err"
rc=$?
check "a bad --kv-bits is refused (exit 2), naming it" \
    [ "$rc" = 2 ] && grep -q -- "--kv-bits: '32,5'" "$tmp/bad.err"
infertop stress quality --kv-bits 4 --text "$tmp/missing.txt" $RING --db "$DB" \
    >/dev/null 2>"$tmp/missing.err"
rc=$?
check "an unreadable --text is refused (exit 2), naming the file" \
    [ "$rc" = 2 ] && grep -q "missing.txt: No such file" "$tmp/missing.err"
check "neither was recorded" [ "$(q "SELECT count(*) FROM runs")" = "$runs" ]
echo "Once upon a time" >"$tmp/short.txt"
infertop stress quality --kv-bits 4 --text "$tmp/short.txt" --ctx 128 $RING --db "$DB" \
    >"$tmp/short.out" 2>"$tmp/short.err"
rc=$?
check "a text too short for one window fails the run (exit 5), the node naming its tokens" \
    [ "$rc" = 5 ] && grep -q "bad_value.*token" "$tmp/short.err"
check "the failed leg is recorded without a measurement" \
    [ "$(q "SELECT r.status || ':' || l.status || ':' || (SELECT count(*) FROM quality k
            WHERE k.run = r.id) FROM runs r JOIN legs l ON l.run = r.id
            ORDER BY r.id DESC LIMIT 1")" = "failed:failed:0" ]
finish
