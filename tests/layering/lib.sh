# Shared by the layering tests (sourced, not run by itself): where the tree
# and the build are, a temporary folder removed at exit, pass/fail
# counters and the closing line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
B=${B:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
}
