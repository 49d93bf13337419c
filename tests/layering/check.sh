#!/bin/sh
# check.sh: the layering check. Fails (exit 1) naming each file that
# breaks a rule of tests/layering/rules:
#   - a file includes a header of a part its part may not use;
#   - a file includes a restricted system header ("only" lines) outside
#     the parts allowed it;
#   - includes, or calls between object files, run in a cycle.
# The calls are read with nm from the objects of a build, so the check
# sees a dependency even where no header names it.
#
# usage: check.sh [-r ROOT] [-b BUILD] [-R RULES] [--graph]
#   ROOT   the source tree (default: this repository)
#   BUILD  the build directory holding the objects (default: $B or build);
#          without objects the call check is skipped and says so
#   --graph  print the part-level include graph instead of checking
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${B:-build}
rules=""
graph=0
while [ $# -gt 0 ]; do
    case $1 in
    -r) root=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    -R) rules=$2; shift 2 ;;
    --graph) graph=1; shift ;;
    *) echo "check.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$rules" ] || rules=$root/tests/layering/rules
cd "$root" || exit 2
case $build in /*) ;; *) build=$root/$build ;; esac
[ -f "$rules" ] || { echo "check.sh: no rules file $rules" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# Every source file of the programs, and its part: a folder named by a
# `part` line, the longest that holds the file.
find engine tui store -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' \) | sort >"$tmp/files"
awk 'NR == FNR { if ($1 == "part") part[$2] = 1; next }
     {
         best = ""
         for (p in part)
             if (index($0, p "/") == 1 && length(p) > length(best)) best = p
         print $0, (best == "" ? "-" : best)
     }' "$rules" "$tmp/files" >"$tmp/parts"

# Direct includes: "file header" for quoted ones (resolved as the compiler
# does with -I.: the including file's folder first, then the root) and
# "file <header>" for system ones. One awk over every file: a shell loop
# with a dirname per include forked thousands of times per run, and the
# layering test runs this check a dozen times. A header not among the
# tree's files is looked for on disk (getline fails on no file).
awk 'function found(p, line) {
         if (p in tree) return 1
         if ((getline line <p) >= 0) { close(p); return 1 }
         return 0
     }
     { tree[$0] = 1; files[++n] = $0 }
     END {
         for (i = 1; i <= n; i++) {
             f = files[i]; dir = f; sub(/\/[^\/]*$/, "", dir)
             while ((getline line <f) > 0) {
                 if (!match(line, /^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^>"]*[>"]/)) continue
                 inc = substr(line, RSTART, RLENGTH); sub(/^[^<"]*/, "", inc)
                 if (substr(inc, 1, 1) == "<") { print f, inc; continue }
                 name = substr(inc, 2, length(inc) - 2)
                 if (found(dir "/" name)) print f, dir "/" name
                 else if (found(name)) print f, name
                 else print f, "?" name
             }
             close(f)
         }
     }' "$tmp/files" >"$tmp/includes"

if [ "$graph" = 1 ]; then
    # part -> part, with how many includes make the edge; parts listed
    # from the bottom up (tsort), so each uses only those above it.
    awk 'NR == FNR { part[$1] = $2; next }
         $2 !~ /^[<?]/ && part[$1] != part[$2] { n[part[$1] " -> " part[$2]]++ }
         END { for (e in n) print e, "(" n[e] ")" }' "$tmp/parts" "$tmp/includes" | sort >"$tmp/edges"
    awk '{ print $3, $1 }' "$tmp/edges" >"$tmp/pairs"
    awk '$1 == "part" { print $2, $2 }' "$rules" >>"$tmp/pairs"
    echo "parts, bottom up:"
    tsort "$tmp/pairs" | sed 's/^/  /'
    echo "uses (includes):"
    sed 's/^/  /' "$tmp/edges"
    exit 0
fi

# 1. Every file in a part; every quoted include found.
awk '$2 == "-" { print $1 }' "$tmp/parts" | while read -r f; do
    echo "layering: $f is in no part of $rules"; done >"$tmp/out1"
awk '$2 ~ /^\?/ { print "layering: " $1 " includes \"" substr($2, 2) "\", which is no file of the tree" }' \
    "$tmp/includes" >>"$tmp/out1"

# 2. Part to part: allowed only where the rules say so.
awk 'NR == FNR { if ($1 == "part") { ok[$2 " " $2] = 1; for (i = 3; i <= NF; i++) ok[$2 " " $i] = 1 }; next }
     FILENAME ~ /parts$/ { part[$1] = $2; next }
     $2 !~ /^[<?]/ {
         a = part[$1]; b = part[$2]
         if (a != "-" && b != "-" && !((a " " b) in ok))
             print "layering: " $1 " (" a ") includes " $2 ": " a " may not use " b
     }' "$rules" "$tmp/parts" "$tmp/includes" >>"$tmp/out1"

# 3. Restricted system headers.
awk 'NR == FNR { if ($1 == "only") { n++; pat[n] = $2; allowed[n] = " " substr($0, index($0, $3)) " " }; next }
     FILENAME ~ /parts$/ { part[$1] = $2; next }
     $2 ~ /^</ {
         h = substr($2, 2, length($2) - 2)
         for (i = 1; i <= n; i++) {
             p = pat[i]; hit = 0
             if (p ~ /\/\*$/) hit = index(h, substr(p, 1, length(p) - 1)) == 1
             else hit = h == p
             if (hit && index(allowed[i], " " part[$1] " ") == 0)
                 print "layering: " $1 " (" part[$1] ") includes <" h ">: only" allowed[i] "may"
         }
     }' "$rules" "$tmp/parts" "$tmp/includes" >>"$tmp/out1"

# 4. No include cycle between files: a .c, its .h and its internal header
#    (NAME_int.h) are one unit.
awk '$2 !~ /^[<?]/ {
         a = $1; b = $2; sub(/(_int)?\.[chS]$/, "", a); sub(/(_int)?\.[chS]$/, "", b)
         print b, a
     }' "$tmp/includes" >"$tmp/unit_edges"
if ! tsort "$tmp/unit_edges" >/dev/null 2>"$tmp/loops"; then
    echo "layering: includes run in a cycle:" >>"$tmp/out1"
    sed -n 's/^tsort: \([^:]*\)$/    \1/p' "$tmp/loops" | grep -v 'input contains a loop' >>"$tmp/out1"
fi

# 5. No call cycle between object files, and no call across parts the
#    rules do not allow.
objs=$(cd "$build" 2>/dev/null && find engine tui store -name '*.o' 2>/dev/null | sort)
if [ -z "$objs" ]; then
    echo "layering: no objects under $build: calls not checked (build first)"
else
    # One nm for all (-A: each line starts "OBJECT.o:"), made "OBJECT ".
    # shellcheck disable=SC2086 # $objs: one word per object
    (cd "$build" && nm -A $objs | sed 's|^\([^:]*\)\.o:|\1 |') >"$tmp/nm"
    # Objects of files that no longer exist (a stale build) are skipped.
    awk 'NR == FNR { src[$1] = 1; next }
         { f = $1; if ((f ".c") in src || (f ".S") in src) print }' "$tmp/files" "$tmp/nm" >"$tmp/nm.live"
    awk 'NF == 4 && $3 ~ /^[TDBR]$/ { def[$4] = $1; next }
         NF == 3 && $2 == "U" { use[++n] = $1 " " $3 }
         END { for (i = 1; i <= n; i++) { split(use[i], u, " ")
                   if ((u[2] in def) && def[u[2]] != u[1]) print def[u[2]], u[1] } }' \
        "$tmp/nm.live" "$tmp/nm.live" | sort -u >"$tmp/calls"
    if ! tsort "$tmp/calls" >/dev/null 2>"$tmp/loops"; then
        echo "layering: calls between object files run in a cycle:" >>"$tmp/out1"
        sed -n 's/^tsort: \([^:]*\)$/    \1/p' "$tmp/loops" | grep -v 'input contains a loop' >>"$tmp/out1"
    fi
    awk 'NR == FNR { if ($1 == "part") { ok[$2 " " $2] = 1; for (i = 3; i <= NF; i++) ok[$2 " " $i] = 1 }; next }
         FILENAME ~ /parts$/ { f = $1; sub(/\.[cS]$/, "", f); part[f] = $2; next }
         {
             a = part[$2]; b = part[$1]
             if (a != "" && b != "" && !((a " " b) in ok))
                 print "layering: " $2 " (" a ") calls into " $1 " (" b "): " a " may not use " b
         }' "$rules" "$tmp/parts" "$tmp/calls" | sort -u >>"$tmp/out1"
fi

if [ -s "$tmp/out1" ]; then
    cat "$tmp/out1"
    exit 1
fi
echo "layering: $(wc -l <"$tmp/files") files in $(grep -c '^part ' "$rules") parts follow $rules"
exit 0
