#!/bin/sh
# End to end: `infertop stress quality --node` on an HTTP engine node, the
# top-k estimate: an inferd serve --http node (its real HTTP server)
# started and restarted over a real sshd on 127.0.0.2 by its cluster
# file's start line, recorded to a temporary database.
#  - quality --kv-bits 32,4: the reference (kv_bits 32, inferd's most
#    precise) applied by restart and scored position by position from the
#    node's top-20 logprobs, then each setting; kv_bits 32 against itself
#    gives top-k KL 0 and top-1 1.0, kv_bits 4 KL > 0; the rows say top-k
#    with k 20, no perplexity; the node's own start line back at the end;
#  - the CLI, history show (text and JSON) and history best --max-kl say
#    "top-k estimate (k=20)";
#  - refusals named: an engine whose start line infertop does not know
#    (engine = openai), sweep --quality over HTTP.
. "$(dirname "$0")/lib/serve.sh"
. "$(dirname "$0")/lib/sshd.sh"

INFERD=$(command -v inferd)
run="$tmp/run"
mkdir -p "$run" "$tmp/home"
user=$(id -un)
DB="$tmp/history.db"
q() { sqlite3 "$DB" "$1"; }
has() { grep -q -- "$1" "$2"; }

# The node is not a child of this script: stopped by its pidfile.
stop_node() {
    [ -f "$run/h.pid" ] && kill -KILL "$(cat "$run/h.pid")" 2>/dev/null
    cleanup
}
trap stop_node EXIT

export HOME="$tmp/home"
unset SSH_AUTH_SOCK

alloc_ports 4
sshd_keys || { fail "ssh keys"; finish; exit 1; }
sshd_start s0 127.0.0.2 "$P1" || { fail "sshd started"; finish; exit 1; }

URL=http://127.0.0.2:$P4
conf="$tmp/cluster.conf"
cat >"$conf" <<CONF
[cluster]
name = topk
identity = $tmp/ssh/id
known_hosts = $tmp/ssh/known_hosts

[node h]
engine = inferd
url = $URL
control = tcp://127.0.0.2:$P2
telemetry = tcp://127.0.0.2:$P3
ssh = $user@127.0.0.2:$P1
start = $INFERD serve --name h --threads 1 --control tcp://127.0.0.2:$P2
    --telemetry tcp://127.0.0.2:$P3 --http 127.0.0.2:$P4
log = $run/h.log
pidfile = $run/h.pid
CONF
infertop nodes -c "$conf" --accept-new start h >"$tmp/start" 2>&1 ||
    { cat "$tmp/start"; fail "the node started over ssh"; finish; exit 1; }
start_pid=$(cat "$run/h.pid")

# A few windows of 32 tokens, 15 positions each scored (16..30).
text="$tmp/text.txt"
head -c 500 "$root/contrib/quality/text-en.txt" >"$text"

# ---- quality 32,4 by restart
infertop stress quality -c "$conf" --node h --kv-bits 32,4 --text "$text" --ctx 32 \
    --db "$DB" >"$tmp/q.out" 2>"$tmp/q.err"
rc=$?
check "stress quality --node h --kv-bits 32,4 completes (exit 0) ($(tail -n 2 "$tmp/q.err" | tr '\n' ' '))" \
    [ "$rc" = 0 ]
check "a run of mode quality on engine inferd, one leg per setting" \
    [ "$(q "SELECT r.mode || ':' || r.engine || ':' || group_concat(l.kv_bits, ',') FROM runs r
            JOIN legs l ON l.run = r.id WHERE r.id = 1 GROUP BY r.id")" = "quality:inferd:32,4" ]
check "both rows are top-k estimates (k 20) against kv_bits 32, without perplexity" \
    [ "$(q "SELECT count(*) FROM quality WHERE run = 1 AND topk = 20 AND ref_kv_bits = 32
            AND ppl_ref IS NULL AND ppl_test IS NULL AND ctx = 32 AND score_from = 16")" = 2 ]
npos=$(q "SELECT windows * 15 FROM quality WHERE run = 1 AND leg = 0")
check "every whole window's positions 16..30 scored ($npos)" \
    [ "$(q "SELECT count(*) FROM quality WHERE run = 1 AND positions = $npos AND windows >= 2")" = 2 ]
check "kv_bits 32 against itself: top-k KL 0, p99 0, max 0, top-1 1.0" \
    [ "$(q "SELECT kl_mean || ' ' || kl_p99 || ' ' || kl_max || ' ' || top1 FROM quality
            WHERE run = 1 AND kv_bits = 32")" = "0.0 0.0 0.0 1.0" ]
check "kv_bits 4 costs something: top-k KL mean > 0" \
    [ "$(q "SELECT kl_mean > 0 AND kl_max >= kl_p99 AND top1 <= 1 FROM quality
            WHERE run = 1 AND kv_bits = 4")" = 1 ]
check "the settings applied by restart: the reference 32, then 4, then the start line's" \
    [ "$(q "SELECT group_concat(json_extract(detail, '\$.kv_bits') || ':' ||
            json_extract(detail, '\$.ok'), ' ') FROM events WHERE run = 1 AND kind = 'restart'")" = \
      "32:1 4:1 0:1" ]
pid=$(cat "$run/h.pid")
check "the node runs its own start line again (a new process, no --kv-bits)" \
    sh -c "[ '$pid' != '$start_pid' ] && ! tr '\0' ' ' </proc/$pid/cmdline | grep -q kv-bits"
check "and answers" curl -sf -o /dev/null --max-time 2 "$URL/v1/models"
check "the CLI says the estimate is top-k, with k" \
    has "top-k estimate (k=20) of the quality against kv_bits 32" "$tmp/q.out"

infertop history show 1 --db "$DB" >"$tmp/show.out"
check "history show says top-k estimate (k=20)" has "top-k estimate (k=20)" "$tmp/show.out"
infertop history show 1 --json --db "$DB" >"$tmp/show.json"
check "history show --json: estimate topk, topk 20" \
    [ "$(jq -r '[.quality[] | "\(.estimate):\(.topk)"] | join(" ")' "$tmp/show.json")" = \
      "topk:20 topk:20" ]

# ---- speed at kv_bits 4, then best under a KL floor
infertop stress sweep -c "$conf" --node h --kv-bits 4 --prefill-step 512 --leg fixed --requests 2 \
    --prompt-tokens 8 --gen 4 --db "$DB" >"$tmp/sweep.out" 2>&1
check "a speed leg at kv_bits 4 (sweep by restart)" \
    [ "$(q "SELECT count(*) FROM requests WHERE run = 2 AND status = 'ok'")" = 2 ]
infertop history best --max-kl 100 --db "$DB" >"$tmp/best.out"
check "history best --max-kl shows the setting's KL as a top-k estimate (k=20)" \
    sh -c "awk '\$4 == 4' '$tmp/best.out' | grep -q 'top-k estimate (k=20)'"
infertop history best --max-kl 100 --json --db "$DB" >"$tmp/best.json"
check "history best --json: quality_topk 20" \
    [ "$(jq -r '.[] | select(.kv_bits == 4) | .quality_topk' "$tmp/best.json")" = 20 ]

# ---- refusals
sed -e 's/^engine = inferd/engine = openai/' -e '/^control =/d' -e '/^telemetry =/d' "$conf" \
    >"$tmp/openai.conf"
infertop stress quality -c "$tmp/openai.conf" --node h --kv-bits 32 --text "$text" --ctx 32 \
    --db "$DB" >"$tmp/openai.out" 2>&1
rc=$?
check "an openai node is refused (exit 2), naming why" \
    sh -c "[ $rc = 2 ] && grep -q 'start line is not known to infertop' '$tmp/openai.out'"
infertop stress sweep -c "$conf" --node h --kv-bits 4 --prefill-step 512 --leg fixed --requests 1 --quality \
    --db "$DB" >"$tmp/sq.out" 2>&1
rc=$?
check "sweep --quality over HTTP is refused, pointing to stress quality --node" \
    sh -c "[ $rc != 0 ] && grep -q 'stress quality --node' '$tmp/sq.out'"
check "no run was recorded for the refusals" [ "$(q "SELECT count(*) FROM runs")" = 2 ]

infertop nodes -c "$conf" stop h >/dev/null 2>&1
finish
