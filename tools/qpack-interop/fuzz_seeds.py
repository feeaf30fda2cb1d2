#!/usr/bin/env python3
"""Seed inputs for the `qpack_decode` fuzz target, made with ls-qpack (pylsqpack).

Valid encodings from another encoder reach decoder paths our own encoder may not take
(Huffman everywhere, post-base references, duplicates). Each seed is a slice of the corpus
encoded by ls-qpack at some table size and blocked-streams limit, written in the fuzz
target's input format: two setup bytes, then `op len bytes` chunks (op 0: encoder-stream
bytes, op 1 | slot << 2: a field section on stream slot * 4). Sections longer than 255 bytes
do not fit one chunk and are left out (the others decode without them).

Usage: fuzz_seeds.py OUT_DIR   (e.g. fuzz/corpus/qpack_decode; fuzz/corpus is gitignored)
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pylsqpack_tool as tool  # noqa: E402

# Indexes into the target's CAPACITIES table: 256 and 4096 bytes.
CAPACITY_INDEX = {256: 4, 4096: 6}


def seed(lists, table, blocked, ack):
    data, _, _ = tool.encode(lists, table, blocked, ack)
    out = bytearray([CAPACITY_INDEX[table], blocked & 7])
    for stream_id, payload in tool.parse_blocks(data):
        if stream_id == 0:
            for i in range(0, len(payload), 255):
                piece = payload[i:i + 255]
                out += bytes([0, len(piece)]) + piece
        else:
            if len(payload) > 255:
                continue
            out += bytes([1 | ((stream_id % 8) << 2), len(payload)]) + payload
    return bytes(out)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    n = 0
    for name in ("news-requests.qif", "news-responses.qif"):
        with open(os.path.join(HERE, "corpus", name), "rb") as f:
            lists = tool.parse_qif(f.read())
        for start in range(0, len(lists), 12):
            window = lists[start:start + 12]
            for table in (256, 4096):
                for blocked in (0, 7):
                    for ack in (False, True):
                        path = os.path.join(out_dir, "lsqpack-%s-%d-%d-%d-%s" % (
                            name.split(".")[0], start, table, blocked, "ack" if ack else "noack"))
                        with open(path, "wb") as f:
                            f.write(seed(window, table, blocked, ack))
                        n += 1
    print("%d seeds in %s" % (n, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
