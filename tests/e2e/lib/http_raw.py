#!/usr/bin/env python3
"""Raw-socket HTTP clients for tests/e2e/http_hostile.sh and http_slow.sh.

Each phase prints one line a check: "NAME<TAB>1" (held) or "NAME<TAB>0
WHY", which the shell turns into ok/FAIL lines.
"""
import json
import re
import resource
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def report(name, ok, why=""):
    print(f"{name}\t{1 if ok else 0}\t{why}", flush=True)


def connect(port, timeout=10.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    return s


def read_all(s, limit=1 << 26):
    """Reads until EOF; returns (bytes, error name or None)."""
    out = b""
    try:
        while len(out) < limit:
            b = s.recv(65536)
            if not b:
                return out, None
            out += b
    except ConnectionResetError:
        return out, "reset"
    except socket.timeout:
        return out, "timeout"
    return out, None


def split(resp):
    """(status, headers dict lower-cased, body bytes) of a response."""
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return 0, {}, body
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return status, hdrs, body


def dechunk(b):
    out = b""
    while b:
        size, _, rest = b.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            break
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


def request(port, raw, timeout=10.0):
    s = connect(port, timeout)
    s.sendall(raw)
    resp, err = read_all(s)
    s.close()
    return resp, err


def get(port, path, timeout=10.0):
    raw = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    return request(port, raw, timeout)


def post(port, path, body, timeout=60.0, extra=""):
    b = body.encode()
    raw = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(b)}\r\n{extra}Connection: close\r\n\r\n").encode() + b
    return request(port, raw, timeout)


def json_error(body):
    try:
        o = json.loads(body)
        return isinstance(o.get("error"), dict) and "message" in o["error"], o
    except (ValueError, AttributeError):
        return False, None


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def hold(port, deadline_s):
    """1,000 idle and 64 slowloris connections; probes answer meanwhile;
    the slowloris ones get 408 at the deadline, the idle ones stay."""
    raise_nofile(4096)
    idle = [connect(port) for _ in range(1000)]
    slow = []
    for _ in range(64):
        s = connect(port)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        slow.append(s)
    t0 = time.monotonic()
    for path in ("/health", "/metrics"):
        t = time.monotonic()
        resp, err = get(port, path, timeout=5)
        st, _, _ = split(resp)
        report(f"{path} answers 200 with 1,064 connections held "
               f"({(time.monotonic() - t) * 1000:.0f} ms)", st == 200 and not err, f"{st} {err}")
    body = json.dumps({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 8})
    resp, err = post(port, "/v1/completions", body, timeout=30)
    st, _, b = split(resp)
    report("a completion succeeds meanwhile", st == 200 and b"choices" in b, f"{st} {err}")
    # The slowloris clients trickle a header byte every 0.25 s past the
    # deadline: the guard's deadline does not restart at each byte.
    got408 = 0
    closed = 0
    while time.monotonic() - t0 < deadline_s + 3:
        for s in slow:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        time.sleep(0.25)
    for s in slow:
        s.settimeout(2)
        resp, err = read_all(s)
        st, _, b = split(resp)
        ok, o = json_error(b)
        if st == 408 and ok and o["error"].get("code") == "timeout":
            got408 += 1
        if err is None:
            closed += 1
        s.close()
    report("the 64 slowloris connections get a JSON 408 at the header deadline", got408 == 64,
           f"{got408} of 64")
    report("... and are closed", closed == 64, f"{closed} of 64")
    alive = 0
    for s in idle:
        s.setblocking(False)
        try:
            alive += s.recv(1) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    report("the 1,000 idle connections are still held (no request line: the idle timeout's)",
           alive == 1000, f"{alive} of 1000")


def burst(port, n):
    """n concurrent streams: each 200 or 429/503 with Retry-After, none a
    reset; a 200 stream ends with [DONE]."""
    raise_nofile(4096)
    results = [None] * n
    body = json.dumps({"model": "stories260K", "stream": True, "max_tokens": 48,
                       "messages": [{"role": "user", "content": "Hi"}]})
    go = threading.Event()

    def one(i):
        go.wait()
        try:
            resp, err = post(port, "/v1/chat/completions", body, timeout=120)
        except OSError as e:
            results[i] = (0, {}, b"", type(e).__name__)
            return
        st, h, b = split(resp)
        results[i] = (st, h, b, err)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    go.set()
    for t in ts:
        t.join()
    bad = []
    counts = {}
    for st, h, b, err in results:
        counts[st] = counts.get(st, 0) + 1
        if err:
            bad.append(f"{st}:{err}")
        elif st == 200:
            if not b.rstrip().endswith(b"data: [DONE]"):
                bad.append("200 without [DONE]")
        elif st in (429, 503):
            if h.get("retry-after") != "1" or not json_error(b)[0]:
                bad.append(f"{st} without Retry-After or JSON")
        else:
            bad.append(str(st))
    report(f"{n} concurrent streams: each 200 or 429/503 with Retry-After, none reset "
           f"({counts})", not bad, " ".join(bad[:5]))
    print(f"#counts\t{json.dumps(counts)}", flush=True)


def queued(port, places, extra):
    """places long streams take every place; extra more wait in the
    node's queue and their clients go away before they start (each is
    cancelled while queued); then the long ones end. The long ones'
    clients (4 KB receive buffers) read nothing until then, so their
    requests pause (backpressure) and hold their places however fast the
    node is: with 5 logprobs a token, 480 of them are several times what
    the buffers between node and client hold. BOS and EOS are banned
    (either ends a stream early, and frees its place)."""
    raise_nofile(4096)
    body = json.dumps({"model": "stories260K", "stream": True, "max_tokens": 480,
                       "prompt": "Once", "logit_bias": {"1": -100, "2": -100}, "logprobs": 5})
    b = body.encode()
    raw = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
           f"\r\nContent-Length: {len(b)}\r\nConnection: close\r\n\r\n").encode() + b
    done = []
    release = threading.Event()

    def one():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(120)
        s.connect((HOST, port))
        s.sendall(raw)
        release.wait(60)
        resp, err = read_all(s)
        s.close()
        done.append((split(resp)[0], err, time.monotonic()))

    ts = [threading.Thread(target=one) for _ in range(places)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    gone = []
    for _ in range(extra):
        s = connect(port)
        s.sendall(raw)
        gone.append(s)
    time.sleep(0.5)
    for s in gone:
        s.close()
    running = in_flight(port) or []
    closed_at = time.monotonic()
    release.set()
    for t in ts:
        t.join()
    first_end = min(d[2] for d in done)
    report(f"{extra} clients gone while their requests were queued (all {places} places still "
           f"running when they left)", len(running) == places and first_end > closed_at,
           f"{len(running)} running, first end {first_end - closed_at:.2f} s after")
    report(f"... the {places} running ones end 200", all(d[0] == 200 and not d[1] for d in done),
           f"{[d[:2] for d in done][:4]}")


def closes(s):
    """Whether the server closed the connection after its answer."""
    s.settimeout(5)
    resp, err = read_all(s)
    return resp, err is None


def walked(name, st, want, ok, why):
    """A check of one error status; a held one is listed as walked."""
    report(name, ok, why)
    if ok:
        print(f"#walked\t{want}", flush=True)


def json_case(name, resp, want, code):
    st, h, b = split(resp)
    ok, o = json_error(b)
    walked(f"{name}: {want} {code}, a JSON body", st, want,
           st == want and ok and o["error"].get("code") == code, f"{st} {b[:80]!r}")
    return h


def walk(port, max_body, deadline_s, per_client):
    """Every status the server writes itself, libmicrohttpd's own cases
    included (the guard answers those before it parses), each with a JSON
    body."""
    cases = [
        ("404 unknown route", get(port, "/nope")[0], 404, "unknown_url"),
        ("405 wrong method", get(port, "/v1/completions")[0], 405, "method_not_allowed"),
        ("400 bad JSON", post(port, "/v1/completions", "{")[0], 400, "bad_json"),
        ("413 over --max-body", post(port, "/v1/completions", "x" * (max_body + 1))[0], 413,
         "too_large"),
        ("400 NUL in the path", get(port, "/v1/completions%00")[0], 400, "bad_path"),
        ("400 a control character in the path", get(port, "/health%0a")[0], 400, "bad_path"),
    ]
    head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
    raw = [
        ("400 a Content-Length that is not a number", head + "Content-Length: 12abc\r\n\r\n",
         400, "bad_content_length"),
        ("413 a Content-Length past 64 bits", head + "Content-Length: " + "9" * 30 + "\r\n\r\n",
         413, "too_large"),
        ("400 two different Content-Length", head + "Content-Length: 1\r\nContent-Length: 2"
         "\r\n\r\n", 400, "bad_content_length"),
        ("414 a request line of 9,000 bytes", "GET /" + "a" * 9000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
         414, "uri_too_long"),
        ("431 a head of 17,000 bytes", "GET /health HTTP/1.1\r\nHost: x\r\nX-A: " + "b" * 17000
         + "\r\n\r\n", 431, "headers_too_large"),
        ("431 200 fields", "GET /health HTTP/1.1\r\nHost: x\r\n" + "X-A: b\r\n" * 200 + "\r\n",
         431, "headers_too_large"),
        ("505 HTTP/2.0", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version"),
        ("505 HTTP/2's preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http_version"),
        ("505 HTTP/0.9", "GET /health HTTP/0.9\r\n\r\n", 505, "http_version"),
        ("400 a request line without a version", "GET /health\r\n\r\n", 400, "bad_request"),
        ("400 HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n", 400, "bad_request"),
        ("400 a field line without a colon", "GET /health HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n",
         400, "bad_request"),
    ]
    for name, resp, want, code in cases:
        json_case(name, resp, want, code)
    for name, text, want, code in raw:
        json_case(name, request(port, text.encode())[0], want, code)
    # Both framings: refused, and the connection does not go on (what
    # follows could be a smuggled request).
    s = connect(port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    resp, closed = closes(s)
    st, _, b = split(resp)
    walked("Content-Length with Transfer-Encoding: 400 JSON, connection closed, nothing more", st,
           400, st == 400 and json_error(b)[0] and closed and resp.count(b"HTTP/1.1") == 1,
           f"{st} closed={closed}")
    s = connect(port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")
    resp, closed = closes(s)
    st, _, b = split(resp)
    ok, o = json_error(b)
    walked("Transfer-Encoding gzip: 501 JSON at once, connection closed", st, 501,
           st == 501 and ok and o["error"].get("code") == "not_implemented" and closed,
           f"{st} closed={closed}")
    # A head that never ends, and one whose body never comes: both 408.
    a = connect(port)
    a.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    c = connect(port)
    c.sendall((head + "Content-Length: 10\r\n\r\n").encode())
    time.sleep(deadline_s + 0.6)
    json_case("408 a head that never ends", closes(a)[0], 408, "timeout")
    json_case("408 a body that never comes", closes(c)[0], 408, "timeout")
    # --http-per-client: past it, a request gets 429 (its connections wait
    # for their bodies meanwhile); /health is still served.
    held = []
    for _ in range(per_client):
        s = connect(port)
        s.sendall((head + "Content-Length: 10\r\n\r\n").encode())
        held.append(s)
    time.sleep(0.3)
    h = json_case("429 past --http-per-client", get(port, "/v1/models")[0], 429,
                  "too_many_connections")
    report("... with Retry-After: 1", h.get("retry-after") == "1", f"{h.get('retry-after')}")
    st, _, _ = split(get(port, "/health")[0])
    report("... and /health still answers past it", st == 200, f"{st}")
    for s in held:
        s.close()


def stream_text(body):
    """The texts of a completion stream's chunks, its finish reasons, its
    usage (or None), its error events and whether it ended with [DONE]."""
    text, reasons, usage, errors = "", [], None, []
    events = [e[6:] for e in body.decode("utf-8", "replace").split("\n\n")
              if e.startswith("data: ")]
    for e in events:
        if e == "[DONE]":
            continue
        o = json.loads(e)
        if "error" in o:
            errors.append(o["error"])
        usage = o.get("usage") or usage
        for c in o.get("choices", []):
            text += c.get("text") or ""
            if c.get("finish_reason"):
                reasons.append(c["finish_reason"])
    return text, reasons, usage, errors, bool(events) and events[-1] == "[DONE]"


LONG = {"model": "m", "prompt": "Once upon a time", "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True}, "logit_bias": {"2": -100}}


def stream_request(n):
    b = json.dumps(dict(LONG, max_tokens=n)).encode()
    return (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b)}\r\nConnection: close\r\n\r\n").encode() + b


def small_reader(port, n):
    """A client with a 4 KB receive buffer that has sent a stream request."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(60)
    s.connect((HOST, port))
    s.sendall(stream_request(n))
    return s


def in_flight(port):
    """The ids of the requests the node runs (GET /slots)."""
    resp, err = get(port, "/slots")
    st, _, b = split(resp)
    return [r["id_task"] for r in json.loads(b)] if st == 200 and not err else None


def slow(port, n, window_s):
    """A reader with a 4 KB receive buffer taking 4 KB every 2 s for
    window_s (longer than the stall limit), then fast, gets the stream a
    fast reader beside it gets, to its end; meanwhile the node pauses it."""
    s = small_reader(port, n)
    got = b""
    id_re = re.compile(rb'"id":"[a-z]+-([^"]+)"')
    while not id_re.search(got) and len(got) < 65536:
        got += s.recv(4096)
    fast = {}

    def fast_reader():
        t = time.monotonic()
        fast["resp"] = request(port, stream_request(n), timeout=300)
        fast["s"] = time.monotonic() - t

    # The request's id, as the node knows it, ends the stream's id.
    rid = id_re.search(got).group(1).decode()
    t = threading.Thread(target=fast_reader)
    t.start()
    t0 = time.monotonic()
    while time.monotonic() - t0 < window_s:
        time.sleep(2)
        got += s.recv(4096)
    running = in_flight(port) or []
    fast_done = not t.is_alive()
    rest, err = read_all(s)
    s.close()
    t.join()
    print(f"# the fast reader took {fast['s']:.1f} s", flush=True)
    # The node generates the 6,000 tokens in seconds (the fast reader's
    # time): still in flight at the window's end, the request was paused.
    report(f"while a reader takes 4 KB every 2 s for {window_s:g} s, its request stays in "
           f"flight: paused (the fast one beside it {'done' if fast_done else 'running'})",
           rid in running, f"{rid} not in {running}")
    st, _, b = split(fast["resp"][0])
    want, reasons, usage, _, done = stream_text(b)
    report(f"a fast reader beside it: 200, {n} tokens' text, finish_reason length, [DONE]",
           st == 200 and not fast["resp"][1] and reasons == ["length"] and done,
           f"{st} {fast['resp'][1]} {reasons}")
    st, _, b = split(got + rest)
    text, reasons, got_usage, errors, done = stream_text(b)
    report("the slow reader (4 KB every 2 s, then fast): every token, the fast reader's text",
           st == 200 and not err and text == want and len(want) > 0,
           f"{st} {err} {len(text)} of {len(want)} chars {errors}")
    report("... its final chunk (finish_reason length), usage and [DONE]",
           reasons == ["length"] and got_usage == usage and got_usage["completion_tokens"] == n
           and done, f"{reasons} {got_usage} done={done}")


def stall(port, n, stall_s):
    """A client that stops reading: while it is paused a second request
    completes; after the stall limit its stream ends, and the client,
    reading again, finds finish_reason abort and a stalled error."""
    s = small_reader(port, n)
    head = s.recv(1024)
    stopped = time.monotonic()
    time.sleep(1)
    body = json.dumps({"model": "m", "prompt": "Once upon a time", "max_tokens": 100,
                       "temperature": 0})
    resp, err = post(port, "/v1/completions", body, timeout=30)
    st, _, b = split(resp)
    report("while a stream whose client stopped reading is paused, a request beside it "
           "completes", st == 200 and not err and b"choices" in b, f"{st} {err}")
    running = in_flight(port)
    report("... and the paused one is still in flight", running and len(running) == 1,
           f"{running}")
    # Past the stall limit, within a second one (the stall error's wait),
    # from when it stopped reading.
    time.sleep(max(0.0, stopped + stall_s * 1.5 - time.monotonic()))
    rest, err = read_all(s)
    s.close()
    st, _, b = split(head + rest)
    _, reasons, _, errors, done = stream_text(b)
    report("a client that stops reading for the stall limit: its stream ends with "
           "finish_reason abort and a stalled error event, then closes",
           err is None and reasons[-1:] == ["abort"] and len(errors) == 1
           and errors[0].get("code") == "stalled" and not done,
           f"{err} {reasons[-1:]} {errors} done={done}")


def main():
    port = int(sys.argv[2])
    phase = sys.argv[1]
    if phase == "hold":
        hold(port, float(sys.argv[3]))
    elif phase == "burst":
        burst(port, int(sys.argv[3]))
    elif phase == "queued":
        queued(port, int(sys.argv[3]), int(sys.argv[4]))
    elif phase == "walk":
        walk(port, int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    elif phase == "slow":
        slow(port, int(sys.argv[3]), float(sys.argv[4]))
    elif phase == "stall":
        stall(port, int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(f"unknown phase {phase}")


if __name__ == "__main__":
    main()
