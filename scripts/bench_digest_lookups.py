#!/usr/bin/env python3
"""Times lookups by digest (`GET /NAME/digest?digest=...`) against a
running `ukvs serve`, one request at a time over the loopback: the
deduplication lookup a crawler makes before it writes a record.

    scripts/bench_digest_lookups.py URL NAME CDX [CDX ...] [--n N] [--seed S]

URL is the server (http://127.0.0.1:8080), NAME the collection, and the
CDX files (CDX11 lines, legend lines skipped) give the digests looked up:
N of them (default 2000) drawn at random, so every lookup finds at least
one capture. Prints the p50, p90, p99 and slowest latency and how many
lookups found a capture.

For the store a `scripts/bench_live.sh` run kept (KEEP=1): serve its
`data` directory and give its `batches/*.cdx`:

    ukvs serve --bind 127.0.0.1:18080 --data WORK/data &
    scripts/bench_digest_lookups.py http://127.0.0.1:18080 bench WORK/batches/*.cdx

Measured (ten million lines in one unfolded generation, 2,000 lookups,
two runs each): the digest keys in one partition, as a store keeps
them, p50 0.42-0.49 ms; in 15 sorted runs of 4 KiB blocks (a build
that kept them so, ARCHITECTURE.md) 0.49-0.50 ms, of 16 KiB blocks
0.69-0.72 ms; the p99 0.9-5.4 ms for any of them.

Standard library only.
"""

import argparse
import random
import sys
import time
import urllib.error
import urllib.request


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("name")
    ap.add_argument("cdx", nargs="+")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    digests = []
    for path in args.cdx:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" ") or not line.strip():
                    continue
                cols = line.split(" ")
                if len(cols) >= 11:
                    digests.append(cols[5])
    if not digests:
        sys.exit("bench_digest_lookups.py: no CDX11 lines in the files given")
    chosen = [rng.choice(digests) for _ in range(args.n)]

    # As the lines spell them: the server takes every spelling they use.
    base = f"{args.url.rstrip('/')}/{args.name}/digest?digest="
    times, found = [], 0
    for d in chosen:
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(base + d) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            sys.exit(f"bench_digest_lookups.py: {base + d}: {e.code} {e.read()[:200]!r}")
        except urllib.error.URLError as e:
            sys.exit(f"bench_digest_lookups.py: {args.url}: {e.reason}")
        times.append(time.perf_counter() - t)
        found += bool(body.strip())
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(len(times) * p))] * 1e3
    print(
        f"{len(times)} lookups by digest: p50 {q(0.5):.2f} ms, p90 {q(0.9):.2f} ms, "
        f"p99 {q(0.99):.2f} ms, slowest {times[-1] * 1e3:.2f} ms; {found} found a capture"
    )


if __name__ == "__main__":
    main()
