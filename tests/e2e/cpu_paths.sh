#!/bin/sh
# End to end: the kernel paths of one portable build (engine/compute/cpu.h).
#   - every object of the default build but the kernel files' per-path
#     copies holds baseline x86-64 code only (no VEX/EVEX, ymm, zmm, mask
#     or tile registers, BMI, POPCNT, LZCNT, MOVBE or SSSE3/SSE4 op), apart
#     from the AVX2 and AVX-512 clones VEC8_PATHS makes (functions named
#     *_avx2 and *_avx512), which run only once the path is chosen: what
#     runs before the choice runs on any x86-64;
#   - `inferd --version` names the path in use and the ones the CPU runs;
#     INFERD_CPU forces each of those, and is refused by name for an
#     unknown path or one the CPU lacks (naming the missing features);
#   - greedy generation gives the same text on every path the CPU has;
#   - a node's status reply carries the path it runs (cpu_path).
. "$(dirname "$0")/lib/serve.sh"

obj="$root/${B:-build}"
case "$(uname -m)" in
x86_64)
    # Per function: its name, then every op that baseline x86-64 lacks.
    bad=$(find "$obj/engine" "$obj/store" "$obj/tui" -name '*.o' \
        ! -name '*.avx2.o' ! -name '*.avx512.o' ! -name '*.vnni.o' ! -name '*.amx.o' |
        sort | while read -r o; do
            objdump -d --no-show-raw-insn "$o" | awk -v o="${o#"$obj"/}" '
                /^[0-9a-f]+ <.*>:$/ { f = $2; next }
                /^ +[0-9a-f]+:\t/ {
                    split($0, p, "\t"); ins = p[2]
                    if (f ~ /_avx(2|512)>:$/) next
                    if (ins ~ /^v/ || ins ~ /%[yz]mm|%k[0-7]|%tmm/ ||
                        ins ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|lzcnt|tzcnt|popcnt|pdep|pext|rorx|sarx|shlx|shrx|mulx|movbe|crc32)[ \t]/ ||
                        ins ~ /^(pshufb|palignr|pmaddubsw|phadd|phsub|psign|pabs|pmulld|pminsd|pmaxsd|pminud|pmaxud|pblend|blendv|ptest|pextr[bdq]|pinsr[bdq]|round[sp][sd]|dpp[sd]|pmovsx|pmovzx|pcmpeqq|packusdw)/) {
                        print o " " f " " ins; exit
                    }
                }'
        done)
    check "code before the kernel path is chosen is baseline x86-64${bad:+ (not: $bad)}" [ -z "$bad" ]
    check "the per-path kernel objects are built" \
        [ -f "$obj/engine/compute/qblock_q.avx2.o" ] && [ -f "$obj/engine/compute/qblock_q.amx.o" ]
    ;;
*) echo "skipped: the baseline check is for x86-64 builds ($(uname -m))" ;;
esac

# The paths this CPU runs, from inferd --version's second line.
ver=$(inferd --version)
check "--version's first line is the version alone" sh -c "inferd --version | head -n 1 | grep -qx 'inferd [0-9][0-9.]*'"
runs=$(printf '%s\n' "$ver" | sed -n 's/^kernels: \([a-z0-9]*\) (this CPU runs: \(.*\))$/\2/p')
best=$(printf '%s\n' "$ver" | sed -n 's/^kernels: \([a-z0-9]*\) .*/\1/p')
check "--version names the path in use ($best) and the CPU's ($runs)" \
    [ -n "$runs" ] && [ "$best" = "${runs##* }" ]

ref=""
for p in scalar avx2 avx512 vnni amx; do
    case " $runs " in
    *" $p "*)
        got=$(INFERD_CPU=$p inferd --version | sed -n 's/^kernels: \([a-z0-9]*\) .*/\1/p')
        check "INFERD_CPU=$p runs $p" [ "$got" = "$p" ]
        INFERD_CPU=$p inferd generate --prompt "Once upon a time" --steps 40 >"$tmp/gen.$p" 2>"$tmp/err"
        [ -n "$ref" ] || ref=$p
        check "INFERD_CPU=$p generates what $ref does" cmp -s "$tmp/gen.$p" "$tmp/gen.$ref"
        ;;
    *)
        INFERD_CPU=$p inferd --version >"$tmp/out" 2>"$tmp/err"
        rc=$?
        check "INFERD_CPU=$p is refused on this CPU (exit $rc): $(cat "$tmp/err")" \
            sh -c "[ $rc -eq 2 ] && grep -q 'INFERD_CPU=$p: kernel path $p: this CPU lacks' '$tmp/err'"
        echo "skipped path $p: $(cat "$tmp/err")"
        ;;
    esac
done
INFERD_CPU=avx3 inferd generate --steps 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "an unknown INFERD_CPU is refused (exit $rc)" \
    sh -c "[ $rc -eq 2 ] && grep -q \"INFERD_CPU=avx3: unknown kernel path 'avx3'\" '$tmp/err'"

alloc_ports 2
C=$(ep "$P1")
export INFERD_CPU=scalar
start cpu --control "$C" --telemetry "$(ep "$P2")" --threads 1
unset INFERD_CPU
up "$C" || { fail "node started"; finish; exit 1; }
check "status reports the node's kernel path" \
    [ "$(call "$C" status | get cpu_path)" = scalar ]
stop cpu
finish
