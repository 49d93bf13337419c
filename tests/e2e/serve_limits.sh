#!/bin/sh
# End to end: the limits a careless or hostile client meets on the control
# and telemetry sockets. A message of many frames is refused with the real
# count; a frame over the protocol's limit gets too_large and one over the
# transport's 16 MiB loses its connection without a reply, while the node
# keeps serving. Subscriptions that match no topic cost the node nothing.
# Every socket bound beyond loopback without CURVE is warned about.
. "$(dirname "$0")/lib/serve.sh"

MiB=1048576
alloc_ports 8
C=$(ep "$P1")
T=$(ep "$P2")
# Under AddressSanitizer freed memory waits in a quarantine and stays in
# RSS, which the subscription checks read (ignored by normal builds).
saved=${ASAN_OPTIONS:-}
export ASAN_OPTIONS="${saved:+$saved:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
start lim --control "$C" --telemetry "$T" --threads 1
export ASAN_OPTIONS="$saved"
up "$C" || { fail "node started"; finish; exit 1; }

# ---- frames
"$CTL" raw "$C" '{"v":1,"id":"m","op":"status"}' --frames 1000 >"$tmp/multi"
check "a 1000-frame message is bad_json naming 1000 frames ($(get error.message <"$tmp/multi"))" \
    grep -q 'bad_json.*got 1000 frames' "$tmp/multi"
"$CTL" raw "$C" x --size 1048576 >"$tmp/big"
check "a 1 MiB frame gets too_large" [ "$(get error.code <"$tmp/big")" = too_large ]
"$CTL" raw "$C" x --size 17000000 --timeout 3000 >"$tmp/huge" 2>/dev/null
check "a frame over 16 MiB gets no reply (its connection is closed)" [ $? = 2 ]
check "and the node keeps serving" [ "$(call "$C" status | get ok)" = true ]

# ---- subscriptions that match no topic: long ones, then many short ones
for bytes in 200 30 8; do
    before=$(call "$C" status | get memory.rss)
    "$CTL" subflood "$T" 20000 $bytes 5 &
    flood=$!
    sleep 4
    during=$(call "$C" status | get memory.rss)
    wait $flood
    check "20000 subscriptions of $bytes bytes grow the node by less than 16 MiB ($before -> $during)" \
        [ "$during" -lt $((before + 16 * MiB)) ]
    "$CTL" listen "$T" 2 >"$tmp/tel"
    check "then subscribers get telemetry" grep -q '"topic":"node"' "$tmp/tel"
done
check "the node logged reopening its telemetry socket" \
    grep -q "reopened the telemetry socket after 256 subscriptions" "$tmp/lim.log"

# ---- exposed sockets are warned about, each of them
start open_tel --control "$(ep "$P3")" --telemetry "tcp://0.0.0.0:$P4" --threads 1
up "$(ep "$P3")" || fail "node with open telemetry started"
check "telemetry on 0.0.0.0 without CURVE is warned about at start" \
    grep -q "WARNING: telemetry socket tcp://0.0.0.0:$P4" "$tmp/open_tel.err"
check "and in status" \
    sh -c "\"$CTL\" call $(ep "$P3") status | \"$CTL\" get security.warning | grep -q telemetry"
start open_ring --layers 0:3 --control "$(ep "$P5")" --telemetry "$(ep "$P6")" \
    --listen "tcp://0.0.0.0:$P7" --next "$(ep "$P8")" --threads 1
up "$(ep "$P5")" || fail "stage with open --listen started"
check "--listen on 0.0.0.0 without CURVE is warned about" \
    grep -q "WARNING: ring input (--listen) tcp://0.0.0.0:$P7" "$tmp/open_ring.err"
check "a node on loopback only has no warning" \
    [ -z "$(call "$C" status | get security.warning)" ]

finish
