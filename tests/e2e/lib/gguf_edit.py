#!/usr/bin/env python3
"""Rewrites a GGUF file with one change, for tests that need a broken
vocabulary next to real tensors:

  gguf_edit.py IN OUT vocab N      keep the first N tokens (and their
                                   scores and types)
  gguf_edit.py IN OUT u32 KEY V    set (or add) a u32 key

The tensor infos and data are copied as they are (their offsets are
relative to the aligned data section).
"""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
VOCAB_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")


class Reader:
    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, n):
        s = self.b[self.i:self.i + n]
        self.i += n
        return s

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())


def skip_value(r, t):
    """The raw bytes of a value of type t."""
    start = r.i
    if t == 8:
        r.string()
    elif t == 9:
        et, n = r.u32(), r.u64()
        for _ in range(n):
            skip_value(r, et)
    else:
        r.take(SIZES[t])
    return r.b[start:r.i]


def array_head(raw):
    return struct.unpack("<IQ", raw[:12])


def truncate(raw, n):
    """An array value keeping its first n elements."""
    et, _ = array_head(raw)
    r = Reader(raw)
    r.take(12)
    for _ in range(n):
        skip_value(r, et)
    return struct.pack("<IQ", et, n) + raw[12:r.i]


def main():
    src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3]
    b = open(src, "rb").read()
    r = Reader(b)
    magic, version = r.take(4), r.u32()
    n_tensors, n_kv = r.u64(), r.u64()
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        t = r.u32()
        kvs.append([key, t, skip_value(r, t)])
    infos_start = r.i
    for _ in range(n_tensors):
        r.string()
        nd = r.u32()
        r.take(8 * nd + 4 + 8)
    infos = b[infos_start:r.i]
    align = 32
    for key, t, raw in kvs:
        if key == b"general.alignment":
            align = struct.unpack("<I", raw)[0]
    data = b[(r.i + align - 1) // align * align:]
    if what == "vocab":
        n = int(sys.argv[4])
        for kv in kvs:
            if kv[0].decode() in VOCAB_ARRAYS:
                kv[2] = truncate(kv[2], n)
    elif what == "u32":
        key, v = sys.argv[4].encode(), struct.pack("<I", int(sys.argv[5]))
        for kv in kvs:
            if kv[0] == key:
                kv[1], kv[2] = 4, v
                break
        else:
            kvs.append([key, 4, v])
    else:
        sys.exit(f"unknown edit {what}")
    out = magic + struct.pack("<IQQ", version, n_tensors, len(kvs))
    for key, t, raw in kvs:
        out += struct.pack("<Q", len(key)) + key + struct.pack("<I", t) + raw
    out += infos
    out += b"\0" * ((-len(out)) % align)
    open(dst, "wb").write(out + data)


if __name__ == "__main__":
    main()
