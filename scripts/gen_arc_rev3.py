#!/usr/bin/env python3
"""Generate an ARC revision-3.0 file with its ground truth.

    python3 scripts/gen_arc_rev3.py --out FILE.arc[.gz] --captures N --seed S
                                    [--truth TRUTH.tsv] [--damage]
                                    [--covers payload|content]
    python3 scripts/gen_arc_rev3.py --proposal --out FILE.arc

--proposal writes the records of the proposal's own examples instead: their
header lines as the proposal prints them (no checksums), each block the
example's text filled out to the length its line declares.

Written from the ARC file Revision 3.0 Proposal (seed 000) and the points
FORMATS.md 3.6 settles. The file opens with a filedesc record whose version
line is `3 0` and whose `<arcmetadata>` names what the checksums cover
(`<arc:checksum-covers>`). Every record line is

    URL IP DATE MIME SERIAL CHECKSUM LENGTH     (one in five without CHECKSUM)

with SERIAL three upper-case hex digits counting up from a seeded start and
rolling over at FFF, and CHECKSUM `urn:sha1:BASE32`: of the payload after
the HTTP head for responses and of the whole content for other records
(`--covers content`: of the whole content for every record). Each capture
is one of:

    fetch      a response; the request that fetched it (ari-addressed,
               message/http;msgtype=request); often its RDF metadata
               (arcrecordtype=metadata), sometimes metadata about that
               metadata (a nested ari)
    duplicate  a URL fetched before, found unchanged: the head-only response
               (message/http;msgtype=response, the original's checksum),
               its duplicate record (arcrecordtype=duplicate) whose
               dcterms:isVersionOf points at the original (its ari, or in
               one case of three its URL as the proposal's example does),
               and the request
    transform  a document fetched before, transformed: the new record
               addressed by the original's ari, and its transform metadata
               (arcrecordtype=transform, dcterms:replaces)

URLs hold `;` now and then (an ari is split at its first two `;` only).
With a .gz name each record is its own gzip member.

--damage gives one response in seven a checksum that does not match its
payload (`checksum_mismatch`).

TRUTH.tsv has one row per record after the filedesc, in file order, after a
`#` header: offset and length in the stored file, role (content, request,
metadata, duplicate, revisit, transform), the URL the record is filed under
(aris peeled), datetime, serial, digest (the base32 SHA-1 its index line
carries: the checksum when written, else computed as FORMATS.md says),
mime, status ('' when none), refers_to (the duplicate record's pointer, for
revisits), the record's own URL when it is an ari (else ''), damage. The
output depends only on the arguments.
"""
import argparse
import base64
import datetime
import gzip
import hashlib
import io
import random

HOSTS = ["www.archive.org", "www.kb.dk", "www.dh.gov.uk", "example.com", "www.bl.uk"]
PAGES = ["/", "/index.html", "/about/", "/news/2004/07/item.html", "/a;jsessionid=A1B2",
         "/search?q=arc;x=1", "/doc/report.doc", "/img/logo.gif"]
MIMES = {".html": "text/html", ".doc": "application/msword", ".gif": "image/gif"}


def b32(data):
    return base64.b32encode(hashlib.sha1(data).digest()).decode()


def mime_of(url):
    for ext, mime in MIMES.items():
        if url.split("?")[0].endswith(ext):
            return mime
    return "text/html"


def http_response(rng, mime, body, date):
    head = ("HTTP/1.1 200 OK\r\nDate: %s\r\nServer: Apache/2.0.47 (Unix)\r\n"
            "Content-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (date.strftime("%a, %d %b %Y %H:%M:%S GMT"), mime, len(body)))
    return head.encode()


def rdf(about, element=None, value=None):
    lines = ["<?xml version='1.0'?>",
             "<rdf:RDF",
             "    xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'",
             "    xmlns:dcterms='http://purl.org/dc/terms/'",
             "    xmlns:arc='http://www.archive.org/arc/1.1'>",
             "  <rdf:Description rdf:about='%s'>" % about.replace("&", "&amp;").replace("'", "&apos;")]
    if element:
        lines.append("    <dcterms:%s>%s" % (element, value))
        lines.append("    </dcterms:%s>" % element)
    lines.append("    <arc:operator>crawl operator</arc:operator>")
    lines.append("  </rdf:Description>")
    lines.append("</rdf:RDF>")
    return ("\n".join(lines) + "\n").encode()


class Writer:
    def __init__(self, out, gz, covers, rng):
        self.out, self.gz, self.covers, self.rng = out, gz, covers, rng
        self.serial = rng.randrange(0x1000)
        self.rows = []

    def next_serial(self):
        s = "%03X" % self.serial
        self.serial = (self.serial + 1) % 0x1000
        return s

    def record(self, url, ip, date, mime, block, digest_from, checksum=None,
               with_checksum=True):
        """Writes one record; returns (offset, length, serial, digest)."""
        serial = self.next_serial()
        if checksum is None:
            checksum = b32(block[digest_from:])
        if with_checksum:
            line = "%s %s %s %s %s urn:sha1:%s %d" % (url, ip, date, mime, serial, checksum, len(block))
        else:
            line = "%s %s %s %s %s %d" % (url, ip, date, mime, serial, len(block))
        data = line.encode() + b"\n" + block + b"\n"
        offset = self.out.tell()
        if self.gz:
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as g:
                g.write(data)
            self.out.write(buf.getvalue())
            length = len(buf.getvalue())
        else:
            self.out.write(data)
            length = len(data) - 1
        digest = checksum if with_checksum else b32(block[digest_from:])
        return offset, length, serial, digest


# The proposal's example records: header line, then the block's text (filled
# out to the declared length with a comment or spaces).
PROPOSAL = [
    ("http://www.archive.org/index.html 201.201.201.111 20040724100457 text/html 1FE 3043",
     "HTTP/1.1 200 OK\r\nDate: Tue, 03 Aug 2004 01:26:42 GMT\r\n"
     "Server: Apache/2.0.47 (Unix) mod_ssl/2.0.47 OpenSSL/0.9.7c PHP/4.3.4\r\n"
     "Content-Type: text/html\r\n\r\n<html><body>index</body></html>\n<!--", "-->\n"),
    ("ari:20040724100457;1FE;http://www.archive.org/index.html 192.168.201.167 20040724100888 "
     "application/xml+rdf;arcrecordtype=metadata 1FF 5096",
     "<?xml version='1.0'?>\n<rdf:RDF\n    xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'\n"
     "    xmlns:arc='http://www.archive.org/arc/1.1'>\n<!--", "-->\n</rdf:RDF>\n"),
    ("ari:20040724100457;1FE;http://www.archive.org/index.html 192.168.201.167 20040724100999 "
     "message/http;msgtype=request 200 3333",
     "GET /index.html HTTP/1.1\r\nHost: www.archive.org\r\nX-Fill: ", "\r\n\r\n"),
    ("http://www.archive.org/index.html 201.201.201.111 20040724104444 message/http;msgtype=response 210 3043",
     "HTTP/1.1 200 OK\r\nDate: Tue, 03 Aug 2004 01:26:42 GMT\r\n"
     "Server: Apache/2.0.47 (Unix) mod_ssl/2.0.47 OpenSSL/0.9.7c PHP/4.3.4\r\nX-Fill: ", "\r\n\r\n"),
    ("ari:20040724104444;210;http://www.archive.org/index.html 192.168.201.167 20040724105555 "
     "application/xml+rdf;arcrecordtype=duplicate 211 5096",
     "<?xml version='1.0'?>\n<rdf:RDF\n    xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'\n"
     "    xmlns:arc='http://www.archive.org/arc/1.1'>\n"
     "    <dcterms:isVersionOf>http://www.archive.org/index.html\n    </dcterms:isVersionOf>\n<!--",
     "-->\n</rdf:RDF>\n"),
    ("ari:20040724104444;210;http://www.archive.org/index.html 192.168.201.167 20040724106666 "
     "message/http;msgtype=request 212 3333",
     "GET /index.html HTTP/1.1\r\nHost: www.archive.org\r\nX-Fill: ", "\r\n\r\n"),
    ("http://www.archive.org/mydocument.doc 201.201.201.111 20040724100457 application/msword 1FE 3043",
     "HTTP/1.1 200 OK\r\nDate: Tue, 03 Aug 2004 01:26:42 GMT\r\n"
     "Server: Apache/2.0.47 (Unix) mod_ssl/2.0.47 OpenSSL/0.9.7c PHP/4.3.4\r\n"
     "Content-Type: application/msword\r\n\r\n", ""),
    ("ari:20040724100457;1FE;http://www.archive.org/mydocument.doc 192.168.201.143 20040724100888 "
     "application/openoffice.org 200 1024", "", ""),
    ("ari:20040724100888;200;ari:20040724100457;1FE;http://www.archive.org/mydocument.doc 192.168.201.143 "
     "20040724109999 application/xml+rdf;arcrecordtype=transform 211 5096",
     "<?xml version='1.0'?>\n<rdf:RDF\n    xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'\n"
     "    xmlns:arc='http://www.archive.org/arc/1.1'>\n"
     " <dcterms:replaces>ari:20040724100457;C0A8C9A7.1FE;http://www.archive.org/mydocument.doc\n"
     " </dcterms:replaces>\n<!--", "-->\n</rdf:RDF>\n"),
]


def proposal(out):
    """Writes the proposal's example records, blocks filled out to length."""
    with open(out, "wb") as f:
        for line, text, end in PROPOSAL:
            length = int(line.rsplit(" ", 1)[1])
            fill = length - len(text) - len(end)
            block = (text + "x" * fill + end).encode()
            assert len(block) == length, line
            f.write(line.encode() + b"\n" + block + b"\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--captures", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth")
    ap.add_argument("--damage", action="store_true")
    ap.add_argument("--covers", choices=["payload", "content"], default="payload")
    ap.add_argument("--proposal", action="store_true")
    a = ap.parse_args()
    if a.proposal:
        return proposal(a.out)
    rng = random.Random(a.seed)
    gz = a.out.endswith(".gz")
    clock = datetime.datetime(2004, 7, 24, 10, 0, 0) + datetime.timedelta(seconds=rng.randrange(10**6))
    name = a.out.rsplit("/", 1)[-1]
    with open(a.out, "wb") as f:
        w = Writer(f, gz, a.covers, rng)
        stamp = lambda t: t.strftime("%Y%m%d%H%M%S")
        desc = ("3 0 InternetArchive\n"
                "URL IP-address Archive-date Content-type Serial-number Checksum Archive-length\n"
                "<?xml version=\"1.0\"?>\n"
                "<arcmetadata xmlns:arc=\"http://archive.org/arc/1.0/\">"
                "<arc:software>gen_arc_rev3.py</arc:software>"
                "<arc:checksum-covers>%s</arc:checksum-covers>"
                "</arcmetadata>\n" % a.covers).encode()
        w.record("filedesc://" + name, "0.0.0.0", stamp(clock), "text/plain", desc, 0)
        fetched = []  # (url, date, serial, payload digest, mime, status, body)
        rows = []
        content_from = lambda head_len: 0 if a.covers == "content" else head_len
        responses = 0
        for _ in range(a.captures):
            clock += datetime.timedelta(seconds=rng.randrange(1, 90))
            ip = "192.0.2.%d" % rng.randrange(1, 255)
            kind = rng.random()
            if fetched and kind < 0.2:
                # duplicate reduction
                url, odate, oserial, odigest, omime, ostatus, _ = rng.choice(fetched)
                date = stamp(clock)
                head = http_response(rng, omime, b"", clock)
                off, ln, serial, _ = w.record(url, ip, date, "message/http;msgtype=response",
                                              head, 0, checksum=odigest)
                ari = "ari:%s;%s;%s" % (date, serial, url)
                if rng.randrange(3) == 0:
                    pointer = url
                else:
                    pointer = "ari:%s;%s;%s" % (odate, oserial, url)
                rows.append([off, ln, "revisit", url, date, serial, odigest, "warc/revisit", "200",
                             pointer, "", ""])
                block = rdf(ari, "isVersionOf", pointer)
                clock += datetime.timedelta(seconds=1)
                d2 = stamp(clock)
                off, ln, s2, dg = w.record(ari, "192.168.201.167", d2,
                                           "application/xml+rdf;arcrecordtype=duplicate", block, 0)
                rows.append([off, ln, "duplicate", url, d2, s2, dg, "application/xml+rdf", "", "", ari, ""])
                req = ("GET %s HTTP/1.0\r\nUser-Agent: gen\r\n\r\n" % url.split("/", 3)[-1]).encode()
                clock += datetime.timedelta(seconds=1)
                d3 = stamp(clock)
                off, ln, s3, dg = w.record(ari, "192.168.201.167", d3, "message/http;msgtype=request", req, 0)
                rows.append([off, ln, "request", url, d3, s3, dg, "message/http", "", "", ari, ""])
                continue
            if fetched and kind < 0.3:
                # transform of an earlier fetch
                url, odate, oserial, _, _, _, obody = rng.choice(fetched)
                oari = "ari:%s;%s;%s" % (odate, oserial, url)
                date = stamp(clock)
                body = b"%PDF-1.4 transformed\n" + obody[:200]
                off, ln, serial, dg = w.record(oari, "192.168.201.143", date, "application/pdf", body, 0)
                rows.append([off, ln, "transform", url, date, serial, dg, "application/pdf", "", "", oari, ""])
                tari = "ari:%s;%s;%s" % (date, serial, oari)
                block = rdf(tari, "replaces", oari)
                clock += datetime.timedelta(seconds=1)
                d2 = stamp(clock)
                off, ln, s2, dg = w.record(tari, "192.168.201.143", d2,
                                           "application/xml+rdf;arcrecordtype=transform", block, 0)
                rows.append([off, ln, "metadata", url, d2, s2, dg, "application/xml+rdf", "", "", tari, ""])
                continue
            # a fetch
            url = "http://%s%s" % (rng.choice(HOSTS), rng.choice(PAGES))
            if rng.randrange(4) == 0:
                url += ";v=%d" % rng.randrange(100)
            mime = mime_of(url)
            body = ("<html><body>%s %d</body></html>\n" % (url, rng.randrange(10**6))).encode()
            if mime != "text/html":
                body = bytes(rng.randrange(256) for _ in range(rng.randrange(50, 400)))
            head = http_response(rng, mime, body, clock)
            block = head + body
            date = stamp(clock)
            payload = b32(body)
            damage = ""
            checksum = b32(block[content_from(len(head)):])
            responses += 1
            if a.damage and responses % 7 == 0:
                damage = "checksum_mismatch"
                checksum = b32(block[content_from(len(head)):] + b"x")
            with_checksum = rng.randrange(5) != 0 or damage
            off, ln, serial, dg = w.record(url, ip, date, mime, block, 0, checksum=checksum,
                                           with_checksum=with_checksum)
            if not with_checksum:
                dg = payload
            rows.append([off, ln, "content", url, date, serial, dg, mime, "200", "", "", damage])
            fetched.append((url, date, serial, dg, mime, "200", body))
            ari = "ari:%s;%s;%s" % (date, serial, url)
            req = ("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % ("/" + url.split("/", 3)[-1], url.split("/")[2])).encode()
            clock += datetime.timedelta(seconds=1)
            d2 = stamp(clock)
            off, ln, s2, dg = w.record(ari, "192.168.201.167", d2, "message/http;msgtype=request", req, 0)
            rows.append([off, ln, "request", url, d2, s2, dg, "message/http", "", "", ari, ""])
            if rng.randrange(2) == 0:
                block = rdf(ari)
                clock += datetime.timedelta(seconds=1)
                d3 = stamp(clock)
                mtype = rng.choice(["application/rdf+xml", "application/xml+rdf"])
                off, ln, s3, dg = w.record(ari, "192.168.201.167", d3, mtype + ";arcrecordtype=metadata", block, 0)
                rows.append([off, ln, "metadata", url, d3, s3, dg, mtype, "", "", ari, ""])
                if rng.randrange(3) == 0:
                    mari = "ari:%s;%s;%s" % (d3, s3, ari)
                    clock += datetime.timedelta(seconds=1)
                    d4 = stamp(clock)
                    off, ln, s4, dg = w.record(mari, "192.168.201.167", d4, "application/rdf+xml",
                                               rdf(mari), 0, with_checksum=False)
                    rows.append([off, ln, "metadata", url, d4, s4, dg, "application/rdf+xml", "", "", mari, ""])
    if a.truth:
        with open(a.truth, "w") as t:
            t.write("#offset\tlength\trole\turl\tdatetime\tserial\tdigest\tmime\tstatus\trefers_to\tari\tdamage\n")
            for r in rows:
                t.write("\t".join(str(x) for x in r) + "\n")


if __name__ == "__main__":
    main()
