#!/usr/bin/env python3
"""Cut sorted index lines into a ZipNum cluster in Common Crawl's layout,
written from its published description, independently of ukvs:

    cc_cluster.py SORTED OUTDIR [--lines N] [--shards K]

OUTDIR gets `cdx-00000.gz`... (concatenated gzip members, each a block of
N lines, every line ending in LF as Common Crawl's do) and `cluster.idx`:
one line per block, `urlkey timestamp<TAB>shard file<TAB>offset<TAB>
length<TAB>block number`, tab-separated, no `.loc` file (the shard column
names the file beside the idx).
"""

import argparse
import gzip
import os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("outdir")
    ap.add_argument("--lines", type=int, default=3000)
    ap.add_argument("--shards", type=int, default=1)
    a = ap.parse_args()
    with open(a.input, "rb") as f:
        lines = [l for l in f.read().split(b"\n") if l and not l.startswith(b"!")]
    blocks = [lines[i:i + a.lines] for i in range(0, len(lines), a.lines)]
    per_shard = max(1, -(-len(blocks) // a.shards))
    os.makedirs(a.outdir, exist_ok=True)
    idx = []
    for s in range(0, len(blocks), per_shard):
        name = "cdx-%05d.gz" % (s // per_shard)
        offset = 0
        with open(os.path.join(a.outdir, name), "wb") as out:
            for n, block in enumerate(blocks[s:s + per_shard], start=s + 1):
                member = gzip.compress(b"".join(l + b"\n" for l in block))
                key = b" ".join(block[0].split(b" ")[:2])
                idx.append(b"%s\t%s\t%d\t%d\t%d\n" % (key, name.encode(), offset, len(member), n))
                out.write(member)
                offset += len(member)
    with open(os.path.join(a.outdir, "cluster.idx"), "wb") as f:
        f.write(b"".join(idx))


if __name__ == "__main__":
    main()
