#!/usr/bin/env python3
"""Test page for chromium-h3.sh: writes a page with many subresources, and checks what the
page reported about them from the browser's Performance API.

  h3page.py make DIR EXPECTED_JSON [--resources N] [--seed S]
      Writes DIR/index.html and N subresources (valid PNG images padded with random bytes,
      and valid scripts padded with a comment, of known sizes from 100 B to 1 MiB), and
      EXPECTED_JSON ({path: size}).
  h3page.py check DOM_FILE EXPECTED_JSON
      Reads the verdict that index.html wrote into its DOM (the output of chromium --dump-dom)
      and checks every resource: fetched with nextHopProtocol "h3", status 200 where the
      browser tells it, encodedBodySize and decodedBodySize equal to the file's size; the page
      itself came over h3; every script ran. Prints one line per failure and the line
      "chromium-h3: N passed, N failed"; exit status 1 if anything failed.

Standard library only.
"""

import argparse
import html
import json
import os
import random
import re
import struct
import sys
import zlib

SCRIPT_HEAD = "window.__h3ran = (window.__h3ran || 0) + 1;\n/*"
SCRIPT_TAIL = "*/\n"

# The page reports raw facts; h3page.py check judges them against the files it wrote.
PAGE_JS = r"""
// The default buffer keeps 250 entries; --resources may ask for more.
performance.setResourceTimingBufferSize(10000);
window.addEventListener("load", function () {
  // After the load event every subresource of the page has arrived; the entries are final.
  setTimeout(function () {
    var nav = performance.getEntriesByType("navigation")[0] || {};
    var out = {
      navigation: {
        protocol: nav.nextHopProtocol, status: nav.responseStatus,
        loadEventStart: nav.loadEventStart, duration: nav.duration
      },
      scriptsRan: window.__h3ran || 0,
      resources: performance.getEntriesByType("resource").map(function (e) {
        return {
          path: new URL(e.name).pathname, protocol: e.nextHopProtocol,
          status: e.responseStatus, encoded: e.encodedBodySize, decoded: e.decodedBodySize,
          transfer: e.transferSize, start: e.startTime, end: e.responseEnd,
          initiator: e.initiatorType
        };
      })
    };
    var pre = document.createElement("pre");
    pre.id = "h3verdict";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 0);
});
"""


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A 1x1 grey PNG: signature, IHDR, IDAT, IEND.
PNG_SIG = b"\x89PNG\r\n\x1a\n"
PNG_IHDR = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
PNG_TAIL = png_chunk(b"IDAT", zlib.compress(b"\x00\x80")) + png_chunk(b"IEND", b"")
PNG_MIN = len(PNG_SIG) + len(PNG_IHDR) + 12 + len(PNG_TAIL)


def png_of_size(size, rng):
    """A valid 1x1 PNG of exactly `size` bytes (at least PNG_MIN): random bytes in a private
    ancillary chunk ("pdAt") between IHDR and IDAT, which decoders skip. Random bytes alone
    will not do: Chromium cancels an image's fetch once its decoder gives up on the data."""
    pad = rng.randbytes(max(0, size - PNG_MIN))
    return PNG_SIG + PNG_IHDR + png_chunk(b"pdAt", pad) + PNG_TAIL


def sizes(n, rng):
    """n sizes, spread log-uniformly over 100 B .. 256 KiB, with two of 1 MiB."""
    out = [int(100 * (2621.44 ** rng.random())) for _ in range(n)]
    for i in range(min(2, n)):
        out[i] = 1 << 20
    rng.shuffle(out)
    return out


def make(args):
    rng = random.Random(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    expected = {}
    tags = []
    nscripts = 0
    for i, size in enumerate(sizes(args.resources, rng)):
        if i % 5 == 4:
            # A valid script of exactly `size` bytes: a statement, then a comment as padding.
            name = f"s{i:03d}.js"
            pad = max(0, size - len(SCRIPT_HEAD) - len(SCRIPT_TAIL))
            body = (SCRIPT_HEAD + "".join(rng.choice("abcdefghij ") for _ in range(pad)) + SCRIPT_TAIL).encode()
            tags.append(f'<script src="/{name}"></script>')
            nscripts += 1
        else:
            name = f"i{i:03d}.png"
            body = png_of_size(size, rng)
            tags.append(f'<img src="/{name}" width="8" height="8" alt="">')
        with open(os.path.join(args.dir, name), "wb") as f:
            f.write(body)
        expected["/" + name] = len(body)
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>h3 test page</title>\n"
        f"<script>{PAGE_JS}</script>\n</head><body>\n<p>{args.resources} resources over HTTP/3</p>\n"
        + "\n".join(tags)
        + "\n</body></html>\n"
    )
    with open(os.path.join(args.dir, "index.html"), "w") as f:
        f.write(page)
    with open(args.expected, "w") as f:
        json.dump({"resources": expected, "scripts": nscripts}, f, indent=1)
    total = sum(expected.values())
    print(f"h3page: {len(expected)} resources ({nscripts} scripts), {total} bytes, in {args.dir}")
    return 0


def check(args):
    with open(args.expected) as f:
        exp = json.load(f)
    with open(args.dom, encoding="utf-8", errors="replace") as f:
        dom = f.read()
    m = re.search(r'<pre id="h3verdict">(.*?)</pre>', dom, re.S)
    expected = exp["resources"]
    if not m:
        print("chromium-h3: the page wrote no verdict (did it load? see the browser's log)")
        print(f"chromium-h3: 0 passed, {len(expected) + 1} failed")
        return 1
    verdict = json.loads(html.unescape(m.group(1)))
    passed = failed = 0
    nav = verdict["navigation"]
    problems = []
    if nav.get("protocol") != "h3":
        problems.append(f"index.html: nextHopProtocol {nav.get('protocol')!r}, expected 'h3'")
    if verdict["scriptsRan"] != exp["scripts"]:
        problems.append(f"index.html: {verdict['scriptsRan']} scripts ran, expected {exp['scripts']}")
    if problems:
        failed += 1
    else:
        passed += 1
    seen = {}
    for e in verdict["resources"]:
        seen.setdefault(e["path"], []).append(e)
    for path, size in sorted(expected.items()):
        entries = seen.pop(path, [])
        bad = []
        if len(entries) != 1:
            bad.append(f"{len(entries)} timing entries")
        for e in entries:
            if e["protocol"] != "h3":
                bad.append(f"nextHopProtocol {e['protocol']!r}")
            if e.get("status") not in (None, 0, 200):
                bad.append(f"status {e['status']}")
            if e["encoded"] != size or e["decoded"] != size:
                bad.append(f"encoded/decoded body size {e['encoded']}/{e['decoded']}, expected {size}")
        if bad:
            failed += 1
            problems.append(f"{path}: " + "; ".join(bad))
        else:
            passed += 1
    # favicon.ico and the like are not requested by a page load in headless mode; anything
    # else would be a page of a different test.
    for path in seen:
        problems.append(f"{path}: unexpected resource (not counted)")
    for p in problems:
        print(f"chromium-h3: {p}")
    ends = [e["end"] for e in verdict["resources"]]
    total = sum(expected.values())
    if ends:
        print(
            f"chromium-h3: page load event at {nav.get('loadEventStart', 0):.0f} ms; last resource "
            f"end {max(ends):.0f} ms; {total} bytes of subresources"
        )
    print(f"chromium-h3: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("dir")
    mk.add_argument("expected")
    mk.add_argument("--resources", type=int, default=100)
    mk.add_argument("--seed", type=int, default=None)
    ck = sub.add_parser("check")
    ck.add_argument("dom")
    ck.add_argument("expected")
    args = ap.parse_args()
    return make(args) if args.cmd == "make" else check(args)


if __name__ == "__main__":
    sys.exit(main())
