#!/usr/bin/env python3
"""Compare `ukvs index --format cdxj` with cdxj-indexer on every ARC file.

Usage: scripts/cdxj_diff.py [CORPUS_DIR] [--ukvs PATH] [--quiet]

For each *.arc / *.arc.gz under CORPUS_DIR (default ../shared/corpus), runs
both indexers and compares the sorted sets of lines. Prints one line per
file: SAME, DIFF (with the lines only one side has, unless --quiet) or
FAIL (cdxj-indexer stopped with an error; what it wrote is compared).
Used to keep WELL_FORMED in tests/it/index.rs and the table of intended
differences in FORMATS.md (2.2) current.
"""

import argparse
import os
import subprocess
import sys


def arc_files(root):
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            low = n.lower()
            if low.endswith(".arc") or low.endswith(".arc.gz"):
                out.append(os.path.join(d, n))
    return sorted(out)


def lines(b):
    return sorted(set(l for l in b.split(b"\n") if l))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=os.path.join(here, "..", "..", "shared", "corpus"))
    ap.add_argument("--ukvs", default=os.path.join(here, "..", "target", "release", "ukvs"))
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    counts = {"SAME": 0, "DIFF": 0, "FAIL": 0}
    for f in arc_files(a.corpus):
        rel = os.path.relpath(f, a.corpus)
        ours = subprocess.run([a.ukvs, "index", "-q", "--format", "cdxj", f],
                              capture_output=True)
        theirs = subprocess.run(["cdxj-indexer", f], capture_output=True)
        o, t = lines(ours.stdout), lines(theirs.stdout)
        status = "SAME" if o == t else "DIFF"
        if theirs.returncode != 0:
            status = "FAIL" if o != t else "SAME"
        counts[status] += 1
        print(f"{status} {rel} (ours {len(o)}, cdxj-indexer {len(t)}, exit {ours.returncode}/{theirs.returncode})")
        if status != "SAME" and not a.quiet:
            for l in o:
                if l not in t:
                    print("  ours  " + l.decode("utf-8", "replace"))
            for l in t:
                if l not in o:
                    print("  their " + l.decode("utf-8", "replace"))
            if theirs.returncode != 0:
                err = theirs.stderr.decode("utf-8", "replace").strip().splitlines()
                print("  cdxj-indexer: " + (err[-1] if err else "?"))
    print(" ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
