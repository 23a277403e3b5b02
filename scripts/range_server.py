#!/usr/bin/env python3
"""A static file server for loopback tests and benchmarks of remote ZipNum
clusters: it honours `Range: bytes=A-B` (206), can log every request and
can fail on purpose.

    range_server.py DIR [--port 0] [--log FILE] [--fail-every N]
                        [--forbid SUBSTRING]

Prints `PORT` on the first line of stdout once it listens. `--fail-every N`
answers every Nth request 503 (a store that fails now and then);
`--forbid S` answers 403 to every path holding S. `--log FILE` appends
`METHOD PATH RANGE STATUS` per request.
"""

import argparse
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--forbid", action="append", default=[])
    a = ap.parse_args()
    root = os.path.realpath(a.root)
    lock = threading.Lock()
    count = [0]
    log = open(a.log, "a", buffering=1) if a.log else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def record(self, status, rng):
            if log:
                with lock:
                    log.write(f"{self.command} {self.path} {rng or '-'} {status}\n")

        def answer(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            rng = self.headers.get("Range")
            with lock:
                count[0] += 1
                n = count[0]
            if a.fail_every and n % a.fail_every == 0:
                self.record(503, rng)
                return self.answer(503, b"failing on purpose\n")
            path = unquote(urlsplit(self.path).path)
            if any(s in path for s in a.forbid):
                self.record(403, rng)
                return self.answer(403, b"forbidden\n")
            full = os.path.realpath(os.path.join(root, path.lstrip("/")))
            if not full.startswith(root) or not os.path.isfile(full):
                self.record(404, rng)
                return self.answer(404, b"not found\n")
            size = os.path.getsize(full)
            with open(full, "rb") as f:
                if rng:
                    m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
                    if not m:
                        self.record(416, rng)
                        return self.answer(416)
                    start = int(m.group(1))
                    end = int(m.group(2)) if m.group(2) else size - 1
                    end = min(end, size - 1)
                    if start > end:
                        self.record(416, rng)
                        return self.answer(416, headers=[("Content-Range", f"bytes */{size}")])
                    f.seek(start)
                    body = f.read(end - start + 1)
                    self.record(206, rng)
                    return self.answer(
                        206,
                        body,
                        [("Content-Range", f"bytes {start}-{end}/{size}"),
                         ("Accept-Ranges", "bytes")],
                    )
                body = f.read()
            self.record(200, rng)
            self.answer(200, body, [("Accept-Ranges", "bytes")])

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
