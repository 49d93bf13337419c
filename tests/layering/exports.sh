#!/bin/sh
# exports.sh: every name a program file exports is used by another file.
# Fails (exit 1) naming each function or variable that an object of the
# build defines as global but that no other object calls and no other
# source file (tests, the files holding main() included) names: such a
# name is file-local and belongs in its .c as static, out of its header.
#
# Uses are read two ways: the undefined symbols of the other objects (so a
# name built by token pasting, as qblock_k.c's qb_quantize_##name, counts)
# and the words of every other .c and .S file (the tests and main() files
# are compiled straight into their binaries, without objects to read).
#
# usage: exports.sh [-r ROOT] [-b BUILD]
#   ROOT   the source tree (default: this repository)
#   BUILD  the build directory holding the objects (default: $B or build)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${B:-build}
while [ $# -gt 0 ]; do
    case $1 in
    -r) root=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    *) echo "exports.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
cd "$root" || exit 2
case $build in /*) ;; *) build=$root/$build ;; esac
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# "source name" for each global an object defines, "source name" for
# each symbol it leaves undefined; source is the .c (or .S) it came from.
for part in engine store tui; do
    [ -d "$build/$part" ] && find "$build/$part" -name '*.o'
done | sort >"$tmp/objects"
# Names the compiler makes (ASan's __odr_asan.NAME, ...) begin with "__"
# and are no one's exports.
# nm -A starts each line with "BUILD/dir/file.o:"; the source of that
# object is dir/file.c or dir/file.S, or dir/file.c for dir/file.PATH.o
# ("" for a stale object, skipped).
source_of='{
    split($1, f, ":")
    if (!(f[1] in src)) {
        o = substr(f[1], length(build) + 2); sub(/\.o$/, "", o)
        src[f[1]] = ""
        # A kernel file compiled once per path: dir/file.PATH.o.
        k = o; sub(/\.[a-z0-9]+$/, "", k)
        if (system("test -f " o ".c") == 0) src[f[1]] = o ".c"
        else if (system("test -f " o ".S") == 0) src[f[1]] = o ".S"
        else if (k != o && system("test -f " k ".c") == 0) src[f[1]] = k ".c"
    }
    s = src[f[1]]
}'
xargs -r nm -A -g --defined-only <"$tmp/objects" | awk -v build="$build" "$source_of"'
    s != "" && $(NF - 1) ~ /^[BDGRSTV]$/ && $NF !~ /^__/ { print s, $NF }' >"$tmp/defs"
xargs -r nm -A -u <"$tmp/objects" | awk -v build="$build" "$source_of"'s != "" { print s, $NF }' >"$tmp/refs"
if [ ! -s "$tmp/defs" ]; then
    echo "exports.sh: no objects under $build: build first" >&2
    exit 2
fi

# "file name" for each defined name that a source file spells.
awk '{ print $2 }' "$tmp/defs" | sort -u >"$tmp/names"
for d in engine store tui tests; do
    [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.S' \)
done | sort >"$tmp/files"
xargs grep -HowF -f "$tmp/names" <"$tmp/files" | sed 's/:/ /' | sort -u >"$tmp/words"

# A definition is used when another file references or spells it.
awk 'FILENAME == ARGV[1] || FILENAME == ARGV[2] { used[$2] = used[$2] " " $1; next }
     {
         n = split(used[$2], by, " ")
         for (i = 1; i <= n; i++) if (by[i] != $1) next
         print $1 ": " $2 " is used by no other file: make it static (or remove it)"
         bad = 1
     }
     END { exit bad }' "$tmp/refs" "$tmp/words" "$tmp/defs" >"$tmp/out"
rc=$?
if [ $rc = 0 ]; then
    echo "exports: the $(wc -l <"$tmp/defs") names $(basename "$build")'s objects export are each used by another file"
else
    sort "$tmp/out"
fi
exit $rc
