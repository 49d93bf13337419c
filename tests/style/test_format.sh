#!/bin/sh
# Every C source and header of the tree is as clang-format (Debian's,
# .clang-format at the root) writes it, so that no diff mixes layout with
# meaning. Fix with: clang-format -i FILE
cd "$(dirname "$0")/../.." || exit 1
passed=0
failed=0
if ! command -v clang-format >/dev/null 2>&1; then
    echo "not ok clang-format is not installed (contrib/install-deps.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
fi
# One clang-format for all the files (one each took a minute under load);
# it names each file that differs in its warnings.
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run -Werror >/dev/null 2>"$tmp"
rc=$?
bad=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' "$tmp" | sort -u)
[ "$rc" -ne 0 ] && [ -z "$bad" ] && bad="(clang-format exit $rc: $(head -n 3 "$tmp"))"
n=$(git ls-files '*.c' '*.h' | wc -l)
if [ -z "$bad" ]; then
    echo "ok   all $n C files are formatted"
    passed=$((passed + 1))
else
    echo "not ok these differ from clang-format:"
    printf '%s\n' "$bad" | sed 's/^/       /'
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
