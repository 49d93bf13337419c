# Shared by the http_*.sh end-to-end tests (sourced after lib/serve.sh):
# HTTP calls with curl, server-sent events, and the openai npm package.

hp() { echo "127.0.0.1:$1"; }

# http_up HOST:PORT: waits (at most 30 s) until the HTTP server answers.
http_up() {
    retry 150 curl -s -o /dev/null "http://$1/metrics" && return 0
    echo "HTTP server at $1 did not come up" >&2
    return 1
}

# post HOST:PORT PATH BODY [CURL_ARGS...]: the response body goes to
# $tmp/body, the status is printed.
post() {
    url="http://$1$2"
    body=$3
    shift 3
    curl -s -o "$tmp/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        "$@" --data-binary "$body" "$url"
}

# The text of a stream of server-sent events on stdin: the deltas of a
# chat stream, or the texts of a completion stream, newlines dropped.
sse_text() {
    sed -n 's/^data: //p' | grep -v '^\[DONE\]$' >"$tmp/sse.json"
    { get choices.0.delta.content <"$tmp/sse.json"; get choices.0.text <"$tmp/sse.json"; } |
        tr -d '\n'
}

# greedy PROMPT N: what `inferd generate` continues PROMPT with, newlines
# dropped (the prompt itself is cut off).
greedy() {
    full=$(inferd generate --prompt "$1" --steps "$2" --temperature 0 2>/dev/null | tr -d '\n')
    want_prefix=$(printf '%s' "$1" | tr -d '\n')
    printf '%s' "${full#"$want_prefix"}"
}

# The openai npm package, installed once from the npm registry into
# build/npm with the machine's Node.js. Sets OPENAI_NODE_PATH, or fails.
OPENAI_VERSION=6.49.0
openai_setup() {
    dir="$root/build/npm"
    if [ ! -f "$dir/node_modules/openai/package.json" ] ||
        ! grep -q "\"version\": \"$OPENAI_VERSION\"" "$dir/node_modules/openai/package.json"; then
        command -v npm >/dev/null || { echo "npm is missing (contrib/install-deps.sh)" >&2; return 1; }
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            "openai@$OPENAI_VERSION" >"$tmp/npm.log" 2>&1 || {
            echo "npm install openai@$OPENAI_VERSION failed:" >&2
            cat "$tmp/npm.log" >&2
            return 1
        }
    fi
    OPENAI_NODE_PATH="$dir/node_modules"
}

# rawp PHASE PORT ARGS...: runs a phase of lib/http_raw.py (raw-socket
# clients) against the HTTP server on PORT; each line it prints a check.
rawp() {
    phase=$1
    port=$2
    shift 2
    python3 "$root/tests/e2e/lib/http_raw.py" "$phase" "$port" "$@" >"$tmp/raw" 2>"$tmp/raw.err" ||
        echo "raw $phase failed: $(tail -3 "$tmp/raw.err")" >&2
    tab=$(printf '\t')
    while IFS="$tab" read -r name verdict why; do
        case $name in
        '#'*) continue ;;
        esac
        if [ "$verdict" = 1 ]; then ok "$name"; else fail "$name ($why)"; fi
    done <"$tmp/raw"
}

# metric PORT NAME_AND_LABELS: the sum of the series that start so.
metric() {
    curl -s "http://127.0.0.1:$1/metrics" | awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { print s + 0 }'
}
