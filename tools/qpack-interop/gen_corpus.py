#!/usr/bin/env python3
"""Generates realistic QPACK corpora in QIF form, one traffic profile per pair of files.

Each profile is one connection: the client's header lists and the server's, in request order,
as two QIF files because a connection has one encoder per direction:

    OUT_DIR/PROFILE-requests.qif    the client's header lists (what its encoder compresses)
    OUT_DIR/PROFILE-responses.qif   the server's header lists, in the same order

Profiles (corpusgen/): news (a browser loading a news site), social (a long session on a social
network: unique debug tokens and hashes in every response), api (a mobile app's JSON API: few
fields, mostly unique IDs), cdn (video segments and images from two CDN edges), shop (a shop
visit with about 30 cookies in one long, changing line).

Standard library only. The output depends only on --seed: no clock, no environment, so a
committed corpus (tools/qpack-interop/corpus/) can be checked against a fresh run.

Usage: gen_corpus.py [--seed N] [--requests N] [--profile P]... OUT_DIR
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpusgen import PROFILES  # noqa: E402
from corpusgen.common import write_qif  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=9204)
    ap.add_argument("--requests", type=int, default=None,
                    help="header lists per file (default: the profile's own)")
    ap.add_argument("--profile", action="append", choices=sorted(PROFILES),
                    help="a profile to generate (repeatable; default: all)")
    ap.add_argument("out_dir")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.profile or sorted(PROFILES):
        module, offset, what = PROFILES[name]
        if args.requests is None:
            requests, responses = module.generate(args.seed + offset)
        else:
            requests, responses = module.generate(args.seed + offset, args.requests)
        tag = "gen_corpus.py --seed %d --requests %d" % (args.seed, len(requests))
        if name != "news":
            tag = "gen_corpus.py --seed %d --profile %s --requests %d" % (
                args.seed, name, len(requests))
        write_qif(os.path.join(args.out_dir, "%s-requests.qif" % name), requests,
                  "%s: %d %s" % (tag, len(requests), what))
        write_qif(os.path.join(args.out_dir, "%s-responses.qif" % name), responses,
                  "%s: the %d responses, in request order" % (tag, len(responses)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
